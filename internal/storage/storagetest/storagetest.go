package storagetest

import (
	"bytes"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// Backend is one run on the backend under test, as one process has it
// open.
type Backend struct {
	// RunID is the run's id, which its checkpoints must name.
	RunID       string
	Checkpoints storage.Checkpoints
	Ledger      storage.Ledger
	Inbox       storage.Inbox

	// Reopen opens the same run as another process would, now: it sees
	// what is durable. A backend that admits one writer at a time
	// (Features.Exclusive) fails with storage.ErrBusy while this one
	// holds the run.
	Reopen func(t testing.TB) (Backend, error)
	// Close ends this process's hold on the run as its exit would (a
	// kill included): locks and connections go, nothing is flushed or
	// tidied.
	Close func()
	// Put leaves an item (a *state.WakeSignal, *state.Approval or
	// *state.StopRequest) in the run's inbox as `acr wake`, `approve` or
	// `stop` would from another process, and returns its id.
	Put func(v any) (string, error)
	// PutRaw leaves bytes that are not a valid item in the inbox under
	// id; List reports them as rejected under the name id + ".json".
	PutRaw func(id string, b []byte) error
	// CrashAppend appends events as a process killed in the middle of
	// the write would leave them, and ends this process (Close). The
	// test reopens the run afterwards.
	CrashAppend func(t testing.TB, events []event.Event)

	Features Features
}

// Features are what a backend promises beyond the common contract.
type Features struct {
	// AtomicAppend: an append cut short by a crash leaves all of its
	// events or none (otherwise a prefix of them, after Repair).
	AtomicAppend bool
	// Exclusive: one process holds a run at a time; Reopen fails with
	// storage.ErrBusy until the holder closes.
	Exclusive bool
	// Fenced: a handle that another writer has overtaken (it appended or
	// committed since this one read the run) stores nothing, ledger
	// appends and checkpoint commits alike (storage.ErrConflict).
	Fenced bool
	// Expiry, when not zero, says that an expired wake signal leaves the
	// inbox by itself, at most this long after its expires_at (otherwise
	// it stays for the kernel to reject).
	Expiry time.Duration
}

// Run runs the conformance suite; open returns a fresh run each time it
// is called. Cases run in parallel.
func Run(t *testing.T, open func(t *testing.T) Backend) {
	cases := []struct {
		name string
		fn   func(t *testing.T, open func(*testing.T) Backend)
	}{
		{"CheckpointFreshRunHasNone", checkpointFreshRunHasNone},
		{"CheckpointCompareAndSwap", checkpointCompareAndSwap},
		{"CheckpointLoadsWhatWasCommitted", checkpointLoadsWhatWasCommitted},
		{"LedgerAppendAndRead", ledgerAppendAndRead},
		{"LedgerReopenContinuesTheChain", ledgerReopenContinuesTheChain},
		{"LedgerCheckFrontier", ledgerCheckFrontier},
		{"LedgerRepairOnACleanLedgerCutsNothing", ledgerRepairClean},
		{"LedgerCrashedAppendLeavesAPrefix", ledgerCrashedAppend},
		{"InboxListAndConsume", inboxListAndConsume},
		{"InboxQuarantine", inboxQuarantine},
		{"InboxExpiry", inboxExpiry},
		{"TwoWriters", twoWriters},
		{"StaleWriterStoresNothing", staleWriter},
	}
	if len(cases) == 0 {
		t.Fatal("storagetest: no cases")
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			c.fn(t, open)
		})
	}
}

// events returns n events of cycle, tagged so that two calls with other
// tags differ.
func events(tag string, n int, cycle int64) []event.Event {
	evs := make([]event.Event, n)
	for i := range evs {
		obj, err := event.NewObject("note", map[string]any{"tag": tag, "i": i, "text": fmt.Sprintf("event <%d> of %s ü", i, tag)})
		if err != nil {
			panic(err)
		}
		evs[i] = event.Event{Type: event.Observed, RunID: "run:conformance", CycleSeq: cycle, At: "2026-01-01T00:00:00Z",
			Object: obj, Reasons: []string{"conformance"}}
	}
	return evs
}

