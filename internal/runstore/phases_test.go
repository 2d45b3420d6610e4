package runstore

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/kernel"
)

// TestPhasesNameEachStep holds the driver's Phase hook (ACR_TIMINGS) to
// the steps a cycle really takes, in order, for a cycle that acts and for
// one that does not: a step missing or misplaced would put its time under
// another name.
func TestPhasesNameEachStep(t *testing.T) {
	dir := t.TempDir()
	_, err := Init(dir, quickstart(t), "run:test", false, testOptions())
	require.NoError(t, err)
	var steps [][]string
	var cur []string
	opened := 0
	opt := testOptions()
	opt.Phases = func() func(string) {
		opened++
		return func(name string) {
			if name == "" {
				steps = append(steps, cur)
				cur = nil
				return
			}
			cur = append(cur, name)
		}
	}
	r, err := Open(dir, opt)
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 10, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Equal(t, 1, opened, "one hook per run opened")
	assert.Nil(t, cur, "every step ends with the hook hearing \"\"")

	acting := []string{kernel.PhaseGather, kernel.PhaseBegin, kernel.PhasePrepare, kernel.PhaseDecisionAppend, kernel.PhaseEffect,
		kernel.PhaseReadback, kernel.PhaseFinish, kernel.PhaseEffectDurable, kernel.PhaseOutcomeWrite, kernel.PhaseCheckpoint}
	quiet := []string{kernel.PhaseGather, kernel.PhaseBegin, kernel.PhaseFinish, kernel.PhaseCycleAppend, kernel.PhaseCheckpoint}
	idle := []string{kernel.PhaseGather}
	seen := map[string]int{}
	for i, s := range steps {
		switch {
		case slices.Equal(s, acting):
			seen["acting"]++
		case slices.Equal(s, quiet):
			seen["quiet"]++
		case slices.Equal(s, idle):
			seen["idle"]++
		default:
			t.Errorf("step %d took the steps %s", i, strings.Join(s, " "))
		}
	}
	assert.Positive(t, seen["acting"], "no cycle acted: %v", seen)
	assert.Positive(t, seen["quiet"], "no cycle went without an effect: %v", seen)
}
