package kernel

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// testSpec is a world of declared files with the checks given, each
// check's path one of its files.
func testSpec(checks ...world.Check) world.Spec {
	files := map[string]string{}
	for _, c := range checks {
		if c.Path != "" {
			files[c.Path] = ""
		}
	}
	return world.Spec{Schema: world.SpecSchema, Files: files, Checks: checks,
		Evidence: []world.EvidenceSpec{{ID: "ev", Path: "incoming/ev.txt"}}}
}

func patchCheck(id, path string) world.Check {
	return world.Check{ID: id, Summary: id, Kind: world.CheckAbsentText, Path: path, Text: "bad", Priority: 10,
		Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "bad", Replace: "good"}}}
}

func testContract(rules ...governance.Rule) governance.Contract {
	if len(rules) == 0 {
		rules = []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}}
	}
	return governance.Contract{Schema: governance.ContractSchema, ID: "c", Authority: governance.Authority{ID: "op", Mode: governance.AuthProjectWrite},
		Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: "A2", CognitiveDepth: "D2"}, Rules: rules}
}

// observe builds the observation of checks with the given failing set.
func observe(spec world.Spec, failing map[string]bool, evidence bool) world.Observation {
	o := world.Observation{Schema: world.ObservationSchema, Files: []world.FileFact{}, Checks: []world.CheckResult{}, Evidence: []world.EvidenceFact{}}
	for _, c := range spec.Checks {
		r := world.CheckResult{ID: c.ID, Status: world.CheckPass, TargetSHA256: codec.FingerprintOf([]byte(c.ID + "ok"))}
		if failing[c.ID] {
			r = world.CheckResult{ID: c.ID, Status: world.CheckFail, Detail: "found", TargetSHA256: codec.FingerprintOf([]byte(c.ID + "bad"))}
		}
		o.Checks = append(o.Checks, r)
	}
	for _, e := range spec.Evidence {
		o.Evidence = append(o.Evidence, world.EvidenceFact{ID: e.ID, Present: evidence})
	}
	return o
}

func newState(t *testing.T, spec world.Spec, c governance.Contract, obs world.Observation) EngineState {
	t.Helper()
	g := intent.Goal{Schema: intent.Schema, ID: "g", Mission: "m", Success: intent.Success{AllChecksPass: true}}
	s, evs, err := Init(Bootstrap{RunID: "run:test", Now: t0, Goal: g, Contract: c, Spec: spec, Observation: obs})
	require.NoError(t, err)
	require.NotEmpty(t, evs)
	return s
}

func encodeAll(t *testing.T, evs []event.Event) [][]byte {
	t.Helper()
	var out [][]byte
	for _, ev := range evs {
		b, _, err := ev.Encode()
		require.NoError(t, err)
		out = append(out, b)
	}
	return out
}

// TestBeginFinishArePure: the same state and inputs give byte-identical
// events, and the input state is not modified.
func TestBeginFinishArePure(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"), patchCheck("b", "b.txt"))
	obs := observe(spec, map[string]bool{"a": true, "b": true}, false)
	s := newState(t, spec, testContract(), obs)
	before, err := s.Encode()
	require.NoError(t, err)

	in := Inputs{Now: t0.Add(time.Minute), Observation: obs}
	p1, err := Begin(s, in)
	require.NoError(t, err)
	p2, err := Begin(s, in)
	require.NoError(t, err)
	assert.Equal(t, encodeAll(t, p1.Events), encodeAll(t, p2.Events))
	require.NotNil(t, p1.Effect)
	assert.Equal(t, p1.Effect, p2.Effect)

	out := &world.Outcome{Schema: world.OutcomeSchema, Key: p1.Effect.Key, Operation: world.OpApplyPatch, Target: "a.txt", Status: world.OutcomeCommitted,
		PostCheck: &world.CheckResult{ID: "a", Status: world.CheckPass}}
	r1, err := Finish(p1, settled(out, "a"))
	require.NoError(t, err)
	r2, err := Finish(p2, settled(out, "a"))
	require.NoError(t, err)
	assert.Equal(t, encodeAll(t, r1.Events), encodeAll(t, r2.Events))
	f1, _ := r1.State.Encode()
	f2, _ := r2.State.Encode()
	assert.Equal(t, f1, f2)

	after, err := s.Encode()
	require.NoError(t, err)
	assert.Equal(t, before, after, "Begin/Finish must not modify their input state")

	// A different clock reading is a different cycle.
	p3, err := Begin(s, Inputs{Now: t0.Add(2 * time.Minute), Observation: obs})
	require.NoError(t, err)
	assert.NotEqual(t, encodeAll(t, p1.Events)[0], encodeAll(t, p3.Events)[0])
}