func refs(t *testing.T, evs []event.Event) []codec.Ref {
	t.Helper()
	out := make([]codec.Ref, len(evs))
	for i := range evs {
		r, err := evs[i].Ref()
		require.NoError(t, err)
		out[i] = r
	}
	return out
}

func recRefs(recs []event.Record) []codec.Ref {
	out := make([]codec.Ref, len(recs))
	for i, r := range recs {
		out[i] = r.Ref
	}
	return out
}

// commit builds a commit of files at the ledger's frontier.
func commit(b Backend, expect int64, files map[string][]byte) storage.Commit {
	return storage.Commit{Expect: expect, RunID: b.RunID, CycleSeq: expect + 1, Revision: "conformance",
		Frontier: b.Ledger.Frontier(), Files: files}
}

func files(tag string) map[string][]byte {
	return map[string][]byte{
		"run_state": fmt.Appendf(nil, `{"tag":%q}`, tag),
		"strategy":  fmt.Appendf(nil, `{"strategy":%q}`, tag),
	}
}

// sameFiles fails unless got holds exactly want's names with want's bytes.
func sameFiles(t *testing.T, want, got map[string][]byte) {
	t.Helper()
	require.Len(t, got, len(want), "checkpoint files")
	for name, w := range want {
		g, ok := got[name]
		require.True(t, ok, "file %s missing", name)
		require.True(t, bytes.Equal(w, g), "file %s: got %d bytes, want %d", name, len(g), len(w))
	}
}

// loads fails unless the checkpoint is m with files.
func loads(t *testing.T, b Backend, m storage.Manifest, want map[string][]byte) {
	t.Helper()
	snap, err := b.Checkpoints.Load()
	require.NoError(t, err)
	require.Equal(t, m, snap.Manifest)
	sameFiles(t, want, snap.Files)
}

// reopen ends b's process and opens the run again.
func reopen(t *testing.T, b Backend) Backend {
	t.Helper()
	b.Close()
	n, err := b.Reopen(t)
	require.NoError(t, err)
	t.Cleanup(n.Close)
	return n
}

// checkChain fails unless recs are seqs 1.. chained from genesis, each
// hash the next one's chain.
func checkChain(t *testing.T, recs []event.Record) {
	t.Helper()
	prev := state.GenesisHash
	for i, r := range recs {
		require.Equal(t, int64(i+1), r.Seq, "record %d seq", i)
		require.Equal(t, prev, r.Chain, "record %d chain", i)
		require.NotEmpty(t, r.Hash)
		prev = r.Hash
	}
}

func checkpointFreshRunHasNone(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	_, err := b.Checkpoints.Load()
	require.ErrorIs(t, err, storage.ErrNoRun)
}

func checkpointCompareAndSwap(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	_, err := b.Checkpoints.Commit(commit(b, 1, files("ahead")))
	require.ErrorIs(t, err, storage.ErrConflict, "a first commit must expect generation 0")
	_, err = b.Checkpoints.Load()
	require.ErrorIs(t, err, storage.ErrNoRun, "the refused commit stored nothing")

	f1 := files("one")
	m1, err := b.Checkpoints.Commit(commit(b, 0, f1))
	require.NoError(t, err)
	require.Equal(t, int64(1), m1.Generation)
	loads(t, b, m1, f1)

	_, err = b.Checkpoints.Commit(commit(b, 0, files("stale")))
	require.ErrorIs(t, err, storage.ErrConflict)
	loads(t, b, m1, f1)

	f2 := files("two")
	m2, err := b.Checkpoints.Commit(commit(b, 1, f2))
	require.NoError(t, err)
	require.Equal(t, int64(2), m2.Generation)
	loads(t, b, m2, f2)

	for _, expect := range []int64{0, 1, 3} {
		_, err = b.Checkpoints.Commit(commit(b, expect, files("wrong")))
		require.ErrorIs(t, err, storage.ErrConflict, "expect %d", expect)
	}
	loads(t, b, m2, f2)
}

