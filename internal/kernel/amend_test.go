package kernel

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
)

// amendItem seals an amendment of target as acr amend would queue it.
func amendItem(t *testing.T, target string, doc any, amends codec.Ref) inbox.Item {
	t.Helper()
	b, err := codec.Marshal(doc)
	require.NoError(t, err)
	v, err := codec.ParseCanonical(b)
	require.NoError(t, err)
	a := &state.Amendment{Schema: state.AmendmentSchema, Target: target, Amends: amends, Document: v, Diff: "-old\n+new\n",
		By: "alice", CreatedAt: "2026-01-01T00:00:30Z"}
	id, body, err := inbox.Seal(a)
	require.NoError(t, err)
	return inbox.Item{ID: id, Kind: inbox.KindAmendment, Amendment: a, Body: body}
}

// step runs one cycle without an effect and returns its result and events.
func step(t *testing.T, s EngineState, in Inputs) (*Result, []event.Event) {
	t.Helper()
	p, err := Begin(s, in)
	require.NoError(t, err)
	require.Nil(t, p.Effect)
	first := p.Events
	r, err := Finish(p, Settlement{})
	require.NoError(t, err)
	return r, append(slices.Clone(first), r.Events...)
}

func eventsOf(evs []event.Event, k event.Kind) []event.Event {
	return slices.DeleteFunc(slices.Clone(evs), func(e event.Event) bool { return e.Type != k })
}

// TestAmendmentRaisesAHardBudget: a run stopped on its cycle budget takes
// an amendment raising it; a person accepts it in a later cycle; the run
// resumes and the next cycle names the new contract.
func TestAmendmentRaisesAHardBudget(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	ok := observe(spec, map[string]bool{}, false)
	s := newState(t, spec, budgeted(budget.Run{Cycles: budget.Limit{Hard: 1}}), ok)
	r, _ := step(t, s, Inputs{Now: t0.Add(time.Minute), Observation: ok})
	require.Equal(t, state.RunStopped, r.State.Run.Status)
	s = r.State
	eligible, _ := Eligible(s, Inputs{Now: t0.Add(2 * time.Minute), Observation: ok})
	require.False(t, eligible, "a stopped run runs nothing without an amendment")

	bigger := budgeted(budget.Run{Cycles: budget.Limit{Hard: 10}})
	oldRef := s.Run.ContractRef
	it := amendItem(t, state.AmendContract, bigger, oldRef)
	r, evs := step(t, s, Inputs{Now: t0.Add(2 * time.Minute), Observation: ok, Inbox: []inbox.Item{it}, InboxPresent: []string{it.ID}})
	require.Len(t, eventsOf(evs, event.AmendmentProposed), 1)
	require.Equal(t, state.RunStopped, r.State.Run.Status, "proposing does not resume")
	require.Equal(t, int64(1), r.State.Run.Budget.Cycles, "a stopped run's proposing cycle spends no cycle")
	require.Len(t, r.State.Run.PendingAmendments, 1)
	pa := r.State.Run.PendingAmendments[0]
	s = r.State

	ans := answerItem(t, pa.Ref, pa.CycleSeq, "approve", "alice", "")
	r, evs = step(t, s, Inputs{Now: t0.Add(3 * time.Minute), Observation: ok, Inbox: []inbox.Item{ans}, InboxPresent: []string{ans.ID}})
	acc := eventsOf(evs, event.AmendmentAccepted)
	require.Len(t, acc, 1)
	assert.Equal(t, oldRef, acc[0].Refs["old"])
	assert.Equal(t, pa.NewRef, acc[0].Refs["new"])
	assert.Equal(t, pa.NewRef, r.State.Run.ContractRef)
	assert.Equal(t, state.RunRunning, r.State.Run.Status)
	assert.Equal(t, state.Continue, r.State.Run.LoopDisposition)
	assert.Empty(t, r.State.Run.PendingAmendments)
	s = r.State

	r, evs = step(t, s, Inputs{Now: t0.Add(4 * time.Minute), Observation: ok})
	started := eventsOf(evs, event.CycleStarted)
	require.Len(t, started, 1)
	assert.Equal(t, pa.NewRef, started[0].Refs["contract"], "the cycle names the version it runs under")
	assert.NotEqual(t, state.RunStopped, r.State.Run.Status)
	assert.Equal(t, int64(3), r.State.Run.Budget.Cycles)
}

