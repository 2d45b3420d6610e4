package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// ErrLeaseHeld means another holder has the run's lease.
var ErrLeaseHeld = errors.New("lease held by another worker")

// Leases are run leases in the lease bucket, one key per run. The bucket's
// TTL (the stream's MaxAge) is the lease duration: every revision expires
// that long after it was written, so renewing (a new revision) restarts
// the clock. Per-key TTLs (KeyTTL on Create) are not used because
// KeyValue.Update writes without one: the first renewal would make the
// lease permanent.
//
// A lease only saves wasted work. What keeps two workers from both
// writing a run is the expected sequence of every ledger commit.
type Leases struct {
	kv  natsjs.KeyValue
	ttl time.Duration
}

// Lease is a held lease. Rev, the KV revision, grows with every acquire
// and renewal of any run, so it can serve as a fencing token.
type Lease struct {
	Run    string
	Holder string
	Rev    uint64
}

// TTL is how long a lease lasts unless renewed.
func (l *Leases) TTL() time.Duration { return l.ttl }

// Acquire takes run's lease for holder, or fails with ErrLeaseHeld.
func (l *Leases) Acquire(ctx context.Context, run, holder string) (Lease, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var rev uint64
	err := retryInFlight(ctx, func() (err error) { rev, err = l.kv.Create(ctx, Token(run), []byte(holder)); return err })
	if errors.Is(err, natsjs.ErrKeyExists) {
		return Lease{}, fmt.Errorf("acquire %s: %w", run, ErrLeaseHeld)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("acquire %s: %w", run, classify(err))
	}
	return Lease{Run: run, Holder: holder, Rev: rev}, nil
}

// Renew extends a held lease and returns it with its new revision, or
// fails with ErrLeaseLost if it expired or another holder took it.
func (l *Leases) Renew(ctx context.Context, ls Lease) (Lease, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var rev uint64
	err := retryInFlight(ctx, func() (err error) { rev, err = l.kv.Update(ctx, Token(ls.Run), []byte(ls.Holder), ls.Rev); return err })
	if errors.Is(err, natsjs.ErrKeyRevisionMismatch) || errors.Is(err, natsjs.ErrKeyExists) {
		return Lease{}, fmt.Errorf("renew %s: %w", ls.Run, ErrLeaseLost)
	}
	if err != nil {
		return Lease{}, fmt.Errorf("renew %s: %w", ls.Run, classify(err))
	}
	ls.Rev = rev
	return ls, nil
}

// Release gives a held lease up; ErrLeaseLost if it was no longer held.
func (l *Leases) Release(ctx context.Context, ls Lease) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	err := retryInFlight(ctx, func() error { return l.kv.Delete(ctx, Token(ls.Run), natsjs.LastRevision(ls.Rev)) })
	if errors.Is(err, natsjs.ErrKeyRevisionMismatch) || errors.Is(err, natsjs.ErrKeyExists) {
		return fmt.Errorf("release %s: %w", ls.Run, ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("release %s: %w", ls.Run, classify(err))
	}
	return nil
}