func checkpointLoadsWhatWasCommitted(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	_, err := b.Ledger.Append(events("before", 3, 1))
	require.NoError(t, err)
	big := make([]byte, 1536<<10) // above one NATS message
	for i := range big {
		big[i] = byte(i * 7)
	}
	f1 := map[string][]byte{"run_state": []byte(`{"cycle":7}`), "big": big, "empty": {}}
	c := storage.Commit{RunID: b.RunID, CycleSeq: 7, Revision: "rev-x", Frontier: b.Ledger.Frontier(), Files: f1}
	m, err := b.Checkpoints.Commit(c)
	require.NoError(t, err)
	assert.Equal(t, storage.ManifestSchema, m.Schema)
	assert.Equal(t, int64(1), m.Generation)
	assert.Equal(t, b.RunID, m.RunID)
	assert.Equal(t, int64(7), m.CycleSeq)
	assert.Equal(t, "rev-x", m.WrittenAtRevision)
	assert.Equal(t, c.Frontier, m.LedgerFrontier)
	assert.Equal(t, m.Sum(), m.Checksum)
	for name, data := range f1 {
		assert.Equal(t, int64(len(data)), m.Files[name].Size, name)
		assert.Equal(t, codec.FingerprintOf(data), m.Files[name].SHA256, name)
	}
	loads(t, b, m, f1)

	b = reopen(t, b)
	loads(t, b, m, f1)

	f2 := map[string][]byte{"run_state": []byte(`{"cycle":8}`)}
	m2, err := b.Checkpoints.Commit(storage.Commit{Expect: 1, RunID: b.RunID, CycleSeq: 8, Revision: "rev-y", Frontier: b.Ledger.Frontier(), Files: f2})
	require.NoError(t, err)
	loads(t, b, m2, f2)
	b = reopen(t, b)
	loads(t, b, m2, f2)
}

func ledgerAppendAndRead(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	l := b.Ledger
	require.Equal(t, int64(0), l.Frontier().Seq)
	require.Equal(t, state.GenesisHash, l.Frontier().Hash)
	genesis := l.Frontier()
	none, err := l.After(genesis)
	require.NoError(t, err)
	require.Empty(t, none)

	var all []event.Record
	var fronts []state.Frontier
	var want []codec.Ref
	for i, n := range []int{3, 1, 10} {
		evs := events(fmt.Sprint("batch", i), n, int64(i+1))
		recs, err := l.Append(evs)
		require.NoError(t, err)
		require.Len(t, recs, n)
		require.Equal(t, refs(t, evs), recRefs(recs))
		all = append(all, recs...)
		want = append(want, refs(t, evs)...)
		last := recs[len(recs)-1]
		require.Equal(t, last.Seq, l.Frontier().Seq)
		require.Equal(t, last.Hash, l.Frontier().Hash)
		fronts = append(fronts, l.Frontier())
	}
	checkChain(t, all)

	recs, err := l.Append(nil)
	require.NoError(t, err)
	require.Empty(t, recs)
	require.Equal(t, fronts[2], l.Frontier(), "an empty append moves nothing")

	got, err := l.After(genesis)
	require.NoError(t, err)
	require.Equal(t, want, recRefs(got))
	for i := range got {
		require.Equal(t, all[i].Seq, got[i].Seq)
		require.Equal(t, all[i].Chain, got[i].Chain)
		require.Equal(t, all[i].Hash, got[i].Hash)
		require.Equal(t, all[i].Offset, got[i].Offset, "record %d offset", i)
		require.Equal(t, all[i].Length, got[i].Length, "record %d length", i)
		require.Equal(t, all[i].Event.Type, got[i].Event.Type)
		require.Equal(t, all[i].Event.Object.Ref, got[i].Event.Object.Ref)
	}
	tail, err := l.After(fronts[0])
	require.NoError(t, err)
	require.Equal(t, want[3:], recRefs(tail), "read from a position")
	tail, err = l.After(fronts[1])
	require.NoError(t, err)
	require.Equal(t, want[4:], recRefs(tail))
	tail, err = l.After(fronts[2])
	require.NoError(t, err)
	require.Empty(t, tail)
}