// TestAmendmentAnswers: accept, deny, stale, invalid, and the guard's
// separation of amending from accepting.
func TestAmendmentAnswers(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	ok := observe(spec, map[string]bool{}, false)
	base := newState(t, spec, testContract(), ok)
	pinned := base.Run.ContractRef
	c1 := budgeted(budget.Run{Cycles: budget.Limit{Hard: 10}})
	c2 := budgeted(budget.Run{Cycles: budget.Limit{Hard: 20}})
	bad := testContract()
	bad.Schema = "nope"
	at := func(m int) Inputs { return Inputs{Now: t0.Add(time.Duration(m) * time.Minute), Observation: ok} }
	with := func(in Inputs, its ...inbox.Item) Inputs {
		in.Inbox = its
		for _, it := range its {
			in.InboxPresent = append(in.InboxPresent, it.ID)
		}
		return in
	}
	propose := func(t *testing.T, s EngineState, m int, its ...inbox.Item) EngineState {
		r, evs := step(t, s, with(at(m), its...))
		require.Len(t, eventsOf(evs, event.AmendmentProposed), len(its))
		return r.State
	}

	cases := []struct {
		name     string
		run      func(t *testing.T) (EngineState, []event.Event)
		kind     event.Kind
		reason   string
		contract codec.Ref // the pinned contract after
		pending  int
	}{
		{"approve replaces the contract", func(t *testing.T) (EngineState, []event.Event) {
			s := propose(t, base, 1, amendItem(t, state.AmendContract, c1, pinned))
			p := s.Run.PendingAmendments[0]
			r, evs := step(t, s, with(at(2), answerItem(t, p.Ref, p.CycleSeq, "approve", "alice", "")))
			return r.State, evs
		}, event.AmendmentAccepted, "target_contract", codec.MustRefOf(kindContract, c1), 0},
		{"deny keeps the contract", func(t *testing.T) (EngineState, []event.Event) {
			s := propose(t, base, 1, amendItem(t, state.AmendContract, c1, pinned))
			p := s.Run.PendingAmendments[0]
			r, evs := step(t, s, with(at(2), answerItem(t, p.Ref, p.CycleSeq, "deny", "alice", "")))
			return r.State, evs
		}, event.AmendmentRefused, "denied", pinned, 0},
		{"an amendment of a version no longer pinned is stale", func(t *testing.T) (EngineState, []event.Event) {
			s := propose(t, base, 1, amendItem(t, state.AmendContract, c1, pinned), amendItem(t, state.AmendContract, c2, pinned))
			p1, p2 := s.Run.PendingAmendments[0], s.Run.PendingAmendments[1]
			r, _ := step(t, s, with(at(2), answerItem(t, p1.Ref, p1.CycleSeq, "approve", "alice", "")))
			r, evs := step(t, r.State, with(at(3), answerItem(t, p2.Ref, p2.CycleSeq, "approve", "alice", "")))
			return r.State, evs
		}, event.AmendmentRefused, "stale", codec.MustRefOf(kindContract, c1), 0},
		{"a proposal against another version is stale", func(t *testing.T) (EngineState, []event.Event) {
			r, evs := step(t, base, with(at(1), amendItem(t, state.AmendContract, c1, codec.MustRefOf(kindContract, c2))))
			return r.State, evs
		}, event.AmendmentRefused, "stale", pinned, 0},
		{"an invalid document is refused", func(t *testing.T) (EngineState, []event.Event) {
			r, evs := step(t, base, with(at(1), amendItem(t, state.AmendContract, bad, pinned)))
			return r.State, evs
		}, event.AmendmentRefused, "invalid_document", pinned, 0},
		{"an amendment that changes nothing is refused", func(t *testing.T) (EngineState, []event.Event) {
			r, evs := step(t, base, with(at(1), amendItem(t, state.AmendContract, base.Contract, pinned)))
			return r.State, evs
		}, event.AmendmentRefused, "no_change", pinned, 0},
		{"amended and accepted in one cycle: the guard refuses", func(t *testing.T) (EngineState, []event.Event) {
			it := amendItem(t, state.AmendContract, c1, pinned)
			ref := codec.NewRef("amd", it.Body)
			r, evs := step(t, base, with(at(1), it, answerItem(t, ref, 1, "approve", "alice", "")))
			return r.State, evs
		}, event.ViolationRefused, controller.RuleIntentSameCyle, pinned, 1},
		{"a role of the loop cannot accept", func(t *testing.T) (EngineState, []event.Event) {
			s := propose(t, base, 1, amendItem(t, state.AmendContract, c1, pinned))
			p := s.Run.PendingAmendments[0]
			r, evs := step(t, s, with(at(2), answerItem(t, p.Ref, p.CycleSeq, "approve", "distiller", "")))
			return r.State, evs
		}, event.ViolationRefused, controller.RuleIntentSameCyle, pinned, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s, evs := tc.run(t)
			got := eventsOf(evs, tc.kind)
			require.NotEmpty(t, got, "no %s", tc.kind)
			assert.Contains(t, got[len(got)-1].Reasons, tc.reason)
			assert.Equal(t, tc.contract, s.Run.ContractRef)
			assert.Equal(t, tc.contract, codec.MustRefOf(kindContract, s.Contract))
			assert.Len(t, s.Run.PendingAmendments, tc.pending)
		})
	}
	require.NotEmpty(t, cases)
}