// TestVerdictToDisposition maps each governance verdict onto the scheduler
// without altering the decision, with and without other work remaining.
func TestVerdictToDisposition(t *testing.T) {
	cases := []struct {
		name        string
		rules       []governance.Rule
		policy      governance.Policy
		two         bool // a second, lower-priority candidate exists
		evidence    bool
		wantVerdict string
		wantDisp    state.Disposition
		wantEffect  bool
		// wantSeed is the disposition seed §10.3 gives the verdict, which
		// the cycle record keeps beside the loop's (0: none for it).
		wantSeed state.Disposition
	}{
		{"execute", nil, governance.Policy{}, false, false, "EXECUTE", state.Continue, true, 0},
		{"refuse alone", []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Forbid}}, governance.Policy{}, false, false, "REFUSE", state.Idle, false, 0},
		{"refuse with more work", []governance.Rule{{Operation: "*", Paths: []string{"a.txt"}, Effect: governance.Forbid}, {Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}},
			governance.Policy{}, true, false, "REFUSE", state.Continue, false, 0},
		{"escalate alone", []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Approve}}, governance.Policy{}, false, false, "ESCALATE", state.WaitApproval, false, state.WaitApproval},
		{"escalate with more work", []governance.Rule{{Operation: "*", Paths: []string{"a.txt"}, Effect: governance.Approve}, {Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}},
			governance.Policy{}, true, false, "ESCALATE", state.Continue, false, state.WaitApproval},
		{"defer to sleep", []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow, RequiresEvidence: []string{"ev"}}}, governance.Policy{}, false, false, "DEFER", state.Sleep, false, state.Sleep},
		{"defer to deferred", []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow, RequiresEvidence: []string{"ev"}}}, governance.Policy{DeferTo: "defer"}, false, false, "DEFER", state.Deferred, false, state.Deferred},
		{"evidence present executes", []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow, RequiresEvidence: []string{"ev"}}}, governance.Policy{}, false, true, "EXECUTE", state.Continue, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			checks := []world.Check{patchCheck("a", "a.txt")}
			failing := map[string]bool{"a": true}
			if c.two {
				b := patchCheck("b", "b.txt")
				b.Priority = 1
				checks = append(checks, b)
				failing["b"] = true
			}
			spec := testSpec(checks...)
			ct := testContract(c.rules...)
			ct.Policy = c.policy
			obs := observe(spec, failing, c.evidence)
			s := newState(t, spec, ct, obs)
			p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: obs})
			require.NoError(t, err)
			assert.Equal(t, c.wantEffect, p.Effect != nil)
			var out *world.Outcome
			if p.Effect != nil {
				out = &world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: world.OpApplyPatch, Target: "a.txt", Status: world.OutcomeCommitted,
					PostCheck: &world.CheckResult{ID: "a", Status: world.CheckPass}}
			}
			r, err := Finish(p, settled(out, "a"))
			require.NoError(t, err)
			assert.Equal(t, c.wantVerdict, r.Summary.GovernanceDecision)
			assert.Equal(t, c.wantDisp, r.Summary.LoopDisposition, "reasons %v", r.Summary.ReasonCodes)
			assert.Equal(t, c.wantSeed, cycleRecordOf(t, r.Events).GovernanceDisposition, "the seed's §10.3 disposition, recorded beside the loop's")

			// A run of ledger format 2 records only the loop's.
			s2 := newStateFormat(t, spec, ct, obs, state.LedgerFormat2)
			p2, err := Begin(s2, Inputs{Now: t0.Add(time.Minute), Observation: obs})
			require.NoError(t, err)
			r2, err := Finish(p2, settled(out, "a"))
			require.NoError(t, err)
			assert.Zero(t, cycleRecordOf(t, r2.Events).GovernanceDisposition)

			// The recorded decision is the verdict itself, unaltered.
			var found bool
			for _, ev := range slicesConcat(p.Events, r.Events) {
				if ev.Type == event.DecisionRecorded {
					var d governance.Decision
					require.NoError(t, ev.Object.Decode(&d))
					assert.Equal(t, c.wantVerdict, d.Verdict.String())
					found = true
				}
			}
			assert.True(t, found)
		})
	}
}

