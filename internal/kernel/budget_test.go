package kernel

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// cycleOnce runs one cycle whose effect (if any) commits and passes. The
// result's Events are both batches.
func cycleOnce(t *testing.T, s EngineState, in Inputs) *Result {
	t.Helper()
	p, err := Begin(s, in)
	require.NoError(t, err)
	st := Settlement{}
	if p.Effect != nil {
		st = settled(&world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: p.Effect.Action.Operation, Target: p.Effect.Action.Target,
			Status: world.OutcomeCommitted, PostCheck: &world.CheckResult{ID: p.Effect.Action.CheckID, Status: world.CheckPass}}, p.Effect.Action.CheckID)
	}
	first := p.Events
	r, err := Finish(p, st)
	require.NoError(t, err)
	r.Events = append(slices.Clone(first), r.Events...)
	return r
}

func budgeted(b budget.Run) governance.Contract {
	c := testContract()
	c.Budgets = b
	return c
}

// TestHardBudgetsAreCheckedBeforeSpending: every hard level is checked with
// the cost of the next step, so no run ever uses more than it allows.
func TestHardBudgetsAreCheckedBeforeSpending(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"), patchCheck("b", "b.txt"))
	failing := observe(spec, map[string]bool{"a": true, "b": true}, false)
	in := Inputs{Now: t0.Add(time.Minute), Observation: failing}

	t.Run("cognitive operations: a program that does not fit does not run", func(t *testing.T) {
		prog := cognition.Compile(1, "check:a", spec.Checks[0], nil, cognition.Routing{})
		cost := int64(cognition.Cost(prog))
		require.Positive(t, cost)
		s := newState(t, spec, budgeted(budget.Run{CognitiveOperations: budget.Limit{Hard: cost - 1}}), failing)
		r := cycleOnce(t, s, in)
		assert.Equal(t, state.Stopped, r.State.Run.LoopDisposition)
		assert.Equal(t, []string{"budget_limit", "budget_cognitive_operations"}, r.State.Run.ReasonCodes)
		assert.Zero(t, r.State.Run.Budget.CognitiveOperations, "nothing was spent")
		assert.Empty(t, reasonsOf(r.Events, event.DialogueCompleted))

		s = newState(t, spec, budgeted(budget.Run{CognitiveOperations: budget.Limit{Hard: cost}}), failing)
		r = cycleOnce(t, s, in)
		assert.Equal(t, cost, r.State.Run.Budget.CognitiveOperations, "a program that fits exactly runs")
		assert.NotEqual(t, state.Stopped, r.State.Run.LoopDisposition)
	})

	t.Run("actions: the effect past the limit is never carried out", func(t *testing.T) {
		s := newState(t, spec, budgeted(budget.Run{Actions: budget.Limit{Hard: 1}}), failing)
		r := cycleOnce(t, s, in)
		assert.Equal(t, int64(1), r.State.Run.Budget.Actions)
		p, err := Begin(r.State, Inputs{Now: t0.Add(2 * time.Minute), Observation: observe(spec, map[string]bool{"b": true}, false)})
		require.NoError(t, err)
		assert.Nil(t, p.Effect, "the second action is decided but not carried out")
		r2, err := Finish(p, Settlement{})
		require.NoError(t, err)
		assert.Equal(t, state.Stopped, r2.State.Run.LoopDisposition)
		assert.Equal(t, []string{"budget_limit", "budget_actions"}, r2.State.Run.ReasonCodes)
		assert.Equal(t, int64(1), r2.State.Run.Budget.Actions)
	})

	t.Run("cycles: the run stops at the end of its last allowed cycle", func(t *testing.T) {
		s := newState(t, spec, budgeted(budget.Run{Cycles: budget.Limit{Hard: 1}}), failing)
		r := cycleOnce(t, s, in)
		assert.Equal(t, state.Stopped, r.State.Run.LoopDisposition)
		assert.Equal(t, int64(1), r.State.Run.Budget.Cycles)
	})

	t.Run("wall clock: a cycle at the deadline stops without working or counting", func(t *testing.T) {
		s := newState(t, spec, budgeted(budget.Run{WallClockSeconds: budget.Limit{Hard: 600}}), failing)
		r := cycleOnce(t, s, Inputs{Now: t0.Add(10 * time.Minute), Observation: failing})
		assert.Equal(t, state.Stopped, r.State.Run.LoopDisposition)
		assert.Equal(t, []string{"budget_limit", "budget_wall_clock_seconds"}, r.State.Run.ReasonCodes)
		assert.Zero(t, r.State.Run.Budget.Cycles, "a cycle stopped before it observed spends nothing")
		assert.Empty(t, reasonsOf(r.Events, event.SemanticEncoded))
	})

	t.Run("wall clock: the watchdog keeps an effect from running past the run's deadline", func(t *testing.T) {
		s := newState(t, spec, budgeted(budget.Run{WallClockSeconds: budget.Limit{Hard: 120}}), failing)
		p, err := Begin(s, in)
		require.NoError(t, err)
		require.NotNil(t, p.Effect)
		intent := &world.Intent{Schema: world.IntentSchema, Key: p.Effect.Key, Changes: true, Rollback: &world.RollbackBundle{Target: "a.txt", Existed: true, Content: "bad"}}
		assert.Empty(t, Controls(p, intent, true, t0.Add(90*time.Second)))
		assert.Equal(t, "budget_wall_clock_seconds", Controls(p, intent, true, t0.Add(3*time.Minute)))
	})
}

