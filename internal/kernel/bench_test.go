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
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		step(i)
	}
	_ = state.Continue
}

func newStateB(b *testing.B, spec world.Spec, obs world.Observation) EngineState {
	b.Helper()
	t := &testing.T{}
	return newState(t, spec, testContract(), obs)
}
