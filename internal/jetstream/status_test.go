package jetstream

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// A checkpoint-only batch with a status is guarded by the ledger too: it
// is refused once another writer has appended, and then stores nothing,
// status included. The head of the checkpoint carries the batch's extra
// headers; Get finds a run's record by stream sequence and only that
// run's.
func TestCommitBatchStatusGuardsTheLedger(t *testing.T) {
	_, _, st := open(t, Options{})
	l := st.Ledger
	c0, err := l.CommitBatch(ctx(t), run, Frontier{}, Batch{Records: records("r", 2, 50), Checkpoint: []byte("ck0"), Status: []byte(`{"g":1}`),
		Header: nats.Header{"Acr-Generation": {"1"}}})
	must(t, err)
	seq, h, err := l.CheckpointHead(ctx(t), run)
	must(t, err)
	if seq != c0.Frontier.Checkpoint || h.Get("Acr-Generation") != "1" {
		t.Fatalf("head: seq %d headers %v, want seq %d generation 1", seq, h, c0.Frontier.Checkpoint)
	}
	rec, err := l.Get(ctx(t), run, c0.Frontier.Ledger)
	must(t, err)
	if string(rec.Data) != string(records("r", 2, 50)[1]) {
		t.Fatalf("get: %q", rec.Data)
	}
	_, err = l.Get(ctx(t), "other", c0.Frontier.Ledger)
	wantErr(t, err, ErrNotFound)
	_, err = l.Get(ctx(t), run, c0.Frontier.Checkpoint)
	wantErr(t, err, ErrNotFound)

	// Another writer appends; a checkpoint at the old ledger frontier is
	// refused although the checkpoint itself has not moved.
	c1, err := l.Append(ctx(t), run, c0.Frontier.Ledger, records("other", 1, 50))
	must(t, err)
	_, err = l.CommitBatch(ctx(t), run, c0.Frontier, Batch{Checkpoint: []byte("stale"), Status: []byte(`{"g":2}`)})
	wantErr(t, err, ErrConflict)
	ck, _, err := l.Checkpoint(ctx(t), run)
	must(t, err)
	if string(ck) != "ck0" {
		t.Fatalf("checkpoint %q after a refused commit", ck)
	}
	var statuses []string
	must(t, l.Statuses(ctx(t), func(r string, b []byte) error { statuses = append(statuses, r+"="+string(b)); return nil }))
	if len(statuses) != 1 || statuses[0] != run+`={"g":1}` {
		t.Fatalf("statuses %v", statuses)
	}

	at := Frontier{Ledger: c1.Frontier.Ledger, Checkpoint: c0.Frontier.Checkpoint}
	c2, err := l.CommitBatch(ctx(t), run, at, Batch{Checkpoint: []byte("ck2"), Status: []byte(`{"g":2}`)})
	must(t, err)
	if c2.Frontier.Ledger != c1.Frontier.Ledger || c2.Frontier.Checkpoint != c2.First {
		t.Fatalf("checkpoint-only commit: %+v", c2)
	}
	// The same commit again is recognised by its checkpoint parts.
	again, err := l.CommitBatch(ctx(t), run, at, Batch{Checkpoint: []byte("ck2"), Status: []byte(`{"g":2}`)})
	must(t, err)
	if !again.Duplicate || again.Frontier != c2.Frontier {
		t.Fatalf("retry: %+v, first: %+v", again, c2)
	}
}

// A multi-last direct get answers at most 1024 subjects; Statuses then
// reads them with a consumer, which it deletes.
func TestStatusesBeyondOneRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 1100 statuses")
	}
	_, nc, st := open(t, Options{MemoryStorage: true})
	js, err := natsjs.New(nc)
	must(t, err)
	const n = 1100
	for i := range n {
		if _, err := js.PublishAsync(testNames.StatusSubject(fmt.Sprintf("r%04d", i)), []byte("s")); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(20 * time.Second):
		t.Fatal("publishing timed out")
	}
	err = readLastPerSubject(ctx(t), &policy{}, nc, testNames.RunsStream(), testNames.Prefix+".status.*", func(string, *nats.Msg) error { return nil })
	if !errors.Is(err, errTooManySubjects) {
		t.Fatalf("one request for %d subjects: %v", n, err)
	}
	seen := map[string]bool{}
	must(t, st.Ledger.Statuses(ctx(t), func(r string, _ []byte) error { seen[r] = true; return nil }))
	if len(seen) != n {
		t.Fatalf("%d statuses, want %d", len(seen), n)
	}
	s, err := js.Stream(context.Background(), testNames.RunsStream())
	must(t, err)
	info, err := s.Info(ctx(t))
	must(t, err)
	if info.State.Consumers != 0 {
		t.Fatalf("%d consumers left", info.State.Consumers)
	}
}
