package kernel

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// declaring starts a run whose goal declares the given standing
// commitments.
func declaring(t *testing.T, spec world.Spec, c governance.Contract, obs world.Observation, decls ...commitment.Declaration) EngineState {
	t.Helper()
	g := intent.Goal{Schema: intent.Schema, ID: "g", Mission: "m", Success: intent.Success{AllChecksPass: true}, Commitments: decls}
	require.NoError(t, g.Validate(&spec))
	s, _, err := Init(Bootstrap{RunID: "run:test", Now: t0, Goal: g, Contract: c, Spec: spec, Observation: obs})
	require.NoError(t, err)
	return s
}

// lifecycle lists a cycle's commitment lifecycle events as "verb standing
// reasons...".
func lifecycle(t *testing.T, evs []event.Event) []string {
	t.Helper()
	var out []string
	for _, e := range evs {
		verb, ok := e.Type.CommitmentVerb()
		if !ok {
			continue
		}
		var c commitment.Commitment
		require.NoError(t, e.Object.Decode(&c))
		out = append(out, verb+" "+c.Standing+" "+joined(e.Reasons))
	}
	return out
}

func joined(rs []string) string {
	out := ""
	for i, r := range rs {
		if i > 0 {
			out += ","
		}
		out += r
	}
	return out
}

func at(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }

// TestStandingCommitmentTakenUpAndWorkedFirst: the first cycle takes the
// goal's standing commitments up, before any agenda, and a failing check of
// one comes before a novel issue of higher priority.
func TestStandingCommitmentTakenUpAndWorkedFirst(t *testing.T) {
	hi, lo := patchCheck("hi", "hi.txt"), patchCheck("lo", "lo.txt")
	hi.Priority, lo.Priority = 90, 10
	spec := testSpec(hi, lo, patchCheck("ok", "ok.txt"))
	obs := observe(spec, map[string]bool{"hi": true, "lo": true}, false)
	s := declaring(t, spec, testContract(), obs,
		commitment.Declaration{ID: "low-first", Checks: []string{"lo", "ok"}, Every: "24h"},
		commitment.Declaration{ID: "passing", Checks: []string{"ok"}, By: "2026-01-03T00:00:00Z"})

	r := cycleOnce(t, s, Inputs{Now: at(1), Observation: obs})
	assert.Equal(t, []string{"created low-first declared_by_goal", "created passing declared_by_goal"}, lifecycle(t, r.Events))
	created := slices.IndexFunc(r.Events, func(e event.Event) bool { return e.Type == event.CommitmentCreated })
	selected := slices.IndexFunc(r.Events, func(e event.Event) bool { return e.Type == event.AgendaSelected })
	require.GreaterOrEqual(t, selected, 0)
	assert.Less(t, created, selected, "commitments come before any agenda")
	var res agenda.Resolution
	require.NoError(t, r.Events[selected].Object.Decode(&res))
	require.NotNil(t, res.Selected)
	assert.Equal(t, "check:lo", res.Selected.ItemID, "the standing commitment's failing check first")
	assert.Equal(t, agenda.FromCommitment, res.Selected.Source)
	assert.Len(t, r.State.Commitments.Commitments, 2)
	assert.Len(t, r.State.Commitments.Declared, 2)

	// The next cycle takes nothing up again; a commitment whose checks
	// all pass puts nothing on the agenda.
	r2 := cycleOnce(t, r.State, Inputs{Now: at(2), Observation: observe(spec, map[string]bool{"hi": true}, false)})
	assert.Empty(t, lifecycle(t, r2.Events))
	sel := eventsOf(r2.Events, event.AgendaSelected)
	require.Len(t, sel, 1)
	require.NoError(t, sel[0].Object.Decode(&res))
	assert.Equal(t, "check:hi", res.Selected.ItemID)
	assert.Equal(t, agenda.FromIssue, res.Selected.Source)
}