// cycleRecordOf decodes the cycle record a cycle's last batch carries.
func cycleRecordOf(t *testing.T, evs []event.Event) state.CycleRecord {
	t.Helper()
	var rec state.CycleRecord
	for _, ev := range evs {
		if ev.Type == event.CycleCompleted {
			require.NoError(t, ev.Object.Decode(&rec))
			return rec
		}
	}
	t.Fatal("no cycle record")
	return rec
}

// newStateFormat is newState for a run of ledger format f.
func newStateFormat(t *testing.T, spec world.Spec, c governance.Contract, obs world.Observation, f state.LedgerFormat) EngineState {
	t.Helper()
	g := intent.Goal{Schema: intent.Schema, ID: "g", Mission: "m", Success: intent.Success{AllChecksPass: true}}
	s, _, err := Init(Bootstrap{RunID: "run:test", Now: t0, Goal: g, Contract: c, Spec: spec, Observation: obs, LedgerFormat: f})
	require.NoError(t, err)
	return s
}

func slicesConcat(a, b []event.Event) []event.Event {
	return append(append([]event.Event{}, a...), b...)
}

func TestEligibility(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{}, false)
	s := newState(t, spec, testContract(), obs)
	idle := s.clone()
	idle.Run.LoopDisposition = state.Idle
	sleeping := idle.clone()
	sleeping.Run.LoopDisposition = state.Sleep
	sleeping.Run.NextWake = &state.Wake{At: state.FormatTime(t0.Add(time.Hour)), Reason: "SLEEP"}
	stopped := idle.clone()
	stopped.Run.Status = state.RunStopped
	faulted := idle.clone()
	faulted.Run.Status = state.RunFaulted
	changed := observe(spec, map[string]bool{"a": true}, false)
	wake := inbox.Item{ID: "wake-x", Kind: inbox.KindWake, Wake: &state.WakeSignal{Source: "external_event"}}
	resume := inbox.Item{ID: "wake-y", Kind: inbox.KindWake, Wake: &state.WakeSignal{Source: "manual_resume"}}

	cases := []struct {
		name string
		s    EngineState
		in   Inputs
		want bool
		why  string
	}{
		{"fresh run continues", s, Inputs{Now: t0, Observation: obs}, true, "continue"},
		{"idle and unchanged", idle, Inputs{Now: t0, Observation: obs}, false, "nothing_eligible"},
		{"idle, world changed", idle, Inputs{Now: t0, Observation: changed}, true, "environment_changed"},
		{"idle, wake signal", idle, Inputs{Now: t0, Observation: obs, Inbox: []inbox.Item{wake}}, true, "wake_external_event"},
		{"sleeping before wake time", sleeping, Inputs{Now: t0.Add(30 * time.Minute), Observation: obs}, false, "nothing_eligible"},
		{"sleeping at wake time", sleeping, Inputs{Now: t0.Add(time.Hour), Observation: obs}, true, "wake_time_reached"},
		{"stopped ignores everything", stopped, Inputs{Now: t0, Observation: changed, Inbox: []inbox.Item{wake}}, false, "run_stopped"},
		{"faulted ignores a plain wake", faulted, Inputs{Now: t0, Observation: changed, Inbox: []inbox.Item{wake}}, false, "run_faulted"},
		{"faulted resumes on manual_resume", faulted, Inputs{Now: t0, Observation: obs, Inbox: []inbox.Item{resume}}, true, "manual_resume"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ok, why := Eligible(c.s, c.in)
			assert.Equal(t, c.want, ok)
			assert.Contains(t, why, c.why)
			if !ok {
				_, err := Begin(c.s, c.in)
				assert.ErrorIs(t, err, ErrNotEligible)
			}
		})
	}
}

