package validate

import (
	"context"
	"encoding/json"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/mutant"
	"github.com/acr-project/acr/internal/scenario"
	"github.com/acr-project/acr/internal/strategy"
)

func scenariosDir() string { return filepath.Join("..", "..", "scenarios") }

// TestGates collects the evidence once and requires every gate to pass on
// it (P is PASS or INCONCLUSIVE, depending on whether the frozen manifest
// matches the tree). Then, for every gate, it breaks the behaviour the gate
// guards, never just the recorded evidence, and requires the gate to FAIL
// on the evidence the broken behaviour leaves: either a source mutation
// from the mutation suite (internal/mutant), built once with every mutant
// behind its switch and run on the scenarios that exercise the property,
// or a crafted run (inputs or a tree the property does not hold for).
func TestGates(t *testing.T) {
	ev, cleanup, err := Collect(Options{Scenarios: scenariosDir(), Root: filepath.Join("..", ".."), Manifest: filepath.Join("..", "..", "docs", "release-manifest.json")})
	require.NoError(t, err)
	defer cleanup()
	rep := Evaluate(ev)
	require.Len(t, rep.Details, 21)
	for _, g := range rep.Details {
		if g.ID == "P" {
			assert.NotEqual(t, Fail, g.Verdict, "gate P: %v (run make release-manifest after an intended change)", g.Evidence)
			continue
		}
		assert.Equal(t, Pass, g.Verdict, "gate %s %s: %v", g.ID, g.Name, g.Evidence)
	}
	assert.Empty(t, rep.FailedScenarios)

	m := buildMutants(t)
	// Each breaker returns the evidence of a broken run; a gate with several
	// breakers must fail on each.
	mut := func(name string, scenarios ...string) breaker {
		return breaker{"mutant " + name, func(t *testing.T, ev *Evidence) {
			for _, sc := range scenarios {
				ev.Runs[sc] = m.run(t, name, sc)
			}
		}}
	}
	only := func(b breaker) breaker { // the broken runs are the only evidence
		return breaker{b.how + " (alone)", func(t *testing.T, ev *Evidence) {
			fresh := &Evidence{Runs: map[string]*Run{}, Second: ev.Second, Freeze: ev.Freeze}
			b.apply(t, fresh)
			*ev = *fresh
		}}
	}
	breakers := map[string][]breaker{
		"A": {{"crafted run: every cycle follows a new human input", func(t *testing.T, ev *Evidence) {
			run := craft(t, "p02-healthy-idle", func(s *scenario.Script) {
				s.Steps = nil
				for _, k := range []string{"a", "b", "c"} {
					s.Steps = append(s.Steps, scenario.Step{Wake: &scenario.Wake{Source: "external_event", Ref: k, DedupKey: k}}, scenario.Step{Run: 5})
				}
				s.Expect = scenario.Expect{}
			})
			ev.Runs = map[string]*Run{run.Name: run}
		}}},
		"B": {mut("no-agenda-continue", "p02-healthy-idle")},
		"C": {mut("matched-any", "p03-sleep-wake-resume"), mut("expired-wake-consumed", "eval-wake-hygiene"),
			mut("deadline-ignored", "p17-standing-commitments"), mut("deadline-moved-by-any", "p17-standing-commitments"),
			mut("wake-ignores-deadline", "p17-standing-commitments")},
		"D": {mut("compaction-drops-protected", "p09-compaction")},
		"E": {mut("review-always", "p07-direct-path")},
		"F": {only(mut("overlay-ignored", "p06-strategic-review"))},
		"G": {mut("decide-execute", "p05-approval-escalation"), mut("wake-authority", "eval-authority"), mut("self-approval", "eval-separation"),
			mut("rule-refuses-allowed", "p01-bootstrap")},
		"H": {mut("idempotency-reapply", "crash-harness")},
		"I": {mut("recovery-skips-effect", "p10-crash-before-commit")},
		"J": {mut("idempotency-reapply", "p11-crash-after-commit")},
		"K": {mut("unlinked-events", "p07-direct-path")},
		"L": {mut("compaction-forgets", "p09-compaction")},
		"M": {mut("budget-after-spend", "p13-budget-cognitive-operations"), mut("budget-cycles-only", "p13-budget-actions")},
		"N": {mut("stop-ignored", "p12-explicit-stop")},
		"O": {mut("provider-failure-ignored", "p16-provider-fault")},
		"P": {{"crafted tree: a frozen source changed without a new manifest", func(t *testing.T, ev *Evidence) {
			f := filepath.Join(m.tree.Dir, "internal", "codec", "canonical.go")
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(f, append(b, []byte("\n// a change to the canonical encoding\n")...), 0o644))
			t.Cleanup(func() { _ = os.WriteFile(f, b, 0o644) })
			ev.Freeze = CheckFreeze(m.tree.Dir, filepath.Join("..", "..", "docs", "release-manifest.json"))
		}}},
		"Q": {mut("knowledge-promoted", "p15-knowledge-refresh")},
		"R": {mut("hidden-reasoning", "p01-bootstrap")},
		"S": {{"crafted run: the long run stops after its first steps", func(t *testing.T, ev *Evidence) {
			ev.Runs["p14-mixed-100"] = craft(t, "p14-mixed-100", func(s *scenario.Script) {
				s.Steps = s.Steps[:3]
				s.Expect = scenario.Expect{}
			})
		}}},
		"U": {mut("contract-expiry-ignored", "p19-contract-invalidated"), mut("terminal-failure-ignored", "p18-goal-terminal-failure")},
		"T": {{"crafted runs: a nondeterministic clock", func(t *testing.T, ev *Evidence) {
			sc, err := scenario.Load(filepath.Join(scenariosDir(), "p01-bootstrap"))
			require.NoError(t, err)
			a, err := scenario.Run(sc, scenario.Options{Clock: jitterClock{}})
			require.NoError(t, err)
			b, err := scenario.Run(sc, scenario.Options{Clock: jitterClock{}})
			require.NoError(t, err)
			ev.Runs["p01-bootstrap"].Result = a
			ev.Second["p01-bootstrap"] = b
		}}},
	}
	require.Len(t, breakers, 21)

	// A scenario that fails its own expectations fails the verdict even
	// when every gate passes.
	t.Run("verdict-counts-scenario-failures", func(t *testing.T) {
		broken := cloneEvidence(ev)
		broken.Runs["p02-healthy-idle"] = craft(t, "p02-healthy-idle", func(s *scenario.Script) {
			two := int64(2)
			s.Expect.Cycles = &two // it runs one
		})
		require.False(t, broken.Runs["p02-healthy-idle"].Result.Passed)
		rep := Evaluate(broken)
		for _, g := range rep.Details {
			assert.NotEqual(t, Fail, g.Verdict, "gate %s", g.ID)
		}
		assert.Equal(t, Fail, rep.Verdict)
		assert.Equal(t, []string{"p02-healthy-idle"}, rep.FailedScenarios)
		assert.Contains(t, string(Markdown(broken, rep, BuildManifest(broken, rep, nil))), "Scenarios that failed their own expectations: p02-healthy-idle.")
	})
	for _, g := range Gates() {
		require.NotEmpty(t, breakers[g.ID], "gate %s has no counter-test", g.ID)
		for _, b := range breakers[g.ID] {
			t.Run("counter-"+g.ID+"/"+b.how, func(t *testing.T) {
				broken := cloneEvidence(ev)
				b.apply(t, broken)
				res := g.Check(broken)
				assert.Equal(t, Fail, res.Verdict, "gate %s must fail when %s breaks it: %v", g.ID, b.how, res.Evidence)
			})
		}
	}
}

