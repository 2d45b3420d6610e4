package controller

import (
	"errors"
	"math/rand/v2"
	"testing"
	"testing/quick"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
)

func TestStateNamesRoundTrip(t *testing.T) {
	for _, s := range States() {
		b, err := s.MarshalText()
		require.NoError(t, err)
		var back Phase
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, s, back)
	}
	_, err := StateInvalid.MarshalText()
	assert.Error(t, err)
	var s Phase
	assert.Error(t, s.UnmarshalText([]byte("Sleep")), "names are case-sensitive")
	for _, r := range Roles() {
		b, err := r.MarshalText()
		require.NoError(t, err)
		var back Role
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, r, back)
	}
}

func TestAllowed(t *testing.T) {
	for _, tc := range []struct {
		from, to Phase
		ok       bool
	}{
		{Sleep, Wake, true}, {Sleep, Observe, false}, {Sleep, Blocked, false},
		{Wake, Observe, true}, {Observe, Align, true}, {Align, AssessTension, true}, {Align, Distill, false},
		{AssessTension, NoCycle, true}, {AssessTension, Distill, true}, {AssessTension, Act, false},
		{NoCycle, Sleep, true}, {Distill, Plan, true}, {Distill, NoCycle, true}, {Plan, Preflight, true}, {Plan, Act, false},
		{Preflight, Propose, true}, {Preflight, Checkpoint, true}, {Preflight, Act, false},
		{Propose, Sleep, true}, {Propose, Act, false}, {Checkpoint, Act, true}, {Act, ObserveEffect, true},
		{Act, Evaluate, false}, {ObserveEffect, Evaluate, true}, {Evaluate, Rollback, true}, {Evaluate, Metabolize, true},
		{Rollback, Metabolize, true}, {Metabolize, ForgeCandidate, true}, {Metabolize, Cascade, true},
		{ForgeCandidate, Cascade, true}, {Cascade, Sleep, true},
		{Act, Blocked, true}, {Act, Failed, true}, {Blocked, Sleep, true}, {Failed, Sleep, true},
		{Blocked, Failed, false}, {Failed, Wake, false}, {StateInvalid, Sleep, false}, {Sleep, StateInvalid, false},
	} {
		assert.Equal(t, tc.ok, Allowed(tc.from, tc.to), "%s -> %s", tc.from, tc.to)
	}
}

func TestMachineRecordsEveryTransition(t *testing.T) {
	m := Start("run:x/cycle/2", "run:x/cycle/1", "2026-01-01T00:00:00Z", budget.Cycle{})
	path := []Step{
		{To: Wake, Role: Observer, Reason: "environment_changed"},
		{To: Observe, Role: Observer, Outputs: []codec.Ref{"sem:sha256:" + hex64}, Authority: governance.AuthRead},
		{To: Align, Role: IntentCustodian}, {To: AssessTension, Role: IntentCustodian},
		{To: NoCycle, Role: IntentCustodian, Reason: TensionNone}, {To: Sleep, Role: IntentCustodian},
	}
	for i, s := range path {
		tr, err := m.Move(s)
		require.NoError(t, err)
		assert.Equal(t, i+1, tr.Seq)
		assert.Equal(t, s.To, tr.NextState)
		assert.Equal(t, "run:x/cycle/1", tr.ParentCycleID)
		assert.NotNil(t, tr.InputHashes)
	}
	assert.Equal(t, Sleep, m.State())

	_, err := m.Move(Step{To: Act, Role: Executor})
	var ill *IllegalTransitionError
	require.ErrorAs(t, err, &ill)
	assert.Equal(t, Sleep, ill.From)
	assert.Equal(t, Sleep, m.State(), "a refused transition does not move")
	_, err = m.Move(Step{To: Wake})
	assert.Error(t, err, "every transition names its actor role")
}

const hex64 = "0000000000000000000000000000000000000000000000000000000000000000"

