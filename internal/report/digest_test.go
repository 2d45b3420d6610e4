package report

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// ev builds a ledger event of cycle 7 carrying v (nil for none), the way
// the kernel records it.
func ev(t *testing.T, typ event.Kind, kind string, v any, refs map[string]codec.Ref, reasons ...string) event.Event {
	t.Helper()
	e := event.Event{Type: typ, RunID: "run:test", CycleSeq: 7, At: "2026-01-01T00:07:00Z", Refs: refs, Reasons: reasons}
	if v != nil {
		obj, err := event.NewObject(kind, v)
		require.NoError(t, err)
		e.Object = obj
	}
	return e
}

// decoded encodes events canonically, as the ledger stores them, and
// decodes them the way Read does.
func decoded(t *testing.T, evs []event.Event) []Event {
	t.Helper()
	var out []Event
	for _, e := range evs {
		b, _, err := e.Encode()
		require.NoError(t, err)
		typ := e.Type
		if !Shown(typ) {
			continue
		}
		d, err := decodeEvent(typ, b)
		require.NoError(t, err, typ)
		out = append(out, d)
	}
	return out
}

func started(t *testing.T) event.Event {
	return ev(t, event.CycleStarted, "pin", map[string]any{"at": "2026-01-01T00:07:00Z"}, nil)
}

func completed(t *testing.T, d state.Disposition, decision string, reasons ...string) event.Event {
	rec := state.CycleRecord{Schema: state.CycleSchema, RunID: "run:test", CycleSeq: 7, StartedAt: "2026-01-01T00:07:00Z",
		LoopDisposition: d, ReasonCodes: reasons, GovernanceDecision: decision, InputRefs: []codec.Ref{}, CommitmentRefs: []codec.Ref{}, ControllerTransitionRef: []codec.Ref{}}
	return ev(t, event.CycleCompleted, "pcyc", rec, nil, d.String())
}

func checkpoint(t *testing.T, cycles, actions int64) event.Event {
	return ev(t, event.CheckpointCreated, "pchk", state.Checkpoint{Schema: state.CheckpointSchema, CycleSeq: 7,
		BudgetSnapshot: state.BudgetUsage{Cycles: cycles, Actions: actions, CognitiveOperations: 9, SoftWarned: []string{}}}, nil)
}

