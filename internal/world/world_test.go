package world_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// quickstartSpec mirrors scenarios/quickstart/environment.json, plus one
// piece of evidence and a check of every kind.
func quickstartSpec() world.Spec {
	return world.Spec{
		Schema: world.SpecSchema,
		Files: map[string]string{
			"README.md":      "# Sample project\n\nThis is teh sample project that acr looks after.\n",
			"config/app.ini": "[server]\nport = 8080\ndebug = true\n",
			"vendor/lib.js":  "// vendored library, do not edit\nfunction load(input) { return eval(input); }\n",
		},
		Checks: []world.Check{
			{ID: "readme-typo", Summary: "README misspells 'the'", Kind: world.CheckAbsentText, Path: "README.md", Text: "teh ", Priority: 30,
				Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "teh ", Replace: "the "}}},
			{ID: "vendor-eval", Summary: "vendored library calls eval", Kind: world.CheckAbsentText, Path: "vendor/lib.js", Text: "eval(", Priority: 20,
				Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "eval(input)", Replace: "JSON.parse(input)"}}},
			{ID: "debug-off", Summary: "debug mode is on", Kind: world.CheckAbsentText, Path: "config/app.ini", Text: "debug = true", Priority: 10,
				Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "debug = true", Replace: "debug = false"}}},
			{ID: "license", Summary: "MIT licensed", Kind: world.CheckPresentText, Path: "LICENSE", Text: "MIT", Priority: 1000,
				Fixes: []world.Fix{{Operation: world.OpRecordArtifact, Content: "MIT License\n"}, {Operation: world.OpMarkIssue, Note: "no licence"}}},
			{ID: "changelog", Summary: "a changelog exists", Kind: world.CheckFileExists, Path: "CHANGELOG.md", Priority: 0,
				Fixes: []world.Fix{{Operation: world.OpRecordArtifact, Content: "# Changes\n"}}, RequiresEvidence: []string{"ci-report"}},
		},
		Evidence: []world.EvidenceSpec{{ID: "ci-report", Path: "reports/ci.txt"}},
		Exclude:  []string{"build/**", "**/*.log"},
	}
}

func TestSpecValidateAcceptsQuickstartLikeSpec(t *testing.T) {
	s := quickstartSpec()
	require.NoError(t, s.Validate())
}

func TestSpecValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *world.Spec)
		path   string
		msg    string
	}{
		{"wrong schema", func(s *world.Spec) { s.Schema = "acr.environment/v9" }, "schema", "acr.environment/v0.1"},
		{"empty schema", func(s *world.Spec) { s.Schema = "" }, "schema", "want"},
		{"file path with dot-dot", func(s *world.Spec) { s.Files["../escape.txt"] = "x" }, "files.../escape.txt", "'..'"},
		{"absolute file path", func(s *world.Spec) { s.Files["/etc/passwd"] = "x" }, "files./etc/passwd", "relative"},
		{"excluded file .env", func(s *world.Spec) { s.Files[".env"] = "TOKEN=1" }, "files..env", "excluded"},
		{"excluded file secrets/api.key", func(s *world.Spec) { s.Files["secrets/api.key"] = "k" }, "files.secrets/api.key", "excluded"},
		{"file excluded by spec pattern", func(s *world.Spec) { s.Files["build/out.txt"] = "x" }, "files.build/out.txt", "excluded"},
		{"invalid check id", func(s *world.Spec) { s.Checks[1].ID = "Bad ID" }, "checks[1].id", "not a valid id"},
		{"empty check id", func(s *world.Spec) { s.Checks[0].ID = "" }, "checks[0].id", "not a valid id"},
		{"duplicate check id", func(s *world.Spec) { s.Checks[2].ID = "readme-typo" }, "checks[2].id", "duplicate"},
		{"invalid check path", func(s *world.Spec) { s.Checks[0].Path = "a//b" }, "checks[0].path", "empty"},
		{"empty check path", func(s *world.Spec) { s.Checks[3].Path = "" }, "checks[3].path", "empty path"},
		{"excluded check path", func(s *world.Spec) { s.Checks[1].Path = "a/.git/config" }, "checks[1].path", "excluded"},
		{"absent_text without text", func(s *world.Spec) { s.Checks[0].Text = "" }, "checks[0].text", "absent_text"},
		{"present_text without text", func(s *world.Spec) { s.Checks[3].Text = "" }, "checks[3].text", "present_text"},
		{"unknown kind", func(s *world.Spec) { s.Checks[4].Kind = "regex" }, "checks[4].kind", "unknown kind"},
		{"negative priority", func(s *world.Spec) { s.Checks[2].Priority = -1 }, "checks[2].priority", "between 0 and 1000"},
		{"priority over 1000", func(s *world.Spec) { s.Checks[2].Priority = 1001 }, "checks[2].priority", "between 0 and 1000"},
		{"patch without find", func(s *world.Spec) { s.Checks[0].Fixes[0].Find = "" }, "checks[0].fixes[0].find", "needs find"},
		{"patch on file_exists", func(s *world.Spec) {
			s.Checks[4].Fixes = append(s.Checks[4].Fixes, world.Fix{Operation: world.OpApplyPatch, Find: "x"})
		}, "checks[4].fixes[1].operation", "file_exists"},
		{"record_artifact on absent_text", func(s *world.Spec) {
			s.Checks[1].Fixes[0] = world.Fix{Operation: world.OpRecordArtifact, Content: "x"}
		}, "checks[1].fixes[0].operation", "record_artifact"},
		{"inspect is not a fix", func(s *world.Spec) { s.Checks[3].Fixes[1].Operation = world.OpInspect }, "checks[3].fixes[1].operation", "cannot be a fix"},
		{"unknown fix operation", func(s *world.Spec) { s.Checks[0].Fixes[0].Operation = "rm_rf" }, "checks[0].fixes[0].operation", "cannot be a fix"},
		{"invalid evidence id", func(s *world.Spec) { s.Evidence[0].ID = "CI" }, "evidence[0].id", "valid, unique"},
		{"duplicate evidence id", func(s *world.Spec) {
			s.Evidence = append(s.Evidence, world.EvidenceSpec{ID: "ci-report", Path: "reports/other.txt"})
		}, "evidence[1].id", "valid, unique"},
		{"invalid evidence path", func(s *world.Spec) { s.Evidence[0].Path = "reports/../ci.txt" }, "evidence[0].path", "'..'"},
		{"unknown required evidence", func(s *world.Spec) {
			s.Checks[4].RequiresEvidence = []string{"ci-report", "sign-off"}
		}, "checks[4].requires_evidence[1]", "sign-off"},
		{"bad exclude pattern", func(s *world.Spec) { s.Exclude = append(s.Exclude, "[") }, "exclude[2]", "syntax"},
		{"bad exclude pattern behind **/", func(s *world.Spec) { s.Exclude = []string{"**/[a-"} }, "exclude[0]", "syntax"},
		{"root and files", func(s *world.Spec) { s.Root = "/srv/project" }, "root", "exclude each other"},
		{"git and files", func(s *world.Spec) { s.Git = &world.GitSpec{Remote: "/srv/r.git", Base: "main", Branch: "acr/x"} }, "git", "git and files exclude each other"},
		{"git and root", func(s *world.Spec) {
			s.Files, s.Root, s.Git = nil, "/srv/project", &world.GitSpec{Remote: "/srv/r.git", Base: "main", Branch: "acr/x"}
		}, "git", "git and root exclude each other"},
		{"git without remote", func(s *world.Spec) { s.Files, s.Git = nil, &world.GitSpec{Base: "main", Branch: "acr/x"} }, "git.remote", "required"},
		{"git remote as an option", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "--upload-pack=evil", Base: "main", Branch: "acr/x"}
		}, "git.remote", "starts with '-'"},
		{"git remote with a newline", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "/srv/r.git\n[core]", Base: "main", Branch: "acr/x"}
		}, "git.remote", "control character"},
		{"git without base", func(s *world.Spec) { s.Files, s.Git = nil, &world.GitSpec{Remote: "/r.git", Branch: "acr/x"} }, "git.base", "required"},
		{"git without branch", func(s *world.Spec) { s.Files, s.Git = nil, &world.GitSpec{Remote: "/r.git", Base: "main"} }, "git.branch", "required"},
		{"git branch is base", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "/r.git", Base: "main", Branch: "main"}
		}, "git.branch", "never to base"},
		{"git branch with ..", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "/r.git", Base: "main", Branch: "acr..x"}
		}, "git.branch", `".."`},
		{"git branch as an option", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "/r.git", Base: "main", Branch: "-f"}
		}, "git.branch", "not a branch name"},
		{"git branch ending in .lock", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "/r.git", Base: "main", Branch: "acr/x.lock"}
		}, "git.branch", ".lock"},
		{"git base with a space", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "/r.git", Base: "ma in", Branch: "acr/x"}
		}, "git.base", "not a branch name"},
		{"pass_env not a name", func(s *world.Spec) { s.PassEnv = []string{"GOPATH", "A-B"} }, "pass_env[1]", "not an environment variable name"},
		{"pass_env reserved", func(s *world.Spec) { s.PassEnv = []string{"ACR_IDEMPOTENCY_KEY"} }, "pass_env[0]", "set by acr"},
		{"negative limits", func(s *world.Spec) { s.Limits = &world.Limits{MaxDepth: -1} }, "limits", ">= 0"},
		{"label with a space", func(s *world.Spec) { s.Label = "host a" }, "label", "not a valid label"},
		{"label too long", func(s *world.Spec) { s.Label = strings.Repeat("a", 65) }, "label", "not a valid label"},
		{"command check without argv", func(s *world.Spec) {
			s.Checks = append(s.Checks, world.Check{ID: "vet", Kind: world.CheckCommand})
		}, "checks[5].argv", "required"},
		{"command check with text", func(s *world.Spec) {
			s.Checks = append(s.Checks, world.Check{ID: "vet", Kind: world.CheckCommand, Argv: []string{"go", "vet"}, Text: "x"})
		}, "checks[5].text", "no text"},
		{"command check timeout too long", func(s *world.Spec) {
			s.Checks = append(s.Checks, world.Check{ID: "vet", Kind: world.CheckCommand, Argv: []string{"go", "vet"}, TimeoutSeconds: 3601})
		}, "checks[5].timeout_seconds", "between 0"},
		{"text check with argv", func(s *world.Spec) { s.Checks[0].Argv = []string{"true"} }, "checks[0].argv", "only a command check"},
		{"text check comparing output", func(s *world.Spec) { s.Checks[0].CompareOutput = true }, "checks[0].compare_output", "only a command check"},
		{"normalize without compare_output", func(s *world.Spec) {
			s.Checks = append(s.Checks, world.Check{ID: "test", Kind: world.CheckCommand, Argv: []string{"go", "test"}, Normalize: []string{`\d+`}})
		}, "checks[5].normalize", "set compare_output"},
		{"normalize pattern that does not compile", func(s *world.Spec) {
			s.Checks = append(s.Checks, world.Check{ID: "test", Kind: world.CheckCommand, Argv: []string{"go", "test"}, CompareOutput: true,
				Normalize: []string{`\(\d+ms\)`, `(unclosed`}})
		}, "checks[5].normalize[1]", "not a regular expression"},
		{"empty normalize pattern", func(s *world.Spec) {
			s.Checks = append(s.Checks, world.Check{ID: "test", Kind: world.CheckCommand, Argv: []string{"go", "test"}, CompareOutput: true, Normalize: []string{""}})
		}, "checks[5].normalize[0]", "empty pattern"},
		{"run_command without id", func(s *world.Spec) {
			s.Checks[0].Fixes = []world.Fix{{Operation: world.OpRunCommand, Argv: []string{"gofmt", "-w", "."}}}
		}, "checks[0].fixes[0].id", "needs an id"},
		{"run_command without argv", func(s *world.Spec) {
			s.Checks[0].Fixes = []world.Fix{{Operation: world.OpRunCommand, ID: "fmt"}}
		}, "checks[0].fixes[0].argv", "required"},
		{"run_command with find", func(s *world.Spec) {
			s.Checks[0].Fixes = []world.Fix{{Operation: world.OpRunCommand, ID: "fmt", Argv: []string{"x"}, Find: "a"}}
		}, "checks[0].fixes[0].operation", "takes argv"},
		{"run_command touches with ..", func(s *world.Spec) {
			s.Checks[0].Fixes = []world.Fix{{Operation: world.OpRunCommand, ID: "fmt", Argv: []string{"x"}, Touches: []string{"../**"}}}
		}, "checks[0].fixes[0].touches[0]", "without . or .."},
		{"duplicate fix id", func(s *world.Spec) {
			s.Checks[0].Fixes = []world.Fix{{Operation: world.OpRunCommand, ID: "fmt", Argv: []string{"x"}}}
			s.Checks[1].Fixes = []world.Fix{{Operation: world.OpRunCommand, ID: "fmt", Argv: []string{"y"}}}
		}, "checks[1].fixes[0].id", "duplicate fix id"},
		{"patch fix with argv", func(s *world.Spec) { s.Checks[0].Fixes[0].Argv = []string{"x"} }, "checks[0].fixes[0].argv", "belong to run_command"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := quickstartSpec()
			tc.mutate(&s)
			err := s.Validate()
			require.Error(t, err)
			var fe *codec.FieldError
			require.True(t, errors.As(err, &fe), "want *codec.FieldError, got %T: %v", err, err)
			assert.Equal(t, tc.path, fe.Path)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestSpecValidateAcceptsBoundaries(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(s *world.Spec)
	}{
		{"priority 0", func(s *world.Spec) { s.Checks[0].Priority = 0 }},
		{"priority 1000", func(s *world.Spec) { s.Checks[0].Priority = 1000 }},
		{"file_exists needs no text", func(s *world.Spec) { s.Checks[4].Text = "" }},
		{"mark_issue fixes any kind", func(s *world.Spec) {
			s.Checks[4].Fixes = []world.Fix{{Operation: world.OpMarkIssue}}
		}},
		{"record_artifact fixes present_text", func(s *world.Spec) {
			s.Checks[3].Fixes = []world.Fix{{Operation: world.OpRecordArtifact}}
		}},
		{"no fixes at all", func(s *world.Spec) { s.Checks[0].Fixes = nil }},
		{"no files", func(s *world.Spec) { s.Files = nil }},
		{"id with dots, digits, underscores", func(s *world.Spec) { s.Checks[0].ID = "a1.b_c-d" }},
		{"git world over ssh", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "git@host:team/service.git", Base: "main", Branch: "acr/keep-healthy"}
		}},
		{"git world on a path", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "/srv/git/service.git", Base: "release/1.x", Branch: "acr_fix-1.2"}
		}},
		{"git world on a file URL", func(s *world.Spec) {
			s.Files, s.Git = nil, &world.GitSpec{Remote: "file:///srv/git/service.git", Base: "main", Branch: "acr"}
		}},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := quickstartSpec()
			tc.mutate(&s)
			require.NoError(t, s.Validate())
		})
	}
}

