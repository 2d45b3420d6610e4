package kernel

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// stoppingWorld is a lineWorld whose programs take as long as the caller
// lets them: Observe, when blockObserve is set, waits until its context
// ends, as a check killed by a stop request does; Commit calls onCommit
// with the context it was given.
type stoppingWorld struct {
	*lineWorld
	blockObserve bool
	onCommit     func(ctx context.Context)
}

func (w *stoppingWorld) Observe(ctx context.Context) (world.Observation, error) {
	if w.blockObserve {
		<-ctx.Done()
		return world.Observation{}, ctx.Err()
	}
	return w.lineWorld.Observe(ctx)
}

func (w *stoppingWorld) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	if w.onCommit != nil {
		w.onCommit(ctx)
	}
	if err := ctx.Err(); err != nil {
		return world.Outcome{}, false, err
	}
	return w.lineWorld.Commit(ctx, key, a, in)
}

// TestStopRequests: a stop request (the context of Run cancelled) stops a
// check that is running and writes nothing of its cycle, counts no
// provider failure, and the next invocation runs the cycle; a stop
// request that comes while an effect is being carried out does not reach
// it, and the cycle is finished and recorded before the run ends.
func TestStopRequests(t *testing.T) {
	ops := world.Catalog{}.With(appendLineKind())
	spec := world.Spec{Schema: world.SpecSchema, Files: map[string]string{"notes.txt": "draft\n"},
		Checks: []world.Check{{ID: "signed", Summary: "the notes are signed", Kind: world.CheckPresentText, Path: "notes.txt",
			Text: "signed-off", Priority: 10, Fixes: []world.Fix{{Operation: opAppendLine, Content: "signed-off"}}}}}
	allow := testContract(governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow})
	count := func(t *testing.T, d *Driver) int {
		recs, err := d.Ledger.After(state.GenesisFrontier())
		require.NoError(t, err)
		return len(recs)
	}

	t.Run("while a check runs", func(t *testing.T) {
		w := &stoppingWorld{lineWorld: newLineWorld(spec)}
		d, led := openLineRun(t, spec, allow, w.lineWorld, ops)
		d.World = w
		before := count(t, d)
		w.blockObserve = true
		ctx, cancel := context.WithCancel(t.Context())
		go cancel()
		rep, err := d.Run(ctx, 10, nil)
		require.NoError(t, err, "a stop request is not a failure")
		assert.Equal(t, []string{"interrupted"}, rep.ReasonCodes)
		assert.Zero(t, rep.CyclesExecuted)
		assert.Equal(t, before, count(t, d), "nothing of the cut-short cycle was written")
		assert.Zero(t, d.failures, "no provider failure counted")

		// Stepped directly, the cut-short cycle says so.
		_, err = d.Step(ctx)
		require.ErrorIs(t, err, ErrInterrupted)
		assert.ErrorIs(t, err, context.Canceled)

		// The next invocation runs the cycle.
		w.blockObserve = false
		sum, err := d.Step(t.Context())
		require.NoError(t, err)
		assert.Equal(t, "EXECUTE", sum.GovernanceDecision)
		assert.Equal(t, "draft\nsigned-off\n", w.files["notes.txt"])
		assert.Empty(t, filterKinds(t, led, event.ProviderFailed))
	})

	t.Run("while an effect runs", func(t *testing.T) {
		w := &stoppingWorld{lineWorld: newLineWorld(spec)}
		d, _ := openLineRun(t, spec, allow, w.lineWorld, ops)
		d.World = w
		ctx, cancel := context.WithCancel(t.Context())
		var seen error
		w.onCommit = func(c context.Context) {
			cancel() // the stop request comes while the fix runs
			seen = c.Err()
		}
		rep, err := d.Run(ctx, 10, nil)
		require.NoError(t, err)
		assert.NoError(t, seen, "the effect's context is not cancelled by a stop request")
		assert.Equal(t, 1, rep.CyclesExecuted, "the acting cycle finished")
		assert.Equal(t, []string{"interrupted"}, rep.ReasonCodes)
		assert.Equal(t, "draft\nsigned-off\n", w.files["notes.txt"])
		assert.Len(t, w.done, 1)
	})
}

// filterKinds returns the records of kind k in led.
func filterKinds(t *testing.T, led interface {
	After(state.Frontier) ([]event.Record, error)
}, k event.Kind) []event.Record {
	t.Helper()
	recs, err := led.After(state.GenesisFrontier())
	require.NoError(t, err)
	var out []event.Record
	for _, r := range recs {
		if r.Event.Type == k {
			out = append(out, r)
		}
	}
	return out
}