// TestRandomStepsNeverReachAnIllegalState is the property: whatever
// sequence of requested transitions arrives, the machine only ever records
// allowed ones, and refuses the rest without moving.
func TestRandomStepsNeverReachAnIllegalState(t *testing.T) {
	prop := func(seed uint64, n uint8) bool {
		rng := rand.New(rand.NewPCG(seed, 7))
		m := Start("c", "", "t", budget.Cycle{})
		for range int(n) + 1 {
			from := m.State()
			to := Phase(rng.IntN(int(Failed) + 2)) // includes StateInvalid and one past the end
			tr, err := m.Move(Step{To: to, Role: Roles()[rng.IntN(len(Roles()))]})
			if err != nil {
				if m.State() != from {
					return false
				}
				continue
			}
			if !Allowed(tr.PreviousState, tr.NextState) || tr.PreviousState != from || m.State() != to {
				return false
			}
		}
		return true
	}
	require.NoError(t, quick.Check(prop, &quick.Config{MaxCount: 2000}))
}

func TestWithinNeverRaises(t *testing.T) {
	granted := Coordinates{Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: "A2", CognitiveDepth: "D2"}, Authority: governance.AuthPropose}
	for _, tc := range []struct {
		name string
		req  Coordinates
		ok   bool
	}{
		{"as granted", Coordinates{}, true},
		{"lower autonomy", Coordinates{Coordinates: governance.Coordinates{Autonomy: "A1"}}, true},
		{"lower authority", Coordinates{Authority: governance.AuthRead}, true},
		{"higher autonomy", Coordinates{Coordinates: governance.Coordinates{Autonomy: "A3"}}, false},
		{"higher authority", Coordinates{Authority: governance.AuthProjectWrite}, false},
		{"external action", Coordinates{Authority: governance.AuthExternalAction}, false},
		{"deeper cognition", Coordinates{Coordinates: governance.Coordinates{CognitiveDepth: "D3"}}, false},
		{"higher readiness", Coordinates{Coordinates: governance.Coordinates{Readiness: "L3"}}, false},
		{"unknown authority", Coordinates{Authority: "root"}, false},
		{"malformed autonomy", Coordinates{Coordinates: governance.Coordinates{Autonomy: "A9"}}, false},
	} {
		err := Within(granted, tc.req)
		assert.Equal(t, tc.ok, err == nil, "%s: %v", tc.name, err)
		if err != nil {
			assert.ErrorIs(t, err, ErrRaise)
		}
	}
}

func TestBudgetOver(t *testing.T) {
	b := budget.Cycle{MaxToolActions: 1, MaxFilesTouched: 2}
	assert.Equal(t, "", budget.Over(budget.Usage{ToolActions: 1, FilesTouched: 2}, b))
	assert.Equal(t, "max_tool_actions", budget.Over(budget.Usage{ToolActions: 2}, b))
	assert.Equal(t, "max_files_touched", budget.Over(budget.Usage{FilesTouched: 3}, b))
	assert.Equal(t, "max_recursive_depth", budget.Over(budget.Usage{RecursiveDepth: 4}, b), "defaults apply to unset limits")
	m := Start("c", "", "t", b)
	_, err := m.Move(Step{To: Wake, Role: Observer, Used: budget.Usage{Events: 3, RecursiveDepth: 2}})
	require.NoError(t, err)
	assert.Equal(t, "", m.Exceeds(budget.Usage{ToolActions: 1, RecursiveDepth: 1}))
	assert.Equal(t, "max_tool_actions", m.Exceeds(budget.Usage{ToolActions: 2}))
	assert.Equal(t, int64(2), m.Used().RecursiveDepth, "depth is a high-water mark")
}

