package governance_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

func fmtSpec() world.Spec {
	return world.Spec{Schema: world.SpecSchema, Root: "/srv/project", Checks: []world.Check{
		{ID: "gofmt", Kind: world.CheckCommand, Argv: []string{"sh", "-c", "test -z \"$(gofmt -l .)\""}, Fixes: []world.Fix{
			{ID: "gofmt-w", Operation: world.OpRunCommand, Argv: []string{"gofmt", "-w", "."}, Touches: []string{"**/*.go"}},
			{ID: "tidy", Operation: world.OpRunCommand, Argv: []string{"go", "mod", "tidy"}, Touches: []string{"go.mod", "go.sum"}},
			{ID: "anything", Operation: world.OpRunCommand, Argv: []string{"make", "fix"}},
		}},
	}}
}

func cmdAction(spec world.Spec, id string) world.Action {
	f, c, _ := spec.FixByID(id)
	return world.Action{Schema: world.ActionSchema, Operation: world.OpRunCommand, CheckID: c.ID, FixID: f.ID,
		Argv: f.Argv, Touches: f.Touches, TimeoutSeconds: f.TimeoutSeconds, Idempotent: f.Idempotent}
}

func TestRunCommandGovernance(t *testing.T) {
	rule := func(op, path string, e governance.Effect) governance.Rule {
		return governance.Rule{Operation: op, Paths: []string{path}, Effect: e}
	}
	cases := []struct {
		name    string
		rules   []governance.Rule
		mode    governance.AuthorityMode
		fix     string
		mutate  func(*world.Action)
		verdict governance.Verdict
		reason  string
	}{
		{"allowed by a run_command rule", []governance.Rule{rule("run_command", "**", governance.Allow)}, "", "gofmt-w", nil, governance.Execute, "contract_allows"},
		{"a * allow never allows a command", []governance.Rule{rule("*", "**", governance.Allow)}, "", "gofmt-w", nil, governance.Refuse, "no_rule_allows"},
		{"a * forbid still forbids one", []governance.Rule{rule("*", "vendor/**", governance.Forbid), rule("run_command", "**", governance.Allow)}, "", "gofmt-w", nil, governance.Refuse, "contract_forbids"},
		{"forbid on a path the touches may reach", []governance.Rule{rule("run_command", "vendor/**", governance.Forbid), rule("run_command", "**/*.go", governance.Allow)}, "", "gofmt-w", nil, governance.Refuse, "contract_forbids"},
		{"disjoint forbid does not matter", []governance.Rule{rule("run_command", "docs/**/*.md", governance.Forbid), rule("run_command", "**/*.go", governance.Allow)}, "", "gofmt-w", nil, governance.Execute, "contract_allows"},
		{"approval where go.mod is touched", []governance.Rule{rule("*", "go.mod", governance.Approve), rule("run_command", "**", governance.Allow)}, "", "tidy", nil, governance.Escalate, "contract_requires_approval"},
		{"approval does not reach other touches", []governance.Rule{rule("*", "go.mod", governance.Approve), rule("run_command", "**", governance.Allow)}, "", "gofmt-w", nil, governance.Execute, "contract_allows"},
		{"a rule for part of the touches is not enough", []governance.Rule{rule("run_command", "cmd/**", governance.Allow)}, "", "gofmt-w", nil, governance.Refuse, "no_rule_allows"},
		{"no touches needs a rule for **", []governance.Rule{rule("run_command", "**/*.go", governance.Allow)}, "", "anything", nil, governance.Refuse, "no_rule_allows"},
		{"no touches with a rule for **", []governance.Rule{rule("run_command", "**", governance.Allow)}, "", "anything", nil, governance.Execute, "contract_allows"},
		{"needs project_write", []governance.Rule{rule("run_command", "**", governance.Allow)}, governance.AuthPropose, "gofmt-w", nil, governance.Refuse, "authority_insufficient"},
		{"undeclared id", []governance.Rule{rule("run_command", "**", governance.Allow)}, "", "gofmt-w", func(a *world.Action) { a.FixID = "rm" }, governance.Refuse, "undeclared_command"},
		{"declared id, other argv", []governance.Rule{rule("run_command", "**", governance.Allow)}, "", "gofmt-w", func(a *world.Action) { a.Argv = []string{"rm", "-rf", "."} }, governance.Refuse, "undeclared_command"},
		{"declared id, wider touches", []governance.Rule{rule("run_command", "**", governance.Allow)}, "", "gofmt-w", func(a *world.Action) { a.Touches = nil }, governance.Refuse, "undeclared_command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := fmtSpec()
			c := quickstartContract()
			c.Rules = tc.rules
			if tc.mode != "" {
				c.Authority.Mode = tc.mode
			}
			a := cmdAction(spec, tc.fix)
			if tc.mutate != nil {
				tc.mutate(&a)
			}
			d := governance.Decide(&c, &spec, governance.Request{Action: a, ActionRef: a.Ref(), StillNeeded: true})
			assert.Equal(t, tc.verdict, d.Verdict)
			assert.Equal(t, []string{tc.reason}, d.ReasonCodes)
		})
	}
}

