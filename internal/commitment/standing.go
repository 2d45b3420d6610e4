package commitment

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Standing commitments are promises the goal makes for the loop, not ones
// the loop makes itself: "keep these checks passing, and look at them every
// 6 hours", "have these checks passing by Friday". The goal declares them
// (Declaration); the first cycle that evaluates commitments takes each one
// up as a live commitment (commitment.created, origin GOAL_DECLARED), and
// from then on the store follows them:
//
//   - taken up: a declaration the store has not taken up yet (Store.Declared
//     keeps the ref of every version taken up, so a kept or abandoned
//     promise is not made again unless the goal declares it anew);
//   - modified: an accepted amendment narrows the scope (a check removed
//     from the environment; reason scope_narrowed, class contract_changed)
//     or redeclares it (declaration_changed); the external_event signal its
//     declaration names moves the deadline (deadline_moved); a period comes
//     due and the next look is set (period_due);
//   - suspended and resumed: its work meets a governance boundary (an
//     approval to wait for, evidence to wait for; the kernel suspends it,
//     class governance_boundary) and resumes when that wake condition holds;
//   - completed: at its deadline every check of its scope passes
//     (deadline_met);
//   - abandoned: at its deadline a check still fails (deadline_passed_unmet,
//     class terminal_exit_condition), every check of its scope is gone from
//     the environment (check_removed) or the goal no longer declares it
//     (declaration_removed), both class contract_changed.
//
// Every change is a candidate of Evaluate, applied through Apply with the
// expected version, and recorded as a lifecycle event.

// Reason codes of the standing commitments' transitions.
const (
	ReasonDeclared           = "declared_by_goal"
	ReasonDeclarationRemoved = "declaration_removed"
	ReasonDeclarationChanged = "declaration_changed"
	ReasonCheckRemoved       = "check_removed"
	ReasonScopeNarrowed      = "scope_narrowed"
	ReasonScopeChanged       = "scope_changed"
	ReasonDeadlineMoved      = "deadline_moved"
	ReasonDeadlineMet        = "deadline_met"
	ReasonDeadlineUnmet      = "deadline_passed_unmet"
	ReasonPeriodDue          = "period_due"
)

// Due reports whether the transition is a standing commitment's time
// coming: its deadline judged, or its period due.
func (t Transition) Due() bool {
	return t.Reason == ReasonDeadlineMet || t.Reason == ReasonDeadlineUnmet || t.Reason == ReasonPeriodDue
}

// Declaration is a standing commitment as the goal declares it.
type Declaration struct {
	// ID names the declaration within the goal.
	ID string `json:"id"`
	// Summary says what is promised, for people.
	Summary string `json:"summary,omitempty"`
	// Checks are the environment checks the commitment promises to keep
	// passing.
	Checks []string `json:"checks"`
	// By is the deadline (RFC 3339) at which the promise is judged.
	By string `json:"by,omitempty"`
	// Every is the period (a duration such as "24h") at which the loop
	// looks at the checks even when nothing else wakes it.
	Every string `json:"every,omitempty"`
	// MovedBy is the ref of the external_event wake signal whose payload
	// {"deadline": "<RFC 3339>"} moves the deadline.
	MovedBy string `json:"moved_by,omitempty"`
}

// MinEvery is the shortest period a declaration may ask for: a recurring
// look is a cycle, and a run is not a polling loop.
const MinEvery = time.Minute

// Validate checks a declaration on its own. Errors are *codec.FieldError
// with paths relative to the declaration; the goal checks that the ids are
// unique and that the checks exist in the environment.
func (d Declaration) Validate() error {
	if !world.ValidID(d.ID) {
		return &codec.FieldError{Path: "id", Err: fmt.Errorf("%q is not a valid id (lower-case letters, digits, . _ -)", d.ID)}
	}
	if len(d.Checks) == 0 {
		return &codec.FieldError{Path: "checks", Err: errors.New("name at least one check the commitment keeps passing")}
	}
	for i, c := range d.Checks {
		if !world.ValidID(c) {
			return &codec.FieldError{Path: fmt.Sprintf("checks[%d]", i), Err: fmt.Errorf("%q is not a valid check id", c)}
		}
		if slices.Index(d.Checks, c) != i {
			return &codec.FieldError{Path: fmt.Sprintf("checks[%d]", i), Err: fmt.Errorf("check %q is listed twice", c)}
		}
	}
	if d.By == "" && d.Every == "" {
		return &codec.FieldError{Path: "by", Err: errors.New("say when the promise is kept: a deadline (by), a period (every), or both")}
	}
	if d.By != "" {
		if _, err := state.ParseTime(d.By); err != nil {
			return &codec.FieldError{Path: "by", Err: err}
		}
	}
	if d.Every != "" {
		if _, err := ParseEvery(d.Every); err != nil {
			return &codec.FieldError{Path: "every", Err: err}
		}
	}
	if d.MovedBy != "" {
		if d.By == "" {
			return &codec.FieldError{Path: "moved_by", Err: errors.New("only a deadline can be moved: give by as well")}
		}
		if !world.ValidID(d.MovedBy) {
			return &codec.FieldError{Path: "moved_by", Err: fmt.Errorf("%q is not a valid signal ref (lower-case letters, digits, . _ -)", d.MovedBy)}
		}
	}
	return nil
}

