// This file is an external test package (runstore_test) rather than package
// runstore: the scenario package imports runstore, so an in-package test could
// not import scenario to reflect on scenario.Script.
package runstore_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"math/big"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/notify"
	"github.com/acr-project/acr/internal/proposer"
	"github.com/acr-project/acr/internal/scenario"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

var (
	schemaDir    = filepath.Join("..", "..", "docs", "schemas")
	scenarioRoot = filepath.Join("..", "..", "scenarios")
)

// schemaTypes pairs every schema file with the Go type acr decodes it into.
var schemaTypes = []struct {
	file string
	typ  reflect.Type
}{
	{"goal.schema.json", reflect.TypeFor[intent.Goal]()},
	{"contract.schema.json", reflect.TypeFor[governance.Contract]()},
	{"environment.schema.json", reflect.TypeFor[world.Spec]()},
	{"scenario.schema.json", reflect.TypeFor[scenario.Script]()},
	{"wake-signal.schema.json", reflect.TypeFor[state.WakeSignal]()},
	{"proposal.schema.json", reflect.TypeFor[cognition.Proposal]()},
	{"proposal-request.schema.json", reflect.TypeFor[cognition.ProposalRequest]()},
	{"notification.schema.json", reflect.TypeFor[notify.Document]()},
}

// TestSchemasMatchGoTypes walks every schema alongside its Go type: each
// struct's properties are exactly its JSON field names, unknown properties
// are refused, and JSON types match Go kinds. It also lints the schema: only
// keywords the test validator implements, no "number" type, every $ref
// resolves, every definition is used and every property is described.
func TestSchemasMatchGoTypes(t *testing.T) {
	for _, st := range schemaTypes {
		t.Run(st.file, func(t *testing.T) {
			s := loadSchema(t, st.file)
			s.lint(t)
			w := &typeWalker{t: t, s: s, seen: map[string]bool{}}
			w.walk(s.root, st.typ, "$")
		})
	}
}

// TestShippedDocumentsMatchSchemas validates the example documents under
// scenarios/ and documents acr itself writes against the schemas.
func TestShippedDocumentsMatchSchemas(t *testing.T) {
	schemas := map[string]*schemaDoc{}
	for _, k := range []string{"goal", "contract", "environment", "scenario", "wake-signal", "notification"} {
		schemas[k] = loadSchema(t, k+".schema.json")
	}
	checked := map[string]int{}
	validate := func(kind, name string, b []byte) {
		t.Helper()
		v, err := decodeJSON(b)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			return
		}
		s := schemas[kind]
		for _, e := range s.validate(v) {
			t.Errorf("%s: %s: %s", s, name, e)
		}
		checked[kind]++
	}
	validateFile := func(kind, path string) {
		t.Helper()
		b, err := os.ReadFile(path)
		if err != nil {
			t.Errorf("%s: %v", path, err)
			return
		}
		validate(kind, path, b)
	}

	for _, k := range []string{"goal", "contract", "environment"} {
		validateFile(k, filepath.Join(scenarioRoot, "quickstart", k+".json"))
	}
	scripts, err := filepath.Glob(filepath.Join(scenarioRoot, "*", "scenario.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range scripts {
		validateFile("scenario", p)
		for _, k := range []string{"goal", "contract", "environment"} {
			if q := filepath.Join(filepath.Dir(p), k+".json"); fileExists(q) {
				validateFile(k, q)
			}
		}
	}

	// Documents acr writes itself: wake signals as `acr wake` seals them,
	// and a goal carrying the built-in lens registry.
	payload := mustValue(t, `{"batch": {"rows": [1, 2, 3], "source": "feed"}, "note": "new data"}`)
	for _, sig := range []*state.WakeSignal{
		{Schema: state.WakeSignalSchema, Source: "external_event", Ref: "dataset-v2", EventID: "evt-1", Priority: 2,
			CausalParent: "evt-0", CreatedAt: "2026-01-01T00:00:00Z", ExpiresAt: "2026-01-08T00:00:00Z", By: "tester",
			Reason: "new data", DedupKey: "evt-1", Payload: &payload},
		{Schema: state.WakeSignalSchema, Source: "manual_resume", CreatedAt: "2026-01-01T00:00:00Z",
			ExpiresAt: "2026-01-08T00:00:00Z", By: "tester", DedupKey: "manual_resume::2026-01-01T00:00:00Z"},
	} {
		id, b, err := inbox.Seal(sig)
		if err != nil {
			t.Fatal(err)
		}
		validate("wake-signal", "inbox/"+id+".json (sealed by inbox.Seal)", b)
	}
	g := quickstartGoal(t)
	g.Lenses = strategy.DefaultLenses()
	b, err := json.Marshal(g)
	if err != nil {
		t.Fatal(err)
	}
	validate("goal", "quickstart goal with strategy.DefaultLenses()", b)

	// A notification as a notify program reads it: an uncertain effect
	// with its evidence, and a fault.
	incident := state.PendingApproval{Ref: codec.MustRefOf("unc", "x"), CycleSeq: 3, Operation: "run_command", Reason: "uncertain_effect",
		Key: "idem:sha256:" + strings.Repeat("0", 64), Evidence: []world.PathEvidence{
			world.NewPathEvidence("counter.txt", codec.FingerprintOf([]byte("0")), "", codec.FingerprintOf([]byte("1"))),
			world.NewPathEvidence("gone.txt", codec.FingerprintOf([]byte("0")), "", "")}}
	for _, al := range []*kernel.Alert{
		{Key: codec.MustRefOf("ntf", "a"), Kind: kernel.AlertUncertain, RunID: "run:x", Cycle: 3, Disposition: state.WaitApproval,
			Reasons: []string{"recovery_uncertain_effect"}, Pending: []state.PendingApproval{incident}},
		{Key: codec.MustRefOf("ntf", "b"), Kind: kernel.AlertFaulted, RunID: "run:x", Cycle: 3, Disposition: state.Faulted, Cause: "proposer down"},
	} {
		doc := notify.Build(al, "dir:engine_state", "2026-01-01T00:00:00Z", func(p state.PendingApproval) string { return p.Operation },
			func(state.PendingApproval) string { return "runs  x\n" })
		b, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		validate("notification", "notification of "+al.Kind+" (notify.Build)", b)
	}

	for _, k := range []string{"goal", "contract", "environment", "scenario", "wake-signal", "notification"} {
		if checked[k] == 0 {
			t.Errorf("%s: no %s document was checked", schemas[k], k)
		}
	}
	t.Logf("documents checked: %v", checked)
}