// One test per non-self-approval rule: each tries the violation and must
// see it refused with the rule named.
func TestNonSelfApproval(t *testing.T) {
	plan, outcome, readback, eval := ref("areq"), ref("wout"), ref("rdbk"), ref("evalr")
	fit, fit2, cand, intent := ref("fit"), ref("fit2"), ref("cand"), ref("goal")
	newGuard := func() *Guard {
		g := NewGuard()
		g.Author(plan, Distiller)
		g.Author(outcome, Executor)
		g.Author(readback, Observer)
		g.Author(eval, Evaluator)
		g.Author(cand, Distiller)
		return g
	}
	rule := func(t *testing.T, err error, want string) {
		t.Helper()
		var v *Violation
		require.True(t, errors.As(err, &v), "want a violation, got %v", err)
		assert.Equal(t, want, v.Rule)
	}
	t.Run("distiller cannot approve its own plan", func(t *testing.T) {
		g := newGuard()
		rule(t, g.ApprovePlan(plan, Distiller), RuleOwnPlan)
		rule(t, g.ApprovePlan(plan, Executor), RuleOwnPlan)
		assert.NoError(t, g.ApprovePlan(plan, IntentCustodian))
		assert.NoError(t, g.ApprovePlan(plan, Operator))
	})
	t.Run("executor cannot be the sole evaluator", func(t *testing.T) {
		g := newGuard()
		own := ref("evalr2")
		g.Author(own, Executor)
		rule(t, g.AcceptEvaluation(own, outcome, []codec.Ref{readback}), RuleSoleEvaluator)
		rule(t, g.AcceptEvaluation(eval, outcome, []codec.Ref{outcome}), RuleSoleEvaluator)
		assert.NoError(t, g.AcceptEvaluation(eval, outcome, []codec.Ref{outcome, readback}))
	})
	t.Run("evaluator cannot change the fitness contract", func(t *testing.T) {
		g := newGuard()
		require.NoError(t, g.FixFitness(fit, Distiller))
		rule(t, g.FixFitness(fit2, Evaluator), RuleFitnessFixed)
		rule(t, g.FixFitness(fit2, Operator), RuleFitnessFixed)
		assert.Equal(t, fit, g.Fitness())
		require.NoError(t, g.FixFitness(fit, Distiller), "fixing the same contract again changes nothing")
	})
	t.Run("a candidate cannot load or promote itself", func(t *testing.T) {
		g := newGuard()
		rule(t, g.Promote(cand, Promoter, cand), RuleSelfPromotion)
		rule(t, g.Promote(cand, Distiller, plan), RuleSelfPromotion)
		rule(t, g.Promote(cand, Evaluator, eval), RuleSelfPromotion)
		assert.NoError(t, g.Promote(cand, Promoter, ref("promo")))
	})
	t.Run("intent cannot be amended and accepted in one cycle", func(t *testing.T) {
		g := newGuard()
		g.AmendIntent(intent)
		rule(t, g.AcceptIntent(intent, Operator), RuleIntentSameCyle)
		assert.NoError(t, NewGuard().AcceptIntent(intent, Operator), "a later cycle may accept it")
		rule(t, NewGuard().AcceptIntent(intent, Distiller), RuleIntentSameCyle)
	})
	t.Run("a cycle cannot raise authority", func(t *testing.T) {
		g := newGuard()
		granted := Coordinates{Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: "A2", CognitiveDepth: "D2"}, Authority: governance.AuthProjectWrite}
		rule(t, g.Raise(granted, Coordinates{Authority: governance.AuthExternalAction}, Distiller, plan), RuleRaise)
		assert.NoError(t, g.Raise(granted, Coordinates{Coordinates: governance.Coordinates{Autonomy: "A1"}}, Distiller, plan))
	})
}

func ref(kind string) codec.Ref { return codec.NewRef(kind, []byte(kind)) }

func TestAssess(t *testing.T) {
	obs := ref("obs")
	r := Assess(TensionInputs{CycleID: "c", Observation: obs})
	assert.False(t, r.Material)
	assert.Equal(t, []string{TensionNone}, r.Classes)

	r = Assess(TensionInputs{CycleID: "c", Observation: obs, Failing: []string{"a", "b"}, Drifted: []string{"b"},
		OperatorSignals: []TensionSource{{Class: TensionOperatorRequest, Subject: "external_event", Ref: ref("sig")}}})
	assert.True(t, r.Material)
	assert.Equal(t, []string{TensionStateDrift, TensionOperatorRequest, TensionValidation}, r.Classes)
	for _, s := range r.Sources {
		assert.NotEmpty(t, s.Ref, "every claim has a source ref")
	}
}