func TestValidID(t *testing.T) {
	cases := []struct {
		id   string
		want bool
	}{
		{"a", true},
		{"0abc", true},
		{"readme-typo", true},
		{"a.b_c-1", true},
		{strings.Repeat("a", 64), true},
		{strings.Repeat("a", 65), false},
		{"", false},
		{"-lead", false},
		{".lead", false},
		{"Upper", false},
		{"with space", false},
		{"slash/no", false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, world.ValidID(tc.id), "ValidID(%q)", tc.id)
	}
}

func TestCleanPath(t *testing.T) {
	cases := []struct {
		in string
		ok bool
	}{
		{"README.md", true},
		{"a/b/c.txt", true},
		{"...", true},
		{".hidden", true},
		{"", false},
		{"/abs", false},
		{"a\\b", false},
		{"a\x00b", false},
		{"a//b", false},
		{"a/", false},
		{"./a", false},
		{"a/./b", false},
		{"..", false},
		{"a/../b", false},
		{"a/..", false},
		{".", false},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%q", tc.in), func(t *testing.T) {
			got, err := world.CleanPath(tc.in)
			if tc.ok {
				require.NoError(t, err)
				assert.Equal(t, tc.in, got)
			} else {
				require.Error(t, err)
				assert.Equal(t, "", got)
			}
		})
	}
}

