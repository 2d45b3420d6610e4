package validate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// TestJudgeRule: gate G reads each decision's rule again. A decision
// naming the rule the contract's first match gives passes; one that found
// no rule, or a forbid, where the contract allows (the over-refusing
// matcher) fails, and so does one that allowed what a forbid governs.
func TestJudgeRule(t *testing.T) {
	var c pinnedContract
	require.NoError(t, json.Unmarshal([]byte(`{"rules":[
		{"operation":"*","paths":["vendor/**"],"effect":"forbid"},
		{"operation":"apply_local_patch","paths":["config/**"],"effect":"approve"},
		{"operation":"run_command","paths":["build/**"],"effect":"allow"},
		{"operation":"*","paths":["**"],"effect":"allow"}]}`), &c))
	patch := func(target string) actionView { return actionView{Operation: "apply_local_patch", Target: target} }
	cmd := func(touches ...string) actionView { return actionView{Operation: "run_command", Touches: touches} }
	cases := []struct {
		name         string
		a            actionView
		rule, effect string
		ok           bool
	}{
		{"allowed, as read", patch("README.md"), "rules[3]", "allow", true},
		{"forbidden, as read", patch("vendor/a.js"), "rules[0]", "forbid", true},
		{"approval, as read", patch("config/a.ini"), "rules[1]", "approve", true},
		{"stopped before the rules", patch("README.md"), "none", "", true},
		{"an undo needs no rule", actionView{Operation: "restore_snapshot", Target: "README.md"}, "rollback_of_own_effect", "allow", true},
		{"refused as ungoverned, though allowed", patch("README.md"), "default", "", false},
		{"refused as forbidden, though allowed", patch("README.md"), "rules[0]", "forbid", false},
		{"asked about, though allowed", patch("README.md"), "rules[1]", "approve", false},
		{"allowed, though forbidden", patch("vendor/a.js"), "rules[3]", "allow", false},
		{"a command forbidden where a forbid may reach", cmd("**"), "rules[0]", "forbid", true},
		{"a command forbidden where none reaches", cmd("build/**"), "rules[0]", "forbid", false},
		{"a command ungoverned, though every path is covered", cmd("build/**"), "default", "", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			why := judgeRule(c, tc.a, tc.rule, tc.effect)
			assert.Equal(t, tc.ok, why == "", why)
		})
	}
}

// record makes a ledger record of an event carrying v.
func record(t *testing.T, seq int64, typ event.Kind, kind string, v any, refs map[string]codec.Ref, reasons ...string) event.Record {
	t.Helper()
	ev := event.Event{Type: typ, CycleSeq: 0, Refs: refs, Reasons: reasons}
	if v != nil {
		o, err := event.NewObject(kind, v)
		require.NoError(t, err)
		ev.Object = o
	}
	return event.Record{Seq: seq, Event: ev}
}

// TestSingleBootstrap: gate A's account of a run's beginning is computed
// from its ledger: one goal, contract and environment pinned, and one
// start naming them, before any cycle.
func TestSingleBootstrap(t *testing.T) {
	goal := record(t, 1, event.GoalPinned, "goal", map[string]string{"id": "g"}, nil)
	contract := record(t, 2, event.ContractPinned, "contract", map[string]string{"id": "c"}, nil)
	spec := record(t, 3, event.SpecPinned, "envspec", map[string]string{"schema": "e"}, nil)
	start := record(t, 4, event.RunStarted, "", nil, map[string]codec.Ref{"goal": goal.Event.Object.Ref, "contract": contract.Event.Object.Ref,
		"environment_spec": spec.Event.Object.Ref})
	cycle := record(t, 5, event.CycleStarted, "pin", map[string]string{}, nil)
	again := record(t, 6, event.ContractPinned, "contract", map[string]string{"id": "other"}, nil)
	other := start
	other.Event.Refs = map[string]codec.Ref{"goal": goal.Event.Object.Ref, "contract": again.Event.Object.Ref, "environment_spec": spec.Event.Object.Ref}
	for _, c := range []struct {
		name string
		recs []event.Record
		ok   bool
	}{
		{"one bootstrap", []event.Record{goal, contract, spec, start, cycle}, true},
		{"a contract pinned again after a cycle", []event.Record{goal, contract, spec, start, cycle, again}, false},
		{"no environment", []event.Record{goal, contract, start, cycle}, false},
		{"a start naming another contract", []event.Record{goal, contract, spec, other, cycle}, false},
		{"two starts", []event.Record{goal, contract, spec, start, start, cycle}, false},
	} {
		why := singleBootstrap(&Run{Records: c.recs})
		assert.Equal(t, c.ok, why == "", "%s: %s", c.name, why)
	}
}