// TestEligibilityOnVerdicts: what a command check prints is evidence, not
// a change of the world: an observation that differs only in its output
// makes no cycle eligible (Begin, which replays what was recorded under
// the older rule, still derives one), unlike a different exit code or, for
// a check that compares its output, different normalized output.
func TestEligibilityOnVerdicts(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	base := newState(t, spec, testContract(), observe(spec, map[string]bool{}, false))
	test := world.Check{ID: "test", Kind: world.CheckCommand, Argv: []string{"go", "test"}}
	compared := test
	compared.CompareOutput, compared.Normalize = true, []string{`\(\d+ms\)`}
	look := func(c world.Check, exit int, out string) world.Observation {
		o := base.Environment
		o.Checks = slices.Clone(o.Checks)
		cr := world.CommandResult{Argv: c.Argv, ExitCode: exit, Stdout: out, StdoutSHA256: codec.FingerprintOf([]byte(out))}
		r := world.CheckResult{ID: c.ID, Status: world.CheckFail, Detail: "exit 1 (warning): " + out, Command: &cr, TargetSHA256: world.CommandVerdict(c, cr)}
		if exit == 0 {
			r.Status, r.Detail = world.CheckPass, ""
		}
		return world.Observation{Schema: o.Schema, Files: o.Files, Evidence: o.Evidence, Checks: append(o.Checks, r)}
	}
	resting := func(obs world.Observation) EngineState {
		s := base.clone()
		s.Run.LoopDisposition = state.WaitApproval
		s.Environment, s.Run.EnvironmentRef = obs, obs.Ref()
		return s
	}
	for _, c := range []struct {
		name       string
		check      world.Check
		last, now  world.Observation
		eligible   bool
		recordsWhy bool // Begin still derives a cycle (the older rule)
	}{
		{"same output", test, look(test, 1, "FAIL (3ms)"), look(test, 1, "FAIL (3ms)"), false, false},
		{"only the timing differs", test, look(test, 1, "FAIL (3ms)"), look(test, 1, "FAIL (4ms)"), false, true},
		{"other output, same exit", test, look(test, 1, "FAIL TestA"), look(test, 1, "FAIL TestB"), false, true},
		{"exit code differs", test, look(test, 1, "FAIL"), look(test, 2, "FAIL"), true, true},
		{"passes now", test, look(test, 1, "FAIL"), look(test, 0, "ok"), true, true},
		{"compared, timing normalized away", compared, look(compared, 1, "FAIL (3ms)"), look(compared, 1, "FAIL (4ms)"), false, true},
		{"compared, output differs", compared, look(compared, 1, "FAIL TestA"), look(compared, 1, "FAIL TestB"), true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := resting(c.last)
			ok, why := Eligible(s, Inputs{Now: t0, Observation: c.now})
			assert.Equal(t, c.eligible, ok, "%v", why)
			if ok {
				assert.Contains(t, why, "environment_changed")
			} else {
				assert.Equal(t, []string{"nothing_eligible", "WAIT_APPROVAL"}, why)
			}
			_, err := Begin(s, Inputs{Now: t0, Observation: c.now})
			assert.Equal(t, c.recordsWhy, !errors.Is(err, ErrNotEligible), "%v", err)
		})
	}
}

// TestStateRoundTrip: encoding then decoding the state gives identical
// files, and tampering with a ref is caught.
func TestStateRoundTrip(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{"a": true}, false)
	s := newState(t, spec, testContract(), obs)
	files, err := s.Encode()
	require.NoError(t, err)
	back, err := Decode(files)
	require.NoError(t, err)
	again, err := back.Encode()
	require.NoError(t, err)
	assert.Equal(t, files, again)

	tampered := map[string][]byte{}
	for k, v := range files {
		tampered[k] = v
	}
	other := testContract(governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Forbid})
	tampered[FileContract] = codec.MustMarshal(other)
	_, err = Decode(tampered)
	var ie *state.IntegrityError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, FileContract, ie.File)
}

