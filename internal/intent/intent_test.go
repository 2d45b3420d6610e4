package intent_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// quickstartGoal mirrors scenarios/quickstart/goal.json.
func quickstartGoal() intent.Goal {
	return intent.Goal{
		Schema:      intent.Schema,
		ID:          "quickstart",
		Mission:     "Keep the sample project in the sandbox healthy.",
		Objectives:  []string{"docs free of typos", "configuration fit for production"},
		NonGoals:    []string{"rewriting vendored code"},
		Constraints: []string{"change only files inside the sandbox"},
		Success:     intent.Success{AllChecksPass: true},
	}
}

func env() *world.Spec {
	return &world.Spec{Schema: world.SpecSchema, Checks: []world.Check{
		{ID: "readme-typo", Kind: world.CheckAbsentText, Path: "README.md", Text: "teh "},
		{ID: "debug-off", Kind: world.CheckAbsentText, Path: "config/app.ini", Text: "debug = true"},
	}}
}

func TestValidateAccepts(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(g *intent.Goal)
		spec   *world.Spec
	}{
		{"quickstart", func(g *intent.Goal) {}, env()},
		{"listed checks that exist", func(g *intent.Goal) {
			g.Success = intent.Success{Checks: []string{"debug-off", "readme-typo"}}
		}, env()},
		{"listed checks without an environment to compare", func(g *intent.Goal) {
			g.Success = intent.Success{Checks: []string{"anything"}}
		}, nil},
		{"expiry", func(g *intent.Goal) { g.ExpiresAt = "2030-01-01T00:00:00Z" }, env()},
		{"expiry with offset", func(g *intent.Goal) { g.ExpiresAt = "2030-01-01T00:00:00+02:00" }, env()},
		{"own lenses", func(g *intent.Goal) { g.Lenses = strategy.DefaultLenses() }, env()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := quickstartGoal()
			tc.mutate(&g)
			require.NoError(t, g.Validate(tc.spec))
		})
	}
}

func TestValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(g *intent.Goal)
		path   string
	}{
		{"schema", func(g *intent.Goal) { g.Schema = "acr.goal/v2" }, "schema"},
		{"empty schema", func(g *intent.Goal) { g.Schema = "" }, "schema"},
		{"id", func(g *intent.Goal) { g.ID = "Quick Start" }, "id"},
		{"empty id", func(g *intent.Goal) { g.ID = "" }, "id"},
		{"mission", func(g *intent.Goal) { g.Mission = "" }, "mission"},
		{"no success condition", func(g *intent.Goal) { g.Success = intent.Success{} }, "success"},
		{"unknown success check", func(g *intent.Goal) {
			g.Success = intent.Success{Checks: []string{"readme-typo", "no-such-check"}}
		}, "success.checks[1]"},
		{"unknown success check with all_checks_pass", func(g *intent.Goal) {
			g.Success = intent.Success{AllChecksPass: true, Checks: []string{"ghost"}}
		}, "success.checks[0]"},
		{"expires_at not RFC 3339", func(g *intent.Goal) { g.ExpiresAt = "next tuesday" }, "expires_at"},
		{"expires_at date only", func(g *intent.Goal) { g.ExpiresAt = "2030-01-01" }, "expires_at"},
		{"lens without source", func(g *intent.Goal) {
			g.Lenses = []strategy.Lens{{ID: "l", SourceVersion: "1", AppliesTo: []strategy.TensionClass{strategy.RepeatedFailure}}}
		}, "lenses[0].source_ref"},
		{"empty objective", func(g *intent.Goal) { g.Objectives = append(g.Objectives, "") }, "objectives[2]"},
		{"blank non-goal", func(g *intent.Goal) { g.NonGoals = []string{"  "} }, "non_goals[0]"},
		{"empty constraint", func(g *intent.Goal) { g.Constraints = []string{""} }, "constraints[0]"},
		{"objective is also a non-goal", func(g *intent.Goal) {
			g.NonGoals = append(g.NonGoals, "configuration fit for production")
		}, "non_goals"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := quickstartGoal()
			tc.mutate(&g)
			err := g.Validate(env())
			require.Error(t, err)
			var fe *codec.FieldError
			require.True(t, errors.As(err, &fe), "want *codec.FieldError, got %T: %v", err, err)
			assert.Equal(t, tc.path, fe.Path)
		})
	}
}

