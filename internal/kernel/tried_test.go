package kernel

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// gitCommandSpec is a git world with one failing command check whose fix
// is a command that may touch every Go file.
func gitCommandSpec(git bool) world.Spec {
	spec := world.Spec{Schema: world.SpecSchema, Checks: []world.Check{{ID: "fmt", Summary: "formatted", Kind: world.CheckCommand, Argv: []string{"fmtcheck"}, Priority: 10,
		Fixes: []world.Fix{{ID: "fmt-w", Operation: world.OpRunCommand, Argv: []string{"gofmt", "-w", "."}, Touches: []string{"**/*.go"}}}}}}
	if git {
		spec.Git = &world.GitSpec{Remote: "/srv/remote.git", Base: "main", Branch: "acr/fmt"}
	}
	return spec
}

// vendorContract asks for approval of any change under vendor/ and
// allows the rest.
func vendorContract() governance.Contract {
	return testContract(
		governance.Rule{Operation: string(world.OpRunCommand), Paths: []string{"vendor/**"}, Effect: governance.Approve},
		governance.Rule{Operation: string(world.OpRunCommand), Paths: []string{"**"}, Effect: governance.Allow},
		governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow})
}

// initRecords is a run's first records: its pinned documents, start and
// first observation, as Init derives them.
func initRecords(t *testing.T, spec world.Spec, c governance.Contract, obs world.Observation) (EngineState, []event.Event) {
	t.Helper()
	g := intent.Goal{Schema: intent.Schema, ID: "g", Mission: "m", Success: intent.Success{AllChecksPass: true}}
	s, evs, err := Init(Bootstrap{RunID: "run:test", Now: t0, Goal: g, Contract: c, Spec: spec, Observation: obs})
	require.NoError(t, err)
	return s, evs
}

const (
	trialHead = "1111111111111111111111111111111111111111"
	trialTree = "2222222222222222222222222222222222222222"
)

// decisionOf is the governance decision among a cycle's events.
func decisionOf(t *testing.T, evs []event.Event) governance.Decision {
	t.Helper()
	i := slices.IndexFunc(evs, func(e event.Event) bool { return e.Type == event.DecisionRecorded })
	require.GreaterOrEqual(t, i, 0, "the cycle records a decision")
	var d governance.Decision
	require.NoError(t, evs[i].Object.Decode(&d))
	return d
}

// TestTriedBeforeGovernance: a git world's command fix is tried before
// governance rules on it, and governance rules on the paths the trial
// really changed, not on the command's declared touches.
func TestTriedBeforeGovernance(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changed []string
		failure string
		verdict governance.Verdict
		reason  string
		outside []string
	}{
		{"inside touches, paths a rule allows: carried out without asking", []string{"main.go"}, "", governance.Execute, "contract_allows", nil},
		{"inside touches, a path that needs approval: a person is asked, shown the trial", []string{"main.go", "vendor/x.go"}, "", governance.Escalate, "contract_requires_approval", nil},
		{"outside touches: refused before anyone is asked", []string{"main.go", "notes.txt"}, "", governance.Refuse, "changed_outside_touches", []string{"notes.txt"}},
		{"a failed trial: refused, and the fix counts as failed", []string{"main.go"}, "exit 2", governance.Refuse, "trial_failed", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := gitCommandSpec(true)
			obs := observe(spec, map[string]bool{"fmt": true}, false)
			s := newState(t, spec, vendorContract(), obs)
			p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: obs})
			require.NoError(t, err)
			require.NotNil(t, p.Try, "the cycle stops to try its command fix")
			assert.Equal(t, world.OpRunCommand, p.Try.Operation)
			assert.Nil(t, p.Effect)
			assert.False(t, slices.ContainsFunc(p.Events, func(e event.Event) bool { return e.Type == event.DecisionRecorded }),
				"governance has not ruled yet")
			_, err = Finish(p, Settlement{})
			assert.Error(t, err, "a cycle stopped for its trial is not finished before governance rules")
			p, err = Tried(p, &world.CommandTried{Head: trialHead, Tree: trialTree, Changed: tc.changed, Failure: tc.failure})
			require.NoError(t, err)
			assert.Nil(t, p.Try)
			_, err = Tried(p, nil)
			assert.Error(t, err, "a cycle is tried once")

			i := slices.IndexFunc(p.Events, func(e event.Event) bool { return e.Type == event.ActionTried })
			require.GreaterOrEqual(t, i, 0, "the trial is recorded")
			var rec world.CommandTried
			require.NoError(t, p.Events[i].Object.Decode(&rec))
			assert.Equal(t, tc.changed, rec.Changed)
			assert.Equal(t, tc.outside, rec.Outside)
			assert.Equal(t, event.DecisionRecorded, p.Events[i+1].Type, "recorded right before the decision")

			d := decisionOf(t, p.Events)
			assert.Equal(t, tc.verdict, d.Verdict)
			assert.Equal(t, []string{tc.reason}, d.ReasonCodes)
			res, err := Finish(p, Settlement{})
			if tc.verdict == governance.Execute {
				require.NotNil(t, p.Effect)
				assert.Nil(t, p.Effect.Approved, "only a person's approval binds the effect to a tree")
				return
			}
			require.NoError(t, err)
			assert.Nil(t, p.Effect)
			pending := res.State.Run.PendingApprovals
			if tc.verdict != governance.Escalate {
				assert.Empty(t, pending, "nobody is asked")
				if tc.failure != "" {
					j := slices.IndexFunc(res.State.Run.Attempts, func(a state.Attempt) bool { return a.ItemID == "check:fmt" })
					require.GreaterOrEqual(t, j, 0)
					assert.Equal(t, 1, res.State.Run.Attempts[j].Failures)
				}
				return
			}
			require.Len(t, pending, 1)
			assert.Equal(t, &world.GitTrial{Head: trialHead, Tree: trialTree, Changed: tc.changed}, pending[0].Trial)
			assert.Equal(t, state.WaitApproval, res.State.Run.LoopDisposition)
		})
	}
}

