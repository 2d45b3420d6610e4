package runstore_test

import (
	"context"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/perf"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// appendLog is the ledger as the driver sees it, noting what each durable
// append held and whether the world had been asked to make its effects
// durable since the last one.
type appendLog struct {
	storage.Ledger
	world   *durableLog
	batches []appended
}

type appended struct {
	cycles  []int64 // the cycle of each event, in order
	types   []event.Kind
	durable bool // World.Durable returned since the last Commit
}

func (l *appendLog) Append(evs []event.Event) ([]event.Record, error) {
	var a appended
	for _, e := range evs {
		a.cycles = append(a.cycles, e.CycleSeq)
		a.types = append(a.types, e.Type)
	}
	a.durable = l.world.durable
	l.batches = append(l.batches, a)
	return l.Ledger.Append(evs)
}

// durableLog notes whether every effect committed has been made durable.
type durableLog struct {
	kernel.World
	durable bool
}

func (w *durableLog) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	w.durable = false
	return w.World.Commit(context.Background(), key, a, in)
}

func (w *durableLog) Durable() error {
	err := w.World.Durable()
	w.durable = err == nil
	return err
}

// TestOutcomeSharesTheNextAppend: an acting cycle's last batch, its
// outcome, is not appended on its own. It goes at the front of the next
// durable append, after the effect is durable in the world, so every
// cycle costs one durable append (one write and fsync in a directory, one
// atomic batch on a server), and the run's last one is flushed at Close.
func TestOutcomeSharesTheNextAppend(t *testing.T) {
	dir := t.TempDir()
	// A queue of six items: six cycles act, then the world is done and
	// cycles go on without an effect.
	_, err := runstore.Init(t.Context(), dir, perf.QueueInputs(6), "run:test", false, realOptions())
	require.NoError(t, err)
	w := &durableLog{durable: true}
	opt := realOptions()
	opt.CheckpointEvery = 100
	opt.WrapWorld = func(x kernel.World) kernel.World { w.World = x; return w }
	r, err := runstore.Open(t.Context(), dir, opt)
	require.NoError(t, err)
	l := &appendLog{Ledger: r.Driver.Ledger, world: w}
	r.Driver.Ledger = l
	rep, err := r.Driver.Run(context.Background(), 10, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())

	acting := 0
	for i, b := range l.batches {
		assert.True(t, b.durable, "append %d came before the effect was durable", i)
		at := slices.Index(b.types, event.ActionCommitted)
		if at < 0 {
			continue
		}
		acting++
		// The outcome's cycle comes first; what follows its last batch in
		// the same append is the next cycle's, or nothing (a flush).
		outcome := b.cycles[0]
		assert.Equal(t, outcome, b.cycles[at], "append %d starts with another cycle than its outcome's", i)
		assert.True(t, slices.IsSorted(b.cycles), "append %d: cycles out of order: %v", i, b.cycles)
		assert.LessOrEqual(t, b.cycles[len(b.cycles)-1], outcome+1, "append %d spans more than two cycles: %v", i, b.cycles)
	}
	assert.Positive(t, acting, "no cycle acted")
	assert.Positive(t, rep.CyclesExecuted-acting, "every cycle acted")
	starts, flushes := 0, 0
	for i, b := range l.batches {
		switch n := count(b.types, event.CycleStarted); {
		case n == 1:
			starts++
		case n == 0 && slices.Contains(b.types, event.ActionCommitted):
			flushes++ // an outcome held when a checkpoint was due
		default:
			t.Errorf("append %d is neither one cycle's start nor a held outcome: %v", i, b.types)
		}
	}
	assert.Equal(t, rep.CyclesExecuted, starts, "one durable append per cycle")
	assert.LessOrEqual(t, flushes, 1, "an outcome was flushed alone although no checkpoint was due")
	t.Logf("%d cycles (%d acting), %d appends, %d of them a held outcome alone", rep.CyclesExecuted, acting, len(l.batches), flushes)
}

func count[T comparable](s []T, v T) int {
	n := 0
	for _, x := range s {
		if x == v {
			n++
		}
	}
	return n
}