func TestExcludedDefaults(t *testing.T) {
	s := world.Spec{Schema: world.SpecSchema}
	cases := []struct {
		path string
		want bool
	}{
		{".git", true},
		{".git/config", true},
		{".git/refs/heads/main", true},
		{"a/.git/config", true},
		{"a/b/.git/HEAD", true},
		{".env", true},
		{"app/.env", true},
		{"cert.pem", true},
		{"tls/server.pem", true},
		{"secrets/api.key", true},
		{"api.key", true},
		{"keys.txt", true},
		{"my_secret.txt", true},
		{"conf/secret.yaml", true},
		{"README.md", false},
		{"src/main.go", false},
		{".envrc", false},
		{"environment.md", false},
		{"gitignore", false},
		{"a/.gitignore", false},
		{"pem/readme.txt", false},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		assert.Equal(t, tc.want, s.Excluded(tc.path), "Excluded(%q)", tc.path)
	}
}

func TestExcludedAddsSpecPatterns(t *testing.T) {
	s := world.Spec{Schema: world.SpecSchema, Exclude: []string{"build/**", "**/*.log", "tmp"}}
	cases := []struct {
		path string
		want bool
	}{
		{"build", true},
		{"build/out/a.o", true},
		{"buildx/a", false},
		{"app.log", true},
		{"logs/2026/app.log", true},
		{"app.log.txt", false},
		{"tmp", true},
		{"tmp/x", true}, // below an excluded directory
		{".env", true},  // defaults still apply
		{"src/x.go", false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, s.Excluded(tc.path), "Excluded(%q)", tc.path)
	}
	// A spec without extra patterns does not exclude what the extra ones do.
	assert.False(t, (&world.Spec{}).Excluded("build/out/a.o"))
}

