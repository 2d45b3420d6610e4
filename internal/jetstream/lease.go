package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/storage"
)

// ErrLeaseHeld means another holder has the run's lease. It matches
// storage.ErrBusy.
var ErrLeaseHeld error = alsoIs{"lease held by another worker", storage.ErrBusy}

// Leases are run leases in the lease bucket, one key per run. The bucket's
// TTL (the stream's MaxAge) is the lease duration: every revision expires
// that long after it was written, so renewing (a new revision) restarts
// the clock. Per-key TTLs (KeyTTL on Create) are not used because
// KeyValue.Update writes without one: the first renewal would make the
// lease permanent.
//
// A lease's value is its holder's, opaque here: the holder writes the same
// bytes at every renewal, and they must be its own (a random token in
// them), so that a write whose answer was lost is recognised by reading
// the key back.
//
// A lease only saves wasted work. What keeps two workers from both
// writing a run is the expected sequence of every ledger commit.
type Leases struct {
	nc     *nats.Conn
	pol    *policy
	kv     natsjs.KeyValue
	ttl    time.Duration
	bucket string
}

// Lease is a held lease. Rev, the KV revision, grows with every acquire
// and renewal of any run, so it can serve as a fencing token.
type Lease struct {
	Run   string
	Value []byte
	Rev   uint64
}

// LeaseInfo is a lease as the store holds it, whoever holds it.
type LeaseInfo struct {
	Run   string
	Value []byte
	Rev   uint64
	// Written is when its last revision (its acquisition or its last
	// renewal) was stored: it lapses a TTL later unless renewed.
	Written time.Time
}

// TTL is how long a lease lasts unless renewed.
func (l *Leases) TTL() time.Duration { return l.ttl }

// Acquire takes run's lease with value, or fails with ErrLeaseHeld.
func (l *Leases) Acquire(ctx context.Context, run string, value []byte) (Lease, error) {
	var rev uint64
	err := l.write(ctx, "lease.acquire", run, ErrLeaseHeld,
		func(ctx context.Context) (err error) { rev, err = l.kv.Create(ctx, Token(run), value); return err },
		func(err error) bool { return errors.Is(err, natsjs.ErrKeyExists) },
		func(e natsjs.KeyValueEntry, err error) bool {
			if err == nil && bytes.Equal(e.Value(), value) {
				rev = e.Revision()
				return true
			}
			return false
		})
	if err != nil {
		return Lease{}, fmt.Errorf("acquire %s: %w", run, err)
	}
	return Lease{Run: run, Value: value, Rev: rev}, nil
}

// TakeOver replaces a lease the caller knows to be its own from before (a
// holder that lost touch with the server, and comes back to the runs it
// held) with value, provided the key is still at revision rev; it fails
// with ErrLeaseHeld if the key moved.
func (l *Leases) TakeOver(ctx context.Context, run string, value []byte, rev uint64) (Lease, error) {
	n, err := l.Renew(ctx, Lease{Run: run, Value: value, Rev: rev})
	if errors.Is(err, ErrLeaseLost) {
		return Lease{}, fmt.Errorf("take over %s: %w", run, ErrLeaseHeld)
	}
	return n, err
}

// Renew extends a held lease and returns it with its new revision, or
// fails with ErrLeaseLost if it expired or another holder took it.
func (l *Leases) Renew(ctx context.Context, ls Lease) (Lease, error) {
	var rev uint64
	err := l.write(ctx, "lease.renew", ls.Run, ErrLeaseLost,
		func(ctx context.Context) (err error) {
			rev, err = l.kv.Update(ctx, Token(ls.Run), ls.Value, ls.Rev)
			return err
		},
		revisionRefused,
		func(e natsjs.KeyValueEntry, err error) bool {
			if err == nil && e.Revision() > ls.Rev && bytes.Equal(e.Value(), ls.Value) {
				rev = e.Revision()
				return true
			}
			return false
		})
	if err != nil {
		return Lease{}, fmt.Errorf("renew %s: %w", ls.Run, err)
	}
	ls.Rev = rev
	return ls, nil
}

