package jetstream

import (
	"context"
	"errors"
	"math/rand/v2"
	"time"

	"github.com/acr-project/acr/internal/storage"
)

// Call is one request to the server as Options.Observe hears it
// (storage.Call: every store on a server reports its requests alike).
type Call = storage.Call

// Backoff of a call that retries while the server does not answer: the
// first pause, the longest one.
const (
	firstPause = 100 * time.Millisecond
	maxPause   = 2 * time.Second
)

// policy is how a store's calls treat a server that does not answer (a
// process paused, a connection lost, a stream without a leader during an
// election): each attempt gets its own timeout, and a call whose attempt
// failed with ErrUnavailable tries again, pausing longer each time, for
// up to patience. Every call of this package is safe to repeat: reads
// are, and each write either carries an id the server recognises
// (Nats-Msg-Id) or is recognised by reading back what is stored, so that
// a write whose answer was lost is neither stored twice nor taken for
// someone else's.
type policy struct {
	// patience is how long a call keeps trying; 0 tries once.
	patience time.Duration
	// timeout is how long one attempt waits for its answer (0: the
	// default, 5 s).
	timeout time.Duration
	// observe, when set, hears every attempt.
	observe func(Call)
}

// do runs attempt until it succeeds, fails with anything but
// ErrUnavailable, the call's patience has passed since its first attempt,
// or ctx ends. ctx is looked at between attempts only: each attempt runs
// under a context of its own that ctx's cancellation does not reach (a
// deadline of ctx still bounds it), so that a write under way when a
// signal cancels ctx still learns its outcome instead of leaving it
// unknown.
func (p *policy) do(ctx context.Context, op string, attempt func(ctx context.Context) error) error {
	start := time.Now()
	pause := firstPause
	for {
		actx, cancel := p.attemptContext(ctx, p.patience-time.Since(start))
		began := time.Now()
		err := attempt(actx)
		cancel()
		var wait time.Duration
		if err != nil && errors.Is(err, ErrUnavailable) && ctx.Err() == nil {
			if left := p.patience - time.Since(start); left > 0 {
				// Up to half the pause at random, so that the workers an
				// outage stopped together do not all come back at once.
				wait = min(pause/2+rand.N(pause/2+1), left)
			}
		}
		if p.observe != nil {
			p.observe(Call{Op: op, Took: time.Since(began), Err: err, Waited: wait})
		}
		if wait == 0 {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		pause = min(2*pause, maxPause)
	}
}

// minAttempt is the shortest wait for an answer an attempt gets, however
// little patience is left.
const minAttempt = 250 * time.Millisecond

// attemptContext is the context of one attempt: ctx without its
// cancellation, with the policy's timeout, what is left of the call's
// patience (left; not under minAttempt) or what is left of ctx's deadline,
// whichever is shortest: a command told to wait a second for the store
// does not wait five for one answer.
func (p *policy) attemptContext(ctx context.Context, left time.Duration) (context.Context, context.CancelFunc) {
	timeout := defaultTimeout
	if p.timeout > 0 {
		timeout = p.timeout
	}
	if p.patience > 0 {
		timeout = min(timeout, max(left, minAttempt))
	}
	if dl, ok := ctx.Deadline(); ok {
		timeout = min(timeout, time.Until(dl))
	}
	return context.WithTimeout(context.WithoutCancel(ctx), timeout)
}
