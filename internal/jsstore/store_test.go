package jsstore

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// initRun appends a few events to a new run and commits its first
// checkpoint with a run_state naming disposition and wake.
func initRun(t *testing.T, s *Store, id, disposition, wake string) (*Run, *Ledger, *Checkpoints, storage.Manifest) {
	t.Helper()
	r, err := s.Run(ctx(t), id)
	require.NoError(t, err)
	l, err := r.CreateLedger()
	require.NoError(t, err)
	_, err = l.Append(testEvents(id, 3, 1))
	require.NoError(t, err)
	c := r.Checkpoints()
	m, err := c.Commit(storage.Commit{RunID: id, CycleSeq: 1, Frontier: l.Frontier(), Files: runState(disposition, wake)})
	require.NoError(t, err)
	return r, l, c, m
}

func runState(disposition, wake string) map[string][]byte {
	nw := "null"
	if wake != "" {
		nw = fmt.Sprintf(`{"at":%q,"reason":"test"}`, wake)
	}
	return map[string][]byte{"run_state": fmt.Appendf(nil, `{"loop_disposition":%q,"next_wake":%s,"status":"RUNNING","updated_at":"2026-01-01T00:00:00Z"}`, disposition, nw)}
}

// Every method that reaches the server fails with ErrUnavailable while it
// is away; once it is back, a reopened run finds everything committed
// before.
func TestUnavailable(t *testing.T) {
	srv := natstest.Start(t)
	nc, s := openStore(t, srv.ClientURL())
	r, l, c, m := initRun(t, s, "run:unavailable", "SLEEP", "")
	ib := r.Inbox()
	far := time.Now().UTC().Add(time.Hour).Format(time.RFC3339)
	_, err := ib.Put(&state.WakeSignal{Schema: state.WakeSignalSchema, Source: "external_event", DedupKey: "k", CreatedAt: "2026-01-01T00:00:00Z", ExpiresAt: far, By: "op"})
	require.NoError(t, err)
	items, _, err := ib.List()
	require.NoError(t, err)
	front := l.Frontier()

	srv.Shutdown()
	require.Eventually(t, func() bool { return !nc.IsConnected() }, 5*time.Second, 5*time.Millisecond, "the client sees the server go")
	ops := map[string]func() error{
		"open ledger": func() error { _, err := r.OpenLedger(); return err },
		"append":      func() error { _, err := l.Append(testEvents("x", 2, 2)); return err },
		"after":       func() error { _, err := l.After(state.GenesisFrontier()); return err },
		// The frontier of the message the handle holds is checked
		// without a request; one it does not hold is read.
		"check": func() error { return (&Ledger{run: r, front: l.front}).CheckFrontier(front) },
		"load":  func() error { _, err := c.Load(); return err },
		"commit": func() error {
			_, err := r.Checkpoints().Commit(storage.Commit{Expect: 1, RunID: r.ID, Frontier: front})
			return err
		},
		"list": func() error { _, _, err := ib.List(); return err },
		"put": func() error {
			_, err := ib.Put(&state.StopRequest{Schema: state.StopSchema, By: "op", CreatedAt: "2026-01-01T00:00:00Z"})
			return err
		},
		"consumed":      func() error { return ib.Consumed([]string{items[0].ID}) },
		"keys get":      func() error { _, _, err := r.Keys().Get("k"); return err },
		"keys create":   func() error { return r.Keys().Create("k", []byte("v")) },
		"keys put":      func() error { return r.Keys().Put("k", []byte("v")) },
		"acquire":       func() error { _, err := s.Acquire(ctx(t), r.ID, storage.Holder{Name: "w"}); return err },
		"runs":          func() error { _, err := s.Runs(ctx(t)); return err },
		"open store":    func() error { _, err := Open(ctx(t), nc, testOptions); return err },
		"dial":          func() error { _, err := Dial(ctx(t), srv.ClientURL()+"/t", testOptions); return err },
		"commit stored": func() error { _, err := c.Commit(storage.Commit{Expect: 1, RunID: r.ID, Frontier: front}); return err },
	}
	for name, op := range ops {
		err := op()
		require.ErrorIs(t, err, ErrUnavailable, name)
	}
	_, err = l.Append(testEvents("y", 1, 2))
	require.ErrorIs(t, err, ledger.ErrPoisoned, "after a failed append the handle refuses until reopened")

	srv.Restart()
	_, s2 := openStore(t, srv.ClientURL())
	r2, err := s2.Run(ctx(t), r.ID)
	require.NoError(t, err)
	l2, err := r2.OpenLedger()
	require.NoError(t, err)
	require.Equal(t, front, l2.Frontier(), "nothing half-written")
	snap, err := r2.Checkpoints().Load()
	require.NoError(t, err)
	require.Equal(t, m, snap.Manifest)
	require.NoError(t, l2.CheckFrontier(snap.Manifest.LedgerFrontier))
	_, err = l2.Append(testEvents("z", 2, 2))
	require.NoError(t, err)
}

