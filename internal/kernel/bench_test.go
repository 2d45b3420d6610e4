package kernel

import (
	"testing"
	"time"

	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// BenchmarkCycle measures the pure cost of one cycle (Begin and Finish)
// alternating between a cycle that acts and one that idles, on a run whose
// working memory is at its steady-state size.
func BenchmarkCycle(b *testing.B) {
	_, step := steadyState(b)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(i)
	}
}

// BenchmarkClone measures the copy of the state every cycle starts with,
// at the steady-state size of the working memory.
func BenchmarkClone(b *testing.B) {
	s, _ := steadyState(b)
	b.ReportAllocs()
	for b.Loop() {
		_ = s().clone()
	}
}

// steadyState returns a run's state after 200 cycles (its working memory
// at steady-state size) and the step that runs one more.
func steadyState(b *testing.B) (func() EngineState, func(int)) {
	spec := testSpec(patchCheck("a", "a.txt"))
	failing := observe(spec, map[string]bool{"a": true}, false)
	passing := observe(spec, map[string]bool{}, false)
	s := newStateB(b, spec, failing)
	now := t0
	step := func(i int) {
		now = now.Add(time.Minute)
		obs := failing
		if i%2 == 1 {
			obs = passing
		}
		p, err := Begin(s, Inputs{Now: now, Observation: obs})
		if err != nil {
			b.Fatal(err)
		}
		var out *world.Outcome
		if p.Effect != nil {
			out = &world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: world.OpApplyPatch, Target: "a.txt",
				Status: world.OutcomeCommitted, PostCheck: &world.CheckResult{ID: "a", Status: world.CheckPass}}
		}
		r, err := Finish(p, settled(out, "a"))
		if err != nil {
			b.Fatal(err)
		}
		s = r.State
	}
	for i := range 200 { // reach steady-state working memory
		step(i)
	}
	_ = state.Continue
	return func() EngineState { return s }, step
}

func newStateB(b *testing.B, spec world.Spec, obs world.Observation) EngineState {
	b.Helper()
	t := &testing.T{}
	return newState(t, spec, testContract(), obs)
}