// TestStandingCommitmentWakesOnItsTime: a run at rest sleeps (not idles)
// with a commitment due, is not eligible before the time, and is woken by
// it (commitment_deadline_due) at the time, when the due is dealt with.
func TestStandingCommitmentWakesOnItsTime(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	ok := observe(spec, map[string]bool{}, false)
	s := declaring(t, spec, testContract(), ok, commitment.Declaration{ID: "daily", Checks: []string{"a"}, Every: "24h"})
	r, _ := step(t, s, Inputs{Now: at(0), Observation: ok})
	rs := r.State.Run
	assert.Equal(t, state.Sleep, rs.LoopDisposition)
	assert.Equal(t, []string{"no_positive_agenda", "commitment_deadline_pending", "no_material_tension"}, rs.ReasonCodes)
	require.NotNil(t, rs.NextWake)
	assert.Equal(t, "2026-01-02T00:00:00Z", rs.NextWake.At)
	assert.Equal(t, "commitment_deadline_due", rs.NextWake.Source)

	before, why := Eligible(r.State, Inputs{Now: t0.Add(24*time.Hour - time.Second), Observation: ok})
	assert.False(t, before, "nothing runs before the commitment's time: %v", why)
	due, why := Eligible(r.State, Inputs{Now: t0.Add(24 * time.Hour), Observation: ok})
	assert.True(t, due)
	assert.Equal(t, []string{"commitment_deadline_due"}, why)

	r2, evs := step(t, r.State, Inputs{Now: t0.Add(24 * time.Hour), Observation: ok})
	assert.Equal(t, []string{"commitment_deadline_due"}, eventsOf(evs, event.LoopWoke)[0].Reasons)
	assert.Equal(t, []string{"modified daily period_due"}, lifecycle(t, evs))
	assert.Equal(t, "2026-01-03T00:00:00Z", r2.State.Run.NextWake.At)
	again, _ := Eligible(r2.State, Inputs{Now: t0.Add(24*time.Hour + time.Minute), Observation: ok})
	assert.False(t, again, "a due dealt with wakes nothing more")
}

// TestPastDueIsNoWake: a due the cycle could not deal with (the intent
// lapsed, so no cycle reaches the commitments) is not a wake time: the
// run does not wake on it over and over.
func TestPastDueIsNoWake(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	ok := observe(spec, map[string]bool{}, false)
	s := declaring(t, spec, testContract(), ok, commitment.Declaration{ID: "soon", Checks: []string{"a"}, By: "2026-01-01T02:00:00Z"})
	s.Goal.ExpiresAt = "2026-01-01T01:00:00Z"
	r, _ := step(t, s, Inputs{Now: at(0), Observation: ok})
	require.Len(t, r.State.Commitments.Commitments, 1)
	require.Equal(t, "2026-01-01T02:00:00Z", r.State.Run.NextWake.At)
	// A suspended one waiting for a time that passes meanwhile, too.
	waiting := commitment.Commitment{ID: "cmt-waiting", Status: commitment.Suspended, ItemID: "check:a", CheckID: "a",
		Wake: &commitment.Condition{Kind: commitment.WakeTime, At: "2026-01-01T02:30:00Z"}}
	store, _, err := r.State.Commitments.Apply(commitment.Transition{Kind: commitment.Create, New: &waiting, At: "2026-01-01T00:00:00Z"})
	require.NoError(t, err)
	r.State.Commitments = store

	r2, _ := step(t, r.State, Inputs{Now: at(180), Observation: ok})
	assert.Contains(t, r2.State.Run.ReasonCodes, "intent_expired")
	assert.Len(t, r2.State.Commitments.Commitments, 2, "the blocked cycle did not reach the commitments")
	if nw := r2.State.Run.NextWake; nw != nil {
		assert.Empty(t, nw.At, "the passed deadline is no wake time")
	}
	eligible, why := Eligible(r2.State, Inputs{Now: at(181), Observation: ok})
	assert.False(t, eligible, "%v", why)
}

// TestEscalationSuspendsTheCommitment: a standing commitment whose work
// needs a person's approval is suspended at the boundary, holding that
// item, and resumed by the answer in the cycle that acts on it (§7.3).
func TestEscalationSuspendsTheCommitment(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	failing := observe(spec, map[string]bool{"a": true}, false)
	s := declaring(t, spec, testContract(governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Approve}), failing,
		commitment.Declaration{ID: "watch", Checks: []string{"a"}, Every: "6h"})
	r, evs := step(t, s, Inputs{Now: at(1), Observation: failing})
	require.Equal(t, state.WaitApproval, r.State.Run.LoopDisposition)
	assert.Equal(t, []string{"created watch declared_by_goal", "suspended watch awaiting_approval,governance_boundary"}, lifecycle(t, evs))
	c := r.State.Commitments.Commitments[0]
	p := r.State.Run.PendingApprovals[0]
	assert.Equal(t, commitment.Suspended, c.Status)
	assert.Equal(t, "check:a", c.ItemID)
	assert.Equal(t, &commitment.Condition{Kind: commitment.WakeApproval, ActionRef: string(p.Ref)}, c.Wake)
	assert.Contains(t, r.State.Run.NextWake.Conditions, c.ID+": approval of "+string(p.Ref))

	ans := answerItem(t, p.Ref, p.CycleSeq, "approve", "alice", "")
	p2, err := Begin(r.State, Inputs{Now: at(2), Observation: failing, Inbox: []inbox.Item{ans}, InboxPresent: []string{ans.ID}})
	require.NoError(t, err)
	assert.Equal(t, []string{"resumed watch wake_condition_matched"}, lifecycle(t, p2.Events))
	require.NotNil(t, p2.Effect, "the approved action is carried out in the same cycle")
	resumed, _ := p2.b.s.Commitments.Get(c.ID)
	assert.Equal(t, commitment.Active, resumed.Status)
	assert.Empty(t, resumed.ItemID)
}