// ParseEvery reads a declaration's period: a Go duration of whole seconds,
// at least MinEvery.
func ParseEvery(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, fmt.Errorf("%q is not a duration such as 30m, 6h or 24h", s)
	case d < MinEvery:
		return 0, fmt.Errorf("%s is shorter than %s: a recurring look costs a cycle", s, MinEvery)
	case d%time.Second != 0:
		return 0, fmt.Errorf("%s is not a whole number of seconds", s)
	}
	return d, nil
}

// Ref is the declaration's content ref: the version of it a commitment
// keeps.
func (d Declaration) Ref() codec.Ref { return codec.MustRefOf("decl", d) }

// deadline is the declared deadline in the store's form ("" for none).
func (d Declaration) deadline() string {
	if d.By == "" {
		return ""
	}
	t, err := state.ParseTime(d.By)
	if err != nil {
		return ""
	}
	return state.FormatTime(t)
}

func (d Declaration) everySeconds() int64 {
	if d.Every == "" {
		return 0
	}
	e, err := ParseEvery(d.Every)
	if err != nil {
		return 0
	}
	return int64(e / time.Second)
}

// summary is the declared summary, or one made from the declaration.
func (d Declaration) summary() string {
	if d.Summary != "" {
		return d.Summary
	}
	s := "keep " + strings.Join(d.Checks, ", ") + " passing"
	if d.Every != "" {
		s += ", looked at every " + d.Every
	}
	if d.By != "" {
		s += ", by " + d.By
	}
	return s
}

// scopeIn is the part of the declared checks the environment has.
func (d Declaration) scopeIn(checks []string) []string {
	var out []string
	for _, c := range d.Checks {
		if slices.Contains(checks, c) {
			out = append(out, c)
		}
	}
	return out
}

// nextDue is the first time after now on the schedule every seconds apart
// that starts at from.
func nextDue(from time.Time, every int64, now time.Time) string {
	step := time.Duration(every) * time.Second
	t := from.Add(step)
	if !t.After(now) {
		t = t.Add(now.Sub(t).Truncate(step) + step)
	}
	return state.FormatTime(t)
}

// reconcile lines the standing commitments up with what the goal declares
// and the environment holds now: take up new declarations, follow changed
// ones, narrow a scope whose checks left the environment, and abandon what
// is no longer declared or has nothing left to keep.
func reconcile(s Store, ctx Context) []Candidate {
	var out []Candidate
	live := map[string]Commitment{}
	for _, c := range s.Commitments {
		if c.Standing != "" {
			live[c.Standing] = c
		}
	}
	for _, d := range ctx.Declarations {
		if _, ok := live[d.ID]; ok || slices.Contains(s.Declared, d.Ref()) {
			continue
		}
		scope := d.scopeIn(ctx.Checks)
		if len(scope) == 0 || d.Validate() != nil {
			continue // nothing the environment has to keep
		}
		c := Commitment{
			ID: NewID("goal:"+d.ID, ctx.CycleSeq), Status: Active, Summary: d.summary(), Standing: d.ID, DeclarationRef: d.Ref(),
			Scope: scope, Deadline: d.deadline(), EverySeconds: d.everySeconds(), MovedBy: d.MovedBy,
			Origin: Origin{Kind: OriginDeclared, CycleSeq: ctx.CycleSeq, GoalRef: ctx.GoalRef},
		}
		if c.EverySeconds > 0 {
			c.NextDue = nextDue(ctx.Now, c.EverySeconds, ctx.Now)
		}
		out = append(out, Candidate{Kind: Create, Reason: ReasonDeclared, New: &c})
	}
	for _, c := range s.Commitments {
		if c.Standing == "" {
			continue
		}
		cand := Candidate{CommitmentID: c.ID, ExpectedVersion: c.Version}
		i := slices.IndexFunc(ctx.Declarations, func(d Declaration) bool { return d.ID == c.Standing })
		if i < 0 {
			cand.Kind, cand.Reason, cand.Class = Abandon, ReasonDeclarationRemoved, ContractChanged
			out = append(out, cand)
			continue
		}
		d := ctx.Declarations[i]
		scope := d.scopeIn(ctx.Checks)
		if len(scope) == 0 {
			cand.Kind, cand.Reason, cand.Class = Abandon, ReasonCheckRemoved, ContractChanged
			out = append(out, cand)
			continue
		}
		ch := &Change{}
		reason := ""
		if ref := d.Ref(); ref != c.DeclarationRef {
			deadline, every, summary := d.deadline(), d.everySeconds(), d.summary()
			ch.Deadline, ch.EverySeconds, ch.MovedBy, ch.Summary, ch.DeclarationRef = &deadline, &every, &d.MovedBy, &summary, &ref
			if every != c.EverySeconds {
				due := ""
				if every > 0 {
					due = nextDue(ctx.Now, every, ctx.Now)
				}
				ch.NextDue = &due
			}
			reason = ReasonDeclarationChanged
		}
		if !slices.Equal(scope, c.Scope) {
			ch.Scope = scope
			switch {
			case reason != "":
			case subset(scope, c.Scope):
				reason = ReasonScopeNarrowed
			default:
				reason = ReasonScopeChanged
			}
		}
		if reason == "" {
			continue
		}
		cand.Kind, cand.Reason, cand.Class, cand.Change = Modify, reason, ContractChanged, ch
		out = append(out, cand)
	}
	return out
}

