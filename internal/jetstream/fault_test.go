package jetstream

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// faultyStore opens a store through a proxy that plays the network's
// faults, with calls that keep trying for patience and attempts that wait
// 300 ms for an answer.
func faultyStore(t *testing.T, patience time.Duration) (*natstest.Proxy, *Store, *[]Call) {
	t.Helper()
	s := natstest.Start(t)
	p := natstest.StartProxy(t, s.ClientURL())
	nc, err := Connect(p.URL(), nats.ReconnectWait(50*time.Millisecond), nats.MaxReconnects(-1))
	must(t, err)
	t.Cleanup(nc.Close)
	var mu sync.Mutex
	calls := &[]Call{}
	st := openOn(t, nc, Options{Patience: patience, Timeout: 300 * time.Millisecond, Observe: func(c Call) {
		mu.Lock()
		defer mu.Unlock()
		*calls = append(*calls, c)
	}})
	return p, st, calls
}

// during runs op while fault has the network, then lifts the fault after
// hold, and returns op's error. The op must have outlived at least one
// attempt, so that its first request's answer was lost.
func during(t *testing.T, p *natstest.Proxy, fault func(), lift func(), hold time.Duration, op func() error) error {
	t.Helper()
	fault()
	done := make(chan error, 1)
	go func() { done <- op() }()
	select {
	case err := <-done:
		lift()
		t.Fatalf("the operation ended while the server was away: %v", err)
	case <-time.After(hold):
	}
	lift()
	return <-done
}

// TestCallsRideOutAPausedServer: every write and read of the store,
// made while the server is paused (its connection open, nothing
// answered, as under SIGSTOP), waits for it and succeeds once it is
// back, with the write stored exactly once: the attempt whose answer was
// lost reaches the server when it resumes and lands, and the call's next
// attempt recognises it instead of storing it again or taking it for
// another writer's (a conflict). Before calls retried, each of these
// failed with ErrUnavailable after the first timeout, leaving the outcome
// unknown; the world's write and the lease's were then refused as
// conflicts by their own first attempt.
func TestCallsRideOutAPausedServer(t *testing.T) {
	p, st, calls := faultyStore(t, 20*time.Second)
	pause := func(op func() error) error { return during(t, p, p.Pause, p.Resume, time.Second, op) }

	var c Committed
	must(t, pause(func() (err error) {
		c, err = st.Ledger.Commit(ctx(t), run, Frontier{}, records("a", 3, 200), []byte("ck"))
		return err
	}))
	if !c.Duplicate {
		t.Fatalf("the first attempt, delivered on resume, should have landed: %+v", c)
	}
	sameData(t, readAll(t, st.Ledger, run, 0), records("a", 3, 200))

	at := c.Frontier.Ledger
	must(t, pause(func() error { return upload(st.Worlds, run, "f", []byte("one"), false, at) }))
	var head uint64
	must(t, pause(func() (err error) {
		head, err = st.Worlds.Take(ctx(t), run, Guard{Ledger: at, Writer: "w1"})
		return err
	}))
	must(t, pause(func() (err error) {
		head, err = st.Worlds.Write(ctx(t), run, "f", []byte("two"), false, Guard{Ledger: at, Head: head, Writer: "w1"})
		return err
	}))
	sameWorld(t, st.Worlds, run, map[string]string{"f": "two"}, head)

	var ls Lease
	must(t, pause(func() (err error) { ls, err = st.Leases.Acquire(ctx(t), run, []byte("holder w1 token 1")); return err }))
	must(t, pause(func() (err error) { ls, err = st.Leases.Renew(ctx(t), ls); return err }))
	must(t, pause(func() error { return st.Leases.Release(ctx(t), ls) }))
	_, err := st.Leases.Get(ctx(t), run)
	wantErr(t, err, ErrNotFound)

	must(t, pause(func() error { _, err := st.Idempotency.Create(ctx(t), run, "k", []byte("v")); return err }))
	_, err = st.Idempotency.Create(ctx(t), run, "k", []byte("v"))
	wantErr(t, err, ErrExists) // a second create by someone else is still refused
	var dup bool
	must(t, pause(func() (err error) { _, dup, err = st.Inbox.Put(ctx(t), run, "item", []byte("x"), 0); return err }))
	if !dup {
		t.Fatal("the put delivered on resume should have been stored first")
	}
	n := 0
	must(t, st.Inbox.Read(ctx(t), run, 0, func(Item) error { n++; return nil }))
	if n != 1 {
		t.Fatalf("%d inbox items, want 1", n)
	}
	must(t, pause(func() error { return st.Ledger.Read(ctx(t), run, 0, func(Record) error { return nil }) }))

	unanswered, waited := 0, time.Duration(0)
	for _, c := range *calls {
		if errors.Is(c.Err, ErrUnavailable) {
			unanswered++
		}
		waited += c.Waited
	}
	if unanswered < 11 || waited == 0 {
		t.Fatalf("Observe heard %d unanswered attempts and %v of waiting; every call above had at least one", unanswered, waited)
	}
}

// TestCallsRideOutDroppedConnections: connections cut under the calls
// (a partition, a load balancer restarting) are made again by the client
// and the calls succeed, each write stored once.
func TestCallsRideOutDroppedConnections(t *testing.T) {
	p, st, _ := faultyStore(t, 20*time.Second)
	at := Frontier{}
	for i := range 5 {
		recs := records("drop"+string(rune('a'+i)), 2, 100)
		done := make(chan error, 1)
		go func() {
			c, err := st.Ledger.Commit(ctx(t), run, at, recs, []byte("ck"))
			at = c.Frontier
			done <- err
		}()
		p.Drop()
		must(t, <-done)
	}
	if got := readAll(t, st.Ledger, run, 0); len(got) != 10 {
		t.Fatalf("%d records, want 10", len(got))
	}
}

// TestPatienceEnds: a call gives up once its patience has passed, with
// ErrUnavailable, and a cancelled context ends the retrying at once
// without cutting the attempt under way.
func TestPatienceEnds(t *testing.T) {
	p, st, _ := faultyStore(t, 800*time.Millisecond)
	p.Pause()
	defer p.Resume()
	start := time.Now()
	_, err := st.Ledger.Last(context.Background(), run)
	wantErr(t, err, ErrUnavailable)
	if took := time.Since(start); took < 800*time.Millisecond {
		t.Fatalf("gave up after %v, before its patience", took)
	}
	c, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = st.Ledger.Last(c, run)
	wantErr(t, err, ErrUnavailable)
}