func ledgerReopenContinuesTheChain(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	first := append(events("a", 2, 1), events("b", 3, 2)...)
	_, err := b.Ledger.Append(first[:2])
	require.NoError(t, err)
	_, err = b.Ledger.Append(first[2:])
	require.NoError(t, err)
	front := b.Ledger.Frontier()

	b = reopen(t, b)
	require.Equal(t, front, b.Ledger.Frontier(), "a reopened ledger starts where the last one ended")
	require.NoError(t, b.Ledger.CheckFrontier(front))
	more := events("c", 4, 3)
	recs, err := b.Ledger.Append(more)
	require.NoError(t, err)
	require.Equal(t, front.Seq+1, recs[0].Seq)
	require.Equal(t, front.Hash, recs[0].Chain)

	b = reopen(t, b)
	got, err := b.Ledger.After(state.GenesisFrontier())
	require.NoError(t, err)
	checkChain(t, got)
	require.Equal(t, append(refs(t, first), refs(t, more)...), recRefs(got))
}

func ledgerCheckFrontier(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	l := b.Ledger
	fronts := []state.Frontier{l.Frontier()}
	for i := range 3 {
		_, err := l.Append(events(fmt.Sprint("f", i), i+1, int64(i+1)))
		require.NoError(t, err)
		fronts = append(fronts, l.Frontier())
	}
	for i, f := range fronts {
		require.NoError(t, l.CheckFrontier(f), "frontier %d", i)
	}
	last := fronts[3]
	past := state.Frontier{Seq: last.Seq + 1, Hash: last.Hash, Offset: last.Offset + 1000}
	require.ErrorIs(t, l.CheckFrontier(past), ledger.ErrBehind, "a frontier past the end")

	mid := fronts[2]
	other := mid
	other.Hash = "sha256:" + codec.Digest([]byte("another record"))
	require.ErrorIs(t, l.CheckFrontier(other), ledger.ErrCorrupt, "another hash at the frontier")
	other = mid
	other.Seq--
	require.ErrorIs(t, l.CheckFrontier(other), ledger.ErrCorrupt, "another seq at the frontier")
	bad := state.Frontier{Seq: 0, Hash: mid.Hash}
	require.ErrorIs(t, l.CheckFrontier(bad), ledger.ErrCorrupt, "a malformed genesis")

	b = reopen(t, b)
	for i, f := range fronts {
		require.NoError(t, b.Ledger.CheckFrontier(f), "frontier %d after reopen", i)
	}
	require.ErrorIs(t, b.Ledger.CheckFrontier(past), ledger.ErrBehind)
}

func ledgerRepairClean(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	r, err := b.Ledger.Repair()
	require.NoError(t, err)
	require.Nil(t, r, "a fresh ledger")
	_, err = b.Ledger.Append(events("x", 3, 1))
	require.NoError(t, err)
	r, err = b.Ledger.Repair()
	require.NoError(t, err)
	require.Nil(t, r, "after appends")
	b = reopen(t, b)
	r, err = b.Ledger.Repair()
	require.NoError(t, err)
	require.Nil(t, r, "after a clean reopen")
}