// TestNoTrial: only a git world's command fix that governance would let
// run or put to a person is tried; everything else is ruled on at once.
func TestNoTrial(t *testing.T) {
	forbid := testContract(governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Forbid})
	for _, tc := range []struct {
		name     string
		spec     world.Spec
		contract governance.Contract
		verdict  governance.Verdict
	}{
		{"not a git world", gitCommandSpec(false), vendorContract(), governance.Escalate},
		{"not a git world, allowed", gitCommandSpec(false), testContract(governance.Rule{Operation: string(world.OpRunCommand), Paths: []string{"**"}, Effect: governance.Allow}), governance.Execute},
		{"a git world's patch fix", func() world.Spec {
			s := testSpec(patchCheck("a", "a.txt"))
			s.Files, s.Git = nil, &world.GitSpec{Remote: "/srv/remote.git", Base: "main", Branch: "acr/fmt"}
			return s
		}(), testContract(), governance.Execute},
		{"a command governance forbids: no program runs", gitCommandSpec(true), forbid, governance.Refuse},
	} {
		t.Run(tc.name, func(t *testing.T) {
			obs := observe(tc.spec, map[string]bool{"fmt": true, "a": true}, false)
			s := newState(t, tc.spec, tc.contract, obs)
			p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: obs})
			require.NoError(t, err)
			assert.Nil(t, p.Try)
			assert.False(t, slices.ContainsFunc(p.Events, func(e event.Event) bool { return e.Type == event.ActionTried }))
			assert.Equal(t, tc.verdict, decisionOf(t, p.Events).Verdict)
		})
	}
}

// triedLedger is a run's ledger up to the end of its first cycle, whose
// command fix was tried with t (nil: not tried).
func triedLedger(t *testing.T, changed []string, tried bool) []event.Record {
	t.Helper()
	spec := gitCommandSpec(true)
	obs := observe(spec, map[string]bool{"fmt": true}, false)
	s, evs := initRecords(t, spec, vendorContract(), obs)
	p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: obs})
	require.NoError(t, err)
	require.NotNil(t, p.Try)
	var tr *world.CommandTried
	if tried {
		tr = &world.CommandTried{Head: trialHead, Tree: trialTree, Changed: changed}
	}
	p, err = Tried(p, tr)
	require.NoError(t, err)
	require.Nil(t, p.Effect)
	res, err := Finish(p, Settlement{})
	require.NoError(t, err)
	return asRecords(t, slices.Concat(evs, p.Events, res.Events))
}

// TestReplayReproducesATriedCycle: replay hands the cycle the trial its
// ledger records and derives the same decision; a ledger written before
// trials were recorded (ruled on its declared touches, untried) replays
// as before; a recorded trial that does not give the recorded decision
// is a divergence.
func TestReplayReproducesATriedCycle(t *testing.T) {
	for _, tc := range []struct {
		name    string
		changed []string
		tried   bool
	}{
		{"refused: outside touches", []string{"notes.txt"}, true},
		{"asked: the trial needs approval", []string{"vendor/x.go"}, true},
		{"an old ledger without a trial", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			recs := triedLedger(t, tc.changed, tc.tried)
			assert.Equal(t, tc.tried, slices.ContainsFunc(recs, func(r event.Record) bool { return r.Event.Type == event.ActionTried }))
			rep, err := Replay(recs, 0)
			require.NoError(t, err)
			assert.True(t, rep.OK, "%+v", rep.Divergence)
			assert.Equal(t, int64(1), rep.CyclesVerified)
		})
	}

	// The recorded trial changed only what needs approval; a ledger whose
	// trial says otherwise does not explain its decision.
	recs := triedLedger(t, []string{"vendor/x.go"}, true)
	i := slices.IndexFunc(recs, func(r event.Record) bool { return r.Event.Type == event.ActionTried })
	require.GreaterOrEqual(t, i, 0)
	forged := world.CommandTried{Head: trialHead, Tree: trialTree, Changed: []string{"main.go"}}
	obj, err := event.NewObject("tried", forged)
	require.NoError(t, err)
	recs[i].Event.Object = obj
	rep, err := Replay(recs, 0)
	require.NoError(t, err)
	assert.False(t, rep.OK)
	require.NotNil(t, rep.Divergence)
	assert.Equal(t, int64(1), rep.Divergence.Cycle)

	// A ledger that ends before the trial was recorded: the cycle's first
	// batch never became durable.
	recs = triedLedger(t, []string{"vendor/x.go"}, true)
	i = slices.IndexFunc(recs, func(r event.Record) bool { return r.Event.Type == event.ActionTried })
	rep, err = Replay(recs[:i], 0)
	require.NoError(t, err)
	assert.Equal(t, int64(1), rep.Incomplete)
}