// TestAmendmentNarrowsAndAbandons: an accepted environment amendment that
// removes checks narrows the standing commitment that keeps some of them
// and abandons the one left with none, in the cycle after the acceptance,
// with the seed's class contract_changed.
func TestAmendmentNarrowsAndAbandons(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"), patchCheck("b", "b.txt"), patchCheck("c", "c.txt"))
	ok := observe(spec, map[string]bool{}, false)
	s := declaring(t, spec, testContract(), ok,
		commitment.Declaration{ID: "both", Checks: []string{"a", "b"}, Every: "6h"},
		commitment.Declaration{ID: "only-b", Checks: []string{"b"}, By: "2026-01-05T00:00:00Z"})
	r, _ := step(t, s, Inputs{Now: at(0), Observation: ok})
	require.Len(t, r.State.Commitments.Commitments, 2)

	amended := r.State.Spec
	amended.Checks = slices.DeleteFunc(slices.Clone(amended.Checks), func(c world.Check) bool { return c.ID == "b" })
	am := amendItem(t, state.AmendEnvironment, amended, r.State.Run.EnvironmentSpecRef)
	r, _ = step(t, r.State, Inputs{Now: at(1), Observation: ok, Inbox: []inbox.Item{am}, InboxPresent: []string{am.ID}})
	require.Len(t, r.State.Run.PendingAmendments, 1, "an environment without a standing commitment's check is a valid amendment")
	pa := r.State.Run.PendingAmendments[0]
	ans := answerItem(t, pa.Ref, pa.CycleSeq, "approve", "alice", "")
	r, evs := step(t, r.State, Inputs{Now: at(2), Observation: ok, Inbox: []inbox.Item{ans}, InboxPresent: []string{ans.ID}})
	require.Len(t, eventsOf(evs, event.AmendmentAccepted), 1)
	assert.Empty(t, lifecycle(t, evs), "the accepting cycle ends there")

	after := observe(amended, map[string]bool{}, false)
	r, evs = step(t, r.State, Inputs{Now: at(3), Observation: after})
	assert.ElementsMatch(t, []string{"modified both scope_narrowed,contract_changed", "abandoned only-b check_removed,contract_changed"}, lifecycle(t, evs))
	require.Len(t, r.State.Commitments.Commitments, 1)
	assert.Equal(t, []string{"a"}, r.State.Commitments.Commitments[0].Scope)
}

// TestDeadlineUnmetSetsWorkAside: a standing commitment given up at its
// deadline is not made again on the spot: its failing check waits for new
// evidence, and no deferral promotes it anew.
func TestDeadlineUnmetSetsWorkAside(t *testing.T) {
	chk := patchCheck("a", "a.txt")
	chk.RequiresEvidence = []string{"ev"}
	spec := testSpec(chk)
	failing := observe(spec, map[string]bool{"a": true}, false)
	s := declaring(t, spec, testContract(), failing, commitment.Declaration{ID: "by-noon", Checks: []string{"a"}, By: "2026-01-01T12:00:00Z"})
	r, evs := step(t, s, Inputs{Now: at(0), Observation: failing})
	assert.Equal(t, []string{"created by-noon declared_by_goal", "suspended by-noon evidence_missing,governance_boundary"}, lifecycle(t, evs))
	assert.Empty(t, eventsOf(evs, event.PromotionRecorded), "the deferral suspends the commitment it came from, it promotes nothing")
	assert.Equal(t, "2026-01-01T12:00:00Z", r.State.Run.NextWake.At)

	r, evs = step(t, r.State, Inputs{Now: at(12 * 60), Observation: failing})
	assert.Equal(t, []string{"abandoned by-noon deadline_passed_unmet,terminal_exit_condition"}, lifecycle(t, evs))
	assert.Empty(t, r.State.Commitments.Commitments)
	assert.Empty(t, eventsOf(evs, event.PromotionRecorded))
	assert.Contains(t, r.State.Run.Suppressed, state.Suppression{ItemID: "check:a", Reason: "commitment_abandoned", Since: "2026-01-01T12:00:00Z",
		EvidenceRef: string(codec.FingerprintOf([]byte("abad")))})
	assert.Equal(t, state.Idle, r.State.Run.LoopDisposition)
}