// For one file the reading of the rules is the old one: the first rule
// that matches decides.
func TestSingleTargetsKeepFirstMatch(t *testing.T) {
	c := quickstartContract()
	for _, tc := range []struct {
		target string
		want   governance.Verdict
	}{{"vendor/lib.js", governance.Refuse}, {"config/app.ini", governance.Escalate}, {"README.md", governance.Execute}} {
		spec := world.Spec{Schema: world.SpecSchema}
		a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: tc.target, Find: "a"}
		d := governance.Decide(&c, &spec, governance.Request{Action: a, ActionRef: a.Ref(), StillNeeded: true})
		assert.Equal(t, tc.want, d.Verdict, tc.target)
	}
}

// TestTrialRulesOnTheRealChange: a command fix approved with its trial is
// ruled on the paths the trial changed, not on its declared touches, and
// a trial that changed a path outside those touches is refused.
func TestTrialRulesOnTheRealChange(t *testing.T) {
	rule := func(op, path string, e governance.Effect) governance.Rule {
		return governance.Rule{Operation: op, Paths: []string{path}, Effect: e}
	}
	head, tree := "1111111111111111111111111111111111111111", "2222222222222222222222222222222222222222"
	trial := func(changed ...string) *world.GitTrial {
		return &world.GitTrial{Head: head, Tree: tree, Changed: changed}
	}
	vendorForbidden := []governance.Rule{rule("run_command", "vendor/**", governance.Forbid), rule("run_command", "**/*.go", governance.Allow)}
	cases := []struct {
		name    string
		rules   []governance.Rule
		trial   *world.GitTrial
		verdict governance.Verdict
		reason  string
	}{
		{"declared touches may reach vendor: forbidden", vendorForbidden, nil, governance.Refuse, "contract_forbids"},
		{"the real change stays out of vendor: allowed", vendorForbidden, trial("cmd/main.go"), governance.Execute, "operator_approved"},
		{"the real change reaches vendor: forbidden", vendorForbidden, trial("cmd/main.go", "vendor/x.go"), governance.Refuse, "contract_forbids"},
		{"a change outside the touches is refused", []governance.Rule{rule("run_command", "**", governance.Allow)}, trial("main.go", "notes.txt"),
			governance.Refuse, "changed_outside_touches"},
		{"a trial without a valid tree is refused", []governance.Rule{rule("run_command", "**", governance.Allow)},
			&world.GitTrial{Head: head, Tree: "HEAD", Changed: []string{"main.go"}}, governance.Refuse, "approved_trial_invalid"},
		{"no change: ruled on the touches", []governance.Rule{rule("run_command", "**/*.go", governance.Allow)}, trial(), governance.Execute, "operator_approved"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			spec := fmtSpec()
			c := quickstartContract()
			c.Rules = tc.rules
			a := cmdAction(spec, "gofmt-w")
			ap := &state.Approval{ActionRef: a.Ref(), Verdict: state.VerdictApprove, Trial: tc.trial}
			d := governance.Decide(&c, &spec, governance.Request{Action: a, ActionRef: a.Ref(), StillNeeded: true, Approval: ap, Trial: tc.trial})
			assert.Equal(t, tc.verdict, d.Verdict)
			assert.Equal(t, []string{tc.reason}, d.ReasonCodes)
		})
	}
}

// TestFailedTrialIsRefused: a command fix whose trial failed is refused
// (trial_failed), whatever the rules and the paths it changed say; a
// trial that did not fail is ruled on its paths.
func TestFailedTrialIsRefused(t *testing.T) {
	spec := fmtSpec()
	c := quickstartContract()
	c.Rules = []governance.Rule{{Operation: "run_command", Paths: []string{"**"}, Effect: governance.Allow}}
	a := cmdAction(spec, "gofmt-w")
	tr := &world.GitTrial{Head: "1111111111111111111111111111111111111111", Tree: "2222222222222222222222222222222222222222", Changed: []string{"main.go"}}
	for _, tc := range []struct {
		failure string
		verdict governance.Verdict
		reason  string
	}{{"exit 2", governance.Refuse, "trial_failed"}, {"timed out after 60 s", governance.Refuse, "trial_failed"}, {"", governance.Execute, "contract_allows"}} {
		d := governance.Decide(&c, &spec, governance.Request{Action: a, ActionRef: a.Ref(), StillNeeded: true, Trial: tr, TrialFailure: tc.failure})
		assert.Equal(t, tc.verdict, d.Verdict, tc.failure)
		assert.Equal(t, []string{tc.reason}, d.ReasonCodes, tc.failure)
	}
}
