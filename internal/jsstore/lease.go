package jsstore

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/storage"
)

// Lease is a worker's hold on one run: a key in the store's lease bucket
// (<prefix>-lease) whose bucket TTL is the lease duration. Acquire
// creates the key (storage.ErrBusy while another holder has it), Renew
// writes a new revision on the one held (the clock restarts; ErrLeaseLost
// if it expired or was taken), Release deletes it on that revision.
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

// Acquire takes run's lease for holder (a worker's name, kept in the key
// for operators); storage.ErrBusy if another holder has it.
func (s *Store) Acquire(ctx context.Context, run, holder string) (*Lease, error) {
	l, err := s.blocks.Leases.Acquire(ctx, run, holder)
	if errors.Is(err, jetstream.ErrLeaseHeld) {
		return nil, fmt.Errorf("%w: %w", storage.ErrBusy, err)
	}
	if err != nil {
		return nil, err
	}
	return &Lease{s: s, l: l}, nil
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
