package jsstore

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// Lease is a holder's hold on one run: a key in the store's lease bucket
// (<prefix>-lease) whose bucket TTL is the lease duration. Acquire
// creates the key (a *HeldError, storage.ErrBusy, while another holder has
// it), Renew writes a new revision on the one held (the clock restarts;
// ErrLeaseLost if it expired or was taken or broken), Release deletes it
// on that revision.
//
// A lease only keeps workers from wasting work on the same run. What
// keeps a run intact when two workers do write it (a lease lost to a
// pause longer than its TTL) is the expected sequence on every ledger
// append and checkpoint commit: the stale writer's write stores nothing.
type Lease struct {
	s  *Store
	mu sync.Mutex
	l  jetstream.Lease
}

// Acquire takes run's lease for h (its Since and Token are set here); a
// *HeldError (storage.ErrBusy) if another holder has it. A lease this
// very process held before (the same host, name and pid: a worker that
// lost touch with the server and comes back to the runs it held) is taken
// over rather than waited out.
func (s *Store) Acquire(ctx context.Context, run string, h storage.Holder) (*Lease, error) {
	h.Since = s.opts.Now().UTC().Format(time.RFC3339)
	h.Token = rand.Text()
	value, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	l, err := s.blocks.Leases.Acquire(ctx, run, value)
	if errors.Is(err, jetstream.ErrLeaseHeld) {
		info, gerr := s.blocks.Leases.Get(ctx, run)
		switch {
		case errors.Is(gerr, jetstream.ErrNotFound):
			// It lapsed or was released since: try once more.
			l, err = s.blocks.Leases.Acquire(ctx, run, value)
		case gerr != nil:
			return nil, gerr
		case storage.DecodeHolder(info.Value).SameProcess(h):
			l, err = s.blocks.Leases.TakeOver(ctx, run, value, info.Rev)
		default:
			return nil, &storage.HeldError{Run: run, Lease: s.leaseStatus(info)}
		}
	}
	if errors.Is(err, jetstream.ErrLeaseHeld) {
		return nil, fmt.Errorf("%w: %w", storage.ErrBusy, err)
	}
	if err != nil {
		return nil, err
	}
	return &Lease{s: s, l: l}, nil
}

func (s *Store) leaseStatus(info jetstream.LeaseInfo) storage.LeaseStatus {
	return storage.LeaseStatus{Run: info.Run, Holder: storage.DecodeHolder(info.Value), Renewed: info.Written,
		Until: info.Written.Add(s.TTL()), Revision: info.Rev}
}

// Leases lists every lease the store holds, by run id.
func (s *Store) Leases(ctx context.Context) (map[string]storage.LeaseStatus, error) {
	out := map[string]storage.LeaseStatus{}
	err := s.blocks.Leases.List(ctx, func(info jetstream.LeaseInfo) error {
		out[info.Run] = s.leaseStatus(info)
		return nil
	})
	return out, err
}

// LeaseOf returns run's lease; ok is false when nobody holds it.
func (s *Store) LeaseOf(ctx context.Context, run string) (st storage.LeaseStatus, ok bool, err error) {
	info, err := s.blocks.Leases.Get(ctx, run)
	if errors.Is(err, jetstream.ErrNotFound) {
		return storage.LeaseStatus{}, false, nil
	}
	if err != nil {
		return storage.LeaseStatus{}, false, err
	}
	return s.leaseStatus(info), true, nil
}