// TestIdentityKept: gate F's account of identity is computed: an overlay
// key naming an identity is found, and a run ending under another
// contract than it started with needs an accepted amendment of it.
func TestIdentityKept(t *testing.T) {
	var ov any
	require.NoError(t, json.Unmarshal([]byte(`{"lenses":[{"source_ref":"s","source_version":"1"}],"critique_first":true}`), &ov))
	assert.Empty(t, identityKey(ov, "overlay"))
	require.NoError(t, json.Unmarshal([]byte(`{"lenses":[{"source_ref":"s","operator":"bob"}]}`), &ov))
	assert.Equal(t, "overlay.lenses[0].operator", identityKey(ov, "overlay"))

	start := record(t, 1, event.RunStarted, "", nil, map[string]codec.Ref{"goal": "goal:a", "contract": "contract:a", "authority": "authority:a"})
	run := &Run{Records: []event.Record{start}}
	run.Final.Run = state.RunState{GoalRefs: []codec.Ref{"goal:a"}, ContractRef: "contract:a", AuthorityRef: "authority:a"}
	assert.Empty(t, identityKept(run))
	run.Final.Run.AuthorityRef = "authority:b"
	assert.Contains(t, identityKept(run), "authority")
	run.Records = append(run.Records, record(t, 2, event.AmendmentAccepted, "", nil, nil, "target_contract", "by_operator"))
	assert.Empty(t, identityKept(run), "a person's accepted contract amendment accounts for it")
}

// TestJustifyStop: gate U re-derives why a run had to stop from what the
// ledger recorded.
func TestJustifyStop(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	var lapsed, holding, policy stopContractView
	lapsed.ValidUntil = "2026-01-01T11:00:00Z"
	holding.ValidUntil = "2026-01-02T00:00:00Z"
	policy.Policy.StopOnTerminalFailure = true
	var goal, stopGoal stopGoalView
	goal.Success.AllChecksPass = true
	stopGoal = goal
	stopGoal.StopOnSuccess = true
	var passing, failing observationView
	require.NoError(t, json.Unmarshal([]byte(`{"checks":[{"id":"a","status":"pass"}]}`), &passing))
	require.NoError(t, json.Unmarshal([]byte(`{"checks":[{"id":"a","status":"fail"}]}`), &failing))
	for _, c := range []struct {
		name     string
		reasons  []string
		contract stopContractView
		goal     stopGoalView
		obs      observationView
		stopReq  bool
		ok       bool
	}{
		{"a lapsed contract", []string{"contract_invalidated", "contract_expired"}, lapsed, goal, passing, false, true},
		{"a contract that still holds", []string{"contract_invalidated", "contract_expired"}, holding, goal, passing, false, false},
		{"expired, though revoked is what it reads", []string{"contract_invalidated", "contract_revoked"}, lapsed, goal, passing, false, false},
		{"the goal held, and it asks to stop", []string{"goal_satisfied"}, holding, stopGoal, passing, false, true},
		{"the goal held, but it does not ask to stop", []string{"goal_satisfied"}, holding, goal, passing, false, false},
		{"the goal failed for good under the policy", []string{"goal_terminal_failure"}, policy, goal, failing, false, true},
		{"the goal failed, without the policy", []string{"goal_terminal_failure"}, holding, goal, failing, false, false},
		{"the goal 'failed', yet holds", []string{"goal_terminal_failure"}, policy, goal, passing, false, false},
		{"an explicit stop with a request", []string{"explicit_stop"}, holding, goal, passing, true, true},
		{"an explicit stop without one", []string{"explicit_stop"}, holding, goal, passing, false, false},
	} {
		why := justifyStop(c.reasons, c.contract, c.goal, c.obs, at, c.stopReq)
		assert.Equal(t, c.ok, why == "", "%s: %s", c.name, why)
	}
	// Every source is recognised by its reasons.
	names := map[string]bool{}
	for _, s := range stopSources() {
		for _, rs := range [][]string{{"explicit_stop"}, {"operator_kill_switch"}, {"budget_limit", "budget_cycles"}, {"goal_satisfied"},
			{"goal_terminal_failure"}, {"contract_invalidated", "contract_revoked"}, {"budget_limit", "budget_actions"}} {
			if s.match != nil && s.match(rs) {
				names[s.name] = true
			}
		}
	}
	assert.Len(t, names, len(stopSources())-1, "all but the fault, which is its own event")
}
