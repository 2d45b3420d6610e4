package jsstore

import (
	"bytes"
	"strconv"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// The events are of a kind acr does not write, so that ledger verify
// holds them to no place in a cycle's frame.
func testEvents(tag string, n int, cycle int64) []event.Event {
	evs := make([]event.Event, n)
	for i := range evs {
		obj, err := event.NewObject("note", map[string]any{"tag": tag, "i": i, "text": "<ü> \u2028 \"quoted\""})
		if err != nil {
			panic(err)
		}
		evs[i] = event.Event{Type: "test.note", RunID: "run:lines", CycleSeq: cycle, At: "2026-01-01T00:00:00Z", Object: obj,
			Reasons: []string{"test"}, Refs: map[string]codec.Ref{"self": obj.Ref}}
	}
	return evs
}

// TestLinesMatchLedger: the local copy of the ledger's line encoding
// writes, on the same events, exactly the bytes the file ledger writes;
// and the JetStream ledger's messages are those lines, one message per
// append, with the same records (seq, chain, hash, ref, length).
func TestLinesMatchLedger(t *testing.T) {
	batches := [][]event.Event{testEvents("a", 1, 1), testEvents("b", 10, 2), testEvents("c", 3, 3)}

	mem := disk.NewMem()
	fl, err := ledger.Create(mem)
	require.NoError(t, err)
	var fileRecs []event.Record
	for _, b := range batches {
		recs, err := fl.Append(b)
		require.NoError(t, err)
		fileRecs = append(fileRecs, recs...)
	}
	file, err := mem.ReadFile(ledger.FileName)
	require.NoError(t, err)

	var local []byte
	front := state.GenesisFrontier()
	for _, b := range batches {
		lines, recs, err := encodeEvents(front, b)
		require.NoError(t, err)
		for _, l := range lines {
			local = append(local, l...)
		}
		last := recs[len(recs)-1]
		front = state.Frontier{Seq: last.Seq, Hash: last.Hash}
	}
	require.True(t, bytes.Equal(file, local), "encodeLine differs from the ledger's")

	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:lines")
	require.NoError(t, err)
	jl, err := r.CreateLedger()
	require.NoError(t, err)
	var jsRecs []event.Record
	for _, b := range batches {
		recs, err := jl.Append(b)
		require.NoError(t, err)
		jsRecs = append(jsRecs, recs...)
	}
	var stored []byte
	var n int
	require.NoError(t, s.blocks.Ledger.Read(ctx(t), r.ID, 0, func(rec jetstream.Record) error {
		n++
		require.Equal(t, strconv.Itoa(len(batches[n-1])), rec.Header.Get(hdrLines), "message %d", n)
		body, err := s.pack.unpack(rec.Data, rec.Header.Get(hdrEncoding))
		require.NoError(t, err)
		stored = append(stored, body...)
		return nil
	}))
	require.Equal(t, len(batches), n, "one message per append")
	require.True(t, bytes.Equal(file, stored), "the messages are the file's lines")

	read, err := jl.After(state.GenesisFrontier())
	require.NoError(t, err)
	for i := range fileRecs {
		for _, got := range []event.Record{jsRecs[i], read[i]} {
			require.Equal(t, fileRecs[i].Seq, got.Seq)
			require.Equal(t, fileRecs[i].Chain, got.Chain)
			require.Equal(t, fileRecs[i].Hash, got.Hash)
			require.Equal(t, fileRecs[i].Ref, got.Ref)
			require.Equal(t, fileRecs[i].Length, got.Length)
		}
	}
	require.Equal(t, fl.Frontier().Seq, jl.Frontier().Seq)
	require.Equal(t, fl.Frontier().Hash, jl.Frontier().Hash)

	_, err = r.CreateLedger()
	require.ErrorIs(t, err, ledger.ErrExists)
}

// testPacker is a store's packer.
func testPacker(t testing.TB) *packer {
	t.Helper()
	p, err := newPacker()
	require.NoError(t, err)
	return p
}

// msgs makes stored ledger messages of bodies, at stream sequences 1, 2,
// …, each with the Acr-Lines header lines[i] ("" for none).
func msgs(bodies [][]byte, lines []string) []jetstream.Record {
	out := make([]jetstream.Record, len(bodies))
	for i, b := range bodies {
		h := nats.Header{}
		if lines[i] != "" {
			h.Set(hdrLines, lines[i])
		}
		out[i] = jetstream.Record{Seq: uint64(i + 1), Header: h, Data: b}
	}
	return out
}

// A message that is not its header's count of valid lines (exactly one
// without the header) is corruption, found by the ledger's own checks.
func TestDecodeRefusesDamage(t *testing.T) {
	lines, _, err := encodeEvents(state.GenesisFrontier(), testEvents("d", 2, 1))
	require.NoError(t, err)
	both := append(bytes.Clone(lines[0]), lines[1]...)
	for name, c := range map[string]struct {
		bodies [][]byte
		lines  []string
	}{
		"one line a message, format 1": {lines, []string{"", ""}},
		"one line a message, packed":   {lines, []string{"1", "1"}},
		"two lines, packed":            {[][]byte{both}, []string{"2"}},
	} {
		recs, err := decodeMessages(testPacker(t), state.GenesisFrontier(), msgs(c.bodies, c.lines))
		require.NoError(t, err, name)
		require.Len(t, recs, 2, name)
	}

	flipped := bytes.Clone(lines[1])
	flipped[len(flipped)/2] ^= 1
	for name, c := range map[string]struct {
		bodies [][]byte
		lines  []string
	}{
		"flipped byte":              {[][]byte{lines[0], flipped}, []string{"", ""}},
		"two lines without header":  {[][]byte{both}, []string{""}},
		"two lines, header says 1":  {[][]byte{both}, []string{"1"}},
		"two lines, header says 3":  {[][]byte{both}, []string{"3"}},
		"header 02":                 {[][]byte{both}, []string{"02"}},
		"header 0":                  {[][]byte{lines[0]}, []string{"0"}},
		"header -1":                 {[][]byte{lines[0]}, []string{"-1"}},
		"header +1":                 {[][]byte{lines[0]}, []string{"+1"}},
		"no newline":                {[][]byte{lines[0][:len(lines[0])-1]}, []string{""}},
		"no newline, packed":        {[][]byte{both[:len(both)-1]}, []string{"2"}},
		"an empty line":             {[][]byte{append(bytes.Clone(lines[0]), '\n')}, []string{"2"}},
		"broken chain":              {[][]byte{lines[1]}, []string{"1"}},
		"skipped seq":               {[][]byte{lines[0], lines[0]}, []string{"1", "1"}},
		"empty":                     {[][]byte{{}}, []string{""}},
		"not a ledger line":         {[][]byte{[]byte("{}\n")}, []string{""}},
		"not a ledger line, packed": {[][]byte{append(bytes.Clone(lines[0]), "{}\n"...)}, []string{"2"}},
	} {
		_, err := decodeMessages(testPacker(t), state.GenesisFrontier(), msgs(c.bodies, c.lines))
		require.ErrorIs(t, err, ledger.ErrCorrupt, name)
	}
}

// A compressed message (Acr-Encoding: zstd) reads as its lines; one whose
// frame is damaged, or whose encoding is unknown, is corruption.
func TestDecodeCompressed(t *testing.T) {
	p := testPacker(t)
	lines, _, err := encodeEvents(state.GenesisFrontier(), testEvents("z", 5, 1))
	require.NoError(t, err)
	body := bytes.Join(lines, nil)
	z, enc := p.pack(body)
	require.Equal(t, encZstdDict, enc, "ledger lines compress")
	require.Less(t, len(z), len(body))
	m := msgs([][]byte{z}, []string{"5"})
	m[0].Header.Set(hdrEncoding, enc)
	recs, err := decodeMessages(p, state.GenesisFrontier(), m)
	require.NoError(t, err)
	require.Len(t, recs, 5)

	flipped := bytes.Clone(z)
	flipped[len(flipped)/2] ^= 0x40
	for name, c := range map[string]struct {
		body []byte
		enc  string
	}{
		"damaged frame":    {flipped, encZstdDict},
		"cut frame":        {z[:len(z)-3], encZstdDict},
		"unknown encoding": {z, "gzip"},
		"raw, said zstd":   {body, encZstd},
	} {
		m := msgs([][]byte{c.body}, []string{"5"})
		m[0].Header.Set(hdrEncoding, c.enc)
		_, err := decodeMessages(p, state.GenesisFrontier(), m)
		require.ErrorIs(t, err, ledger.ErrCorrupt, name)
	}
	small, enc := p.pack([]byte("x"))
	require.Equal(t, "", enc, "what does not shrink is stored as it is")
	require.Equal(t, []byte("x"), small)
}

// Reading from a frontier inside a packed message skips its lines up to
// the frontier's record, which must be there with the frontier's hash.
func TestDecodeFromInsideAMessage(t *testing.T) {
	lines, recs, err := encodeEvents(state.GenesisFrontier(), testEvents("m", 3, 1))
	require.NoError(t, err)
	body := bytes.Join(lines, nil)
	at := func(i int) state.Frontier { return state.Frontier{Seq: recs[i].Seq, Hash: recs[i].Hash, Offset: 1} }
	for i := range recs {
		got, err := decodeMessages(testPacker(t), at(i), msgs([][]byte{body}, []string{"3"}))
		require.NoError(t, err)
		require.Len(t, got, len(recs)-i-1, "after record %d", i)
		for j, r := range got {
			require.Equal(t, recs[i+1+j].Hash, r.Hash)
			require.Equal(t, int64(1), r.Offset, "a record's Offset is its message's stream sequence")
		}
	}
	other := at(1)
	other.Hash = recs[0].Hash
	_, err = decodeMessages(testPacker(t), other, msgs([][]byte{body}, []string{"3"}))
	require.ErrorIs(t, err, ledger.ErrCorrupt, "another hash at the frontier's seq")
	past := at(2)
	past.Seq = 7
	_, err = decodeMessages(testPacker(t), past, msgs([][]byte{body}, []string{"3"}))
	require.ErrorIs(t, err, ledger.ErrCorrupt, "the frontier's message does not hold its record")
}

// packLines keeps whole lines, in order, under the room it is given, and
// splitMessage gives them back.
func TestPackLines(t *testing.T) {
	lines, _, err := encodeEvents(state.GenesisFrontier(), testEvents("p", 7, 1))
	require.NoError(t, err)
	for _, room := range []int{1, len(lines[0]), 2*len(lines[0]) + 10, 1 << 20} {
		bodies, counts := packLines(lines, room)
		require.Len(t, counts, len(bodies))
		var back [][]byte
		for i, b := range bodies {
			require.True(t, len(b) <= room || counts[i] == 1, "room %d: message %d is %d bytes", room, i, len(b))
			got, err := splitMessage(b, strconv.Itoa(counts[i]))
			require.NoError(t, err)
			back = append(back, got...)
		}
		require.Equal(t, lines, back, "room %d", room)
	}
	bodies, counts := packLines(lines, 1<<20)
	require.Equal(t, []int{7}, counts, "an append that fits is one message")
	require.Len(t, bodies, 1)
}

// FuzzSplitMessage: whatever splitMessage accepts is the header's count
// (one without a header) of non-empty lines, each ending in its only
// newline, that join back to the body byte for byte; and the header it
// accepts spells the count it read in the one way packLines writes it.
func FuzzSplitMessage(f *testing.F) {
	lines, _, err := encodeEvents(state.GenesisFrontier(), testEvents("f", 3, 1))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(lines[0], "")
	f.Add(bytes.Join(lines, nil), "3")
	f.Add([]byte("a\nb\n"), "2")
	f.Add([]byte("a\n\n"), "2")
	f.Add([]byte("a\nb"), "1")
	f.Add([]byte{}, "")
	f.Add([]byte("x\n"), "01")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		got, err := splitMessage(body, header)
		if err != nil {
			return
		}
		want := 1
		if header != "" {
			want, err = strconv.Atoi(header)
			if err != nil || strconv.Itoa(want) != header {
				t.Fatalf("accepted header %q", header)
			}
		}
		if len(got) != want {
			t.Fatalf("header %q: %d lines", header, len(got))
		}
		for _, l := range got {
			if len(l) < 2 || bytes.IndexByte(l, '\n') != len(l)-1 {
				t.Fatalf("line %q", l)
			}
		}
		if !bytes.Equal(bytes.Join(got, nil), body) {
			t.Fatalf("lines do not join back to the body")
		}
		if _, c := packLines(got, len(body)); len(c) != 1 || c[0] != want {
			t.Fatalf("packLines regroups the lines as %v", c)
		}
	})
}