// TestSoftBudgetRestsUntilReplenished: a soft level used up rests the run
// DEFERRED with a wake condition; nothing but a budget_replenished signal
// (or a stop) makes a cycle eligible; the replenishment starts a new
// allowance of the contract's size.
func TestSoftBudgetRestsUntilReplenished(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"), patchCheck("b", "b.txt"), patchCheck("c", "c.txt"))
	failing := observe(spec, map[string]bool{"a": true, "b": true, "c": true}, false)
	s := newState(t, spec, budgeted(budget.Run{Actions: budget.Limit{Soft: 1, Hard: 5}}), failing)
	r := cycleOnce(t, s, Inputs{Now: t0.Add(time.Minute), Observation: failing})
	rs := r.State.Run
	assert.Equal(t, state.Deferred, rs.LoopDisposition)
	assert.Subset(t, rs.ReasonCodes, []string{"budget_soft_limit", "budget_actions"})
	require.NotNil(t, rs.NextWake)
	assert.Contains(t, rs.NextWake.Conditions, "budget actions: budget_replenished signal")
	assert.Equal(t, 1, len(reasonsOf(r.Events, event.BudgetSoftLimitReached)))

	later := t0.Add(time.Hour)
	changed := observe(spec, map[string]bool{"b": true}, false)
	ok, why := Eligible(r.State, Inputs{Now: later, Observation: changed})
	assert.False(t, ok, "a changed world does not spend an exhausted allowance")
	assert.Equal(t, []string{"budget_soft_limit", "budget_actions", "DEFERRED"}, why)
	other := wake("w1", "external_event", "")
	ok, _ = Eligible(r.State, Inputs{Now: later, Observation: changed, Inbox: []inbox.Item{other}})
	assert.False(t, ok, "neither does an unrelated signal")

	refill := wake("w2", "budget_replenished", "")
	in := Inputs{Now: later, Observation: changed, Inbox: []inbox.Item{refill}}
	ok, _ = Eligible(r.State, in)
	require.True(t, ok)
	r2 := cycleOnce(t, r.State, in)
	assert.Equal(t, map[string]int64{"actions": 1}, r2.State.Run.Budget.SoftBase)
	assert.Equal(t, int64(2), r2.State.Run.Budget.Actions, "the new allowance was used")
	assert.Equal(t, state.Deferred, r2.State.Run.LoopDisposition, "and rests again once it is used up")
	assert.Equal(t, []string{"budget_actions"}, reasonsOf(r2.Events, event.BudgetReplenished))
}

func wake(id, source, ref string) inbox.Item {
	w := state.WakeSignal{Schema: state.WakeSignalSchema, ID: id, Source: source, Ref: ref, DedupKey: id, CreatedAt: state.FormatTime(t0),
		ExpiresAt: state.FormatTime(t0.Add(48 * time.Hour)), By: "test", CausalParent: "test"}
	return inbox.Item{ID: id, Kind: inbox.KindWake, Wake: &w, Body: codec.MustMarshal(w)}
}
