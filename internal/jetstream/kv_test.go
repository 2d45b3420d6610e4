package jetstream

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Idempotency records: create-if-absent, the first writer wins even when
// several race, a later writer stores nothing; Get returns the winner.
func TestIdempotencyFirstWriterWins(t *testing.T) {
	_, _, st := open(t, Options{})
	tb := st.Idempotency
	key := "idem:sha256:" + strings.Repeat("ab", 32)
	_, err := tb.Get(ctx(t), run, key)
	wantErr(t, err, ErrNotFound)

	const writers = 5
	var wg sync.WaitGroup
	errs := make([]error, writers)
	for i := range writers {
		wg.Go(func() { _, errs[i] = tb.Create(context.Background(), run, key, []byte("outcome "+strconv.Itoa(i))) })
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		if err == nil {
			if winner >= 0 {
				t.Fatalf("writers %d and %d both created", winner, i)
			}
			winner = i
			continue
		}
		wantErr(t, err, ErrExists)
	}
	got, err := tb.Get(ctx(t), run, key)
	must(t, err)
	if string(got) != "outcome "+strconv.Itoa(winner) {
		t.Fatalf("got %q, want the winner's (%d)", got, winner)
	}
	// The same key in another run is another record.
	_, err = tb.Create(ctx(t), "other run", key, []byte("x"))
	must(t, err)
}

// Inbox: the dedup key makes a second put of the same item a no-op, the
// per-message TTL removes an item when it expires, and the reader resumes
// from the sequence it keeps, not from acknowledgements.
func TestInboxDedupExpiryAndReadPosition(t *testing.T) {
	_, _, st := open(t, Options{})
	in := st.Inbox
	s1, dup, err := in.Put(ctx(t), run, "wake:k1", []byte("wake 1"), time.Second)
	must(t, err)
	if dup {
		t.Fatal("first put reported duplicate")
	}
	s2, dup, err := in.Put(ctx(t), run, "wake:k1", []byte("wake 1 again"), time.Second)
	must(t, err)
	if !dup || s2 != s1 {
		t.Fatalf("second put: seq %d dup %v, want %d true", s2, dup, s1)
	}
	// The same key for another run is another item.
	_, dup, err = in.Put(ctx(t), "other", "wake:k1", []byte("x"), 0)
	must(t, err)
	if dup {
		t.Fatal("put for another run reported duplicate")
	}
	s3, _, err := in.Put(ctx(t), run, "approval:a1", []byte("approve"), 0)
	must(t, err)
	s4, _, err := in.Put(ctx(t), run, "stop:s1", []byte("stop"), time.Hour)
	must(t, err)

	read := func(after uint64) []Item {
		var items []Item
		must(t, in.Read(ctx(t), run, after, func(it Item) error { items = append(items, it); return nil }))
		return items
	}
	if got := read(0); len(got) != 3 || got[0].Seq != s1 || got[0].Key != "wake:k1" || string(got[0].Data) != "wake 1" {
		t.Fatalf("read from 0: %+v", got)
	}
	// The reader consumed up to s3 and keeps that in its checkpoint.
	if got := read(s3); len(got) != 1 || got[0].Seq != s4 {
		t.Fatalf("read after %d: %+v", s3, got)
	}

	// The wake expires after its 1 s TTL; the others stay.
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := read(0)
		if len(got) == 2 && got[0].Seq == s3 && got[1].Seq == s4 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("wake not expired: %+v", got)
		}
		time.Sleep(200 * time.Millisecond)
	}

	// Once the position is checkpointed, consumed items can be trimmed.
	must(t, in.Trim(ctx(t), run, s3))
	if got := read(0); len(got) != 1 || got[0].Seq != s4 {
		t.Fatalf("after trim: %+v", got)
	}
	_, _, err = in.Put(ctx(t), run, "wake:k2", nil, 500*time.Millisecond)
	if err == nil {
		t.Fatal("a sub-second TTL was accepted")
	}
}