// A worker whose lease expired (it paused longer than the TTL) stores
// nothing once another worker has taken the run: not a record, not a
// checkpoint. The sequences fence it, not the lease.
func TestStaleWriterAfterLeaseLoss(t *testing.T) {
	srv := natstest.Start(t)
	opts := testOptions
	opts.LeaseTTL = time.Second
	nc := connect(t, srv.ClientURL())
	s, err := Open(ctx(t), nc, opts)
	require.NoError(t, err)
	const id = "run:lease"

	la, err := s.Acquire(ctx(t), id, storage.Holder{Name: "worker-a"})
	require.NoError(t, err)
	_, err = s.Acquire(ctx(t), id, storage.Holder{Name: "worker-b"})
	require.ErrorIs(t, err, storage.ErrBusy)
	ra, l, ca, m1 := initRun(t, s, id, "CONTINUE", "")
	require.NoError(t, la.Renew(ctx(t)))

	// Worker a pauses past its TTL; b takes the lease and the run.
	var lb *Lease
	require.Eventually(t, func() bool {
		lb, err = s.Acquire(ctx(t), id, storage.Holder{Name: "worker-b"})
		return err == nil
	}, 5*time.Second, 50*time.Millisecond)
	require.Greater(t, lb.Token(), la.Token(), "the token grows")
	rb, err := s.Run(ctx(t), id)
	require.NoError(t, err)
	lbLedger, err := rb.OpenLedger()
	require.NoError(t, err)
	cb := rb.Checkpoints()
	snap, err := cb.Load()
	require.NoError(t, err)
	_, err = lbLedger.Append(testEvents("b", 2, 2))
	require.NoError(t, err)

	// a wakes up: its lease is gone, and its writes store nothing.
	require.ErrorIs(t, la.Renew(ctx(t)), ErrLeaseLost)
	_, err = l.Append(testEvents("a", 2, 2))
	require.ErrorIs(t, err, storage.ErrConflict)
	_, err = ca.Commit(storage.Commit{Expect: m1.Generation, RunID: id, CycleSeq: 2, Frontier: l.Frontier(), Files: runState("IDLE", "")})
	require.ErrorIs(t, err, storage.ErrConflict)

	m2, err := cb.Commit(storage.Commit{Expect: snap.Manifest.Generation, RunID: id, CycleSeq: 2, Frontier: lbLedger.Frontier(), Files: runState("SLEEP", "")})
	require.NoError(t, err)
	_, err = ra.Checkpoints().Commit(storage.Commit{Expect: m1.Generation, RunID: id, CycleSeq: 2, Frontier: lbLedger.Frontier(), Files: runState("IDLE", "")})
	require.ErrorIs(t, err, storage.ErrConflict, "even at the right frontier, the generation is stale")
	got, err := cb.Load()
	require.NoError(t, err)
	require.Equal(t, m2, got.Manifest)
	require.NoError(t, lb.Release(ctx(t)))
	require.ErrorIs(t, la.Release(ctx(t)), ErrLeaseLost)
}