func ledgerCrashedAppend(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	base := events("base", 3, 1)
	_, err := b.Ledger.Append(base)
	require.NoError(t, err)
	front := b.Ledger.Frontier()
	lost := events("crash", 5, 2)
	b.CrashAppend(t, lost)

	n, err := b.Reopen(t)
	require.NoError(t, err)
	t.Cleanup(n.Close)
	require.NoError(t, n.Ledger.CheckFrontier(front), "what was durable before the crash is intact")
	r, err := n.Ledger.Repair()
	require.NoError(t, err)
	if r != nil {
		require.Positive(t, r.Length, "a repair cuts something")
	}
	r, err = n.Ledger.Repair()
	require.NoError(t, err)
	require.Nil(t, r, "a second repair cuts nothing")

	got, err := n.Ledger.After(state.GenesisFrontier())
	require.NoError(t, err)
	checkChain(t, got)
	require.GreaterOrEqual(t, len(got), len(base))
	require.Equal(t, refs(t, base), recRefs(got[:len(base)]))
	kept := got[len(base):]
	require.LessOrEqual(t, len(kept), len(lost))
	require.Equal(t, refs(t, lost[:len(kept)]), recRefs(kept), "what a crashed append leaves is a prefix of its batch")
	if b.Features.AtomicAppend {
		require.True(t, len(kept) == 0 || len(kept) == len(lost), "an atomic append left %d of %d events", len(kept), len(lost))
	}

	after := events("after", 2, 3)
	recs, err := n.Ledger.Append(after)
	require.NoError(t, err)
	require.Equal(t, int64(len(got)+1), recs[0].Seq)
	n = reopen(t, n)
	all, err := n.Ledger.After(state.GenesisFrontier())
	require.NoError(t, err)
	checkChain(t, all)
	require.Len(t, all, len(got)+len(after))
}

// Inbox items as the CLI makes them.
func wake(key, created, expires string) *state.WakeSignal {
	return &state.WakeSignal{Schema: state.WakeSignalSchema, Source: "external_event", DedupKey: key, CausalParent: "conformance",
		CreatedAt: created, ExpiresAt: expires, By: "operator"}
}

func approval(created string) *state.Approval {
	return &state.Approval{Schema: state.ApprovalSchema, ActionRef: codec.Ref("areq:sha256:" + codec.Digest([]byte("action"))),
		RequestCycle: 3, Verdict: "approve", By: "operator", CreatedAt: created}
}

func stop(created string) *state.StopRequest {
	return &state.StopRequest{Schema: state.StopSchema, By: "operator", Reason: "conformance", CreatedAt: created}
}

func sealed(t *testing.T, v any) (string, []byte) {
	t.Helper()
	id, b, err := inbox.Seal(v)
	require.NoError(t, err)
	return id, b
}

func listIDs(t *testing.T, ib storage.Inbox) []string {
	t.Helper()
	items, bad, err := ib.List()
	require.NoError(t, err)
	require.Empty(t, bad)
	ids := []string{}
	for _, it := range items {
		ids = append(ids, it.ID)
	}
	return ids
}