func subset(a, b []string) bool {
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// standingCondition is the transition a standing commitment's conditions
// call for now: a signal moving its deadline, the deadline itself, its
// wake condition, its period, in that order.
func standingCondition(c Commitment, ctx Context) (Candidate, bool) {
	cand := Candidate{CommitmentID: c.ID, ExpectedVersion: c.Version}
	if moved, ok := movedDeadline(c, ctx); ok {
		cand.Kind, cand.Reason, cand.Change = Modify, ReasonDeadlineMoved, &Change{Deadline: &moved}
		return cand, true
	}
	switch {
	case c.Deadline != "" && deadlinePassed(c.Deadline, ctx.Now):
		if scopePasses(ctx.Observation, c.Scope) {
			cand.Kind, cand.Reason = Complete, ReasonDeadlineMet
		} else {
			cand.Kind, cand.Reason, cand.Class = Abandon, ReasonDeadlineUnmet, TerminalExit
		}
	case c.Status == Suspended && c.Wake != nil && Matched(*c.Wake, ctx):
		cand.Kind, cand.Reason = Resume, "wake_condition_matched"
	case c.EverySeconds > 0 && c.NextDue != "" && deadlinePassed(c.NextDue, ctx.Now):
		due, _ := state.ParseTime(c.NextDue)
		next := nextDue(due, c.EverySeconds, ctx.Now)
		cand.Kind, cand.Reason, cand.Change = Modify, ReasonPeriodDue, &Change{NextDue: &next}
	default:
		return cand, false
	}
	return cand, true
}

// movedDeadline is the deadline the last accepted signal naming the
// commitment's MovedBy asks for, when it is a valid time after now and not
// the deadline already set. A signal cannot move a deadline into the past.
func movedDeadline(c Commitment, ctx Context) (string, bool) {
	if c.MovedBy == "" || c.Deadline == "" {
		return "", false
	}
	moved := ""
	for _, w := range ctx.Signals {
		if w.Source != "external_event" || w.Ref != c.MovedBy {
			continue
		}
		if t, ok := payloadDeadline(w.Payload); ok && t.After(ctx.Now) {
			moved = state.FormatTime(t)
		}
	}
	return moved, moved != "" && moved != c.Deadline
}

// payloadDeadline reads {"deadline": "<RFC 3339>"} from a wake payload.
func payloadDeadline(p *codec.Value) (time.Time, bool) {
	if p == nil || p.Kind != codec.KindObject {
		return time.Time{}, false
	}
	for _, m := range p.Obj {
		if m.Key == "deadline" && m.Val.Kind == codec.KindString {
			t, err := state.ParseTime(m.Val.Str)
			return t, err == nil
		}
	}
	return time.Time{}, false
}

// scopePasses reports whether every check of a scope passes in obs (a
// check the observation does not have does not pass).
func scopePasses(obs world.Observation, scope []string) bool {
	for _, id := range scope {
		if !checkPasses(obs, id) {
			return false
		}
	}
	return len(scope) > 0
}

// Due is the earliest time after now at which one of the live commitments
// is due to be looked at (its deadline or its next period), "" for none:
// the time the loop wakes by itself (wake source commitment_deadline_due).
// A time already past is not a wake: the cycle that reaches the
// commitments stage deals with it.
func (s Store) Due(now time.Time) string {
	due, at := "", state.FormatTime(now)
	for _, c := range s.Commitments {
		for _, t := range []string{c.Deadline, c.NextDue} {
			if t > at && (due == "" || t < due) {
				due = t
			}
		}
	}
	return due
}

// Failing lists the checks of a live, active standing commitment's scope
// that are failing in obs: the work it puts on the agenda.
func (c Commitment) Failing(obs world.Observation) []string {
	var out []string
	for _, id := range c.Scope {
		if r, ok := obs.Check(id); ok && r.Status == world.CheckFail {
			out = append(out, id)
		}
	}
	return out
}
