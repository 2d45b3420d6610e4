package kernel

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// This file checks docs/architecture.md's answer to "where does an
// action kind go": an operation is one entry in a world.Catalog and an
// executor in a world, and nothing else changes. The test adds an
// operation no package knows, append_line, in this file only, and runs
// the loop on it: cognition drafts it from the fix the environment
// declares, governance rules on it by operation and path, the kernel
// decides, and the driver carries it out through a world that knows it.

// opAppendLine appends Content, as one line, to its target.
const opAppendLine world.Operation = "append_line"

// appendLineKind is append_line's entry: a write on the check's path,
// judged by the check passing, drafted with the fix's content.
func appendLineKind() world.OperationKind {
	return world.OperationKind{
		Op:     opAppendLine,
		Writes: true,
		ValidateFix: func(f world.Fix, _ world.Check) error {
			if f.Content == "" || strings.Contains(f.Content, "\n") {
				return &codec.FieldError{Path: "content", Err: errors.New("append_line needs one line of content")}
			}
			return nil
		},
		Draft: func(c world.Check, r world.CheckResult, f world.Fix) world.Action {
			return world.Action{Schema: world.ActionSchema, Operation: opAppendLine, Target: c.Path, CheckID: c.ID,
				ExpectSHA256: r.TargetSHA256, Content: f.Content}
		},
		Criteria: func(world.Action) []string { return []string{"check_passes", "no_regression"} },
		Describe: func(a world.Action) string { return fmt.Sprintf("append %q to %s", a.Content, a.Target) },
	}
}

// lineWorld is a world of files in memory that carries out append_line
// and nothing else, once per idempotency key.
type lineWorld struct {
	spec  world.Spec
	files map[string]string
	done  map[string]world.Outcome
}

func newLineWorld(spec world.Spec) *lineWorld {
	w := &lineWorld{spec: spec, files: map[string]string{}, done: map[string]world.Outcome{}}
	for p, c := range spec.Files {
		w.files[p] = c
	}
	return w
}

func (w *lineWorld) hash(p string) codec.Fingerprint {
	c, ok := w.files[p]
	if !ok {
		return ""
	}
	return codec.FingerprintOf([]byte(c))
}

func (w *lineWorld) Observe(ctx context.Context) (world.Observation, error) {
	o := world.Observation{Schema: world.ObservationSchema, Files: []world.FileFact{}, Checks: []world.CheckResult{}, Evidence: []world.EvidenceFact{}}
	for _, p := range slices.Sorted(func(yield func(string) bool) {
		for p := range w.files {
			if !yield(p) {
				return
			}
		}
	}) {
		o.Files = append(o.Files, world.FileFact{Path: p, SHA256: w.hash(p), Size: int64(len(w.files[p]))})
	}
	for _, c := range w.spec.Checks {
		content, ok := w.files[c.Path]
		o.Checks = append(o.Checks, world.Evaluate(c, []byte(content), ok))
	}
	return o, nil
}

func (w *lineWorld) Prepare(ctx context.Context, key string, a world.Action) (world.Intent, *world.Outcome, error) {
	if out, ok := w.done[key]; ok {
		return world.Intent{}, &out, nil
	}
	if a.Operation != opAppendLine {
		return world.Intent{}, nil, fmt.Errorf("this world carries out %s only, not %s", opAppendLine, a.Operation)
	}
	before := w.files[a.Target]
	after := before + a.Content + "\n"
	bh, ah := w.hash(a.Target), codec.FingerprintOf([]byte(after))
	return world.Intent{Schema: world.IntentSchema, Key: key, Action: a, Changes: true,
		Planned: world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, Target: a.Target,
			Status: world.OutcomeCommitted, BeforeSHA256: bh, AfterSHA256: ah},
		Rollback: &world.RollbackBundle{Target: a.Target, Existed: true, Prefix: int64(len(before)), Before: bh, After: ah}}, nil, nil
}

func (w *lineWorld) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	if out, ok := w.done[key]; ok {
		return out, true, nil
	}
	w.files[a.Target] += a.Content + "\n"
	out := in.Planned
	w.done[key] = out
	return out, false, nil
}

func (w *lineWorld) Readback(ctx context.Context, a world.Action, _ world.Outcome) (world.Readback, error) {
	rb := world.Readback{Schema: world.ReadbackSchema, Target: a.Target, SHA256: w.hash(a.Target), Passing: []string{}, Failing: []string{}}
	obs, _ := w.Observe(ctx)
	for _, r := range obs.Checks {
		if r.Status == world.CheckPass {
			rb.Passing = append(rb.Passing, r.ID)
		} else {
			rb.Failing = append(rb.Failing, r.ID)
		}
	}
	return rb, nil
}