// BreakLease ends a lease whose holder a person knows to be gone, so that
// the run does not wait out its TTL, and fences that holder: should it be
// alive after all, none of its writes is stored. The lease must still be
// the one the person saw (st.Revision; storage.ErrConflict if it was
// renewed, released or taken since: look again). Then a
// persistent.lease.broken record is appended to the run's ledger (the
// holder's next append expects the record before it, and is refused) and
// the run's world is taken (its next world write expects the old head,
// and is refused); its checkpoint commits are guarded by the ledger's end
// already. The next holder recovers the run as after a crash.
func (s *Store) BreakLease(ctx context.Context, st storage.LeaseStatus, by, reason string) (storage.Broken, error) {
	var b storage.Broken
	err := s.blocks.Leases.Break(ctx, st.Run, st.Revision)
	if errors.Is(err, jetstream.ErrConflict) {
		return b, fmt.Errorf("%w: %w", storage.ErrConflict, err)
	}
	if err != nil {
		return b, err
	}
	r, err := s.Run(ctx, st.Run)
	if err != nil {
		return b, err
	}
	obj, err := event.NewObject("lease", storage.LeaseBreak{Name: st.Holder.Name, Holder: st.Holder, LeaseRevision: st.Revision, By: by, Reason: reason})
	if err != nil {
		return b, err
	}
	// The holder may append between our read of the ledger's end and our
	// append: read again and append after its record.
	for attempt := 0; ; attempt++ {
		l, err := r.OpenLedger()
		if err != nil {
			return b, err
		}
		if l.front.Seq == 0 {
			break // no ledger: nothing to fence
		}
		last, err := s.blocks.Ledger.Get(ctx, st.Run, uint64(l.front.Offset))
		if err != nil {
			return b, err
		}
		rec, err := lastRecord(s.pack, last)
		if err != nil {
			return b, err
		}
		ev := event.Event{Type: event.LeaseBroken, RunID: st.Run, CycleSeq: rec.Event.CycleSeq,
			At: state.FormatTime(s.opts.Now()), Object: obj, Reasons: []string{"lease_broken_by_person"}}
		_, err = l.Append([]event.Event{ev})
		if errors.Is(err, storage.ErrConflict) && attempt < 10 {
			continue
		}
		if err != nil {
			return b, fmt.Errorf("fence the ledger of %s: %w", st.Run, err)
		}
		b.Fence = storage.Fence{Seq: l.Frontier().Seq, Offset: l.Frontier().Offset}
		break
	}
	w := r.World()
	if _, err := w.Load(); errors.Is(err, ErrNoWorld) {
		return b, nil
	} else if err != nil {
		return b, fmt.Errorf("fence the world of %s: %w", st.Run, err)
	}
	if err := w.Take(b.Fence.Offset); err != nil {
		return b, fmt.Errorf("fence the world of %s: %w", st.Run, err)
	}
	b.WorldTaken = true
	return b, nil
}

// TTL is how long a lease lasts unless renewed.
func (s *Store) TTL() time.Duration { return s.blocks.Leases.TTL() }

// Run is the run the lease is on.
func (l *Lease) Run() string { return l.l.Run }

// Token is the lease's fencing token: the KV revision of its last
// acquire or renewal, which grows with every lease write in the store. A
// system outside acr that a worker acts on can refuse a token lower than
// one it has seen; acr's own writes are fenced by sequences instead.
func (l *Lease) Token() uint64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.l.Rev
}

// Renew extends the lease; ErrLeaseLost if it expired or another holder
// took it.
func (l *Lease) Renew(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	n, err := l.s.blocks.Leases.Renew(ctx, l.l)
	if err != nil {
		return err
	}
	l.l = n
	return nil
}

// Release gives the lease up; ErrLeaseLost if it was no longer held.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.s.blocks.Leases.Release(ctx, l.l)
}

// Keep renews the lease in the background, every third of its TTL, until
// stop is called or ctx ends, and returns a context that is cancelled,
// with cause ErrLeaseLost, once the lease is lost: refused on renewal, or
// not renewed within a TTL because the server was unreachable. A worker
// runs the run under that context, so that the cycle in progress ends
// and no new one starts. stop does not release the lease.
func (l *Lease) Keep(ctx context.Context) (held context.Context, stop func()) {
	held, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	var once sync.Once
	stop = func() { once.Do(func() { close(done) }) }
	ttl := l.s.TTL()
	go func() {
		defer cancel(nil)
		last := time.Now()
		tick := time.NewTicker(ttl / 3)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-held.Done():
				return
			case <-tick.C:
			}
			rctx, rcancel := context.WithTimeout(held, ttl/3)
			err := l.Renew(rctx)
			rcancel()
			switch {
			case err == nil:
				last = time.Now()
			case errors.Is(err, ErrLeaseLost):
				cancel(err)
				return
			case time.Since(last) >= ttl:
				cancel(fmt.Errorf("%w: not renewed for %v: %w", ErrLeaseLost, time.Since(last).Round(time.Millisecond), err))
				return
			}
		}
	}()
	return held, stop
}