// TestSchemasAgreeWithAcr mutates valid documents and compares acr's verdict
// (strict decoding plus Validate, or scenario.Load) with the schema's. Cases
// where the two differ are the documented limits of each side.
func TestSchemasAgreeWithAcr(t *testing.T) {
	root := filepath.Join(scenarioRoot, "quickstart")
	spec := quickstartSpec(t)

	t.Run("proposal", func(t *testing.T) {
		acr := func(b []byte) error { _, err := proposer.Decode(b); return err }
		s := loadSchema(t, "proposal.schema.json")
		base := []byte(`{"schema": "acr.proposal/v0.1", "rationale": ["r"], "actions": [
			{"operation": "apply_local_patch", "target": "main.go", "find": "a", "replace": "b", "occurrences": 1},
			{"operation": "record_artifact", "target": "NOTES.md", "content": "x"},
			{"operation": "run_command", "fix": "gofmt-w"}]}`)
		runCases(t, s, base, acr, []agreeCase{
			{"", "", true, true},
			{"schema", `"acr.proposal/v1"`, false, false},
			{"actions", `[]`, true, true},
			{"actions", del, false, false},
			{"rationale", del, true, true},
			{"confidence", `0.9`, false, false},
			{"actions/0/operation", `"delete"`, false, false},
			{"actions/0/find", del, false, false},
			{"actions/0/find", `""`, false, false},
			{"actions/0/target", del, false, false},
			{"actions/0/occurrences", `-1`, false, false},
			{"actions/0/why", `"x"`, false, false},
			{"actions/1/target", `""`, false, false},
			{"actions/1/content", del, true, true},
			{"actions/2/fix", del, false, false},
		})
	})

	t.Run("goal", func(t *testing.T) {
		acr := func(b []byte) error {
			var g intent.Goal
			if err := codec.Unmarshal(b, &g); err != nil {
				return err
			}
			return g.Validate(&spec)
		}
		lens := `{"id": "l1", "source_ref": "src:handbook", "source_version": "3", "applies_to": ["repeated_failure"]}`
		runCases(t, loadSchema(t, "goal.schema.json"), readFile(t, filepath.Join(root, "goal.json")), acr, []agreeCase{
			{"", "", true, true},
			{"schema", `"acr.goal/v0.2"`, false, false},
			{"id", `"Quickstart"`, false, false},
			{"id", del, false, false},
			{"mission", `""`, false, false},
			{"mission", del, false, false},
			{"Mission", `"x"`, false, false},
			{"bogus", `true`, false, false},
			{"success", `{}`, false, false},
			{"success", `{"all_checks_pass": false}`, false, false},
			{"success", `{"checks": []}`, false, false},
			{"success", `{"checks": ["readme-typo"]}`, true, true},
			{"success", `{"all_checks_pass": true, "bogus": 1}`, false, false},
			{"success", del, false, false},
			{"objectives", `[1]`, false, false},
			{"stop_on_success", `true`, true, true},
			{"stop_on_success", `"yes"`, false, false},
			{"expires_at", `"2026-12-31T00:00:00Z"`, true, true},
			{"expires_at", `""`, true, true},
			{"expires_at", `"next week"`, false, false},
			{"lenses", `[` + lens + `]`, true, true},
			{"lenses", `[{"id": "l1", "source_ref": "s", "source_version": "1", "applies_to": ["bogus"]}]`, false, false},
			{"lenses", `[{"id": "l1", "source_ref": "s", "source_version": "1", "applies_to": []}]`, false, false},
			{"lenses", `[{"id": "l1", "source_ref": "s", "applies_to": ["stale_knowledge"]}]`, false, false},
			{"lenses", `[{"id": "l1", "source_ref": "s", "source_version": "1", "applies_to": ["stale_knowledge"], "routing": {"critique_first": 1}}]`, false, false},
			// Beyond JSON Schema: references into the environment, and
			// relations between values.
			{"success", `{"checks": ["no-such-check"]}`, false, true},
			{"non_goals", `["docs free of typos"]`, false, true},
			{"lenses", `[` + lens + `, ` + lens + `]`, false, true},
			// Standing commitments.
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "by": "2026-12-31T00:00:00Z"}]`, true, true},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo", "debug-off"], "every": "6h", "summary": "s"}]`, true, true},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "every": "24h", "by": "2026-12-31T00:00:00+02:00", "moved_by": "release"}]`, true, true},
			{"commitments", `[]`, true, true},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"]}]`, false, false},
			{"commitments", `[{"id": "c1", "checks": [], "every": "6h"}]`, false, false},
			{"commitments", `[{"id": "c1", "every": "6h"}]`, false, false},
			{"commitments", `[{"id": "C1", "checks": ["readme-typo"], "every": "6h"}]`, false, false},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "every": "6h", "bogus": 1}]`, false, false},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "every": "daily"}]`, false, false},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "by": "friday"}]`, false, false},
			{"commitments", `{"id": "c1"}`, false, false},
			// Beyond JSON Schema: a period too short, a check the
			// environment lacks, a check or an id twice, a move without
			// a deadline.
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "every": "30s"}]`, false, true},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "every": "90.5s"}]`, false, true},
			{"commitments", `[{"id": "c1", "checks": ["no-such-check"], "every": "6h"}]`, false, true},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo", "readme-typo"], "every": "6h"}]`, false, true},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "every": "6h"}, {"id": "c1", "checks": ["debug-off"], "every": "1h"}]`, false, true},
			{"commitments", `[{"id": "c1", "checks": ["readme-typo"], "every": "6h", "moved_by": "release"}]`, false, true},
		})
	})

	t.Run("contract", func(t *testing.T) {
		acr := func(b []byte) error {
			var c governance.Contract
			if err := codec.Unmarshal(b, &c); err != nil {
				return err
			}
			return c.Validate()
		}
		s := loadSchema(t, "contract.schema.json")
		base := readFile(t, filepath.Join(root, "contract.json"))
		cases := []agreeCase{
			{"", "", true, true},
			{"proposer", `{"argv": ["./propose.sh", "--model", "x"], "timeout_seconds": 60, "mode": "always", "pass_env": ["OPENAI_API_KEY"]}`, true, true},
			{"proposer", `{"argv": ["p"], "mode": "fallback"}`, true, true},
			{"proposer", `{"argv": []}`, false, false},
			{"proposer", `{"timeout_seconds": 5}`, false, false},
			{"proposer", `{"argv": ["p"], "mode": "sometimes"}`, false, false},
			{"proposer", `{"argv": ["p"], "timeout_seconds": 3601}`, false, false},
			{"proposer", `{"argv": ["p"], "pass_env": ["NOT-A-NAME"]}`, false, false},
			{"rules/0/operation", `"run_command"`, true, true},
			{"schema", `"acr.contract/v1"`, false, false},
			{"id", `"Quick Start"`, false, false},
			{"authority", del, false, false},
			{"authority/id", `"Ops Team"`, false, false},
			{"authority/mode", `"admin"`, false, false},
			{"coordinates", del, false, false},
			{"coordinates/autonomy", del, false, false},
			{"rules", del, true, true},
			{"rules", `[]`, true, true},
			{"rules/0/operation", `"delete"`, false, false},
			{"rules/0/paths", `[]`, false, false},
			{"rules/0/paths", del, false, false},
			{"rules/0/effect", `"deny"`, false, false},
			{"rules/0/requires_evidence", `["dataset-v2"]`, true, true},
			{"budgets", del, true, true},
			{"budgets/cycles/soft", `-1`, false, false},
			{"budgets/cycles/soft", `0`, true, true},
			{"budgets/cycles", `{"soft": 0, "hard": 0}`, true, true},
			{"budgets/cycles", `{}`, true, true},
			{"budgets/cycles/hard", `1.5`, false, false},
			{"budgets/cycles/hard", `1e3`, false, false},
			{"budgets/wall_clock_seconds", `{"hard": 3600}`, true, true},
			{"budgets/tokens", `{"hard": 1}`, false, false},
			{"policy", del, true, true},
			{"policy/defer_to", `"defer"`, true, true},
			{"policy/defer_to", `""`, true, true},
			{"policy/defer_to", `"later"`, false, false},
			{"policy/repeat_limit", `-1`, false, false},
			{"policy/repeat_limit", `0`, true, true},
			{"policy/idle_sleep_seconds", `3600`, true, true},
			{"policy/idle_sleep_seconds", `"1h"`, false, false},
			{"policy/bogus", `1`, false, false},
			// Beyond JSON Schema: soft <= hard.
			{"budgets/cycles/soft", `200`, false, true},
		}
		for _, m := range []governance.AuthorityMode{governance.AuthNone, governance.AuthRead, governance.AuthPropose,
			governance.AuthProjectWrite, governance.AuthExternalAction} {
			cases = append(cases, agreeCase{"authority/mode", strconv.Quote(string(m)), true, true})
		}
		for _, op := range world.Operations() {
			cases = append(cases, agreeCase{"rules/0/operation", strconv.Quote(string(op)), true, true})
		}
		for _, e := range []governance.Effect{governance.Allow, governance.Approve, governance.Forbid} {
			cases = append(cases, agreeCase{"rules/0/effect", strconv.Quote(string(e)), true, true})
		}
		runCases(t, s, base, acr, cases)
		// Coordinates: whatever acr accepts, the schema accepts, and the
		// other way round.
		var coords []sameCase
		for _, c := range []struct{ field, prefix string }{{"readiness", "L"}, {"autonomy", "A"}, {"cognitive_depth", "D"}} {
			for _, v := range []string{"", c.prefix, strings.ToLower(c.prefix) + "1", c.prefix + "10", "X1"} {
				coords = append(coords, sameCase{"coordinates/" + c.field, strconv.Quote(v)})
			}
			for d := range 10 {
				coords = append(coords, sameCase{"coordinates/" + c.field, strconv.Quote(c.prefix + strconv.Itoa(d))})
			}
		}
		runSame(t, s, base, acr, coords)
	})

	t.Run("environment", func(t *testing.T) {
		acr := func(b []byte) error {
			var sp world.Spec
			if err := codec.Unmarshal(b, &sp); err != nil {
				return err
			}
			return sp.Validate()
		}
		s := loadSchema(t, "environment.schema.json")
		base := readFile(t, filepath.Join(root, "environment.json"))
		cases := []agreeCase{
			{"", "", true, true},
			{"schema", `"acr.environment/v0.2"`, false, false},
			{"files", del, true, true},
			{"checks", del, true, true},
			{"files", `{"ok/dir/file.txt": "x", ".gitignore": "x", "a/...": "x"}`, true, true},
			{"files", `{"../escape": "x"}`, false, false},
			{"files", `{"/etc/passwd": "x"}`, false, false},
			{"files", `{"a//b": "x"}`, false, false},
			{"files", `{"a/./b": "x"}`, false, false},
			{"files", `{"a\\b": "x"}`, false, false},
			{"files", `{".env": "x"}`, false, false},
			{"files", `{"certs/server.pem": "x"}`, false, false},
			{"files", `{"config/api-key.txt": "x"}`, false, false},
			{"files", `{"a/.git/config": "x"}`, false, false},
			{"files", `{"README.md": 1}`, false, false},
			{"checks/0/id", `"Readme"`, false, false},
			{"checks/0/id", del, false, false},
			{"checks/0/kind", `"regex"`, false, false},
			{"checks/0/kind", del, false, false},
			{"checks/0/text", `""`, false, false},
			{"checks/0/text", del, false, false},
			{"checks/0/path", `"../README.md"`, false, false},
			{"checks/0/path", `".git/config"`, false, false},
			{"checks/0/path", del, false, false},
			{"checks/0/priority", `1000`, true, true},
			{"checks/0/priority", `1001`, false, false},
			{"checks/0/priority", `-1`, false, false},
			{"checks/0/priority", `30.0`, false, false},
			{"checks/0/priority", del, true, true},
			{"checks/0/summary", del, true, true},
			{"checks/0/fixes/0/find", `""`, false, false},
			{"checks/0/fixes/0/find", del, false, false},
			{"checks/0/fixes/0/operation", `"mark_issue"`, true, true},
			{"checks/0/fixes/0/bogus", `"x"`, false, false},
			{"checks/0/requires_evidence", `["Dataset V2"]`, false, false},
			{"evidence", `[{"id": "dataset-v2", "path": "incoming/dataset-v2.csv", "summary": "x"}]`, true, true},
			{"evidence", `[{"id": "dataset-v2", "path": "../dataset-v2.csv"}]`, false, false},
			{"evidence", `[{"id": "Dataset", "path": "incoming/d.csv"}]`, false, false},
			{"evidence", `[{"id": "dataset-v2"}]`, false, false},
			{"exclude", `["private/**"]`, true, true},
			{"pass_env", `["GOPATH", "GOCACHE"]`, true, true},
			{"pass_env", `["A-B"]`, false, false},
			{"limits", `{"max_depth": 10, "max_entries": 5, "max_bytes": 1000}`, true, true},
			{"limits", `{"max_depth": -1}`, false, false},
			{"limits", `{"depth": 1}`, false, false},
			{"root", `"/srv/project"`, false, false},                                             // with files
			{"git", `{"remote": "/srv/r.git", "base": "main", "branch": "acr/x"}`, false, false}, // with files
		}
		// A git world: the same document without its files.
		var doc map[string]any
		if err := json.Unmarshal(base, &doc); err != nil {
			t.Fatal(err)
		}
		delete(doc, "files")
		doc["git"] = map[string]any{"remote": "git@host:team/service.git", "base": "main", "branch": "acr/keep-healthy"}
		gitBase, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		runCases(t, s, gitBase, acr, []agreeCase{
			{"label", `"ci"`, true, true},
			{"root", `"/srv/project"`, false, false},
			{"git/remote", `"file:///srv/r.git"`, true, true},
			{"git/remote", `""`, false, false},
			{"git/remote", `"-oProxyCommand=x"`, false, false},
			{"git/remote", `"a\nb"`, false, false},
			{"git/remote", del, false, false},
			{"git/base", `"release/1.x"`, true, true},
			{"git/base", `"-f"`, false, false},
			{"git/base", `"a b"`, false, false},
			{"git/base", `"a//b"`, false, false},
			{"git/base", del, false, false},
			{"git/branch", del, false, false},
			{"git/extra", `1`, false, false},
			// Beyond JSON Schema: what git refuses past the pattern, and
			// a branch that is the base.
			{"git/branch", `"a..b"`, false, true},
			{"git/branch", `"a.lock"`, false, true},
			{"git/branch", `"main"`, false, true},
		})
		cases = []agreeCase{
			{"checks/0", `{"id": "vet", "kind": "command", "argv": ["go", "vet", "./..."], "timeout_seconds": 120, "files": ["main.go"]}`, true, true},
			{"checks/0", `{"id": "vet", "kind": "command", "argv": ["go", "vet"], "path": "README.md", "fixes": [{"operation": "apply_local_patch", "find": "x"}]}`, true, true},
			{"checks/0", `{"id": "vet", "kind": "command"}`, false, false},
			{"checks/0", `{"id": "vet", "kind": "command", "argv": []}`, false, false},
			{"checks/0", `{"id": "vet", "kind": "command", "argv": ["go"], "text": "x"}`, false, false},
			{"checks/0", `{"id": "vet", "kind": "command", "argv": ["go"], "timeout_seconds": 3601}`, false, false},
			{"checks/0/argv", `["x"]`, false, false},
			{"checks/0/fixes/0", `{"operation": "run_command", "id": "fmt", "argv": ["gofmt", "-w", "."], "touches": ["**/*.go"], "timeout_seconds": 30, "idempotent": true}`, true, true},
			{"checks/0/fixes/0", `{"operation": "run_command", "argv": ["gofmt"]}`, false, false},
			{"checks/0/fixes/0", `{"operation": "run_command", "id": "fmt"}`, false, false},
			{"checks/0/fixes/0", `{"operation": "run_command", "id": "fmt", "argv": ["x"], "find": "y"}`, false, false},
			{"checks/0/fixes/0", `{"operation": "apply_local_patch", "find": "x", "argv": ["x"]}`, false, false},
			// Beyond JSON Schema: uniqueness, references between parts of
			// the document, the document's own exclusions, glob syntax.
			{"checks/1/id", `"readme-typo"`, false, true},
			{"checks/0/requires_evidence", `["dataset-v2"]`, false, true},
			{"exclude", `["config/**"]`, false, true},
			{"exclude", `["["]`, false, true},
			{"checks/0/fixes/0", `{"operation": "run_command", "id": "fmt", "argv": ["x"], "touches": ["../**"]}`, false, true},
		}
		runCases(t, s, base, acr, cases)
		// Every pairing of check kind and fix operation: acr and the schema
		// must agree on which remedies can fix which checks.
		var pairs []sameCase
		for _, kind := range append(world.CheckKinds(), "bogus") {
			for _, op := range append(world.Operations(), "bogus") {
				check := fmt.Sprintf(`{"id": "c", "kind": %q, "path": "README.md", "text": "x", "fixes": [{"operation": %q, "find": "x"}]}`, kind, op)
				pairs = append(pairs, sameCase{"checks/0", check})
			}
		}
		runSame(t, s, base, acr, pairs)
	})

	t.Run("scenario", func(t *testing.T) {
		dir := t.TempDir()
		for _, k := range []string{"goal", "contract", "environment"} {
			if err := os.WriteFile(filepath.Join(dir, k+".json"), readFile(t, filepath.Join(root, k+".json")), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		acr := func(b []byte) error {
			if err := os.WriteFile(filepath.Join(dir, "scenario.json"), b, 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := scenario.Load(dir)
			return err
		}
		base := []byte(`{"schema": "acr.scenario/v0.1", "name": "t", "title": "T", "description": "", "start": "2026-01-01T00:00:00Z",
			"steps": [{"run": 1}], "expect": {}}`)
		know := `{"schema": "acr.knowledge-update-candidate/v0.1", "source_ref": "src:h", "prior_version_ref": "1", "observed_version_ref": "2", "evidence_refs": []}`
		runCases(t, loadSchema(t, "scenario.schema.json"), base, acr, []agreeCase{
			{"", "", true, true},
			{"schema", `"acr.scenario/v0.2"`, false, false},
			{"name", `""`, false, false},
			{"start", `"yesterday"`, false, false},
			{"start", `"2026-01-01T00:00:00+01:00"`, true, true},
			{"start", del, false, false},
			{"steps", `[]`, false, false},
			{"steps", del, false, false},
			{"expect", del, true, true},
			{"gates", `["A", "B"]`, true, true},
			{"bogus", `1`, false, false},
			{"steps/0", `{}`, false, false},
			{"steps/0", `{"note": "only a note"}`, false, false},
			{"steps/0", `{"run": 0}`, false, false},
			{"steps/0", `{"run": 1.5}`, false, false},
			{"steps/0", `{"run": 1, "advance": "1h"}`, false, false},
			{"steps/0", `{"run": 0, "advance": "1h"}`, true, true},
			{"steps/0", `{"advance": "1h30m"}`, true, true},
			{"steps/0", `{"advance": "90 minutes"}`, false, false},
			{"steps/0", `{"recover": true}`, true, true},
			{"steps/0", `{"recover": false}`, false, false},
			{"steps/0", `{"recover": false, "run": 2}`, true, true},
			{"steps/0", `{"approve": "first"}`, true, true},
			{"steps/0", `{"approve": "amendment:environment"}`, true, true},
			{"steps/0", `{"amend": {"environment": "environment-2.json"}}`, true, true},
			{"steps/0", `{"amend": {"goal": "g.json", "contract": "c.json"}}`, false, false},
			{"steps/0", `{"amend": {}}`, false, false},
			{"steps/0", `{"amend": {"environment": "../x/environment.json"}}`, false, false},
			{"steps/0", `{"amend": {"environment": ".."}}`, false, false},
			{"steps/0", `{"amend": {"env": "e.json"}}`, false, false},
			{"steps/0", `{"deny": ""}`, false, false},
			{"steps/0", `{"stop": {"reason": "maintenance", "kill": true}}`, true, true},
			{"steps/0", `{"crash": {"failpoint": "after-decision", "nth": 2}}`, true, true},
			{"steps/0", `{"crash": {"failpoint": "nowhere"}}`, false, false},
			{"steps/0", `{"crash": {}}`, false, false},
			{"steps/0", `{"provider_failures": 2}`, true, true},
			{"steps/0", `{"provider_garbage": 0}`, false, false},
			{"steps/0", `{"repeat": {"times": 2, "steps": [{"run": 1}]}}`, true, true},
			{"steps/0", `{"repeat": {"times": 0, "steps": [{"run": 1}]}}`, false, false},
			{"steps/0", `{"repeat": {"times": 2, "steps": [{"run": 1, "recover": true}]}}`, false, false},
			{"steps/0", `{"repeat": {"times": 2, "steps": [{"repeat": {"times": 2, "steps": [{"run": 1, "bogus": 1}]}}]}}`, false, false},
			{"steps/0", `{"wake": {"source": "external_event", "ref": "x", "dedup_key": "k", "expires_in": "1h", "payload": {"n": [1, {"a": null}]}}}`, true, true},
			{"steps/0", `{"wake": {"source": "external_event", "payload": {"n": 1.5}}}`, false, false},
			{"steps/0", `{"wake": {"source": "external_event", "bogus": 1}}`, false, false},
			{"steps/0", `{"knowledge": ` + know + `}`, true, true},
			{"steps/0", `{"world": {"write": "README.md", "content": "x"}}`, true, true},
			{"steps/0", `{"world": {"remove": "README.md"}}`, true, true},
			{"steps/0", `{"run": 1, "expect": {"disposition": "SLEEP", "status": "RUNNING", "cycle_seq": 1, "dispositions": ["IDLE"],
				"world_contains": {"README.md": "x"}, "world_count": [{"path": "README.md", "text": "x", "count": 1}],
				"recovery": {"classification": "clean", "actions_reused": 0}, "events": {"x.y": 1}, "provider_error": false}}`, true, true},
			{"steps/0", `{"run": 1, "expect": {"bogus": 1}}`, false, false},
			{"steps/0", `{"run": 1, "expect": {"executed": "1"}}`, false, false},
			{"expect", `{"cycles": 3, "final_disposition": "IDLE", "dispositions": {"IDLE": 2, "CONTINUE": 1}, "fingerprints": {}}`, true, true},
			{"expect", `{"fingerprints": {"bogus": ""}}`, false, false},
			// scenario.Load checks wake sources, expiries and world paths.
			{"steps/0", `{"wake": {"source": "made_up"}}`, false, false},
			{"steps/0", `{"wake": {"source": "external_event", "expires_in": "soon"}}`, false, false},
			{"steps/0", `{"world": {}}`, false, false},
			{"steps/0", `{"world": {"write": "../outside.txt", "content": "x"}}`, false, false},
			// A scenario may script an authority claim: the cycle rejects
			// it, so both the loader and the schema let it through.
			{"steps/0", `{"wake": {"source": "external_event", "payload": {"x": {"Authority": "admin"}}}}`, true, true},
			// The schema is stricter than scenario.Load where the run itself
			// refuses the value later: a bad knowledge update is a provider
			// failure; and an expectation that no run can meet.
			{"steps/0", `{"knowledge": {"schema": "x", "source_ref": "s", "observed_version_ref": "2"}}`, true, false},
			{"steps/0", `{"run": 1, "expect": {"disposition": "SLEEPING"}}`, true, false},
			{"steps/0", `{"run": 1, "expect": {"cycle_seq": -1}}`, true, false},
			{"expect", `{"fingerprints": {"history": "abc"}}`, true, false},
		})
	})

	t.Run("wake-signal", func(t *testing.T) {
		s := loadSchema(t, "wake-signal.schema.json")
		// acr's verdict on a wake signal: the inbox decodes it strictly and
		// checks its id, and the cycle that consumes it rejects an unknown
		// source or a payload that carries authority.
		acr := func(id string, b []byte) error {
			it, err := inbox.Decode(id, b)
			if err != nil {
				return err
			}
			if !inbox.ValidSource(it.Wake.Source) {
				return fmt.Errorf("unknown source %q", it.Wake.Source)
			}
			return inbox.CheckPayload(it.Wake.Payload)
		}
		sealed := func(mod func(*state.WakeSignal)) (string, []byte) {
			sig := &state.WakeSignal{Schema: state.WakeSignalSchema, Source: "external_event", Ref: "r", DedupKey: "k",
				CreatedAt: "2026-01-01T00:00:00Z", ExpiresAt: "2026-01-08T00:00:00Z", By: "tester"}
			mod(sig)
			id, b, err := inbox.Seal(sig)
			if err != nil {
				t.Fatal(err)
			}
			return id, b
		}
		withPayload := func(js string) func(*state.WakeSignal) {
			return func(sig *state.WakeSignal) { v := mustValue(t, js); sig.Payload = &v }
		}
		for _, c := range []struct {
			name          string
			mod           func(*state.WakeSignal)
			raw           func([]byte) []byte // applied after sealing
			acr, schemaOK bool
		}{
			{"valid", func(*state.WakeSignal) {}, nil, true, true},
			{"payload", withPayload(`{"rows": [1, 2], "meta": {"from": "feed", "ok": true, "none": null}}`), nil, true, true},
			{"unknown source", func(s *state.WakeSignal) { s.Source = "made_up" }, nil, false, false},
			{"authority in payload", withPayload(`{"data": {"Grants": [1]}}`), nil, false, false},
			{"policy in an array", withPayload(`[{"POLICY": 1}]`), nil, false, false},
			{"unknown field", func(*state.WakeSignal) {}, func(b []byte) []byte {
				return bytes.Replace(b, []byte(`{`), []byte(`{"aaa":1,`), 1)
			}, false, false},
			{"float priority", func(*state.WakeSignal) {}, func(b []byte) []byte {
				return bytes.Replace(b, []byte(`"priority":0`), []byte(`"priority":0.5`), 1)
			}, false, false},
			// acr never checks a wake signal's schema field.
			{"wrong schema", func(s *state.WakeSignal) { s.Schema = "acr.wake-signal/v9" }, nil, true, false},
		} {
			id, b := sealed(c.mod)
			if c.raw != nil {
				b = c.raw(b)
			}
			err := acr(id, b)
			if (err == nil) != c.acr {
				t.Errorf("case %s: acr accepts=%v, want %v (%v)", c.name, err == nil, c.acr, err)
			}
			v, derr := decodeJSON(b)
			if derr != nil {
				t.Fatalf("case %s: %v", c.name, derr)
			}
			if errs := s.validate(v); (len(errs) == 0) != c.schemaOK {
				t.Errorf("%s: case %s: schema accepts=%v, want %v %v", s, c.name, len(errs) == 0, c.schemaOK, errs)
			}
		}
	})
}

// TestSchemaVocabularyMatchesGo checks the schemas' patterns and enums
// against the Go functions and constants they stand for.
func TestSchemaVocabularyMatchesGo(t *testing.T) {
	env := loadSchema(t, "environment.schema.json")
	sc := loadSchema(t, "scenario.schema.json")
	wake := loadSchema(t, "wake-signal.schema.json")
	goal := loadSchema(t, "goal.schema.json")
	contract := loadSchema(t, "contract.schema.json")

	t.Run("id", func(t *testing.T) {
		for _, s := range []*schemaDoc{env, goal, contract} {
			agreeOnStrings(t, s, "#/$defs/id", world.ValidID, []string{"a", "0", "a-b.c_d", "readme-typo", strings.Repeat("a", 64),
				strings.Repeat("a", 65), "", "A", "-a", ".a", "_a", "a b", "é", "a\n", "a/b"})
		}
	})
	t.Run("path", func(t *testing.T) {
		samples := []string{"a", "a/b", "README.md", "dir/.hidden", ".a", "..a", "...", "a/.../b", "a b/c", "ünï/côdé",
			"", "/a", "a/", "a//b", "./a", "a/./b", "a/../b", "..", ".", "a\\b", "a\x00b", "../x"}
		clean := func(p string) bool { _, err := world.CleanPath(p); return err == nil }
		agreeOnStrings(t, env, "#/$defs/world_path", clean, samples)
		agreeOnStrings(t, sc, "#/$defs/world_path", clean, samples)
		var none world.Spec
		managed := func(p string) bool { return clean(p) && !none.Excluded(p) }
		agreeOnStrings(t, env, "#/$defs/managed_path", managed, append(samples, ".git", ".git/config", "a/.git", "a/.git/b",
			".gitignore", "a.git", ".env", "a/.env", ".env.local", ".env/x", "x.pem", "a/x.pem", "a/x.pem/b", "pem",
			"key", "keys/a.txt", "a/monkey.txt", "a/key", "Key.txt", "secret", "a/secrets.yaml", "secret/a", "top-secret.md", "SECRET"))
	})
	t.Run("time", func(t *testing.T) {
		valid := func(s string) bool { _, err := state.ParseTime(s); return err == nil }
		samples := []string{"2026-01-01T00:00:00Z", "2026-01-01T00:00:00+02:00", "2026-01-01T00:00:00-05:30",
			"2026-01-01T00:00:00.5Z", "2026-01-01T00:00:00.123456789Z", "", "tomorrow", "2026-01-01", "2026-01-01 00:00:00Z",
			"2026-01-01T00:00:00", "2026-1-1T00:00:00Z", "2026-01-01T00:00Z", "2026-01-01T00:00:00+0200", "2026-01-01T00:00:00 Z"}
		agreeOnStrings(t, sc, "#/properties/start", valid, samples)
		agreeOnStrings(t, wake, "#/properties/created_at", valid, samples)
		// The pattern checks the shape of a time, not the calendar.
		for _, s := range []string{"2026-13-01T00:00:00Z", "2026-02-30T00:00:00Z", "2026-01-01T25:00:00Z"} {
			if valid(s) || !matches(t, sc, "#/properties/start", s) {
				t.Errorf("%s: %q: expected a well-shaped time that acr refuses", sc, s)
			}
		}
		// In a goal, empty means "never".
		agreeOnStrings(t, goal, "#/properties/expires_at", func(s string) bool { return s == "" || valid(s) }, samples)
	})
	t.Run("duration", func(t *testing.T) {
		valid := func(s string) bool { _, err := time.ParseDuration(s); return s == "" || err == nil }
		agreeOnStrings(t, sc, "#/$defs/duration", valid, []string{"", "0", "-0", "+0", "1h", "1h30m", "90s", "1.5h", ".5h", "1.h",
			"-1h", "+5m", "10ns", "1us", "1µs", "1μs", "2ms", "1h0m0s", "1", "00", "h", "1d", "1 h", "1h 30m", "1e3s", ".h", "-", "1H"})
	})
	t.Run("payload", func(t *testing.T) {
		keys := forbiddenPayloadKeys(t)
		if len(keys) == 0 {
			t.Fatal("found no forbidden payload keys in internal/inbox/inbox.go")
		}
		var samples []string
		for _, k := range keys {
			samples = append(samples, k, strings.ToUpper(k), strings.ToUpper(k[:1])+k[1:])
		}
		samples = append(samples, "event", "data", "authorityx", "x_policy", "grant_", "note", "")
		accepted := func(k string) bool {
			return inbox.CheckPayload(&codec.Value{Kind: codec.KindObject, Obj: []codec.Member{{Key: k, Val: codec.Value{Kind: codec.KindNull}}}}) == nil
		}
		name := func(s *schemaDoc, k string) bool {
			return len(s.check(s.at("#/$defs/payload"), map[string]any{k: nil}, "$")) == 0
		}
		for _, k := range samples {
			if name(wake, k) != accepted(k) {
				t.Errorf("%s: payload key %q: schema accepts=%v, inbox.CheckPayload accepts=%v", wake, k, name(wake, k), accepted(k))
			}
			// A scenario may script what acr wake refuses, to check the run
			// rejects it too.
			if !name(sc, k) {
				t.Errorf("%s: payload key %q refused; a scenario may script any key", sc, k)
			}
		}
	})
	t.Run("enums", func(t *testing.T) {
		var dispositions []string
		for _, d := range state.Dispositions() {
			dispositions = append(dispositions, d.String())
		}
		var ops []string
		for _, op := range world.Operations() {
			ops = append(ops, string(op))
		}
		for _, c := range []struct {
			s    *schemaDoc
			ptr  string
			want []string
		}{
			{wake, "#/properties/source", state.WakeSources()},
			{sc, "#/$defs/wake/properties/source", state.WakeSources()},
			{sc, "#/$defs/crash/properties/failpoint", scenario.Failpoints()},
			{sc, "#/$defs/disposition", dispositions},
			{sc, "#/$defs/step_expect/properties/status", []string{string(state.RunRunning), string(state.RunStopped), string(state.RunFaulted)}},
			{sc, "#/$defs/knowledge_update/properties/schema", []string{strategy.KnowledgeSchema}},
			{contract, "#/$defs/rule/properties/operation", append([]string{"*"}, ops...)},
			{contract, "#/$defs/rule/properties/effect", []string{string(governance.Allow), string(governance.Approve), string(governance.Forbid)}},
			{contract, "#/$defs/authority/properties/mode", []string{string(governance.AuthNone), string(governance.AuthRead),
				string(governance.AuthPropose), string(governance.AuthProjectWrite), string(governance.AuthExternalAction)}},
			{env, "#/$defs/check/properties/kind", strs(world.CheckKinds())},
			{goal, "#/$defs/tension_class", []string{string(strategy.RepeatedFailure), string(strategy.ConflictingCommitments), string(strategy.StaleKnowledge)}},
			{goal, "#/properties/schema", []string{intent.Schema}},
			{contract, "#/properties/schema", []string{governance.ContractSchema}},
			{env, "#/properties/schema", []string{world.SpecSchema}},
			{sc, "#/properties/schema", []string{scenario.Schema}},
			{wake, "#/properties/schema", []string{state.WakeSignalSchema}},
		} {
			node := c.s.at(c.ptr)
			var got []string
			vals, _ := node["enum"].([]any)
			if cv, ok := node["const"]; ok {
				vals = append(vals, cv)
			}
			for _, v := range vals {
				got = append(got, fmt.Sprint(v))
			}
			if !slices.Equal(sorted(got), sorted(c.want)) {
				t.Errorf("%s: %s: enum %q, Go has %q", c.s, c.ptr, got, c.want)
			}
		}
	})
}

// ---------------------------------------------------------------------------
// Loading schemas and documents.

// schemaDoc is one JSON Schema file, decoded with numbers kept as
// json.Number so that integer literals compare exactly.
type schemaDoc struct {
	file string
	root map[string]any
}

func (s *schemaDoc) String() string { return "docs/schemas/" + s.file }

func loadSchema(t *testing.T, file string) *schemaDoc {
	t.Helper()
	b := readFile(t, filepath.Join(schemaDir, file))
	v, err := decodeJSON(b)
	if err != nil {
		t.Fatalf("docs/schemas/%s: %v", file, err)
	}
	m, ok := v.(map[string]any)
	if !ok {
		t.Fatalf("docs/schemas/%s: not a JSON object", file)
	}
	return &schemaDoc{file: file, root: m}
}

// decodeJSON decodes exactly one JSON value, keeping numbers as literals.
func decodeJSON(b []byte) (any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("trailing data after the JSON value")
	}
	return v, nil
}

// resolve follows a local "#/$defs/name" reference.
func (s *schemaDoc) resolve(ref string) (map[string]any, error) {
	name, ok := strings.CutPrefix(ref, "#/$defs/")
	if !ok {
		return nil, fmt.Errorf("$ref %q: only local #/$defs/ references are supported", ref)
	}
	defs, _ := s.root["$defs"].(map[string]any)
	d, ok := defs[name].(map[string]any)
	if !ok {
		return nil, fmt.Errorf("$ref %q: no such definition", ref)
	}
	return d, nil
}

// at returns the schema object at a JSON pointer such as
// "#/$defs/check/properties/kind"; it panics on a wrong pointer, which is a
// bug in the test.
func (s *schemaDoc) at(ptr string) map[string]any {
	var cur any = s.root
	for _, part := range strings.Split(strings.TrimPrefix(ptr, "#/"), "/") {
		m, ok := cur.(map[string]any)
		if !ok {
			panic(fmt.Sprintf("%s: no schema at %s", s, ptr))
		}
		cur = m[part]
	}
	m, ok := cur.(map[string]any)
	if !ok {
		panic(fmt.Sprintf("%s: no schema at %s", s, ptr))
	}
	return m
}

// ---------------------------------------------------------------------------
// Walking a schema alongside its Go type.

type typeWalker struct {
	t    *testing.T
	s    *schemaDoc
	seen map[string]bool
}

var jsonUnmarshaler = reflect.TypeFor[json.Unmarshaler]()

func (w *typeWalker) walk(node map[string]any, typ reflect.Type, at string) {
	t := w.t
	t.Helper()
	if ref, ok := node["$ref"].(string); ok {
		for k := range node {
			if k != "$ref" && k != "description" {
				t.Errorf("%s: %s: a $ref node may only add a description, found %q", w.s, at, k)
			}
		}
		d, err := w.s.resolve(ref)
		if err != nil {
			t.Errorf("%s: %s: %v", w.s, at, err)
			return
		}
		key := ref + " " + typ.String()
		if w.seen[key] {
			return // a recursive definition already checked against this type
		}
		w.seen[key] = true
		node = d
	}
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	if reflect.PointerTo(typ).Implements(jsonUnmarshaler) {
		return // decodes itself (codec.Value: any JSON value)
	}
	want := map[reflect.Kind]string{
		reflect.String: "string", reflect.Bool: "boolean", reflect.Slice: "array", reflect.Array: "array",
		reflect.Struct: "object", reflect.Map: "object",
		reflect.Int: "integer", reflect.Int8: "integer", reflect.Int16: "integer", reflect.Int32: "integer", reflect.Int64: "integer",
		reflect.Uint: "integer", reflect.Uint8: "integer", reflect.Uint16: "integer", reflect.Uint32: "integer", reflect.Uint64: "integer",
	}[typ.Kind()]
	if want == "" {
		t.Errorf("%s: %s: Go type %s has no JSON Schema counterpart here", w.s, at, typ)
		return
	}
	if got, _ := node["type"].(string); got != want {
		t.Errorf("%s: %s: Go type %s wants \"type\": %q, schema has %v", w.s, at, typ, want, node["type"])
		return
	}
	switch typ.Kind() {
	case reflect.Struct:
		if ap, ok := node["additionalProperties"].(bool); !ok || ap {
			t.Errorf("%s: %s: object for %s must set \"additionalProperties\": false", w.s, at, typ)
		}
		props, _ := node["properties"].(map[string]any)
		fields := codec.StructFields(typ)
		for _, name := range sortedKeys(fields) {
			if _, ok := props[name]; !ok {
				t.Errorf("%s: %s: Go field %q of %s is missing from the schema's properties", w.s, at, name, typ)
			}
		}
		for _, name := range sortedKeys(props) {
			ft, ok := fields[name]
			if !ok {
				t.Errorf("%s: %s.%s: schema property is not a JSON field of %s", w.s, at, name, typ)
				continue
			}
			pn, ok := props[name].(map[string]any)
			if !ok {
				t.Errorf("%s: %s.%s: property schema must be an object", w.s, at, name)
				continue
			}
			w.walk(pn, ft, at+"."+name)
		}
	case reflect.Map:
		if typ.Key().Kind() != reflect.String {
			t.Errorf("%s: %s: map key type %s is not a string", w.s, at, typ.Key())
		}
		ap, ok := node["additionalProperties"].(map[string]any)
		if !ok {
			t.Errorf("%s: %s: map %s needs an \"additionalProperties\" schema for its values", w.s, at, typ)
			return
		}
		w.walk(ap, typ.Elem(), at+"{}")
	case reflect.Slice, reflect.Array:
		items, ok := node["items"].(map[string]any)
		if !ok {
			t.Errorf("%s: %s: array %s needs an \"items\" schema", w.s, at, typ)
			return
		}
		w.walk(items, typ.Elem(), at+"[]")
	}
}

// ---------------------------------------------------------------------------
// Linting a schema.

// keywords this file's validator implements; annotations are accepted and
// ignored. Any other keyword would be silently skipped, so it is an error.
var knownKeywords = map[string]bool{
	"$schema": true, "$id": true, "$ref": true, "$defs": true, "title": true, "description": true, "format": true,
	"type": true, "const": true, "enum": true, "pattern": true, "minLength": true, "minimum": true, "maximum": true,
	"minItems": true, "required": true, "properties": true, "additionalProperties": true, "propertyNames": true,
	"items": true, "allOf": true, "anyOf": true, "oneOf": true, "not": true, "if": true, "then": true, "else": true,
}

func (s *schemaDoc) lint(t *testing.T) {
	t.Helper()
	root := s.root
	if root["$schema"] != "https://json-schema.org/draft/2020-12/schema" {
		t.Errorf("%s: $schema must be the draft 2020-12 meta-schema, found %v", s, root["$schema"])
	}
	if want := "https://acr.dev/schemas/" + s.file; root["$id"] != want {
		t.Errorf("%s: $id must be %q, found %v", s, want, root["$id"])
	}
	for _, k := range []string{"title", "description"} {
		if v, _ := root[k].(string); v == "" {
			t.Errorf("%s: needs a %s", s, k)
		}
	}
	used := map[string]bool{}
	var walk func(node any, ptr string)
	walk = func(node any, ptr string) {
		m, ok := node.(map[string]any)
		if !ok {
			if _, isBool := node.(bool); !isBool {
				t.Errorf("%s: %s: a schema must be an object or a boolean", s, ptr)
			}
			return
		}
		for _, k := range sortedKeys(m) {
			if !knownKeywords[k] {
				t.Errorf("%s: %s: keyword %q is not implemented by this test's validator", s, ptr, k)
			}
		}
		for _, ty := range typeList(m["type"]) {
			if ty == "number" {
				t.Errorf("%s: %s: \"type\": \"number\" admits fractions, which acr rejects; use \"integer\"", s, ptr)
			}
		}
		if p, ok := m["pattern"].(string); ok {
			if _, err := regexp.Compile(p); err != nil {
				t.Errorf("%s: %s: pattern: %v", s, ptr, err)
			}
		}
		if r, ok := m["$ref"].(string); ok {
			if _, err := s.resolve(r); err != nil {
				t.Errorf("%s: %s: %v", s, ptr, err)
			}
			used[strings.TrimPrefix(r, "#/$defs/")] = true
		}
		if props, ok := m["properties"].(map[string]any); ok && m["type"] == "object" {
			if ap, ok := m["additionalProperties"].(bool); !ok || ap {
				t.Errorf("%s: %s: an object with properties must set \"additionalProperties\": false", s, ptr)
			}
			for _, name := range sortedKeys(props) {
				if d, _ := props[name].(map[string]any)["description"].(string); d == "" {
					t.Errorf("%s: %s/properties/%s: needs a description", s, ptr, name)
				}
			}
			for _, name := range stringList(m["required"]) {
				if _, ok := props[name]; !ok {
					t.Errorf("%s: %s: required %q is not a property", s, ptr, name)
				}
			}
			for _, name := range conditionalNames(m) {
				if _, ok := props[name]; !ok {
					t.Errorf("%s: %s: a subschema names %q, which is not a property", s, ptr, name)
				}
			}
		}
		for _, k := range []string{"additionalProperties", "items", "propertyNames", "not", "if", "then", "else"} {
			if sub, ok := m[k]; ok {
				walk(sub, ptr+"/"+k)
			}
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			subs, _ := m[k].([]any)
			for i, sub := range subs {
				walk(sub, fmt.Sprintf("%s/%s/%d", ptr, k, i))
			}
		}
		for _, k := range []string{"properties", "$defs"} {
			subs, _ := m[k].(map[string]any)
			for _, name := range sortedKeys(subs) {
				walk(subs[name], ptr+"/"+k+"/"+name)
			}
		}
	}
	walk(root, "#")
	defs, _ := root["$defs"].(map[string]any)
	for _, name := range sortedKeys(defs) {
		if !used[name] {
			t.Errorf("%s: #/$defs/%s is never referenced", s, name)
		}
		if d, _ := defs[name].(map[string]any)["description"].(string); d == "" {
			t.Errorf("%s: #/$defs/%s: needs a description", s, name)
		}
	}
}

// conditionalNames lists the property names that a schema's applicator
// subschemas (allOf, anyOf, oneOf, if/then/else) mention.
func conditionalNames(m map[string]any) []string {
	var out []string
	var visit func(sub any)
	visit = func(sub any) {
		sm, ok := sub.(map[string]any)
		if !ok {
			return
		}
		props, _ := sm["properties"].(map[string]any)
		out = append(out, sortedKeys(props)...)
		out = append(out, stringList(sm["required"])...)
		for _, k := range []string{"if", "then", "else", "not"} {
			visit(sm[k])
		}
		for _, k := range []string{"allOf", "anyOf", "oneOf"} {
			subs, _ := sm[k].([]any)
			for _, x := range subs {
				visit(x)
			}
		}
	}
	for _, k := range []string{"if", "then", "else", "not"} {
		visit(m[k])
	}
	for _, k := range []string{"allOf", "anyOf", "oneOf"} {
		subs, _ := m[k].([]any)
		for _, x := range subs {
			visit(x)
		}
	}
	return out
}

// ---------------------------------------------------------------------------
// A small validator for the JSON Schema keywords listed in knownKeywords.

// validate checks a whole document and returns one message per problem,
// each starting with the JSON path of the value at fault.
func (s *schemaDoc) validate(doc any) []string { return s.check(s.root, doc, "$") }

func (s *schemaDoc) check(schema any, v any, at string) []string {
	m, ok := schema.(map[string]any)
	if !ok {
		if b, isBool := schema.(bool); isBool && b {
			return nil
		}
		return []string{at + ": not allowed here"}
	}
	var errs []string
	fail := func(format string, args ...any) { errs = append(errs, at+": "+fmt.Sprintf(format, args...)) }

	if ref, ok := m["$ref"].(string); ok {
		d, err := s.resolve(ref)
		if err != nil {
			fail("%v", err)
		} else {
			errs = append(errs, s.check(d, v, at)...)
		}
	}
	if ty, ok := m["type"]; ok && !slices.Contains(typeList(ty), jsonKind(v)) &&
		!(jsonKind(v) == "integer" && slices.Contains(typeList(ty), "number")) {
		fail("want %s, found %s", strings.Join(typeList(ty), " or "), jsonKind(v))
		return errs
	}
	if c, ok := m["const"]; ok && !reflect.DeepEqual(c, v) {
		fail("must be %s, found %s", show(c), show(v))
	}
	if e, ok := m["enum"].([]any); ok && !slices.ContainsFunc(e, func(x any) bool { return reflect.DeepEqual(x, v) }) {
		fail("%s is not one of %s", show(v), show(e))
	}
	switch v := v.(type) {
	case string:
		if p, ok := m["pattern"].(string); ok && !regexp.MustCompile(p).MatchString(v) {
			fail("%q does not match the pattern %s", v, p)
		}
		if n, ok := m["minLength"].(json.Number); ok && big.NewRat(int64(utf8.RuneCountInString(v)), 1).Cmp(rat(n)) < 0 {
			fail("%q is shorter than %s characters", v, n)
		}
	case json.Number:
		if n, ok := m["minimum"].(json.Number); ok && rat(v).Cmp(rat(n)) < 0 {
			fail("%s is less than the minimum %s", v, n)
		}
		if n, ok := m["maximum"].(json.Number); ok && rat(v).Cmp(rat(n)) > 0 {
			fail("%s is more than the maximum %s", v, n)
		}
	case []any:
		if n, ok := m["minItems"].(json.Number); ok && big.NewRat(int64(len(v)), 1).Cmp(rat(n)) < 0 {
			fail("%d items, want at least %s", len(v), n)
		}
		if items, ok := m["items"]; ok {
			for i, e := range v {
				errs = append(errs, s.check(items, e, fmt.Sprintf("%s[%d]", at, i))...)
			}
		}
	case map[string]any:
		for _, name := range stringList(m["required"]) {
			if _, ok := v[name]; !ok {
				fail("required property %q is missing", name)
			}
		}
		props, _ := m["properties"].(map[string]any)
		for _, k := range sortedKeys(v) {
			kat := at + member(k)
			if ps, ok := props[k]; ok {
				errs = append(errs, s.check(ps, v[k], kat)...)
				continue
			}
			if ap, ok := m["additionalProperties"]; ok {
				if b, isBool := ap.(bool); isBool && !b {
					errs = append(errs, kat+": unknown property")
				} else {
					errs = append(errs, s.check(ap, v[k], kat)...)
				}
			}
		}
		if pn, ok := m["propertyNames"]; ok {
			for _, k := range sortedKeys(v) {
				for _, e := range s.check(pn, k, at+member(k)) {
					errs = append(errs, e+" (property name)")
				}
			}
		}
	}
	if subs, ok := m["allOf"].([]any); ok {
		for _, sub := range subs {
			errs = append(errs, s.check(sub, v, at)...)
		}
	}
	if subs, ok := m["anyOf"].([]any); ok {
		var why []string
		for _, sub := range subs {
			e := s.check(sub, v, at)
			if len(e) == 0 {
				why = nil
				break
			}
			why = append(why, strings.Join(e, "; "))
		}
		if why != nil {
			fail("matches none of the alternatives (%s)", strings.Join(why, " | "))
		}
	}
	if subs, ok := m["oneOf"].([]any); ok {
		n := 0
		for _, sub := range subs {
			if len(s.check(sub, v, at)) == 0 {
				n++
			}
		}
		if n != 1 {
			fail("matches %d of the oneOf alternatives, want exactly one", n)
		}
	}
	if not, ok := m["not"]; ok && len(s.check(not, v, at)) == 0 {
		fail("%s matches a form that is not allowed (%s)", show(v), show(not))
	}
	if cond, ok := m["if"]; ok {
		if len(s.check(cond, v, at)) == 0 {
			if then, ok := m["then"]; ok {
				errs = append(errs, s.check(then, v, at)...)
			}
		} else if els, ok := m["else"]; ok {
			errs = append(errs, s.check(els, v, at)...)
		}
	}
	return errs
}

// jsonKind names a decoded value's JSON type, telling integers apart.
func jsonKind(v any) string {
	switch v := v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case string:
		return "string"
	case json.Number:
		if strings.ContainsAny(string(v), ".eE") {
			return "number"
		}
		return "integer"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func typeList(ty any) []string {
	if s, ok := ty.(string); ok {
		return []string{s}
	}
	return stringList(ty)
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, x := range list {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

func rat(n json.Number) *big.Rat {
	r, ok := new(big.Rat).SetString(string(n))
	if !ok {
		panic("bad number " + string(n))
	}
	return r
}

var identifier = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func member(k string) string {
	if identifier.MatchString(k) {
		return "." + k
	}
	return "[" + strconv.Quote(k) + "]"
}

func show(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ---------------------------------------------------------------------------
// Agreement cases.

// del as a case value removes the member instead of setting it.
const del = "\x00delete"

// agreeCase sets path (slash-separated keys and array indexes; "" for the
// document itself) to val (JSON text) in a valid document; acr and schema
// say whether each side must accept the result.
type agreeCase struct {
	path, val   string
	acr, schema bool
}

// sameCase is a mutation on which acr and the schema only have to agree.
type sameCase struct{ path, val string }

func runCases(t *testing.T, s *schemaDoc, base []byte, acr func([]byte) error, cases []agreeCase) {
	t.Helper()
	for _, c := range cases {
		name, schemaErrs, acrErr := verdicts(t, s, base, acr, c.path, c.val)
		if (acrErr == nil) != c.acr {
			t.Errorf("%s: %s: acr accepts=%v, want %v (%v)", s, name, acrErr == nil, c.acr, acrErr)
		}
		if (len(schemaErrs) == 0) != c.schema {
			t.Errorf("%s: %s: schema accepts=%v, want %v %v", s, name, len(schemaErrs) == 0, c.schema, schemaErrs)
		}
	}
}

func runSame(t *testing.T, s *schemaDoc, base []byte, acr func([]byte) error, cases []sameCase) {
	t.Helper()
	for _, c := range cases {
		name, schemaErrs, acrErr := verdicts(t, s, base, acr, c.path, c.val)
		if (acrErr == nil) != (len(schemaErrs) == 0) {
			t.Errorf("%s: %s: acr accepts=%v (%v) but schema accepts=%v %v", s, name, acrErr == nil, acrErr, len(schemaErrs) == 0, schemaErrs)
		}
	}
}

// verdicts applies one mutation to base and returns acr's and the schema's
// verdicts on the result.
func verdicts(t *testing.T, s *schemaDoc, base []byte, acr func([]byte) error, path, val string) (name string, schemaErrs []string, acrErr error) {
	t.Helper()
	doc, err := decodeJSON(base)
	if err != nil {
		t.Fatal(err)
	}
	if path != "" {
		doc = setPath(t, doc, strings.Split(path, "/"), val)
	}
	b, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	v, err := decodeJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	name = path + " = " + val
	switch {
	case path == "":
		name = "unchanged"
	case val == del:
		name = "delete " + path
	}
	return name, s.validate(v), acr(b)
}

func setPath(t *testing.T, doc any, path []string, val string) any {
	t.Helper()
	key := path[0]
	switch d := doc.(type) {
	case map[string]any:
		if len(path) > 1 {
			d[key] = setPath(t, d[key], path[1:], val)
		} else if val == del {
			delete(d, key)
		} else {
			d[key] = mustJSON(t, val)
		}
		return d
	case []any:
		i, err := strconv.Atoi(key)
		if err != nil || i < 0 || i >= len(d) {
			t.Fatalf("bad array index %q", key)
		}
		if len(path) > 1 {
			d[i] = setPath(t, d[i], path[1:], val)
		} else if val == del {
			d = slices.Delete(d, i, i+1)
		} else {
			d[i] = mustJSON(t, val)
		}
		return d
	case nil:
		if len(path) == 1 && val != del {
			return map[string]any{key: mustJSON(t, val)}
		}
		return map[string]any{key: setPath(t, nil, path[1:], val)}
	}
	t.Fatalf("cannot descend into %T at %q", doc, key)
	return nil
}

// agreeOnStrings checks that the string schema at ptr accepts exactly the
// samples that valid accepts.
func agreeOnStrings(t *testing.T, s *schemaDoc, ptr string, valid func(string) bool, samples []string) {
	t.Helper()
	for _, x := range samples {
		if got, want := matches(t, s, ptr, x), valid(x); got != want {
			t.Errorf("%s: %s: %q: schema accepts=%v, acr accepts=%v", s, ptr, x, got, want)
		}
	}
}

func matches(t *testing.T, s *schemaDoc, ptr, x string) bool {
	t.Helper()
	return len(s.check(s.at(ptr), x, "$")) == 0
}

// forbiddenPayloadKeys reads the list of keys a wake payload may not carry
// from the inbox package's source, so that a key added there without the
// schemas following fails this test.
func forbiddenPayloadKeys(t *testing.T) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "inbox", "inbox.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var keys []string
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if !ok || fn.Name.Name != "forbiddenPayloadKeys" {
			continue
		}
		ast.Inspect(fn, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil {
					keys = append(keys, s)
				}
			}
			return true
		})
	}
	return keys
}

// ---------------------------------------------------------------------------
// Small helpers.

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

func mustJSON(t *testing.T, s string) any {
	t.Helper()
	v, err := decodeJSON([]byte(s))
	if err != nil {
		t.Fatalf("test case JSON %s: %v", s, err)
	}
	return v
}

func mustValue(t *testing.T, s string) codec.Value {
	t.Helper()
	var v codec.Value
	if err := codec.Unmarshal([]byte(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func quickstartSpec(t *testing.T) world.Spec {
	t.Helper()
	var sp world.Spec
	if err := codec.Unmarshal(readFile(t, filepath.Join(scenarioRoot, "quickstart", "environment.json")), &sp); err != nil {
		t.Fatal(err)
	}
	return sp
}

func quickstartGoal(t *testing.T) intent.Goal {
	t.Helper()
	var g intent.Goal
	if err := codec.Unmarshal(readFile(t, filepath.Join(scenarioRoot, "quickstart", "goal.json")), &g); err != nil {
		t.Fatal(err)
	}
	return g
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

func strs[T ~string](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = string(x)
	}
	return out
}
