package perf

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/runstore"
)

// TestGeneratedRunIsOrdinary: a generated history verifies, replays with
// the current code, recovers cleanly and continues with acr's own driver.
func TestGeneratedRunIsOrdinary(t *testing.T) {
	dir := t.TempDir()
	g, err := Generate(t.Context(), dir, 2000, 0)
	require.NoError(t, err)
	require.GreaterOrEqual(t, g.Events, int64(2000))
	fsys, err := disk.OpenOSDir(dir)
	require.NoError(t, err)
	rep, err := ledger.Verify(fsys, nil)
	require.NoError(t, err)
	require.True(t, rep.OK)
	recs, err := ledger.ReadAll(fsys)
	require.NoError(t, err)
	rp, err := kernel.Replay(recs, 1)
	require.NoError(t, err)
	assert.True(t, rp.OK, "%+v", rp.Divergence)
	assert.Equal(t, g.Cycles, rp.CyclesVerified)

	r, err := runstore.Open(t.Context(), dir, runstore.Options{Clock: fixedClock{}, Revision: "perf"})
	require.NoError(t, err)
	assert.False(t, r.Driver.Recovery().Recovered, "a generated run needs no recovery")
	_, err = r.Driver.Run(context.Background(), 5, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	_, err = ledger.Cycle(fsys, g.Cycles)
	require.NoError(t, err, "the generated index covers the last cycle")
}