func (w *lineWorld) Durable() error { return nil }

type tickClock struct{ now time.Time }

func (c *tickClock) Now() time.Time {
	c.now = c.now.Add(time.Second)
	return c.now
}

// openLineRun creates a run of spec and contract on a store in memory and
// opens a driver on it, with the world w and the catalog ops.
func openLineRun(t *testing.T, spec world.Spec, c governance.Contract, w *lineWorld, ops world.Catalog) (*Driver, *ledger.Ledger) {
	t.Helper()
	fsys := disk.NewMem()
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	g := intent.Goal{Schema: intent.Schema, ID: "g", Mission: "keep the notes signed", Success: intent.Success{AllChecksPass: true}}
	st, evs, err := Init(Bootstrap{RunID: "run:lines", Now: t0, Goal: g, Contract: c, Spec: spec, Observation: obs, Operations: ops})
	require.NoError(t, err)
	led, err := ledger.Create(fsys)
	require.NoError(t, err)
	t.Cleanup(func() { led.Close() })
	_, err = led.Append(evs)
	require.NoError(t, err)
	files, err := st.Encode()
	require.NoError(t, err)
	store := dirstore.NewStore(fsys)
	_, err = store.Commit(storage.Commit{RunID: st.Run.RunID, Frontier: led.Frontier(), Files: files})
	require.NoError(t, err)
	d := &Driver{Store: store, Ledger: led, World: w, Inbox: dirstore.Inbox{FS: fsys}, Clock: &tickClock{now: t0},
		CheckpointEvery: 1, Operations: ops}
	require.NoError(t, d.Open(t.Context()))
	return d, led
}

// recorded decodes the object of the last event of type typ.
func recorded[T any](t *testing.T, led *ledger.Ledger, typ event.Kind) T {
	t.Helper()
	recs, err := led.After(state.GenesisFrontier())
	require.NoError(t, err)
	var v T
	for i := len(recs) - 1; i >= 0; i-- {
		if r := recs[i].Event; r.Type == typ && r.Object != nil {
			require.NoError(t, r.Object.Decode(&v))
			return v
		}
	}
	t.Fatalf("no %s event", typ)
	return v
}