// Lease: create acquires, update on the revision renews (a new, larger
// revision: the fencing token), expiry is detected on renew, and release
// lets the next worker in.
func TestLeaseAcquireRenewExpireRelease(t *testing.T) {
	_, _, st := open(t, Options{LeaseTTL: time.Second})
	ls := st.Leases
	a, err := ls.Acquire(ctx(t), run, []byte("worker-a"))
	must(t, err)
	_, err = ls.Acquire(ctx(t), run, []byte("worker-b"))
	wantErr(t, err, ErrLeaseHeld)
	a2, err := ls.Renew(ctx(t), a)
	must(t, err)
	if a2.Rev <= a.Rev {
		t.Fatalf("renewed revision %d not above %d", a2.Rev, a.Rev)
	}
	// The old revision is no longer the lease.
	_, err = ls.Renew(ctx(t), a)
	wantErr(t, err, ErrLeaseLost)

	// Renewing keeps it past the TTL; not renewing loses it.
	for range 3 {
		time.Sleep(400 * time.Millisecond)
		a2, err = ls.Renew(ctx(t), a2)
		must(t, err)
	}
	b := waitAcquire(t, ls, "worker-b")
	if b.Rev <= a2.Rev {
		t.Fatalf("next holder's revision %d not above %d", b.Rev, a2.Rev)
	}
	_, err = ls.Renew(ctx(t), a2)
	wantErr(t, err, ErrLeaseLost)
	wantErr(t, ls.Release(ctx(t), a2), ErrLeaseLost)

	must(t, ls.Release(ctx(t), b))
	c, err := ls.Acquire(ctx(t), run, []byte("worker-c"))
	must(t, err)
	if c.Rev <= b.Rev {
		t.Fatalf("revision %d after release not above %d", c.Rev, b.Rev)
	}
}

// waitAcquire acquires the lease once the current holder's expires.
func waitAcquire(t *testing.T, ls *Leases, holder string) Lease {
	t.Helper()
	start := time.Now()
	deadline := start.Add(10 * time.Second)
	for {
		l, err := ls.Acquire(ctx(t), run, []byte(holder))
		if err == nil {
			t.Logf("%s acquired after %v (lease TTL %v)", holder, time.Since(start).Round(time.Millisecond), ls.TTL())
			return l
		}
		if !errors.Is(err, ErrLeaseHeld) || time.Now().After(deadline) {
			t.Fatalf("acquire: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// Safety does not depend on the lease: a worker whose lease expired while
// it was working (a GC pause, a partition) still holds the frontier it
// read; once the next holder has committed, that frontier is stale and the
// old worker's commit stores nothing, whether or not it noticed the loss.
func TestExpiredLeaseCannotCommit(t *testing.T) {
	_, _, st := open(t, Options{LeaseTTL: time.Second})
	l, ls := st.Ledger, st.Leases
	c0, err := l.Commit(ctx(t), run, Frontier{}, records("init", 1, 100), []byte("ck0"))
	must(t, err)

	a, err := ls.Acquire(ctx(t), run, []byte("worker-a"))
	must(t, err)
	_, atA, err := l.Checkpoint(ctx(t), run)
	must(t, err)

	// Worker A stalls past its TTL; worker B takes over and commits.
	b := waitAcquire(t, ls, "worker-b")
	_, atB, err := l.Checkpoint(ctx(t), run)
	must(t, err)
	if atB != atA || atA != c0.Frontier {
		t.Fatalf("frontiers %+v %+v, want %+v", atA, atB, c0.Frontier)
	}
	cb, err := l.Commit(ctx(t), run, atB, records("by b", 3, 100), []byte("ck by b"))
	must(t, err)

	// A wakes up and commits without renewing first: refused.
	_, err = l.Commit(ctx(t), run, atA, records("by a", 3, 100), []byte("ck by a"))
	wantErr(t, err, ErrConflict)
	// Had it renewed, it would have learnt it lost the lease.
	_, err = ls.Renew(ctx(t), a)
	wantErr(t, err, ErrLeaseLost)

	ck, f, err := l.Checkpoint(ctx(t), run)
	must(t, err)
	if string(ck) != "ck by b" || f != cb.Frontier {
		t.Fatalf("checkpoint %q at %+v", ck, f)
	}
	sameData(t, readAll(t, l, run, c0.Frontier.Ledger), records("by b", 3, 100))
	must(t, ls.Release(ctx(t), b))
}