func TestMatchAnyGlobDialect(t *testing.T) {
	cases := []struct {
		pats []string
		path string
		want bool
	}{
		{[]string{"**"}, "a", true},
		{[]string{"**"}, "a/b/c", true},
		{[]string{"**/x"}, "x", true},
		{[]string{"**/x"}, "a/x", true},
		{[]string{"**/x"}, "a/b/x", true},
		{[]string{"**/x"}, "a/x/b", false},
		{[]string{"**/x"}, "xx", false},
		{[]string{"dir/**"}, "dir", true},
		{[]string{"dir/**"}, "dir/a", true},
		{[]string{"dir/**"}, "dir/a/b", true},
		{[]string{"dir/**"}, "dirx/a", false},
		{[]string{"dir/**"}, "a/dir/b", false},
		{[]string{"**/dir/**"}, "a/dir/b", true},
		{[]string{"*.md"}, "README.md", true},
		{[]string{"*.md"}, "docs/README.md", false},
		{[]string{"**/*.md"}, "docs/README.md", true},
		{[]string{"config/*.ini"}, "config/app.ini", true},
		{[]string{"config/*.ini"}, "config/sub/app.ini", false},
		{[]string{"README.md"}, "README.md", true},
		{[]string{"README.md"}, "docs/README.md", false},
		{[]string{"a?c"}, "abc", true},
		{[]string{"[", "**/x"}, "a/x", true}, // a bad pattern matches nothing, the next one still applies
		{[]string{"["}, "[", false},
		{nil, "a", false},
		{[]string{}, "a", false},
		{[]string{"vendor/**", "config/**"}, "config/app.ini", true},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		assert.Equal(t, tc.want, world.MatchAny(tc.pats, tc.path), "MatchAny(%q, %q)", tc.pats, tc.path)
	}
}

func TestEvaluate(t *testing.T) {
	content := []byte("alpha TODO beta TODO\n")
	sum := codec.FingerprintOf(content)
	cases := []struct {
		name    string
		check   world.Check
		content []byte
		exists  bool
		status  world.CheckStatus
		detail  string
		sha     codec.Fingerprint
	}{
		{"file_exists present", world.Check{ID: "c", Kind: world.CheckFileExists}, content, true, world.CheckPass, "", sum},
		{"file_exists present and empty", world.Check{ID: "c", Kind: world.CheckFileExists}, []byte{}, true, world.CheckPass, "", codec.FingerprintOf(nil)},
		{"file_exists missing", world.Check{ID: "c", Kind: world.CheckFileExists}, nil, false, world.CheckFail, "file is missing", ""},
		{"absent_text found twice", world.Check{ID: "c", Kind: world.CheckAbsentText, Text: "TODO"}, content, true, world.CheckFail, "found 2 occurrence(s) of the forbidden text", sum},
		{"absent_text not found", world.Check{ID: "c", Kind: world.CheckAbsentText, Text: "FIXME"}, content, true, world.CheckPass, "", sum},
		{"absent_text file missing", world.Check{ID: "c", Kind: world.CheckAbsentText, Text: "TODO"}, nil, false, world.CheckPass, "", ""},
		{"present_text found", world.Check{ID: "c", Kind: world.CheckPresentText, Text: "beta"}, content, true, world.CheckPass, "", sum},
		{"present_text not found", world.Check{ID: "c", Kind: world.CheckPresentText, Text: "gamma"}, content, true, world.CheckFail, "required text is missing", sum},
		{"present_text file missing", world.Check{ID: "c", Kind: world.CheckPresentText, Text: "beta"}, nil, false, world.CheckFail, "file is missing", ""},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := world.Evaluate(tc.check, tc.content, tc.exists)
			assert.Equal(t, world.CheckResult{ID: tc.check.ID, Status: tc.status, Detail: tc.detail, TargetSHA256: tc.sha}, got)
		})
	}
}