// Keep renews a lease while it is held, and cancels its context with
// ErrLeaseLost once a renewal is refused.
func TestLeaseKeep(t *testing.T) {
	srv := natstest.Start(t)
	opts := testOptions
	opts.LeaseTTL = time.Second
	nc := connect(t, srv.ClientURL())
	s, err := Open(ctx(t), nc, opts)
	require.NoError(t, err)
	const id = "run:keep"

	l, err := s.Acquire(ctx(t), id, storage.Holder{Name: "w"})
	require.NoError(t, err)
	held, stop := l.Keep(ctx(t))
	time.Sleep(1500 * time.Millisecond) // past the TTL: only renewals keep it
	_, err = s.Acquire(ctx(t), id, storage.Holder{Name: "other"})
	require.ErrorIs(t, err, storage.ErrBusy, "a kept lease is held past its TTL")
	require.NoError(t, held.Err())

	// Someone deletes the key (an operator, or it expired unseen): the
	// next renewal fails and the context ends.
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	kv, err := js.KeyValue(ctx(t), "t-lease")
	require.NoError(t, err)
	require.NoError(t, kv.Purge(ctx(t), jetstream.Token(id)))
	select {
	case <-held.Done():
	case <-time.After(3 * time.Second):
		t.Fatal("the context outlived the lease")
	}
	require.ErrorIs(t, context.Cause(held), ErrLeaseLost)
	stop()
}

// Runs lists every run with a checkpoint and what the last one said,
// with its inbox count; Due picks the ones a worker should run.
func TestRunsAndDue(t *testing.T) {
	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	initRun(t, s, "run:continue", "CONTINUE", "")
	initRun(t, s, "run:slept", "SLEEP", "2026-03-01T11:59:00Z")
	initRun(t, s, "run:sleeps", "SLEEP", "2026-03-01T13:00:00Z")
	initRun(t, s, "run:idle", "IDLE", "")
	initRun(t, s, "run:stopped", "STOPPED", "")
	r, l, c, m := initRun(t, s, "run:waits", "WAIT_APPROVAL", "")
	_, err := r.Inbox().Put(&state.StopRequest{Schema: state.StopSchema, By: "op", CreatedAt: "2026-01-01T00:00:00Z"})
	require.NoError(t, err)
	// A second checkpoint replaces the first's status.
	_, err = l.Append(testEvents("more", 1, 2))
	require.NoError(t, err)
	m2, err := c.Commit(storage.Commit{Expect: m.Generation, RunID: r.ID, CycleSeq: 2, Frontier: l.Frontier(), Files: runState("WAIT_APPROVAL", "")})
	require.NoError(t, err)

	runs, err := s.Runs(ctx(t))
	require.NoError(t, err)
	var ids []string
	for _, st := range runs {
		ids = append(ids, st.RunID)
	}
	require.Equal(t, []string{"run:continue", "run:idle", "run:sleeps", "run:slept", "run:stopped", "run:waits"}, ids)
	waits := runs[5]
	require.Equal(t, Status{RunID: "run:waits", Generation: m2.Generation, CycleSeq: 2, RunStatus: "RUNNING", Disposition: "WAIT_APPROVAL",
		UpdatedAt: "2026-01-01T00:00:00Z", Inbox: 1}, waits)
	require.Equal(t, "2026-03-01T13:00:00Z", runs[2].NextWake)

	due, err := s.Due(ctx(t), now)
	require.NoError(t, err)
	ids = nil
	for _, st := range due {
		ids = append(ids, st.RunID)
	}
	require.Equal(t, []string{"run:continue", "run:slept", "run:waits"}, ids)
}

// Beyond the 1024 subjects one direct get answers, Runs reads the
// statuses with a consumer (jetstream's TestStatusesBeyondOneRequest
// checks that one request is refused).
func TestRunsBeyondOneRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("publishes 1100 statuses")
	}
	srv := natstest.Start(t)
	nc, s := openStore(t, srv.ClientURL())
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	const n = 1100
	names := jetstream.Names{Prefix: "t"}
	for i := range n {
		id := fmt.Sprintf("run:many:%04d", i)
		_, err := js.PublishAsync(names.StatusSubject(id), fmt.Appendf(nil, `{"run_id":%q,"generation":1,"cycle_seq":%d}`, id, i))
		require.NoError(t, err)
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(20 * time.Second):
		t.Fatal("publishing statuses timed out")
	}
	runs, err := s.Runs(ctx(t))
	require.NoError(t, err)
	require.Len(t, runs, n)
	require.Equal(t, "run:many:0000", runs[0].RunID)
	require.Equal(t, int64(n-1), runs[n-1].CycleSeq)
}

