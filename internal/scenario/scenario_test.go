package scenario

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestReferenceScenarios runs every scenario under scenarios/ and requires
// each to meet its own expectations (including frozen fingerprints).
func TestReferenceScenarios(t *testing.T) {
	dirs, err := Discover(filepath.Join("..", "..", "scenarios"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "no scenarios found")
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			sc, err := Load(d)
			require.NoError(t, err)
			res, err := Run(sc, Options{})
			require.NoError(t, err)
			for _, f := range res.Failures {
				t.Error(f)
			}
			t.Logf("%s: %d cycles, final %s, sequence %v", res.Name, res.Cycles, res.FinalDisposition, res.DispositionSequence)
			assert.True(t, res.Passed)
		})
	}
}
