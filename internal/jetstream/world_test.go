package jetstream

import (
	"bytes"
	"fmt"
	"maps"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// sameWorld fails unless run's stored world is want, with head head.
func sameWorld(t *testing.T, w *Worlds, run string, want map[string]string, head uint64) {
	t.Helper()
	st, err := w.Read(ctx(t), run)
	must(t, err)
	got := map[string]string{}
	for p, b := range st.Files {
		got[p] = string(b)
	}
	if !maps.Equal(got, want) {
		t.Fatalf("world of %s: got %q, want %q", run, got, want)
	}
	if st.Head != head {
		t.Fatalf("world of %s: head %d, want %d", run, st.Head, head)
	}
}

// A world is uploaded and sealed, then written file by file; every write
// is guarded twice, by the run's ledger end and by the world's head, and
// a write that fails either guard stores nothing.
func TestWorldWritesAreGuardedByLedgerAndHead(t *testing.T) {
	_, _, st := open(t, Options{})
	w := st.Worlds
	c, err := st.Ledger.Append(ctx(t), run, 0, records("init", 2, 100))
	must(t, err)
	at := c.Frontier.Ledger
	sameWorld(t, w, run, map[string]string{}, 0)

	long := strings.Repeat("deep/", 600) + "f.txt" // 3005 bytes, as long as a world path gets
	odd := "docs/ünïcode name.v2.md"
	for p, b := range map[string]string{"README.md": "# hi\n", "empty": "", long: "long", odd: "odd"} {
		must(t, upload(w, run, p, []byte(b), false, at))
	}
	wantErr(t, upload(w, run, "late", []byte("x"), false, at-1), ErrConflict)
	must(t, upload(w, run, "gone", []byte("x"), false, at))
	must(t, upload(w, run, "gone", nil, true, at))
	world := map[string]string{"README.md": "# hi\n", "empty": "", long: "long", odd: "odd"}
	sameWorld(t, w, run, world, 0)
	if st, _ := w.Read(ctx(t), run); st.Files["empty"] == nil {
		t.Fatal("an empty file reads as nil, not as an empty file")
	}
	h1, err := w.Take(ctx(t), run, Guard{Ledger: at})
	must(t, err)
	sameWorld(t, w, run, world, h1)
	_, err = w.Take(ctx(t), run, Guard{Ledger: at})
	wantErr(t, err, ErrConflict) // sealed once

	h2, err := w.Write(ctx(t), run, "README.md", []byte("# hello\n"), false, Guard{Ledger: at, Head: h1})
	must(t, err)
	world["README.md"] = "# hello\n"
	h3, err := w.Write(ctx(t), run, odd, nil, true, Guard{Ledger: at, Head: h2})
	must(t, err)
	delete(world, odd)
	sameWorld(t, w, run, world, h3)

	// A stale head: nothing stored.
	_, err = w.Write(ctx(t), run, "README.md", []byte("stale head"), false, Guard{Ledger: at, Head: h2})
	wantErr(t, err, ErrConflict)
	sameWorld(t, w, run, world, h3)
	// The ledger moved on: nothing stored.
	c, err = st.Ledger.Append(ctx(t), run, at, records("cycle", 1, 100))
	must(t, err)
	_, err = w.Write(ctx(t), run, "README.md", []byte("stale ledger"), false, Guard{Ledger: at, Head: h3})
	wantErr(t, err, ErrConflict)
	sameWorld(t, w, run, world, h3)
	at = c.Frontier.Ledger

	// Another process takes the world: the first one's next write is
	// refused although the ledger has not moved.
	h4, err := w.Take(ctx(t), run, Guard{Ledger: at, Head: h3})
	must(t, err)
	_, err = w.Write(ctx(t), run, "README.md", []byte("fenced"), false, Guard{Ledger: at, Head: h3})
	wantErr(t, err, ErrConflict)
	_, err = w.Take(ctx(t), run, Guard{Ledger: at, Head: h3})
	wantErr(t, err, ErrConflict)
	h5, err := w.Write(ctx(t), run, odd, []byte("back"), false, Guard{Ledger: at, Head: h4})
	must(t, err)
	world[odd] = "back"
	sameWorld(t, w, run, world, h5)

	// Another run's world is apart.
	sameWorld(t, w, "run:other", map[string]string{}, 0)
}

// Room is what fits at any ledger position: a file of Room bytes is
// stored; at this run's short ledger sequence (19 digits shorter than the
// longest) 20 bytes more are refused before anything is sent.
func TestWorldRoom(t *testing.T) {
	_, nc, st := open(t, Options{})
	w := st.Worlds
	c, err := st.Ledger.Append(ctx(t), run, 0, records("init", 1, 100))
	must(t, err)
	h, err := w.Take(ctx(t), run, Guard{Ledger: c.Frontier.Ledger})
	must(t, err)
	for _, p := range []string{"a", strings.Repeat("x/", 1000) + "y"} {
		room := w.Room(run, p)
		if room <= 0 || room > int(nc.MaxPayload()) {
			t.Fatalf("room for %.20q: %d of max_payload %d", p, room, nc.MaxPayload())
		}
		h, err = w.Write(ctx(t), run, p, bytes.Repeat([]byte{'z'}, room), false, Guard{Ledger: c.Frontier.Ledger, Head: h})
		must(t, err)
		_, err = w.Write(ctx(t), run, p, bytes.Repeat([]byte{'z'}, room+20), false, Guard{Ledger: c.Frontier.Ledger, Head: h})
		wantErr(t, err, ErrTooLarge)
	}
}

// A message on a world subject that is not the world's own is damage,
// never a file.
func TestWorldReadRefusesForeignMessages(t *testing.T) {
	_, nc, st := open(t, Options{})
	for name, bad := range map[string]func(run string) *nats.Msg{
		"path of another subject": func(run string) *nats.Msg {
			return &nats.Msg{Subject: testNames.WorldSubject(run, "a"), Header: nats.Header{hdrWorld: {worldPut}, hdrPath: {Token("b")}}}
		},
		"no path": func(run string) *nats.Msg {
			return &nats.Msg{Subject: testNames.WorldSubject(run, "a"), Header: nats.Header{hdrWorld: {worldPut}}}
		},
		"unknown kind": func(run string) *nats.Msg {
			return &nats.Msg{Subject: testNames.WorldSubject(run, "a"), Header: nats.Header{hdrWorld: {"append"}, hdrPath: {Token("a")}}}
		},
		"head without its kind": func(run string) *nats.Msg {
			return &nats.Msg{Subject: testNames.WorldHeadSubject(run), Header: nats.Header{}}
		},
	} {
		t.Run(name, func(t *testing.T) {
			run := "run:" + name
			must(t, upload(st.Worlds, run, "z", []byte("z"), false, 0))
			_, err := st.Worlds.Read(ctx(t), run)
			must(t, err)
			m := bad(run)
			m.Data = []byte("x")
			if _, err := nc.RequestMsg(m, defaultTimeout); err != nil {
				t.Fatal(err)
			}
			_, err = st.Worlds.Read(ctx(t), run)
			wantErr(t, err, ErrBadWorld)
		})
	}
}

// A store made before worlds were kept in it gains the world subjects
// when it is opened.
func TestOpenAddsWorldSubjectsToAnOlderStore(t *testing.T) {
	s := natstest.Start(t)
	nc := natstest.Connect(t, s.ClientURL())
	js, err := natsjs.New(nc)
	must(t, err)
	old := runsStreamConfig(testNames, Options{}.withDefaults())
	old.Subjects = old.Subjects[:3]
	_, err = js.CreateStream(ctx(t), old)
	must(t, err)
	st := openOn(t, nc, Options{})
	c, err := st.Ledger.Append(ctx(t), run, 0, records("old", 1, 50))
	must(t, err)
	must(t, upload(st.Worlds, run, "a", []byte("a"), false, c.Frontier.Ledger))
	info, err := js.Stream(ctx(t), testNames.RunsStream())
	must(t, err)
	if got := info.CachedInfo().Config.Subjects; len(got) != 4 || got[3] != "t.world.*.*" {
		t.Fatalf("subjects %v", got)
	}
}

// A world of more files than one direct get answers is read whole.
func TestWorldReadPagesThroughManyFiles(t *testing.T) {
	_, _, st := open(t, Options{})
	c, err := st.Ledger.Append(ctx(t), run, 0, records("init", 1, 50))
	must(t, err)
	const n = 2*readBatch + 17
	want := map[string]string{}
	for i := range n {
		p := fmt.Sprintf("dir%d/file-%04d.txt", i%7, i)
		want[p] = fmt.Sprint(i)
		must(t, upload(st.Worlds, run, p, []byte(want[p]), false, c.Frontier.Ledger))
	}
	h, err := st.Worlds.Take(ctx(t), run, Guard{Ledger: c.Frontier.Ledger})
	must(t, err)
	sameWorld(t, st.Worlds, run, want, h)
}

// The same bytes written again after another write of the path, at the
// same ledger position, are stored: a message id made of the bytes and
// the position alone would have the server drop the third write of A, B,
// A as a duplicate of the first and leave B. A write sent again (the same
// replaces) is still stored once.
func TestUploadAgainAfterAnotherWrite(t *testing.T) {
	_, _, st := open(t, Options{})
	w := st.Worlds
	c, err := st.Ledger.Append(ctx(t), run, 0, records("init", 1, 100))
	must(t, err)
	at := c.Frontier.Ledger
	ws, err := w.Read(ctx(t), run)
	must(t, err)
	known := SeqIdentity(ws.Seqs["f"])
	var ids []string
	for _, data := range []string{"A", "B", "A"} {
		id, err := w.Upload(ctx(t), run, "f", []byte(data), false, at, known)
		must(t, err)
		ids, known = append(ids, id), id
	}
	sameWorld(t, w, run, map[string]string{"f": "A"}, 0)
	if ids[0] == ids[2] {
		t.Fatalf("A after B has the first A's message id %s", ids[0])
	}

	ws, err = w.Read(ctx(t), run)
	must(t, err)
	last := ws.Seqs["f"]
	again, err := w.Upload(ctx(t), run, "f", []byte("A"), false, at, ids[1])
	must(t, err)
	if again != ids[2] {
		t.Fatalf("the third write sent again has id %s, want %s", again, ids[2])
	}
	ws, err = w.Read(ctx(t), run)
	must(t, err)
	if ws.Seqs["f"] != last {
		t.Fatalf("a write sent again was stored again: sequence %d, was %d", ws.Seqs["f"], last)
	}
	sameWorld(t, w, run, map[string]string{"f": "A"}, 0)
}