// Keys: first writer wins, a cache put overwrites, reads are by key.
func TestKeys(t *testing.T) {
	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:keys")
	require.NoError(t, err)
	k := r.Keys()
	const key = "idem:sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	_, ok, err := k.Get(key)
	require.NoError(t, err)
	require.False(t, ok)
	require.NoError(t, k.Create(key, []byte("first")))
	require.ErrorIs(t, k.Create(key, []byte("second")), ErrExists)
	b, ok, err := k.Get(key)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, "first", string(b))
	require.NoError(t, k.Put(key, []byte("cached")))
	b, _, err = k.Get(key)
	require.NoError(t, err)
	require.Equal(t, "cached", string(b))

	other, err := s.Run(ctx(t), "run:other")
	require.NoError(t, err)
	_, ok, err = other.Keys().Get(key)
	require.NoError(t, err)
	require.False(t, ok, "tables are per run")
}

func TestParseURL(t *testing.T) {
	for _, c := range []struct{ in, servers, prefix, err string }{
		{"nats://localhost:4222", "nats://localhost:4222", "", ""},
		{"nats://localhost:4222/", "nats://localhost:4222", "", ""},
		{"nats://h:4222/team-a", "nats://h:4222", "team-a", ""},
		{"tls://u:p@h:4222/acr", "tls://u:p@h:4222", "acr", ""},
		{"nats://a:1/p,nats://b:2/p", "nats://a:1,nats://b:2", "p", ""},
		{"nats://a:1/p,nats://b:2", "nats://a:1,nats://b:2", "p", ""},
		{"nats://a:1/p,nats://b:2/q", "", "", "two prefixes"},
		{"dir:./engine_state", "", "", "scheme"},
		{"nats:///p", "", "", "no host"},
		{"nats://h:1/a.b", "", "", "letters, digits"},
	} {
		servers, prefix, err := ParseURL(c.in)
		if c.err != "" {
			require.ErrorContains(t, err, c.err, c.in)
			continue
		}
		require.NoError(t, err, c.in)
		require.Equal(t, c.servers, servers, c.in)
		require.Equal(t, c.prefix, prefix, c.in)
	}
}

// Dial connects and opens the store a URL names, prefix included.
func TestDial(t *testing.T) {
	srv := natstest.Start(t)
	s, err := Dial(ctx(t), srv.ClientURL()+"/dialled", Options{}, nats.Name("acr test"))
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, "dialled", s.Prefix())
	_, _, _, _ = initRun(t, s, "run:dial", "IDLE", "")
	runs, err := s.Runs(ctx(t))
	require.NoError(t, err)
	require.Len(t, runs, 1)
}

// The status reads the run state's own encoding.
func TestStatusOfRunState(t *testing.T) {
	rs := state.RunState{RunID: "run:s", CycleSeq: 4, Status: state.RunRunning, LoopDisposition: state.Sleep,
		UpdatedAt: "2026-01-01T00:00:00Z", NextWake: &state.Wake{At: "2026-01-02T00:00:00Z", Reason: "sleep"}}
	b, err := codec.Marshal(rs)
	require.NoError(t, err)
	st := statusOf(storage.Commit{RunID: "run:s", CycleSeq: 4, Files: map[string][]byte{"run_state": b}}, storage.Manifest{Generation: 3})
	require.Equal(t, Status{RunID: "run:s", Generation: 3, CycleSeq: 4, RunStatus: "RUNNING", Disposition: "SLEEP",
		NextWake: "2026-01-02T00:00:00Z", UpdatedAt: "2026-01-01T00:00:00Z"}, st)
	require.False(t, st.Due(time.Date(2026, 1, 1, 23, 0, 0, 0, time.UTC)))
	require.True(t, st.Due(time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)))
	require.True(t, st.Takes(nil))
	require.True(t, st.Takes([]string{"gpu"}))

	spec, err := codec.Marshal(world.Spec{Schema: world.SpecSchema, Label: "gpu"})
	require.NoError(t, err)
	st = statusOf(storage.Commit{RunID: "run:s", CycleSeq: 4, Files: map[string][]byte{"run_state": b, "environment_spec": spec}}, storage.Manifest{Generation: 3})
	require.Equal(t, "gpu", st.Label)
	require.False(t, st.Takes(nil))
	require.False(t, st.Takes([]string{"eu"}))
	require.True(t, st.Takes([]string{"eu", "gpu"}))
}