// TestAmendGoalAndEnvironment: a goal amendment replaces the goal; an
// environment amendment may change checks but never the world it names.
func TestAmendGoalAndEnvironment(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	ok := observe(spec, map[string]bool{}, false)
	s := newState(t, spec, testContract(), ok)
	in := func(m int, it inbox.Item) Inputs {
		return Inputs{Now: t0.Add(time.Duration(m) * time.Minute), Observation: ok, Inbox: []inbox.Item{it}, InboxPresent: []string{it.ID}}
	}

	g := s.Goal
	g.Mission = "a clearer mission"
	r, _ := step(t, s, in(1, amendItem(t, state.AmendGoal, g, s.Run.GoalRefs[0])))
	require.Len(t, r.State.Run.PendingAmendments, 1)
	p := r.State.Run.PendingAmendments[0]
	r, evs := step(t, r.State, in(2, answerItem(t, p.Ref, p.CycleSeq, "approve", "alice", "")))
	require.Len(t, eventsOf(evs, event.AmendmentAccepted), 1)
	assert.Equal(t, "a clearer mission", r.State.Goal.Mission)
	assert.Equal(t, []codec.Ref{codec.MustRefOf(kindGoal, g)}, r.State.Run.GoalRefs)

	moved := s.Spec
	moved.Files = map[string]string{"a.txt": "elsewhere"}
	r, evs = step(t, s, in(1, amendItem(t, state.AmendEnvironment, moved, s.Run.EnvironmentSpecRef)))
	require.Len(t, eventsOf(evs, event.AmendmentRefused), 1)
	assert.Contains(t, eventsOf(evs, event.AmendmentRefused)[0].Reasons, "invalid_document")
	assert.Empty(t, r.State.Run.PendingAmendments)

	more := s.Spec
	more.Checks = append(slices.Clone(more.Checks), patchCheck("b", "a.txt"))
	r, _ = step(t, s, in(1, amendItem(t, state.AmendEnvironment, more, s.Run.EnvironmentSpecRef)))
	require.Len(t, r.State.Run.PendingAmendments, 1)
	p = r.State.Run.PendingAmendments[0]
	r, _ = step(t, r.State, in(2, answerItem(t, p.Ref, p.CycleSeq, "approve", "alice", "")))
	assert.Len(t, r.State.Spec.Checks, 2)
	assert.Equal(t, codec.MustRefOf(kindSpec, more), r.State.Run.EnvironmentSpecRef)
}

// TestAmendmentReferences: an amendment's references are resolved against
// the rest of the run, as acr init resolves them: a check about a file
// the world of declared files does not have, a rule waiting for evidence
// nothing declares, an environment that drops the evidence a rule waits
// for. A run of ledger format 2 replays what it accepted before.
func TestAmendmentReferences(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	ok := observe(spec, map[string]bool{}, false)
	waits := testContract(governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow, RequiresEvidence: []string{"ev"}})
	in := func(it inbox.Item) Inputs {
		return Inputs{Now: t0.Add(time.Minute), Observation: ok, Inbox: []inbox.Item{it}, InboxPresent: []string{it.ID}}
	}
	dangling := spec
	dangling.Checks = append(slices.Clone(spec.Checks), patchCheck("b", "b.txt"))
	noEvidence := spec
	noEvidence.Evidence = nil
	unknown := testContract(governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow, RequiresEvidence: []string{"nothing"}})
	cases := []struct {
		name     string
		contract governance.Contract
		target   string
		doc      any
	}{
		{"a check about a file the world does not have", testContract(), state.AmendEnvironment, dangling},
		{"a rule waiting for undeclared evidence", testContract(), state.AmendContract, unknown},
		{"an environment without the evidence a rule waits for", waits, state.AmendEnvironment, noEvidence},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := newState(t, spec, c.contract, ok)
			r, evs := step(t, s, in(amendItem(t, c.target, c.doc, PinnedRef(s, c.target))))
			require.Len(t, eventsOf(evs, event.AmendmentRefused), 1)
			assert.Contains(t, eventsOf(evs, event.AmendmentRefused)[0].Reasons, "invalid_document")
			assert.Empty(t, r.State.Run.PendingAmendments)
			_, err := CheckAmendment(s, state.Amendment{Target: c.target, Document: mustValue(c.doc)})
			assert.Error(t, err, "acr amend refuses it too")

			s.Run.SetFormat(state.LedgerFormat2)
			r, _ = step(t, s, in(amendItem(t, c.target, c.doc, PinnedRef(s, c.target))))
			assert.Len(t, r.State.Run.PendingAmendments, 1, "a format-2 run takes it up as it did")
		})
	}
}