// breaker breaks what a gate guards; how says how.
type breaker struct {
	how   string
	apply func(t *testing.T, ev *Evidence)
}

// mutants is a copy of the tree with every mutant of the suite behind its
// switch, and its acr binary.
type mutants struct {
	tree *mutant.Tree
	bin  string
}

func buildMutants(t *testing.T) *mutants {
	t.Helper()
	tree, err := mutant.Copy(filepath.Join("..", ".."))
	require.NoError(t, err)
	t.Cleanup(tree.Remove)
	require.NoError(t, tree.BlankFingerprints())
	require.NoError(t, tree.ApplySwitched(mutant.Catalogue()))
	bin := filepath.Join(tree.Dir, "bin", "acr")
	require.NoError(t, tree.Build(context.Background(), bin))
	return &mutants{tree: tree, bin: bin}
}

// run runs one scenario of the mutated copy with one mutant on, and gathers
// the evidence it left.
func (m *mutants) run(t *testing.T, name, sc string) *Run {
	t.Helper()
	_, ok := mutant.Find(name)
	require.True(t, ok, "no mutant %s", name)
	dir := filepath.Join(m.tree.Dir, "scenarios", sc)
	cmd := exec.Command(m.bin, "scenario", "run", dir, "--keep", "--json")
	cmd.Env = append(os.Environ(), mutant.Env+"="+name)
	out, _ := cmd.Output() // a scenario that fails its expectations exits non-zero
	var res scenario.Result
	require.NoError(t, json.Unmarshal(out, &res), "mutant %s on %s: %s", name, sc, out)
	require.NotEmpty(t, res.Dir)
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(res.Dir)) })
	loaded, err := scenario.Load(dir)
	require.NoError(t, err)
	run, err := LoadRun(loaded.Script, &res)
	require.NoError(t, err)
	return run
}

// craft runs a reference scenario with its script changed by edit, and
// gathers the evidence.
func craft(t *testing.T, name string, edit func(*scenario.Script)) *Run {
	t.Helper()
	sc, err := scenario.Load(filepath.Join(scenariosDir(), name))
	require.NoError(t, err)
	edit(&sc.Script)
	res, err := scenario.Run(sc, scenario.Options{Keep: true})
	require.NoError(t, err)
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(res.Dir)) })
	run, err := LoadRun(sc.Script, res)
	require.NoError(t, err)
	return run
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"

// jitterClock is a nondeterministic clock: every reading jumps by a random
// number of seconds.
type jitterClock struct{}

func (jitterClock) Now() time.Time {
	return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rand.IntN(1_000_000)) * time.Second)
}

func cloneEvidence(ev *Evidence) *Evidence {
	out := &Evidence{Runs: map[string]*Run{}, Second: map[string]*scenario.Result{}, Freeze: ev.Freeze}
	for k, r := range ev.Runs {
		cp := *r
		cp.Records = slices.Clone(r.Records)
		out.Runs[k] = &cp
	}
	for k, r := range ev.Second {
		out.Second[k] = r
	}
	return out
}

// TestStrategyTypesFrozen keeps the freeze list honest: every frozen type
// describes to something, and the description changes with the type.
func TestStrategyTypesFrozen(t *testing.T) {
	h, _ := Hashes("")
	require.Len(t, h, len(frozenTypes()))
	a := describe(reflectOf[strategy.Overlay](), map[reflect.Type]bool{})
	b := describe(reflectOf[strategy.Trigger](), map[reflect.Type]bool{})
	assert.NotEqual(t, a, b)
}