func TestDigest(t *testing.T) {
	actionRef := codec.Ref("areq:sha256:" + string(make64('a')))
	approval := state.Approval{Schema: state.ApprovalSchema, ID: "apr-1", ActionRef: actionRef, Verdict: "approve", By: "alice", Reason: "checked the diff"}
	aprObj, err := event.NewObject("apr", approval)
	require.NoError(t, err)
	sel := agenda.Candidate{ItemID: "check:typo", CheckID: "typo", Source: agenda.FromIssue, Priority: 10, Summary: "README misspells 'the'"}
	action := world.Action{Schema: "acr.action/v0.1", Operation: world.OpApplyPatch, Target: "README.md", CheckID: "typo"}
	cmt := commitment.Commitment{Schema: "acr.commitment/v0.1", ID: "cmt-1", Version: 1, Status: commitment.Suspended, ItemID: "check:x", Summary: "wait for the dataset"}

	cases := []struct {
		name   string
		events func(t *testing.T) []event.Event
		want   Cycle
		err    string
	}{{
		name: "executed action",
		events: func(t *testing.T) []event.Event {
			return []event.Event{
				started(t),
				ev(t, event.Observed, "obs", map[string]any{"files": 3}, nil), // never shown
				ev(t, event.AgendaSelected, "ares", agenda.Resolution{Outcome: agenda.Selected, Selected: &sel, ReasonCodes: []string{"highest_priority"}}, nil, "highest_priority"),
				ev(t, event.ActionProposed, "areq", action, nil),
				ev(t, event.DecisionRecorded, "gdec", governance.Decision{Verdict: governance.Execute, ReasonCodes: []string{"allowed_by_rule"}, MissingEvidence: []string{}}, nil, "allowed_by_rule"),
				ev(t, event.ActionCommitted, "wout", world.Outcome{Status: world.OutcomeCommitted, Operation: world.OpApplyPatch, Target: "README.md"}, nil, "committed"),
				ev(t, event.EvaluationRecorded, "evalr", map[string]string{"result": "accepted"}, nil, "accepted"),
				checkpoint(t, 7, 3),
				completed(t, state.Continue, "EXECUTE", "action_committed", "evaluation_accepted"),
			}
		},
		want: Cycle{Seq: 7, At: "2026-01-01T00:07:00Z", Disposition: state.Continue, Reasons: []string{"action_committed", "evaluation_accepted"},
			Agenda: "check:typo", AgendaSummary: "README misspells 'the'", AgendaReasons: []string{"highest_priority"},
			Action: "apply_local_patch README.md", Decision: "EXECUTE", DecisionReasons: []string{"allowed_by_rule"},
			Outcome: "committed", Evaluation: "accepted", Budget: &state.BudgetUsage{Cycles: 7, Actions: 3, CognitiveOperations: 9, SoftWarned: []string{}}},
	}, {
		name: "idle after a wake",
		events: func(t *testing.T) []event.Event {
			return []event.Event{
				started(t),
				ev(t, event.LoopWoke, "", nil, nil, "observation_changed"),
				ev(t, event.AgendaEmpty, "ares", agenda.Resolution{Outcome: agenda.NoAgenda, ReasonCodes: []string{"no_positive_agenda"}}, nil, "no_positive_agenda"),
				checkpoint(t, 7, 3),
				completed(t, state.Idle, "", "no_positive_agenda", "nothing_due"),
				ev(t, event.LoopIdled, "", nil, nil, "no_positive_agenda"),
			}
		},
		want: Cycle{Seq: 7, At: "2026-01-01T00:07:00Z", Disposition: state.Idle, Reasons: []string{"no_positive_agenda", "nothing_due"},
			WokeBy: []string{"observation_changed"}, AgendaReasons: []string{"no_positive_agenda"}, Decision: "NONE",
			Budget: &state.BudgetUsage{Cycles: 7, Actions: 3, CognitiveOperations: 9, SoftWarned: []string{}}},
	}, {
		name: "escalated, then resolved by a person",
		events: func(t *testing.T) []event.Event {
			consumed := ev(t, event.InboxConsumed, "", nil, nil)
			consumed.Object = aprObj
			return []event.Event{
				started(t),
				consumed,
				ev(t, event.ApprovalResolved, "", nil, map[string]codec.Ref{"item": aprObj.Ref, "action": actionRef}, "verdict_approve"),
				ev(t, event.ActionProposed, "areq", action, nil),
				ev(t, event.DecisionRecorded, "gdec", governance.Decision{Verdict: governance.Escalate, ReasonCodes: []string{"contract_requires_approval"}}, nil),
				ev(t, event.ApprovalRequested, "", nil, map[string]codec.Ref{"action": actionRef}, "contract_requires_approval"),
				checkpoint(t, 7, 3),
				completed(t, state.WaitApproval, "ESCALATE", "governance_escalated"),
			}
		},
		want: Cycle{Seq: 7, At: "2026-01-01T00:07:00Z", Disposition: state.WaitApproval, Reasons: []string{"governance_escalated"},
			Inbox:  []string{"approve " + string(actionRef) + " by alice (checked the diff)"},
			Action: "apply_local_patch README.md", Decision: "ESCALATE", DecisionReasons: []string{"contract_requires_approval"},
			Approvals: []ApprovalChange{
				{Kind: "resolved", ActionRef: actionRef, Verdict: "approve", By: "alice"},
				{Kind: "requested", ActionRef: actionRef, Action: "apply_local_patch README.md", Reason: "contract_requires_approval"},
			},
			Budget: &state.BudgetUsage{Cycles: 7, Actions: 3, CognitiveOperations: 9, SoftWarned: []string{}}},
	}, {
		name: "deferral promoted to a commitment, review, compaction, notes",
		events: func(t *testing.T) []event.Event {
			return []event.Event{
				started(t),
				ev(t, event.ReviewRequested, "", nil, nil, "repeated_failure"),
				ev(t, event.DecisionRecorded, "gdec", governance.Decision{Verdict: governance.Defer, ReasonCodes: []string{"evidence_missing"}, MissingEvidence: []string{"dataset"}}, nil),
				ev(t, event.CommitmentCreated, "cmt", cmt, nil, "promoted_deferred_work"),
				ev(t, event.ConditionsEvaluated, "ceval", map[string]any{"candidates": []string{}}, nil), // not a lifecycle event
				ev(t, event.BudgetSoftLimitReached, "", nil, nil, "budget_cycles"),
				ev(t, event.CompactionCompleted, "ccomp", memory.Compression{Trigger: "cadence", Block: memory.Block{ID: "blk-1", FromCycle: 1, ToCycle: 6},
					Summarised: []memory.Unit{{CycleSeq: 1}}}, nil, "cadence"),
				checkpoint(t, 7, 3),
				completed(t, state.Sleep, "DEFER", "governance_deferred", "dataset"),
			}
		},
		want: Cycle{Seq: 7, At: "2026-01-01T00:07:00Z", Disposition: state.Sleep, Reasons: []string{"governance_deferred", "dataset"},
			Decision: "DEFER", DecisionReasons: []string{"evidence_missing", "missing evidence: dataset"}, Review: []string{"repeated_failure"},
			Commitments: []CommitmentChange{{ID: "cmt-1", Event: "created", Status: "suspended", Version: 1, Summary: "wait for the dataset", Reason: "promoted_deferred_work"}},
			Compaction:  &Compaction{Trigger: "cadence", Block: "blk-1", From: 1, To: 6},
			Notes:       []string{"soft budget limit reached: budget_cycles"},
			Budget:      &state.BudgetUsage{Cycles: 7, Actions: 3, CognitiveOperations: 9, SoftWarned: []string{}}},
	}, {
		name:   "a cycle that never completed",
		events: func(t *testing.T) []event.Event { return []event.Event{started(t), checkpoint(t, 1, 0)} },
		err:    "no persistent.cycle.completed",
	}, {
		name: "a cycle record without its object",
		events: func(t *testing.T) []event.Event {
			return []event.Event{started(t), ev(t, event.CycleCompleted, "", nil, nil, "IDLE")}
		},
		err: "carries no object",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Digest(decoded(t, tc.events(t)))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	require.Len(t, cases, 6)
}

func make64(c byte) []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return b
}

// TestIncidentOf: events outside a cycle keep their reasons and, where
// the object says more, a detail; an unexpected object shape leaves the
// detail empty instead of failing the report.
func TestIncidentOf(t *testing.T) {
	cases := []struct {
		event  event.Event
		detail string
	}{
		{ev(t, event.ProviderFailed, "pfail", map[string]any{"error": "observe: disk gone", "consecutive": 2}, nil, "provider_failure"), "observe: disk gone"},
		{ev(t, event.InboxQuarantined, "quarantine", map[string]string{"name": "wake-x.json", "reason": "bad json"}, nil, "undecodable_inbox_file"), "wake-x.json bad json"},
		{ev(t, event.TailRepaired, "torn", map[string]any{"offset": 100, "length": 7, "sha256": "x"}, nil, "torn_last_line_truncated"), "7 torn bytes cut at byte 100"},
		{ev(t, event.RecoveryCompleted, "rrep", map[string]any{"classification": "x", "error": 5}, nil, "interrupted_after_action_commit"), ""},
		{ev(t, event.RecoveryStarted, "", nil, nil, "ledger_ahead_of_checkpoint"), ""},
	}
	for _, tc := range cases {
		require.True(t, Incidental(tc.event.Type), tc.event.Type)
		got := decoded(t, []event.Event{tc.event})
		require.Len(t, got, 1)
		in := IncidentOf(got[0])
		assert.Equal(t, Incident{Cycle: 7, At: "2026-01-01T00:07:00Z", Type: tc.event.Type, Reasons: tc.event.Reasons, Detail: tc.detail}, in)
	}
	assert.False(t, Incidental(event.ActionIntent), "an effect's intent belongs to its cycle")
}
