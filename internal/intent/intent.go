// Package intent holds the Goal a person gives acr once at init. In the
// cycle controller's words it is the accepted IntentContract: mission,
// objectives, non-goals, constraints and success conditions. A cycle reads
// it (Align) and never amends it: a cycle cannot both change its intent and
// accept the change.
package intent

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// Schema is the goal document's schema name.
const Schema = "acr.goal/v0.1"

// Goal is the run's intent.
type Goal struct {
	Schema      string   `json:"schema"`
	ID          string   `json:"id"`
	Mission     string   `json:"mission"`
	Objectives  []string `json:"objectives,omitempty"`
	NonGoals    []string `json:"non_goals,omitempty"`
	Constraints []string `json:"constraints,omitempty"`
	Success     Success  `json:"success"`
	// StopOnSuccess ends the run (STOPPED, reason goal_satisfied) once the
	// success condition holds; otherwise the loop idles and keeps watching.
	StopOnSuccess bool `json:"stop_on_success,omitempty"`
	// ExpiresAt, when set, is when the intent lapses; an expired intent
	// blocks every cycle until a person renews it.
	ExpiresAt string `json:"expires_at,omitempty"`
	// Lenses is the goal's strategy lens registry; empty means the
	// built-in one.
	Lenses []strategy.Lens `json:"lenses,omitempty"`
	// Commitments are standing commitments: promises about checks the goal
	// makes for the loop, which the loop takes up as live commitments and
	// keeps, judges at their deadline and looks at on their schedule
	// (package commitment, standing.go).
	Commitments []commitment.Declaration `json:"commitments,omitempty"`
}

// Success says when the goal holds.
type Success struct {
	AllChecksPass bool     `json:"all_checks_pass,omitempty"`
	Checks        []string `json:"checks,omitempty"`
}

// Validate checks the goal on its own and against the environment it will
// run in. Errors are *codec.FieldError naming the field.
func (g *Goal) Validate(spec *world.Spec) error {
	if g.Schema != Schema {
		return &codec.FieldError{Path: "schema", Err: fmt.Errorf("want %q, found %q", Schema, g.Schema)}
	}
	if !world.ValidID(g.ID) {
		return &codec.FieldError{Path: "id", Err: fmt.Errorf("%q is not a valid id (lower-case letters, digits, . _ -)", g.ID)}
	}
	if g.Mission == "" {
		return &codec.FieldError{Path: "mission", Err: fmt.Errorf("required")}
	}
	for _, l := range []struct {
		field string
		items []string
	}{{"objectives", g.Objectives}, {"non_goals", g.NonGoals}, {"constraints", g.Constraints}} {
		for i, s := range l.items {
			if strings.TrimSpace(s) == "" {
				return &codec.FieldError{Path: fmt.Sprintf("%s[%d]", l.field, i), Err: fmt.Errorf("empty: say it in words, or leave the entry out")}
			}
		}
	}
	if !g.Success.AllChecksPass && len(g.Success.Checks) == 0 {
		return &codec.FieldError{Path: "success", Err: fmt.Errorf("say when the goal holds: all_checks_pass or a list of checks")}
	}
	if err := g.CheckEnvironment(spec); err != nil {
		return err
	}
	if g.ExpiresAt != "" {
		if _, err := state.ParseTime(g.ExpiresAt); err != nil {
			return &codec.FieldError{Path: "expires_at", Err: err}
		}
	}
	if err := strategy.ValidateLenses(g.Lenses, "lenses"); err != nil {
		return err
	}
	if c := g.contradiction(); c != "" {
		return &codec.FieldError{Path: "non_goals", Err: fmt.Errorf("%q is both an objective and a non-goal", c)}
	}
	for i, d := range g.Commitments {
		if err := d.Validate(); err != nil {
			return prefixed(fmt.Sprintf("commitments[%d]", i), err)
		}
		if slices.IndexFunc(g.Commitments, func(x commitment.Declaration) bool { return x.ID == d.ID }) != i {
			return &codec.FieldError{Path: fmt.Sprintf("commitments[%d].id", i), Err: fmt.Errorf("commitment %q is declared twice", d.ID)}
		}
		for j, c := range d.Checks {
			if spec != nil && !hasCheck(spec, c) {
				return &codec.FieldError{Path: fmt.Sprintf("commitments[%d].checks[%d]", i, j), Err: fmt.Errorf("no check %q in the environment", c)}
			}
		}
	}
	return nil
}

// CheckEnvironment checks what the goal needs of an environment it runs
// in: every check its success condition names. (An environment amended
// under a running goal may drop a check a standing commitment keeps: the
// commitment's scope narrows, or it is abandoned, when the amendment is
// accepted.)
func (g *Goal) CheckEnvironment(spec *world.Spec) error {
	for i, c := range g.Success.Checks {
		if spec != nil && !hasCheck(spec, c) {
			return &codec.FieldError{Path: fmt.Sprintf("success.checks[%d]", i), Err: fmt.Errorf("no check %q in the environment", c)}
		}
	}
	return nil
}

func hasCheck(spec *world.Spec, id string) bool {
	return slices.ContainsFunc(spec.Checks, func(k world.Check) bool { return k.ID == id })
}

// prefixed puts a declaration's field error under its place in the goal.
func prefixed(at string, err error) error {
	var fe *codec.FieldError
	if errors.As(err, &fe) {
		return &codec.FieldError{Path: at + "." + fe.Path, Err: fe.Err}
	}
	return &codec.FieldError{Path: at, Err: err}
}

func (g *Goal) contradiction() string {
	for _, o := range g.Objectives {
		if slices.Contains(g.NonGoals, o) {
			return o
		}
	}
	return ""
}

// Registry returns the lens registry in force.
func (g *Goal) Registry() []strategy.Lens {
	if len(g.Lenses) > 0 {
		return g.Lenses
	}
	return strategy.DefaultLenses()
}

// Alignment is the result of checking a cycle against its intent.
type Alignment struct {
	Aligned bool     `json:"aligned"`
	Reasons []string `json:"reason_codes"`
}

// Align checks that the intent is present, consistent and unexpired at now.
// A cycle that is not aligned is blocked and asks for review; it does not
// guess what the intent should be.
func Align(g *Goal, now time.Time) Alignment {
	switch {
	case g == nil || g.Mission == "":
		return Alignment{Reasons: []string{"intent_missing"}}
	case g.contradiction() != "":
		return Alignment{Reasons: []string{"intent_contradictory"}}
	case g.ExpiresAt != "":
		exp, err := state.ParseTime(g.ExpiresAt)
		if err != nil || !now.Before(exp) {
			return Alignment{Reasons: []string{"intent_expired"}}
		}
	}
	return Alignment{Aligned: true, Reasons: []string{"intent_aligned"}}
}

// Satisfied reports whether the success condition holds in obs.
func Satisfied(g *Goal, obs world.Observation) bool {
	if g.Success.AllChecksPass {
		for _, c := range obs.Checks {
			if c.Status != world.CheckPass {
				return false
			}
		}
	}
	for _, id := range g.Success.Checks {
		if r, ok := obs.Check(id); !ok || r.Status != world.CheckPass {
			return false
		}
	}
	return true
}