// A worker watching the inbox hears of an item as it is put, from
// another process.
func TestWatchInbox(t *testing.T) {
	srv := natstest.Start(t)
	_, worker := openStore(t, srv.ClientURL())
	woken := make(chan string, 1)
	stop, err := worker.WatchInbox(func(run string) { woken <- run })
	require.NoError(t, err)
	defer stop()

	_, cli := openStore(t, srv.ClientURL())
	r, err := cli.Run(ctx(t), "run:woken")
	require.NoError(t, err)
	start := time.Now()
	_, err = r.Inbox().Put(&state.WakeSignal{Schema: state.WakeSignalSchema, Source: "external_event", DedupKey: "w",
		CreatedAt: "2026-01-01T00:00:00Z", ExpiresAt: time.Now().UTC().Add(time.Hour).Format(time.RFC3339), By: "op"})
	require.NoError(t, err)
	select {
	case run := <-woken:
		require.Equal(t, "run:woken", run)
		t.Logf("heard %v after the put began", time.Since(start))
	case <-time.After(5 * time.Second):
		t.Fatal("no notification")
	}
}

// readCountingStore opens a store on nc that counts its reads (readsNow).
// Counted reads must not depend on the machine's speed, so a watched
// inbox's read answers for an hour here (TestWatchedInboxRecheck takes
// that bound away).
func readCountingStore(t *testing.T, nc *nats.Conn) (*Store, func() int) {
	var mu sync.Mutex
	reads := 0
	opts := testOptions
	opts.Observe = func(c jetstream.Call) {
		if c.Op == "read" {
			mu.Lock()
			reads++
			mu.Unlock()
		}
	}
	opts.InboxRecheck = time.Hour
	s, err := Open(ctx(t), nc, opts)
	require.NoError(t, err)
	return s, func() int { mu.Lock(); defer mu.Unlock(); return reads }
}

// A watched inbox reads the stream only when an item was put since its
// last read: a List that finds nothing new sends the server nothing,
// an item put by another process on another connection between two Lists
// is seen, an item consumed is gone without a read, and after the
// connection was away (what was put meanwhile was not heard) the next
// List reads again.
func TestWatchedInboxReadsWhatCame(t *testing.T) {
	srv := natstest.Start(t)
	nc := connect(t, srv.ClientURL(), nats.MaxReconnects(-1))
	s, readsNow := readCountingStore(t, nc)
	r, err := s.Run(ctx(t), "run:watched")
	require.NoError(t, err)
	ib := r.Inbox()
	stop, err := ib.Watch()
	require.NoError(t, err)
	defer stop()

	items, _, err := ib.List()
	require.NoError(t, err)
	require.Empty(t, items)
	require.Equal(t, 1, readsNow(), "the first List reads the stream")
	for range 3 {
		items, _, err = ib.List()
		require.NoError(t, err)
		require.Empty(t, items)
	}
	require.Equal(t, 1, readsNow(), "Lists with nothing put since read nothing")

	// Another process answers, on a connection of its own.
	_, other := openStore(t, srv.ClientURL())
	ro, err := other.Run(ctx(t), "run:watched")
	require.NoError(t, err)
	id, err := ro.Inbox().Put(&state.StopRequest{Schema: state.StopSchema, By: "op", CreatedAt: "2026-01-01T00:00:00Z"})
	require.NoError(t, err)
	for i := 0; len(items) == 0; i++ {
		// Seen by the first List after the put in practice; a delivery
		// that came later would be seen by a later List, never missed.
		require.Less(t, i, 10000, "the item put is never seen")
		items, _, err = ib.List()
		require.NoError(t, err)
	}
	require.Len(t, items, 1)
	require.Equal(t, id, items[0].ID)
	n := readsNow()
	items, _, err = ib.List()
	require.NoError(t, err)
	require.Len(t, items, 1, "the item stays until consumed")
	require.Equal(t, n, readsNow(), "nothing put since the read that found it")

	require.NoError(t, ib.Consumed([]string{id}))
	items, _, err = ib.List()
	require.NoError(t, err)
	require.Empty(t, items)
	require.Equal(t, n, readsNow(), "a consumed item is gone from what the handle knows without a read")

	// The connection goes away and comes back: what was put meanwhile
	// was not heard, so the next List reads.
	srv.Restart()
	require.Eventually(t, func() bool { return nc.Stats().Reconnects > 0 && nc.IsConnected() }, 10*time.Second, 10*time.Millisecond)
	items, _, err = ib.List()
	require.NoError(t, err)
	require.Empty(t, items)
	require.Equal(t, n+1, readsNow(), "after a reconnect List reads the stream")

	// Unwatched, every List reads.
	stop()
	_, _, err = ib.List()
	require.NoError(t, err)
	require.Equal(t, n+2, readsNow())
}