// TestEvaluation pins how the evaluator judges an outcome: by the
// observer's readback against the fixed FitnessContract, never by the
// executor's report alone.
func TestEvaluation(t *testing.T) {
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "a.txt", CheckID: "a", Find: "bad", Replace: "good"}
	mark := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "a"}
	restore := world.Action{Schema: world.ActionSchema, Operation: world.OpRestore, Target: "a.txt", CheckID: "a"}
	fit := controller.FitnessContract{Criteria: []string{"check_passes", "no_regression", "readback_agrees"}, PassingBefore: []string{"b"}}
	h1, h2 := codec.FingerprintOf([]byte("1")), codec.FingerprintOf([]byte("2"))
	rb := func(sha codec.Fingerprint, passing, failing []string) *world.Readback {
		return &world.Readback{Schema: world.ReadbackSchema, Target: "a.txt", SHA256: sha, Passing: passing, Failing: failing}
	}
	committed := world.Outcome{Status: world.OutcomeCommitted, BeforeSHA256: h1, AfterSHA256: h2}
	cases := []struct {
		name string
		a    world.Action
		out  world.Outcome
		rb   *world.Readback
		want string
	}{
		{"fixed", patch, committed, rb(h2, []string{"a", "b"}, nil), "accepted"},
		{"progress, not done", patch, committed, rb(h2, []string{"b"}, []string{"a"}), "partially_accepted"},
		{"fixed but broke another check", patch, committed, rb(h2, []string{"a"}, []string{"b"}), "rollback_required"},
		{"nothing changed", patch, world.Outcome{Status: world.OutcomeNoChange, BeforeSHA256: h1, AfterSHA256: h1}, rb(h1, []string{"b"}, []string{"a"}), "rejected"},
		{"already fine", patch, world.Outcome{Status: world.OutcomeNoChange, BeforeSHA256: h1, AfterSHA256: h1}, rb(h1, []string{"a", "b"}, nil), "accepted"},
		{"stale target", patch, world.Outcome{Status: world.OutcomeStale}, rb("", nil, []string{"a"}), "inconclusive"},
		{"failed", patch, world.Outcome{Status: world.OutcomeFailed}, rb(h1, nil, []string{"a"}), "rejected"},
		{"reported", mark, world.Outcome{Status: world.OutcomeCommitted, AfterSHA256: h2}, rb(h2, nil, nil), "partially_accepted"},
		{"the readback disagrees with the executor", patch, committed, rb(h1, []string{"a"}, nil), "operator_review_required"},
		{"no readback at all", patch, committed, nil, "operator_review_required"},
		{"restored", restore, committed, rb(h2, nil, []string{"a"}), "accepted"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, why := evaluateEffect(world.Catalog{}.Of(c.a.Operation), c.a, c.out, c.rb, fit)
			assert.Equal(t, c.want, got, why)
		})
	}
}

// settled is the driver's settlement for an outcome, with an observer
// readback in which the given checks pass.
func settled(out *world.Outcome, passing ...string) Settlement {
	if out == nil {
		return Settlement{}
	}
	return Settlement{Outcome: out, Readback: &world.Readback{Schema: world.ReadbackSchema, Target: out.Target, SHA256: out.AfterSHA256,
		Passing: passing, Failing: []string{}}}
}

