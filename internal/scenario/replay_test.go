package scenario

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
)

func scenarioRecords(t *testing.T, name string) []event.Record {
	t.Helper()
	sc, err := Load(filepath.Join("..", "..", "scenarios", name))
	require.NoError(t, err)
	res, err := Run(sc, Options{Keep: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = removeAll(filepath.Dir(res.Dir)) })
	fsys, err := disk.OpenOSDir(res.Dir)
	require.NoError(t, err)
	recs, err := ledger.ReadAll(fsys)
	require.NoError(t, err)
	return recs
}

// Every reference scenario's ledger is re-derived by replay in
// TestReferenceScenarios, on the one run of each scenario.

// TestReplayNamesTheAlteredCycle alters one recorded input (the clock
// reading of cycle 2), re-chains the ledger so it still verifies, and
// expects replay to name cycle 2 and the field that differs.
func TestReplayNamesTheAlteredCycle(t *testing.T) {
	recs := scenarioRecords(t, "p07-direct-path")
	mem := disk.NewMem()
	l, err := ledger.Create(mem)
	require.NoError(t, err)
	altered := false
	for _, r := range recs {
		ev := r.Event
		if ev.Type == event.CycleStarted && ev.CycleSeq == 2 {
			var m event.Inputs
			require.NoError(t, ev.Object.Decode(&m))
			m.At = "2026-06-01T00:00:00Z"
			obj, err := event.NewObject(ev.Object.Ref.Kind(), m)
			require.NoError(t, err)
			ev.Object = obj
			altered = true
		}
		_, err := l.Append([]event.Event{ev})
		require.NoError(t, err)
	}
	require.True(t, altered)
	rep, err := ledger.Verify(mem, nil)
	require.NoError(t, err)
	require.True(t, rep.OK, "the rewritten ledger must still verify")
	back, err := ledger.ReadAll(mem)
	require.NoError(t, err)
	out, err := kernel.Replay(back, 1)
	require.NoError(t, err)
	require.False(t, out.OK)
	assert.Equal(t, int64(2), out.Divergence.Cycle)
	assert.Equal(t, "at", out.Divergence.Field)
	assert.Contains(t, out.Divergence.Derived, "2026-06-01")

	// Verifying only from cycle 3 on still has to replay cycle 2, and says so.
	_, err = kernel.Replay(back, 3)
	require.Error(t, err)
	_ = codec.Ref("")
}