func TestValidateContradictionNamesTheObjective(t *testing.T) {
	g := quickstartGoal()
	g.NonGoals = []string{"docs free of typos"}
	err := g.Validate(nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"docs free of typos"`)
}

func TestRegistry(t *testing.T) {
	g := quickstartGoal()
	assert.Equal(t, strategy.DefaultLenses(), g.Registry())
	own := []strategy.Lens{{ID: "mine", SourceRef: "src:x", SourceVersion: "9", AppliesTo: []strategy.TensionClass{strategy.StaleKnowledge}}}
	g.Lenses = own
	assert.Equal(t, own, g.Registry())
}

func TestAlign(t *testing.T) {
	exp := "2026-06-01T12:00:00Z"
	expT, err := state.ParseTime(exp)
	require.NoError(t, err)
	withExpiry := func(e string) *intent.Goal {
		g := quickstartGoal()
		g.ExpiresAt = e
		return &g
	}
	contradictory := quickstartGoal()
	contradictory.NonGoals = []string{"docs free of typos"}
	noMission := quickstartGoal()
	noMission.Mission = ""
	qs := quickstartGoal()

	cases := []struct {
		name    string
		g       *intent.Goal
		now     time.Time
		aligned bool
		reason  string
	}{
		{"missing", nil, expT, false, "intent_missing"},
		{"no mission", &noMission, expT, false, "intent_missing"},
		{"contradictory", &contradictory, expT, false, "intent_contradictory"},
		{"no expiry", &qs, expT.Add(100 * 365 * 24 * time.Hour), true, "intent_aligned"},
		{"before expiry", withExpiry(exp), expT.Add(-time.Second), true, "intent_aligned"},
		{"at expiry", withExpiry(exp), expT, false, "intent_expired"},
		{"after expiry", withExpiry(exp), expT.Add(time.Hour), false, "intent_expired"},
		{"expiry with offset, before", withExpiry("2026-06-01T14:00:00+02:00"), expT.Add(-time.Second), true, "intent_aligned"},
		{"expiry with offset, at", withExpiry("2026-06-01T14:00:00+02:00"), expT, false, "intent_expired"},
		{"unreadable expiry is expired", withExpiry("soon"), expT.Add(-time.Hour), false, "intent_expired"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			a := intent.Align(tc.g, tc.now)
			assert.Equal(t, intent.Alignment{Aligned: tc.aligned, Reasons: []string{tc.reason}}, a)
		})
	}
}

func TestSatisfied(t *testing.T) {
	obs := func(statuses ...world.CheckStatus) world.Observation {
		o := world.Observation{}
		for i, s := range statuses {
			o.Checks = append(o.Checks, world.CheckResult{ID: []string{"a", "b", "c"}[i], Status: s})
		}
		return o
	}
	pass, fail := world.CheckPass, world.CheckFail
	cases := []struct {
		name    string
		success intent.Success
		obs     world.Observation
		want    bool
	}{
		{"all pass", intent.Success{AllChecksPass: true}, obs(pass, pass, pass), true},
		{"one fails", intent.Success{AllChecksPass: true}, obs(pass, fail, pass), false},
		{"listed checks pass, another fails", intent.Success{Checks: []string{"a", "c"}}, obs(pass, fail, pass), true},
		{"a listed check fails", intent.Success{Checks: []string{"a", "b"}}, obs(pass, fail, pass), false},
		{"a listed check is not observed", intent.Success{Checks: []string{"a", "z"}}, obs(pass, pass, pass), false},
		{"all pass but a listed check is not observed", intent.Success{AllChecksPass: true, Checks: []string{"z"}}, obs(pass, pass), false},
		{"both conditions hold", intent.Success{AllChecksPass: true, Checks: []string{"b"}}, obs(pass, pass), true},
		{"listed passes but all required and one fails", intent.Success{AllChecksPass: true, Checks: []string{"a"}}, obs(pass, fail), false},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := quickstartGoal()
			g.Success = tc.success
			assert.Equal(t, tc.want, intent.Satisfied(&g, tc.obs))
		})
	}
}