// TestWatchedInboxRecheck: a subscriber hears a put as the server
// receives it, before the stream stores it, and on a replicated stream
// a read may be answered by a replica still without it. A key heard
// and not yet found is read for by every List until a read finds it;
// and a read answers for InboxRecheck at most, whatever was heard.
func TestWatchedInboxRecheck(t *testing.T) {
	srv := natstest.Start(t)
	s, readsNow := readCountingStore(t, connect(t, srv.ClientURL()))
	r, err := s.Run(ctx(t), "run:recheck")
	require.NoError(t, err)
	ib := r.Inbox()
	stop, err := ib.Watch()
	require.NoError(t, err)
	defer stop()
	_, _, err = ib.List()
	require.NoError(t, err)
	require.Equal(t, 1, readsNow())

	// Heard, not stored: the stream refuses the message (its expected
	// last sequence is wrong), the subscriber hears it all the same, as
	// it would hear a put a lagging replica does not hold yet.
	ghost := &nats.Msg{Subject: s.blocks.Names.InboxSubject(r.ID), Header: nats.Header{}, Data: []byte("{}")}
	ghost.Header.Set("Acr-Key", "ghost")
	ghost.Header.Set("Nats-Expected-Last-Sequence", "999999")
	other := connect(t, srv.ClientURL())
	require.NoError(t, other.PublishMsg(ghost))
	require.NoError(t, other.Flush())
	for i := 0; readsNow() == 1; i++ {
		require.Less(t, i, 10000, "the message is never heard")
		_, _, err = ib.List()
		require.NoError(t, err)
	}
	n := readsNow()
	for range 3 {
		items, _, err := ib.List()
		require.NoError(t, err)
		require.Empty(t, items)
	}
	require.Equal(t, n+3, readsNow(), "a key heard and not found is read for by every List")

	// The stream holds it now (a garbage body under the same key): the
	// read that finds it ends the reading.
	require.NoError(t, ib.putRaw("ghost", []byte("not json")))
	for i := 0; ; i++ {
		require.Less(t, i, 10000, "the stored message is never found")
		_, bad, err := ib.List()
		require.NoError(t, err)
		if len(bad) == 1 {
			break
		}
	}
	// The put's own delivery may come after the read that found it: the
	// next List's flush takes it in (and reads once more for it).
	_, _, err = ib.List()
	require.NoError(t, err)
	n = readsNow()
	for range 3 {
		_, bad, err := ib.List()
		require.NoError(t, err)
		require.Len(t, bad, 1)
	}
	require.Equal(t, n, readsNow(), "found: nothing more to read for")

	// A read answers for InboxRecheck at most: past it, a List reads
	// again though nothing was heard (a put whose delivery was lost).
	ib.w.maxAge = 0
	_, _, err = ib.List()
	require.NoError(t, err)
	require.Equal(t, n+1, readsNow())
}
