package perf

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/runstore"
)

// TestWriteQueueFiles checks that the files acr init reads give back the
// inputs InitQueue uses.
func TestWriteQueueFiles(t *testing.T) {
	f, err := WriteQueueFiles(t.TempDir(), 7, 100)
	require.NoError(t, err)
	in, err := runstore.ReadInputs(f.Goal, f.Contract, f.Env)
	require.NoError(t, err)
	want := QueueInputs(7)
	assert.Equal(t, want.Goal, in.Goal)
	assert.Equal(t, want.Spec.Files, in.Spec.Files)
	assert.Equal(t, int64(100), in.Contract.Budgets.Cycles.Hard)
}