func inboxListAndConsume(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	require.Empty(t, listIDs(t, b.Inbox))

	far := time.Now().UTC().Add(24 * time.Hour).Format(time.RFC3339)
	wid, wbody := sealed(t, wake("k1", "2026-01-01T00:00:02Z", far))
	aid, abody := sealed(t, approval("2026-01-01T00:00:01Z"))
	sid, sbody := sealed(t, stop("2026-01-01T00:00:03Z"))
	for _, v := range []any{wake("k1", "2026-01-01T00:00:02Z", far), stop("2026-01-01T00:00:03Z"), approval("2026-01-01T00:00:01Z")} {
		_, err := b.Put(v)
		require.NoError(t, err)
	}
	id, err := b.Put(wake("k1", "2026-01-01T00:00:02Z", far))
	require.NoError(t, err)
	require.Equal(t, wid, id, "an item's id comes from its content")

	items, bad, err := b.Inbox.List()
	require.NoError(t, err)
	require.Empty(t, bad)
	require.Len(t, items, 3, "the same item written twice is one item")
	want := []struct {
		id   string
		kind inbox.Kind
		body []byte
	}{{aid, inbox.KindApproval, abody}, {wid, inbox.KindWake, wbody}, {sid, inbox.KindStop, sbody}}
	for i, w := range want {
		require.Equal(t, w.id, items[i].ID, "item %d (oldest first)", i)
		require.Equal(t, w.kind, items[i].Kind)
		require.Equal(t, w.body, items[i].Body)
	}

	require.NoError(t, b.Inbox.Consumed([]string{wid, "wake-000000000000000000000000"}))
	require.Equal(t, []string{aid, sid}, listIDs(t, b.Inbox))
	b = reopen(t, b)
	require.Equal(t, []string{aid, sid}, listIDs(t, b.Inbox), "consumption is durable")
	require.NoError(t, b.Inbox.Consumed([]string{aid, sid}))
	require.Empty(t, listIDs(t, b.Inbox))
	require.NoError(t, b.Inbox.Consumed(nil))
}

func inboxQuarantine(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	require.NoError(t, b.PutRaw("wake-garbage", []byte("not an item")))
	far := time.Now().UTC().Add(24 * time.Hour).Format(time.RFC3339)
	wid, err := b.Put(wake("q", "2026-01-01T00:00:00Z", far))
	require.NoError(t, err)

	items, bad, err := b.Inbox.List()
	require.NoError(t, err)
	require.Len(t, items, 1)
	require.Equal(t, wid, items[0].ID)
	require.Len(t, bad, 1)
	require.Equal(t, "wake-garbage.json", bad[0].Name)
	require.NotEmpty(t, bad[0].Reason)

	require.NoError(t, b.Inbox.Quarantine(bad[0].Name))
	require.Equal(t, []string{wid}, listIDs(t, b.Inbox))
	b = reopen(t, b)
	require.Equal(t, []string{wid}, listIDs(t, b.Inbox), "a quarantined item stays out")
}

func inboxExpiry(t *testing.T, open func(*testing.T) Backend) {
	b := open(t)
	if b.Features.Expiry == 0 {
		t.Skip("the backend keeps expired items for the kernel to reject")
	}
	now := time.Now().UTC()
	exp := now.Truncate(time.Second).Add(2 * time.Second)
	far := now.Add(24 * time.Hour).Format(time.RFC3339)
	short, err := b.Put(wake("soon", now.Format(time.RFC3339), exp.Format(time.RFC3339)))
	require.NoError(t, err)
	long, err := b.Put(wake("later", now.Format(time.RFC3339), far))
	require.NoError(t, err)
	require.ElementsMatch(t, []string{short, long}, listIDs(t, b.Inbox))
	deadline := exp.Add(b.Features.Expiry)
	for {
		ids := listIDs(t, b.Inbox)
		if len(ids) == 1 {
			require.Equal(t, []string{long}, ids)
			require.False(t, time.Now().Before(exp), "an item left before it expired")
			return
		}
		require.True(t, time.Now().Before(deadline), "the expired item is still listed %v after its expiry", time.Since(exp))
		time.Sleep(100 * time.Millisecond)
	}
}

