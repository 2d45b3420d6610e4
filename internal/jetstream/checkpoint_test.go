package jetstream

import (
	"bytes"
	"context"
	"crypto/rand"
	"strconv"
	"sync"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// KV design: Create for the first checkpoint, Update on the revision read;
// a writer holding a stale revision stores nothing.
func TestCheckpointKVUpdateOnRevision(t *testing.T) {
	_, _, st := open(t, Options{KVCheckpoints: true})
	c := st.Checkpoints
	_, _, err := c.Get(ctx(t), run)
	wantErr(t, err, ErrNotFound)
	r1, err := c.Create(ctx(t), run, []byte("gen 1"))
	must(t, err)
	_, err = c.Create(ctx(t), run, []byte("gen 1 again"))
	wantErr(t, err, ErrConflict)

	// Two writers both read revision r1; the first update wins.
	r2, err := c.Update(ctx(t), run, []byte("gen 2 by A"), r1)
	must(t, err)
	_, err = c.Update(ctx(t), run, []byte("gen 2 by B"), r1)
	wantErr(t, err, ErrConflict)
	doc, rev, err := c.Get(ctx(t), run)
	must(t, err)
	if string(doc) != "gen 2 by A" || rev != r2 {
		t.Fatalf("got %q at %d, want gen 2 by A at %d", doc, rev, r2)
	}
}

// A KV value is one message: above the server's max_payload (1 MiB by
// default) the client refuses it before sending.
func TestCheckpointKVTooLarge(t *testing.T) {
	_, nc, st := open(t, Options{KVCheckpoints: true})
	big := make([]byte, nc.MaxPayload()+1)
	_, err := st.Checkpoints.Create(ctx(t), run, big)
	wantErr(t, err, ErrTooLarge)
}

// Recommended design: a cycle's records and its checkpoint commit in one
// atomic batch. The checkpoint is read back whole with the frontier of its
// commit, may exceed max_payload (it is split into parts), and replacing
// it purges the previous parts in the same step.
func TestCommitLedgerAndCheckpointTogether(t *testing.T) {
	_, nc, st := open(t, Options{})
	l := st.Ledger
	_, _, err := l.Checkpoint(ctx(t), run)
	wantErr(t, err, ErrNotFound)

	ck1 := make([]byte, 2*nc.MaxPayload()+12345) // three parts
	rand.Read(ck1)
	recs1 := records("cycle1", 10, 300)
	c1, err := l.Commit(ctx(t), run, Frontier{}, recs1, ck1)
	must(t, err)
	if c1.Frontier.Ledger != c1.First+9 || c1.Frontier.Checkpoint != c1.First+12 {
		t.Fatalf("frontier %+v from first %d", c1.Frontier, c1.First)
	}
	got, f, err := l.Checkpoint(ctx(t), run)
	must(t, err)
	if !bytes.Equal(got, ck1) || f != c1.Frontier {
		t.Fatalf("checkpoint %d bytes at %+v, want %d at %+v", len(got), f, len(ck1), c1.Frontier)
	}

	ck2 := []byte(`{"cycle":2}`)
	recs2 := records("cycle2", 5, 300)
	c2, err := l.Commit(ctx(t), run, f, recs2, ck2)
	must(t, err)
	got, f, err = l.Checkpoint(ctx(t), run)
	must(t, err)
	if !bytes.Equal(got, ck2) || f != c2.Frontier {
		t.Fatalf("checkpoint %q at %+v, want %q at %+v", got, f, ck2, c2.Frontier)
	}
	sameData(t, readAll(t, l, run, 0), append(recs1, recs2...))

	// The three parts of ck1 are gone: the subject holds ck2 only.
	s, err := natsjs.New(nc)
	must(t, err)
	str, err := s.Stream(ctx(t), testNames.RunsStream())
	must(t, err)
	info, err := str.Info(ctx(t), natsjs.WithSubjectFilter(testNames.CheckpointSubject(run)))
	must(t, err)
	if n := info.State.Subjects[testNames.CheckpointSubject(run)]; n != 1 {
		t.Fatalf("checkpoint subject holds %d messages, want 1", n)
	}

	// A checkpoint-only commit (no records) is guarded by the checkpoint's
	// own sequence; the ledger frontier carries over.
	c3, err := l.Commit(ctx(t), run, c2.Frontier, nil, []byte(`{"cycle":3}`))
	must(t, err)
	_, f, err = l.Checkpoint(ctx(t), run)
	must(t, err)
	if f != c3.Frontier || f.Ledger != c2.Frontier.Ledger {
		t.Fatalf("after a checkpoint-only commit: %+v, want %+v", f, c3.Frontier)
	}

	// A retried commit is a duplicate, not a second cycle.
	again, err := l.Commit(ctx(t), run, c2.Frontier, nil, []byte(`{"cycle":3}`))
	must(t, err)
	if !again.Duplicate || again.Frontier != c3.Frontier {
		t.Fatalf("retried commit: %+v, want duplicate at %+v", again, c3.Frontier)
	}
}

// Stale writers of the combined commit: whether they race on records and
// checkpoint or on the checkpoint alone, one commit lands, the rest store
// nothing, and the stored checkpoint and ledger belong to the same writer.
func TestCommitStaleWriterStoresNothing(t *testing.T) {
	_, _, st := open(t, Options{})
	l := st.Ledger
	base, err := l.Commit(ctx(t), run, Frontier{}, records("init", 1, 100), []byte("ck0"))
	must(t, err)
	for _, withRecords := range []bool{true, false} {
		at := base.Frontier
		const writers = 3
		var wg sync.WaitGroup
		errs := make([]error, writers)
		res := make([]Committed, writers)
		for i := range writers {
			wg.Go(func() {
				var recs [][]byte
				if withRecords {
					recs = records("w"+strconv.Itoa(i), 4, 200)
				}
				res[i], errs[i] = l.Commit(context.Background(), run, at, recs, []byte("ck by "+strconv.Itoa(i)))
			})
		}
		wg.Wait()
		winner := -1
		for i, err := range errs {
			if err == nil {
				if winner >= 0 {
					t.Fatalf("writers %d and %d both committed", winner, i)
				}
				winner = i
				continue
			}
			wantErr(t, err, ErrConflict)
		}
		if winner < 0 {
			t.Fatalf("nobody committed: %v", errs)
		}
		ck, f, err := l.Checkpoint(ctx(t), run)
		must(t, err)
		if string(ck) != "ck by "+strconv.Itoa(winner) || f != res[winner].Frontier {
			t.Fatalf("checkpoint %q at %+v, want writer %d at %+v", ck, f, winner, res[winner].Frontier)
		}
		var want [][]byte
		if withRecords {
			want = records("w"+strconv.Itoa(winner), 4, 200)
		}
		sameData(t, readAll(t, l, run, at.Ledger), want)
		base = res[winner]
	}

	// A ledger-only append moves the ledger but not the checkpoint: a
	// commit still at the old ledger sequence is refused.
	c, err := l.Append(ctx(t), run, base.Frontier.Ledger, records("side", 1, 10))
	must(t, err)
	_, err = l.Commit(ctx(t), run, base.Frontier, records("late", 1, 10), []byte("late"))
	wantErr(t, err, ErrConflict)
	_, err = l.Commit(ctx(t), run, Frontier{Ledger: c.Frontier.Ledger, Checkpoint: base.Frontier.Checkpoint}, records("next", 1, 10), []byte("next"))
	must(t, err)
}