// Release gives a held lease up; ErrLeaseLost if it was no longer held.
// A release whose answer was lost, tried again, finds the key gone or
// another's: released either way.
func (l *Leases) Release(ctx context.Context, ls Lease) error {
	err := l.write(ctx, "lease.release", ls.Run, ErrLeaseLost,
		func(ctx context.Context) error { return l.kv.Delete(ctx, Token(ls.Run), natsjs.LastRevision(ls.Rev)) },
		revisionRefused,
		func(e natsjs.KeyValueEntry, err error) bool {
			return errors.Is(err, natsjs.ErrKeyNotFound) || (err == nil && !bytes.Equal(e.Value(), ls.Value))
		})
	if err != nil {
		return fmt.Errorf("release %s: %w", ls.Run, err)
	}
	return nil
}

// Get returns run's lease as the store holds it, or ErrNotFound when
// nobody holds it.
func (l *Leases) Get(ctx context.Context, run string) (LeaseInfo, error) {
	var info LeaseInfo
	err := l.pol.do(ctx, "lease.get", func(ctx context.Context) error {
		e, err := l.kv.Get(ctx, Token(run))
		if err != nil {
			return classify(err)
		}
		info = LeaseInfo{Run: run, Value: e.Value(), Rev: e.Revision(), Written: e.Created()}
		return nil
	})
	if err != nil {
		return LeaseInfo{}, fmt.Errorf("lease of %s: %w", run, err)
	}
	return info, nil
}

// Break ends run's lease whoever holds it, provided it is still at
// revision rev (the lease a person looked at before deciding to break
// it): ErrConflict if it moved since (renewed, released, taken). The
// holder's next renewal then fails with ErrLeaseLost. Breaking a lease
// fences nothing by itself; see jsstore.Store.BreakLease.
func (l *Leases) Break(ctx context.Context, run string, rev uint64) error {
	err := l.write(ctx, "lease.break", run, fmt.Errorf("%w: the lease changed since it was read", ErrConflict),
		func(ctx context.Context) error { return l.kv.Delete(ctx, Token(run), natsjs.LastRevision(rev)) },
		revisionRefused,
		func(_ natsjs.KeyValueEntry, err error) bool { return errors.Is(err, natsjs.ErrKeyNotFound) })
	if err != nil {
		return fmt.Errorf("break the lease of %s: %w", run, err)
	}
	return nil
}

// write makes one lease write, trying again while the server does not
// answer. When the server refuses an attempt (refused says which errors
// are refusals) after an attempt whose answer was lost, that lost attempt
// may be what the refusal is about: mine looks at the key as it is now
// (its entry, or the error of reading it) and says whether the lost
// attempt landed; if not, the write fails with refusal.
func (l *Leases) write(ctx context.Context, op, run string, refusal error, attempt func(context.Context) error,
	refused func(error) bool, mine func(natsjs.KeyValueEntry, error) bool) error {
	unknown := false
	return l.pol.do(ctx, op, func(ctx context.Context) error {
		err := retryInFlight(ctx, func() error { return attempt(ctx) })
		if refused(err) {
			if unknown && mine(l.kv.Get(ctx, Token(run))) {
				return nil
			}
			return refusal
		}
		err = classify(err)
		unknown = errors.Is(err, ErrUnavailable)
		return err
	})
}

// revisionRefused reports whether a write on a revision was refused
// because the key is at another.
func revisionRefused(err error) bool {
	return errors.Is(err, natsjs.ErrKeyRevisionMismatch) || errors.Is(err, natsjs.ErrKeyExists)
}

// List calls fn with every lease the store holds, in no particular order:
// one multi-last direct get on the bucket's stream (a consumer beyond
// 1024 leases).
func (l *Leases) List(ctx context.Context, fn func(LeaseInfo) error) error {
	stream, prefix := "KV_"+l.bucket, "$KV."+l.bucket+"."
	each := func(subject string, m *nats.Msg) error {
		switch m.Header.Get("KV-Operation") {
		case "DEL", "PURGE":
			return nil
		}
		run, err := ParseToken(strings.TrimPrefix(subject, prefix))
		if err != nil {
			return fmt.Errorf("lease key %s: %w", subject, err)
		}
		seq, _ := parseUint(m.Header.Get(hdrSequence))
		at, _ := time.Parse(time.RFC3339Nano, m.Header.Get(hdrTimeStamp))
		return fn(LeaseInfo{Run: run, Value: m.Data, Rev: seq, Written: at})
	}
	err := readLastPerSubject(ctx, l.pol, l.nc, stream, prefix+">", each)
	if errors.Is(err, errTooManySubjects) {
		err = scanLastPerSubject(ctx, l.pol, l.nc, stream, prefix+">", each)
	}
	if err != nil {
		return fmt.Errorf("list leases: %w", err)
	}
	return nil
}