// TestCheckpointChain: from ledger format 2 on, a cycle record names the
// checkpoint the cycle started from and the run state names the last
// checkpoint before it, both by the ref the checkpoint was recorded under,
// and the cycle's autonomy resolution is its governance decision; a
// format-1 run leaves all three empty, as it always did.
func TestCheckpointChain(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"), patchCheck("b", "b.txt"))
	obs := observe(spec, map[string]bool{"a": true, "b": true}, false)
	for _, f := range []state.LedgerFormat{state.LedgerFormat1, state.LedgerFormat2} {
		t.Run(fmt.Sprint(f), func(t *testing.T) {
			g := intent.Goal{Schema: intent.Schema, ID: "g", Mission: "m", Success: intent.Success{AllChecksPass: true}}
			s, evs, err := Init(Bootstrap{RunID: "run:test", Now: t0, Goal: g, Contract: testContract(), Spec: spec, Observation: obs, LedgerFormat: f})
			require.NoError(t, err)
			last := func(evs []event.Event) codec.Ref {
				for i := len(evs) - 1; i >= 0; i-- {
					if evs[i].Type.CheckpointRecord() {
						return evs[i].Object.Ref
					}
				}
				t.Fatal("no checkpoint.created event")
				return ""
			}
			prev := last(evs)
			for i := range 2 {
				p, err := Begin(s, Inputs{Now: t0.Add(time.Duration(i+1) * time.Minute), Observation: obs})
				require.NoError(t, err)
				out := &world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: world.OpApplyPatch, Target: p.Effect.Action.Target,
					Status: world.OutcomeCommitted, PostCheck: &world.CheckResult{ID: p.Effect.Action.CheckID, Status: world.CheckPass}}
				r, err := Finish(p, settled(out, p.Effect.Action.CheckID))
				require.NoError(t, err)
				var rec state.CycleRecord
				for _, ev := range r.Events {
					if ev.Type == event.CycleCompleted {
						require.NoError(t, ev.Object.Decode(&rec))
					}
				}
				if f == state.LedgerFormat1 {
					assert.Empty(t, rec.CheckpointRef)
					assert.Empty(t, r.State.Run.LastCheckpointRef)
					assert.Empty(t, rec.AutonomyResolutionRef)
				} else {
					assert.NotEmpty(t, rec.GovernanceDecisionRef)
					assert.Equal(t, rec.GovernanceDecisionRef, rec.AutonomyResolutionRef, "governance resolved the autonomy")
					assert.Equal(t, prev, rec.CheckpointRef, "cycle %d starts from the checkpoint before it", rec.CycleSeq)
					assert.Equal(t, prev, r.State.Run.LastCheckpointRef)
				}
				prev, s = last(r.Events), r.State
			}
		})
	}
}

// TestCapabilityGap: a failing check the loop cannot fix (no declared fix
// and no proposer to ask) is a capability gap in the tension report; a fix
// or a proposer closes the gap; a format-1 run never reported one.
func TestCapabilityGap(t *testing.T) {
	gap := world.Check{ID: "gap", Summary: "gap", Kind: world.CheckAbsentText, Path: "g.txt", Text: "bad", Priority: 5}
	for _, c := range []struct {
		name     string
		check    world.Check
		proposer bool
		format   state.LedgerFormat
		want     bool
	}{
		{"no fix, no proposer", gap, false, state.CurrentLedgerFormat, true},
		{"a declared fix", patchCheck("gap", "g.txt"), false, state.CurrentLedgerFormat, false},
		{"a proposer", gap, true, state.CurrentLedgerFormat, false},
		{"format 1", gap, false, state.LedgerFormat1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			spec := testSpec(c.check)
			contract := testContract()
			if c.proposer {
				contract.Proposer = &governance.Proposer{Argv: []string{"propose"}}
			}
			g := intent.Goal{Schema: intent.Schema, ID: "g", Mission: "m", Success: intent.Success{AllChecksPass: true}}
			s, _, err := Init(Bootstrap{RunID: "run:test", Now: t0, Goal: g, Contract: contract, Spec: spec,
				Observation: observe(spec, nil, false), LedgerFormat: c.format})
			require.NoError(t, err)
			p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: observe(spec, map[string]bool{"gap": true}, false)})
			require.NoError(t, err)
			classes := reasonsOf(p.Events, event.TensionAssessed)
			assert.Contains(t, classes, controller.TensionValidation)
			if c.want {
				assert.Contains(t, classes, controller.TensionCapabilityGap)
			} else {
				assert.NotContains(t, classes, controller.TensionCapabilityGap)
			}
		})
	}
}