// TestAddedOperationRunsThroughTheLoop: an operation added in a catalog
// is validated, drafted, governed by rules that name it and its path,
// decided on and carried out, and without the catalog the same run
// refuses it as unknown.
func TestAddedOperationRunsThroughTheLoop(t *testing.T) {
	ops := world.Catalog{}.With(appendLineKind())
	spec := world.Spec{Schema: world.SpecSchema, Files: map[string]string{"notes.txt": "draft\n", "other.txt": "x\n"},
		Checks: []world.Check{{ID: "signed", Summary: "the notes are signed", Kind: world.CheckPresentText, Path: "notes.txt",
			Text: "signed-off", Priority: 10, Fixes: []world.Fix{{Operation: opAppendLine, Content: "signed-off"}}}}}
	rule := func(op string, path string, e governance.Effect) governance.Rule {
		return governance.Rule{Operation: op, Paths: []string{path}, Effect: e}
	}

	// The documents are valid for a world of the catalog, and only for one.
	require.NoError(t, spec.ValidateFor(ops))
	assert.ErrorContains(t, spec.Validate(), "cannot be a fix")
	named := testContract(rule(string(opAppendLine), "notes.txt", governance.Allow))
	require.NoError(t, named.ValidateFor(ops))
	assert.ErrorContains(t, named.Validate(), `unknown operation "append_line"`)
	bad := spec
	bad.Checks = []world.Check{spec.Checks[0]}
	bad.Checks[0].Fixes = []world.Fix{{Operation: opAppendLine}}
	assert.ErrorContains(t, bad.ValidateFor(ops), "append_line needs one line of content", "the entry's own validation runs")

	cases := []struct {
		name     string
		ops      world.Catalog
		rules    []governance.Rule
		verdict  string
		reason   string
		rule     string
		executed bool
	}{
		{"a rule names it on its path", ops, []governance.Rule{rule(string(opAppendLine), "notes.txt", governance.Allow)},
			"EXECUTE", "contract_allows", "rules[0]", true},
		{"a rule for every operation allows it", ops, nil, "EXECUTE", "contract_allows", "rules[0]", true},
		{"a rule forbids it on its path", ops, []governance.Rule{rule(string(opAppendLine), "notes.txt", governance.Forbid),
			rule("*", "**", governance.Allow)}, "REFUSE", "contract_forbids", "rules[0]", false},
		{"the rule naming it is for another path", ops, []governance.Rule{rule(string(opAppendLine), "other.txt", governance.Allow)},
			"REFUSE", "no_rule_allows", "default", false},
		{"a rule asks for approval", ops, []governance.Rule{rule(string(opAppendLine), "*.txt", governance.Approve)},
			"ESCALATE", "contract_requires_approval", "rules[0]", false},
		{"the run's world does not carry it out", world.Catalog{}, nil, "REFUSE", "unknown_operation", "none", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			w := newLineWorld(spec)
			d, led := openLineRun(t, spec, testContract(tc.rules...), w, tc.ops)
			sum, err := d.Step(t.Context())
			require.NoError(t, err)

			// Cognition drafted the declared fix through the entry.
			prog := recorded[cognition.Program](t, led, event.ProgramCompiled)
			require.Len(t, prog.Affordances, 1)
			assert.Equal(t, opAppendLine, prog.Affordances[0].Operation)
			want := world.Action{Schema: world.ActionSchema, Operation: opAppendLine, Target: "notes.txt", CheckID: "signed",
				ExpectSHA256: codec.FingerprintOf([]byte("draft\n")), Content: "signed-off"}
			if _, known := tc.ops.Kind(opAppendLine); !known {
				// Without its entry, the fix is the bare operation on the path.
				want.ExpectSHA256, want.Content = "", ""
			}
			assert.Equal(t, want, recorded[world.Action](t, led, event.ActionProposed))

			// Governance ruled on it by operation and path.
			dec := recorded[governance.Decision](t, led, event.DecisionRecorded)
			assert.Equal(t, tc.verdict, dec.Verdict.String())
			assert.Equal(t, []string{tc.reason}, dec.ReasonCodes)
			assert.Equal(t, tc.rule, dec.Rule)
			assert.Equal(t, tc.verdict, sum.GovernanceDecision)

			if !tc.executed {
				assert.Equal(t, "draft\n", w.files["notes.txt"], "nothing was carried out")
				assert.Empty(t, w.done)
				return
			}
			// The driver carried it out through the world, once, and the
			// evaluator judged it by the entry's criteria.
			assert.Equal(t, "draft\nsigned-off\n", w.files["notes.txt"])
			assert.Len(t, w.done, 1)
			assert.Equal(t, `append "signed-off" to notes.txt`, sum.Action, "the entry describes it")
			assert.Equal(t, string(world.OutcomeCommitted), sum.Outcome)
			ev := recorded[event.Evaluation](t, led, event.EvaluationRecorded)
			assert.Equal(t, "accepted", ev.Result)
			assert.Equal(t, "check signed passes on readback", ev.Observed)

			// Its check passes now: the next look finds nothing to do.
			sum, err = d.Step(t.Context())
			require.NoError(t, err)
			assert.NotEqual(t, "EXECUTE", sum.GovernanceDecision)
			assert.Len(t, w.done, 1, "carried out once")
			require.NoError(t, d.Close())
		})
	}
}

// TestCoreNamesNoOperation: the core and the commands read operations
// through the catalog and never name one (world.Op...); only the world's
// own package and the executor may.
func TestCoreNamesNoOperation(t *testing.T) {
	dirs := []string{".", "../cognition", "../governance", "../controller", "../commitment", "../strategy", "../agenda", "../runstore",
		"../../cmd/acr"}
	files := 0
	for _, dir := range dirs {
		names, err := filepath.Glob(filepath.Join(dir, "*.go"))
		require.NoError(t, err)
		for _, name := range names {
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			fset := token.NewFileSet()
			f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
			require.NoError(t, err)
			files++
			ast.Inspect(f, func(n ast.Node) bool {
				sel, ok := n.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if x, ok := sel.X.(*ast.Ident); ok && x.Name == "world" && len(sel.Sel.Name) > 2 && strings.HasPrefix(sel.Sel.Name, "Op") &&
					sel.Sel.Name[2] >= 'A' && sel.Sel.Name[2] <= 'Z' {
					t.Errorf("%s names world.%s: read the operation's entry in the run's catalog instead", fset.Position(sel.Pos()), sel.Sel.Name)
				}
				return true
			})
		}
	}
	assert.Greater(t, files, 50, "the packages' files were read")
}