func TestObservationLookups(t *testing.T) {
	obs := world.Observation{
		Checks:   []world.CheckResult{{ID: "a", Status: world.CheckPass}, {ID: "b", Status: world.CheckFail, Detail: "x"}},
		Evidence: []world.EvidenceFact{{ID: "e1", Present: true}, {ID: "e2", Present: false}},
	}
	r, ok := obs.Check("b")
	require.True(t, ok)
	assert.Equal(t, world.CheckResult{ID: "b", Status: world.CheckFail, Detail: "x"}, r)
	_, ok = obs.Check("zzz")
	assert.False(t, ok)
	assert.True(t, obs.EvidencePresent("e1"))
	assert.False(t, obs.EvidencePresent("e2"))
	assert.False(t, obs.EvidencePresent("unknown"))

	// The ref is a content address: same content, same ref; other content, other ref.
	assert.Equal(t, obs.Ref(), obs.Ref())
	assert.Equal(t, "obs", obs.Ref().Kind())
	other := obs
	other.Excluded = 1
	assert.NotEqual(t, obs.Ref(), other.Ref())
}

func TestOperationWrites(t *testing.T) {
	want := map[world.Operation]bool{
		world.OpInspect: false, world.OpMarkIssue: true, world.OpApplyPatch: true,
		world.OpRunValidation: true, world.OpRecordArtifact: true, world.OpRestore: true, world.OpRunCommand: true,
	}
	ops := world.Operations()
	require.Len(t, ops, len(want))
	for _, op := range ops {
		w, ok := want[op]
		require.True(t, ok, "unexpected operation %q", op)
		assert.Equal(t, w, op.Writes(), "%s.Writes()", op)
	}
}

func TestActionRef(t *testing.T) {
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "README.md", Find: "teh", Replace: "the"}
	b := a
	assert.Equal(t, a.Ref(), b.Ref())
	assert.Equal(t, "areq", a.Ref().Kind())
	b.Replace = "thee"
	assert.NotEqual(t, a.Ref(), b.Ref())
}

func TestIdempotencyKey(t *testing.T) {
	const (
		run   = "run-1"
		cycle = int64(7)
	)
	act := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile}.Ref()
	dec := codec.MustRefOf("gdec", map[string]string{"v": "EXECUTE"})
	base := world.IdempotencyKey(run, cycle, act, dec)

	require.True(t, strings.HasPrefix(base, "idem:sha256:"), base)
	require.Len(t, strings.TrimPrefix(base, "idem:sha256:"), 64)
	assert.Equal(t, base, world.IdempotencyKey(run, cycle, act, dec), "same inputs must give the same key")

	otherAct := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, Note: "x"}.Ref()
	otherDec := codec.MustRefOf("gdec", map[string]string{"v": "REFUSE"})
	variants := map[string]string{
		"run id":       world.IdempotencyKey("run-2", cycle, act, dec),
		"cycle":        world.IdempotencyKey(run, cycle+1, act, dec),
		"action ref":   world.IdempotencyKey(run, cycle, otherAct, dec),
		"decision ref": world.IdempotencyKey(run, cycle, act, otherDec),
		"refs swapped": world.IdempotencyKey(run, cycle, dec, act),
	}
	require.NotEmpty(t, variants)
	seen := map[string]string{base: "base"}
	for name, k := range variants {
		assert.NotEqual(t, base, k, "changing the %s must change the key", name)
		prev, dup := seen[k]
		assert.False(t, dup, "%s collides with %s", name, prev)
		seen[k] = name
	}
}

