package kernel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
)

// TestGoalTerminalFailure: with policy.stop_on_terminal_failure a run whose
// every failing check is set aside, and that waits for nothing that could
// bring new work, stops (seed §15); without the policy, or while it waits
// for something, it rests.
func TestGoalTerminalFailure(t *testing.T) {
	forbidB := []governance.Rule{{Operation: "*", Paths: []string{"b.txt"}, Effect: governance.Forbid}, {Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}}
	approveB := []governance.Rule{{Operation: "*", Paths: []string{"b.txt"}, Effect: governance.Approve}, {Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}}
	evidenceB := []governance.Rule{{Operation: "*", Paths: []string{"b.txt"}, Effect: governance.Allow, RequiresEvidence: []string{"ev"}}, {Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}}
	cases := []struct {
		name   string
		rules  []governance.Rule
		policy bool
		want   state.Disposition
	}{
		{"refused, with the policy", forbidB, true, state.Stopped},
		{"refused, without it", forbidB, false, state.Idle},
		{"waiting for a person", approveB, true, state.WaitApproval},
		{"waiting for evidence", evidenceB, true, state.Sleep},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			spec := testSpec(patchCheck("b", "b.txt"))
			obs := observe(spec, map[string]bool{"b": true}, false)
			ct := testContract(c.rules...)
			ct.Policy.StopOnTerminalFailure = c.policy
			s := newState(t, spec, ct, obs)
			r, evs := step(t, s, Inputs{Now: t0.Add(time.Minute), Observation: obs})
			assert.Equal(t, c.want, r.State.Run.LoopDisposition, "reasons %v", r.State.Run.ReasonCodes)
			stops := eventsOf(evs, event.RunStopped)
			if c.want == state.Stopped {
				require.Len(t, stops, 1)
				assert.Equal(t, []string{"goal_terminal_failure", "all_remaining_work_set_aside"}, stops[0].Reasons)
				assert.Equal(t, state.RunStopped, r.State.Run.Status)
			} else {
				assert.Empty(t, stops)
			}
		})
	}

	t.Run("the goal holds", func(t *testing.T) {
		spec := testSpec(patchCheck("b", "b.txt"))
		obs := observe(spec, map[string]bool{}, false)
		ct := testContract(forbidB...)
		ct.Policy.StopOnTerminalFailure = true
		r, _ := step(t, newState(t, spec, ct, obs), Inputs{Now: t0.Add(time.Minute), Observation: obs})
		assert.Equal(t, state.Idle, r.State.Run.LoopDisposition)
	})
}

// TestContractInvalidated: a contract whose valid_until has passed, or one
// revoked, stops the run at the start of the next cycle, before it
// observes anything and without spending a cycle; a resting run wakes at
// valid_until to do so; the stopped run takes a contract amendment, and
// one that renews the contract resumes it.
func TestContractInvalidated(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	ok := observe(spec, map[string]bool{}, false)
	ct := testContract()
	ct.ValidUntil = state.FormatTime(t0.Add(time.Hour))
	s := newState(t, spec, ct, ok)

	r, _ := step(t, s, Inputs{Now: t0.Add(time.Minute), Observation: ok})
	require.Equal(t, state.Idle, r.State.Run.LoopDisposition)
	require.NotNil(t, r.State.Run.NextWake)
	assert.Equal(t, ct.ValidUntil, r.State.Run.NextWake.At, "a resting run wakes when its contract lapses")
	s = r.State
	eligible, _ := Eligible(s, Inputs{Now: t0.Add(30 * time.Minute), Observation: ok})
	assert.False(t, eligible)
	eligible, why := Eligible(s, Inputs{Now: t0.Add(time.Hour), Observation: ok})
	assert.True(t, eligible)
	assert.Contains(t, why, "contract_expiry")

	cycles := s.Run.Budget.Cycles
	r, evs := step(t, s, Inputs{Now: t0.Add(time.Hour), Observation: ok})
	assert.Equal(t, state.RunStopped, r.State.Run.Status)
	assert.Equal(t, []string{"contract_invalidated", "contract_expired"}, r.State.Run.ReasonCodes)
	assert.Empty(t, eventsOf(evs, event.SemanticEncoded), "nothing is observed under a lapsed contract")
	assert.Equal(t, cycles, r.State.Run.Budget.Cycles, "the stop spends no cycle")
	require.Len(t, eventsOf(evs, event.RunStopped), 1)
	s = r.State

	renewed := ct
	renewed.ValidUntil = state.FormatTime(t0.Add(48 * time.Hour))
	it := amendItem(t, state.AmendContract, renewed, s.Run.ContractRef)
	in := Inputs{Now: t0.Add(2 * time.Hour), Observation: ok, Inbox: []inbox.Item{it}, InboxPresent: []string{it.ID}}
	eligible, _ = Eligible(s, in)
	require.True(t, eligible, "a run stopped on its contract takes a contract amendment")
	r, _ = step(t, s, in)
	require.Len(t, r.State.Run.PendingAmendments, 1)
	pa := r.State.Run.PendingAmendments[0]
	ans := answerItem(t, pa.Ref, pa.CycleSeq, "approve", "alice", "")
	r, _ = step(t, r.State, Inputs{Now: t0.Add(3 * time.Hour), Observation: ok, Inbox: []inbox.Item{ans}, InboxPresent: []string{ans.ID}})
	assert.Equal(t, state.RunRunning, r.State.Run.Status, "the renewed contract resumes the run")

	revoked := renewed
	revoked.Revoked = true
	s = newState(t, spec, revoked, ok)
	r, evs = step(t, s, Inputs{Now: t0.Add(time.Minute), Observation: observe(spec, map[string]bool{"a": true}, false)})
	assert.Equal(t, []string{"contract_invalidated", "contract_revoked"}, r.State.Run.ReasonCodes)
	assert.Empty(t, eventsOf(evs, event.DecisionRecorded))
}
