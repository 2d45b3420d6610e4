package runstore_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/perf"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// errUnknown stands for a write whose outcome the world cannot tell: a
// store that timed out after it may have kept the change.
var errUnknown = errors.New("the store did not answer: the write may or may not have landed")

// landsThenFails carries out the effect of its nth Commit and then
// reports an error, as a world kept in a store does when the store keeps
// the write but its answer is lost.
type landsThenFails struct {
	kernel.World
	n, commits int
}

func (w *landsThenFails) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	out, reused, err := w.World.Commit(ctx, key, a, in)
	if w.commits++; w.commits == w.n && err == nil {
		return world.Outcome{}, false, errUnknown
	}
	return out, reused, err
}

// landsThenFailsGated is landsThenFails for the path where the world
// begins the effect while its intent is on its way to disk.
type landsThenFailsGated struct{ *landsThenFails }

func (w landsThenFailsGated) CommitWhen(ctx context.Context, key string, a world.Action, in world.Intent, ready func() error) (world.Outcome, bool, error) {
	gw := w.World.(interface {
		CommitWhen(context.Context, string, world.Action, world.Intent, func() error) (world.Outcome, bool, error)
	})
	out, reused, err := gw.CommitWhen(ctx, key, a, in, ready)
	if w.commits++; w.commits == w.n && err == nil {
		return world.Outcome{}, false, errUnknown
	}
	return out, reused, err
}

// TestAnOpenCycleIsNeverCheckpointed: an effect whose outcome is unknown
// (the world kept it, its answer was lost) leaves its cycle open, and the
// process writes nothing more: no checkpoint over the open cycle, no held
// batch, no other cycle. The next open recovers the cycle from the intent
// and the world's hash, records the effect as done without applying it
// again, and the run ends with one committed record per effect and a
// ledger whose cycle structure verifies. Before the fix, Close committed a
// checkpoint whose frontier covered the open cycle's intent, so recovery
// never saw it and the cycle ran a second time.
func TestAnOpenCycleIsNeverCheckpointed(t *testing.T) {
	for _, gated := range []bool{false, true} {
		name := "commit"
		if gated {
			name = "commit-when"
		}
		t.Run(name, func(t *testing.T) {
			const items = 6
			dir := t.TempDir()
			_, err := runstore.Init(t.Context(), dir, perf.QueueInputs(items), "run:open", false, realOptions())
			require.NoError(t, err)
			manifest := func() string {
				b, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
				require.NoError(t, err)
				return string(b)
			}
			before := manifest()

			opt := realOptions()
			opt.CheckpointEvery = 100
			opt.WrapWorld = func(x kernel.World) kernel.World {
				w := &landsThenFails{World: x, n: 3}
				if gated {
					return landsThenFailsGated{w}
				}
				return w
			}
			r, err := runstore.Open(t.Context(), dir, opt)
			require.NoError(t, err)
			rep, err := r.Driver.Run(context.Background(), 20, nil)
			require.ErrorIs(t, err, errUnknown)
			assert.Equal(t, 2, rep.CyclesExecuted)
			_, err = r.Driver.Step(t.Context())
			require.ErrorIs(t, err, kernel.ErrStopped, "a stopped driver runs no other cycle")
			require.NoError(t, r.Close())
			assert.Equal(t, before, manifest(), "a checkpoint was written after the unknown outcome")

			recs, err := ledger.ReadAll(osFS(t, dir))
			require.NoError(t, err)
			last := recs[len(recs)-1].Event
			assert.Equal(t, event.ActionIntent, last.Type, "the ledger ends at the open cycle's intent")
			assert.Equal(t, int64(3), last.CycleSeq)

			r, err = runstore.Open(t.Context(), dir, realOptions())
			require.NoError(t, err)
			rec := r.Driver.Recovery()
			assert.Equal(t, 1, rec.ActionsReused, "the effect the world kept is recorded as done")
			assert.Zero(t, rec.ActionsApplied, "the effect was applied again")
			_, err = r.Driver.Run(context.Background(), 20, nil)
			require.NoError(t, err)
			require.NoError(t, r.Close())

			queue, err := os.ReadFile(filepath.Join(dir, "sandbox", "world", "queue.txt"))
			require.NoError(t, err)
			assert.Equal(t, strings.Repeat("d\n", items), string(queue))
			recs, err = ledger.ReadAll(osFS(t, dir))
			require.NoError(t, err)
			committed := map[int64]int{}
			for _, r := range recs {
				if r.Event.Type == event.ActionCommitted {
					committed[r.Event.CycleSeq]++
				}
			}
			assert.Len(t, committed, items, "one committed record per effect")
			for c, n := range committed {
				assert.Equal(t, 1, n, "cycle %d committed %d times", c, n)
			}
			rep2, err := ledger.Verify(osFS(t, dir), nil)
			require.NoError(t, err)
			assert.True(t, rep2.OK, "ledger verify: %v", rep2.Damage)
		})
	}
}

// TestExportRefusesACheckpointOverAnOpenCycle: a run whose checkpoint
// covers part of a cycle (what the driver did before it stopped writing
// after an open cycle's error: the cycle is hidden from recovery) looks
// at rest, its ledger ending at its checkpoint, but its history is not
// whole: ledger verify names the line and export refuses it.
func TestExportRefusesACheckpointOverAnOpenCycle(t *testing.T) {
	dir := t.TempDir()
	_, err := runstore.Init(t.Context(), dir, perf.QueueInputs(4), "run:hidden", false, realOptions())
	require.NoError(t, err)
	r, err := runstore.Open(t.Context(), dir, realOptions())
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 2, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	_, err = runstore.ExportDir(dir)
	require.NoError(t, err, "a run at rest exports")

	fsys := osFS(t, dir)
	led, err := ledger.Open(fsys)
	require.NoError(t, err)
	store := dirstore.NewStore(fsys)
	snap, err := store.Load()
	require.NoError(t, err)
	at := "2026-01-01T00:10:00Z"
	_, err = led.Append([]event.Event{
		{Type: event.CycleStarted, RunID: "run:hidden", CycleSeq: 3, At: at},
		{Type: event.ActionIntent, RunID: "run:hidden", CycleSeq: 3, At: at},
	})
	require.NoError(t, err)
	m := snap.Manifest
	_, err = store.Commit(storage.Commit{Expect: m.Generation, RunID: m.RunID, CycleSeq: m.CycleSeq, Revision: "test", Frontier: led.Frontier(), Files: snap.Files})
	require.NoError(t, err)
	require.NoError(t, led.Close())

	_, err = runstore.ExportDir(dir)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the checkpoint's frontier is inside cycle 3")
}