func twoWriters(t *testing.T, open func(*testing.T) Backend) {
	a := open(t)
	base := events("base", 2, 1)
	_, err := a.Ledger.Append(base)
	require.NoError(t, err)
	_, err = a.Checkpoints.Commit(commit(a, 0, files("base")))
	require.NoError(t, err)

	b, err := a.Reopen(t)
	if a.Features.Exclusive {
		require.ErrorIs(t, err, storage.ErrBusy, "a second writer while the first holds the run")
		a.Close()
		b, err = a.Reopen(t)
		require.NoError(t, err, "once the first writer is gone")
		b.Close()
		return
	}
	require.NoError(t, err)
	t.Cleanup(b.Close)
	if !a.Features.Fenced {
		t.Fatal("a backend that lets two writers open a run must fence them")
	}
	for _, w := range []Backend{a, b} {
		snap, err := w.Checkpoints.Load()
		require.NoError(t, err)
		require.Equal(t, int64(1), snap.Manifest.Generation)
	}

	// Both commit on generation 1: one wins, the other stores nothing.
	ws := []Backend{a, b}
	var errs [2]error
	var ms [2]storage.Manifest
	var wg sync.WaitGroup
	for i, w := range ws {
		wg.Go(func() { ms[i], errs[i] = w.Checkpoints.Commit(commit(w, 1, files(fmt.Sprint("writer", i)))) })
	}
	wg.Wait()
	win := winner(t, errs[:])
	loads(t, a, ms[win], files(fmt.Sprint("writer", win)))

	// Both append at the same frontier: one wins, the other stores
	// nothing.
	batches := [][]event.Event{events("a", 3, 2), events("b", 3, 2)}
	for i, w := range ws {
		wg.Go(func() { _, errs[i] = w.Ledger.Append(batches[i]) })
	}
	wg.Wait()
	win = winner(t, errs[:])
	n := reopen(t, a)
	got, err := n.Ledger.After(state.GenesisFrontier())
	require.NoError(t, err)
	checkChain(t, got)
	require.Equal(t, append(refs(t, base), refs(t, batches[win])...), recRefs(got))
}

// winner returns the index of the one nil error among errs, the others
// being storage.ErrConflict.
func winner(t *testing.T, errs []error) int {
	t.Helper()
	win := -1
	for i, err := range errs {
		if err == nil {
			require.Equal(t, -1, win, "two writers both won")
			win = i
			continue
		}
		require.ErrorIs(t, err, storage.ErrConflict, "writer %d", i)
	}
	require.NotEqual(t, -1, win, "no writer won: %v", errors.Join(errs...))
	return win
}

func staleWriter(t *testing.T, open func(*testing.T) Backend) {
	a := open(t)
	base := events("base", 2, 1)
	_, err := a.Ledger.Append(base)
	require.NoError(t, err)
	m1, err := a.Checkpoints.Commit(commit(a, 0, files("a1")))
	require.NoError(t, err)
	staleFront := a.Ledger.Frontier()

	// a loses the run (its lock released, its lease expired) and b takes
	// over: first only appends.
	if a.Features.Exclusive {
		a.Close()
	}
	b, err := a.Reopen(t)
	require.NoError(t, err)
	t.Cleanup(b.Close)
	more := events("b", 3, 2)
	_, err = b.Ledger.Append(more)
	require.NoError(t, err)
	if a.Features.Fenced {
		_, err = a.Ledger.Append(events("stale", 1, 2))
		require.ErrorIs(t, err, storage.ErrConflict, "a stale append after another writer's")
		_, err = a.Checkpoints.Commit(storage.Commit{Expect: 1, RunID: a.RunID, CycleSeq: 2, Revision: "stale", Frontier: staleFront, Files: files("stale")})
		require.ErrorIs(t, err, storage.ErrConflict, "a stale checkpoint behind another writer's records")
		loads(t, b, m1, files("a1"))
	}

	// Then b commits: a's commit on the generation it knew stores nothing.
	m2, err := b.Checkpoints.Commit(commit(b, 1, files("b2")))
	require.NoError(t, err)
	_, err = a.Checkpoints.Commit(storage.Commit{Expect: 1, RunID: a.RunID, CycleSeq: 2, Revision: "stale", Frontier: staleFront, Files: files("stale")})
	require.ErrorIs(t, err, storage.ErrConflict, "a stale checkpoint after another writer's")
	loads(t, b, m2, files("b2"))
	got, err := b.Ledger.After(state.GenesisFrontier())
	require.NoError(t, err)
	require.Equal(t, append(refs(t, base), refs(t, more)...), recRefs(got))
}
