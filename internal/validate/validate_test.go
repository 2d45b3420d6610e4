package validate

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/scenario"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
)

func scenariosDir() string { return filepath.Join("..", "..", "scenarios") }

// TestGates collects the evidence once, requires every gate to pass on it
// (P is PASS or INCONCLUSIVE, depending on whether the frozen manifest
// matches the tree), and then, for every gate, breaks the property it
// guards in a copy of the evidence and requires that gate to FAIL.
func TestGates(t *testing.T) {
	ev, cleanup, err := Collect(Options{Scenarios: scenariosDir(), Root: filepath.Join("..", ".."), Manifest: filepath.Join("..", "..", "docs", "release-manifest.json")})
	require.NoError(t, err)
	defer cleanup()
	rep := Evaluate(ev)
	require.Len(t, rep.Details, 20)
	for _, g := range rep.Details {
		if g.ID == "P" {
			assert.NotEqual(t, Fail, g.Verdict, "gate P: %v (run make release-manifest after an intended change)", g.Evidence)
			continue
		}
		assert.Equal(t, Pass, g.Verdict, "gate %s %s: %v", g.ID, g.Name, g.Evidence)
	}

	breakers := map[string]func(t *testing.T, ev *Evidence){
		"A": func(t *testing.T, ev *Evidence) { // every cycle gets a human input
			for _, run := range ev.Runs {
				edit(t, run, "persistent.cycle.started", func(m *kernel.Manifest) { m.InboxItems = append(m.InboxItems, "apr:sha256:"+zeros) })
			}
		},
		"B": func(t *testing.T, ev *Evidence) { // a policy that busy-loops: no agenda, yet CONTINUE
			edit(t, ev.Runs["p02-healthy-idle"], "persistent.cycle.completed", func(c *state.CycleRecord) { c.LoopDisposition = state.Continue })
		},
		"C": func(t *testing.T, ev *Evidence) { // a resume whose condition never held
			edit(t, ev.Runs["p03-sleep-wake-resume"], "commitment.created", func(c *commitment.Commitment) {
				c.Wake = &commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: "never-arrives"}
			})
		},
		"D": func(t *testing.T, ev *Evidence) { // a compaction that drops a protected ref
			run := ev.Runs["p09-compaction"]
			run.Final.Context.Protected = slices.DeleteFunc(slices.Clone(run.Final.Context.Protected), func(p memory.Protected) bool { return p.Kind == "commitment" })
		},
		"E": func(t *testing.T, ev *Evidence) { // review forced on every cycle
			for _, run := range ev.Runs {
				insertAfter(run, "strategy.review.evaluated", "strategy.review.requested")
			}
		},
		"F": func(t *testing.T, ev *Evidence) { // overlays that change nothing
			for _, run := range ev.Runs {
				if !slices.ContainsFunc(run.Records, func(r ledger.Record) bool { return r.Event.Type == "cognition.program.compiled" }) {
					continue
				}
				edit(t, run, "cognition.program.compiled", func(p *cognition.Program) {
					p.Steps = []cognition.Op{cognition.OpObserveTarget, cognition.OpRetrieve, cognition.OpSelect, cognition.OpDraft, cognition.OpCritique, cognition.OpFinalize}
				})
			}
		},
		"G": func(t *testing.T, ev *Evidence) { // an effect without a decision
			run := ev.Runs["p01-bootstrap"]
			run.Records = slices.DeleteFunc(slices.Clone(run.Records), func(r ledger.Record) bool { return r.Event.Type == "governance.decision.recorded" })
		},
		"H": func(t *testing.T, ev *Evidence) { // an action applied twice
			run := ev.Runs["p01-bootstrap"]
			i := slices.IndexFunc(run.Records, func(r ledger.Record) bool { return r.Event.Type == "sandbox.action.committed" })
			require.GreaterOrEqual(t, i, 0)
			run.Records = slices.Insert(slices.Clone(run.Records), i+1, run.Records[i])
		},
		"I": func(t *testing.T, ev *Evidence) { // recovery that re-executed nothing
			res := *ev.Runs["p10-crash-before-commit"].Result
			res.Recoveries = nil
			ev.Runs["p10-crash-before-commit"].Result = &res
		},
		"J": func(t *testing.T, ev *Evidence) { // recovery that applied the effect again
			res := *ev.Runs["p11-crash-after-commit"].Result
			res.Recoveries = []kernel.Recovery{{Recovered: true, Classification: "interrupted_after_action_commit", ActionsApplied: 1}}
			ev.Runs["p11-crash-after-commit"].Result = &res
		},
		"K": func(t *testing.T, ev *Evidence) { // a broken causal link
			run := ev.Runs["p07-direct-path"]
			i := slices.IndexFunc(run.Records, func(r ledger.Record) bool { return r.Event.Type == "agenda.resolution.selected" })
			recs := slices.Clone(run.Records)
			recs[i].Event.Parents = []state.Ref{"evt:sha256:" + zeros}
			run.Records = recs
		},
		"L": func(t *testing.T, ev *Evidence) { // compaction evidence gone
			run := ev.Runs["p09-compaction"]
			run.Records = slices.DeleteFunc(slices.Clone(run.Records), func(r ledger.Record) bool { return r.Event.Type == "context.compaction.completed" })
		},
		"M": func(t *testing.T, ev *Evidence) { // a run that self-increased its budget use past the limit
			ev.Runs["p13-budget-stop"].Final.Run.Budget.Cycles = 4
		},
		"N": func(t *testing.T, ev *Evidence) { // a cycle after the stop
			run := ev.Runs["p12-explicit-stop"]
			last := run.Records[len(run.Records)-1]
			for i := len(run.Records) - 1; i >= 0; i-- {
				if run.Records[i].Event.Type == "persistent.cycle.completed" {
					last = run.Records[i]
				}
			}
			last.Event.CycleSeq++
			run.Records = append(slices.Clone(run.Records), last)
		},
		"O": func(t *testing.T, ev *Evidence) { // a provider failure that advanced the run
			run := ev.Runs["p16-provider-fault"]
			recs := slices.Clone(run.Records)
			for i := range recs {
				if recs[i].Event.Type == "persistent.provider.failed" {
					recs[i].Event.CycleSeq += 5
					break
				}
			}
			run.Records = recs
		},
		"P": func(t *testing.T, ev *Evidence) { // a frozen schema changed without a new manifest
			dir := t.TempDir()
			m := ReleaseManifest{Schema: ManifestSchema, Freeze: map[string]string{}}
			for k, v := range ev.Freeze.Current {
				m.Freeze[k] = v
			}
			m.Freeze["type:state.RunState"] = "sha256:" + zeros
			p := filepath.Join(dir, "release-manifest.json")
			require.NoError(t, os.WriteFile(p, state.MustMarshal(m), 0o644))
			ev.Freeze = CheckFreeze("", p)
		},
		"Q": func(t *testing.T, ev *Evidence) { // a knowledge candidate promoted
			run := ev.Runs["p15-knowledge-refresh"]
			cs := slices.Clone(run.Final.Strategy.Candidates)
			cs[0].Status = "promoted"
			run.Final.Strategy.Candidates = cs
		},
		"R": func(t *testing.T, ev *Evidence) { // hidden reasoning in a record
			edit(t, ev.Runs["p01-bootstrap"], "cognition.run.completed", func(d *state.Value) {
				d.Obj = append(d.Obj, state.Member{Key: "reasoning", Val: state.Value{Kind: state.KindString, Str: "private"}})
				slices.SortFunc(d.Obj, func(a, b state.Member) int { return strings.Compare(a.Key, b.Key) })
			})
		},
		"S": func(t *testing.T, ev *Evidence) { // the long run missed a transition class
			res := *ev.Runs["p14-mixed-100"].Result
			res.TransitionClasses = map[string]int{"agenda_selected": 1}
			ev.Runs["p14-mixed-100"].Result = &res
		},
		"T": func(t *testing.T, ev *Evidence) { // a nondeterministic clock
			sc, err := scenario.Load(filepath.Join(scenariosDir(), "p01-bootstrap"))
			require.NoError(t, err)
			a, err := scenario.Run(sc, scenario.Options{Clock: jitterClock{}})
			require.NoError(t, err)
			b, err := scenario.Run(sc, scenario.Options{Clock: jitterClock{}})
			require.NoError(t, err)
			ev.Runs["p01-bootstrap"].Result = a
			ev.Second["p01-bootstrap"] = b
		},
	}
	require.Len(t, breakers, 20)
	for _, g := range Gates() {
		t.Run("counter-"+g.ID, func(t *testing.T) {
			broken := cloneEvidence(ev)
			breakers[g.ID](t, broken)
			res := g.Check(broken)
			assert.Equal(t, Fail, res.Verdict, "gate %s must fail when its property is broken: %v", g.ID, res.Evidence)
		})
	}
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

// edit decodes the object of every record of a type, changes it, and puts
// a re-encoded object (with its new ref) in place.
func edit[T any](t *testing.T, run *Run, typ string, fn func(*T)) {
	t.Helper()
	recs := slices.Clone(run.Records)
	n := 0
	for i := range recs {
		if recs[i].Event.Type != typ || recs[i].Event.Object == nil {
			continue
		}
		var v T
		require.NoError(t, state.Unmarshal(recs[i].Event.Object.Body, &v))
		fn(&v)
		obj, err := ledger.NewObject(recs[i].Event.Object.Ref.Kind(), v)
		require.NoError(t, err)
		recs[i].Event.Object = obj
		n++
	}
	require.Positive(t, n, "no %s record to edit in %s", typ, run.Name)
	run.Records = recs
}

// insertAfter adds an event of type add after every event of type after.
func insertAfter(run *Run, after, add string) {
	var out []ledger.Record
	for _, r := range run.Records {
		out = append(out, r)
		if r.Event.Type == after {
			x := r
			x.Event.Type = add
			x.Event.Object = nil
			out = append(out, x)
		}
	}
	run.Records = out
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