func TestSpecValidateRejectsExcludedEvidencePath(t *testing.T) {
	// Observation never reads an excluded path, so evidence declared there
	// could never be observed and work waiting for it would wait forever.
	s := quickstartSpec()
	s.Evidence[0].Path = "reports/api-key.txt"
	require.True(t, s.Excluded(s.Evidence[0].Path))
	var fe *codec.FieldError
	require.ErrorAs(t, s.Validate(), &fe)
	assert.Equal(t, "evidence[0].path", fe.Path)
	_, err := world.CleanPath(s.Evidence[0].Path)
	assert.NoError(t, err, "the path is well-formed; only its exclusion is the problem")
}

func TestExcludedDirectoryNames(t *testing.T) {
	s := world.Spec{Schema: world.SpecSchema}
	for _, p := range []string{"secrets", "keys", "a/.env"} {
		require.True(t, s.Excluded(p), p)
	}
	for _, p := range []string{"secrets/config.txt", "keys/id.txt", "a/.env/x", "app/secrets/db.yaml"} {
		assert.True(t, s.Excluded(p), "%s is inside an excluded directory", p)
	}
	assert.False(t, s.Excluded("docs/guide.md"))
	s.Files = map[string]string{"secrets/config.txt": "x"}
	var fe *codec.FieldError
	require.ErrorAs(t, s.Validate(), &fe)
	assert.Equal(t, "files.secrets/config.txt", fe.Path)
}

// TestCommandVerdict: a command check's verdict rests on its exit code;
// its output counts only when the check compares it, after normalizing.
func TestCommandVerdict(t *testing.T) {
	plain := world.Check{ID: "test", Kind: world.CheckCommand}
	compared := world.Check{ID: "test", Kind: world.CheckCommand, CompareOutput: true, Normalize: []string{`\(\d+\.\d+s\)`, `0x[0-9a-f]+`}}
	run := func(exit int, out string) world.CommandResult {
		return world.CommandResult{ExitCode: exit, Stdout: out, StdoutSHA256: codec.FingerprintOf([]byte(out))}
	}
	a, b := run(1, "--- FAIL: TestX (0.01s) at 0xc000010"), run(1, "--- FAIL: TestX (0.02s) at 0xc000aa0")
	assert.Equal(t, world.CommandVerdict(plain, a), world.CommandVerdict(plain, b), "output alone is evidence")
	assert.Equal(t, world.CommandVerdict(plain, a), world.CommandVerdict(plain, run(1, "something else")))
	assert.NotEqual(t, world.CommandVerdict(plain, a), world.CommandVerdict(plain, run(2, a.Stdout)), "the exit code is the verdict")
	assert.Equal(t, world.CommandVerdict(compared, a), world.CommandVerdict(compared, b), "timings and addresses normalized away")
	assert.NotEqual(t, world.CommandVerdict(compared, a), world.CommandVerdict(compared, run(1, "--- FAIL: TestY (0.01s)")))
	assert.NotEqual(t, world.CommandVerdict(plain, a), world.CommandVerdict(compared, a))
	assert.Equal(t, "--- FAIL: TestX  at ", world.NormalizeOutput(compared.Normalize, a.Stdout))

	// The observation's verdict leaves details and output out.
	o1 := world.Observation{Schema: world.ObservationSchema, Files: []world.FileFact{}, Evidence: []world.EvidenceFact{},
		Checks: []world.CheckResult{{ID: "test", Status: world.CheckFail, Detail: "exit 1: (0.01s)", Command: &a, TargetSHA256: world.CommandVerdict(plain, a)}}}
	o2 := o1
	o2.Checks = []world.CheckResult{{ID: "test", Status: world.CheckFail, Detail: "exit 1: (0.02s)", Command: &b, TargetSHA256: world.CommandVerdict(plain, b)}}
	assert.NotEqual(t, o1.Ref(), o2.Ref())
	assert.Equal(t, o1.Verdict(), o2.Verdict())
	o2.Files = []world.FileFact{{Path: "a.go", SHA256: codec.FingerprintOf([]byte("x")), Size: 1}}
	assert.NotEqual(t, o1.Verdict(), o2.Verdict(), "a file's hash is part of the verdict")
}
