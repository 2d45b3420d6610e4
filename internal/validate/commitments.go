package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/event"
)

// This file is gate C's own reading of the commitment lifecycle beyond
// resumes: what a goal's standing commitments are, when they are due, and
// what may end, move or narrow them. Like judge.go it shares no code with
// the commitment or kernel packages: it follows the goal and the
// environment in force (pinned, then replaced by accepted amendments) and
// every lifecycle event, and re-derives each change from the recorded
// inputs of the cycle that made it (the clock, the observation, the wake
// signals the loop could accept).

// declarationView is a standing commitment as the goal declares it.
type declarationView struct {
	ID      string   `json:"id"`
	Checks  []string `json:"checks"`
	By      string   `json:"by"`
	Every   string   `json:"every"`
	MovedBy string   `json:"moved_by"`
}

type goalView struct {
	Commitments []declarationView `json:"commitments"`
}

type specChecksView struct {
	Checks []struct {
		ID string `json:"id"`
	} `json:"checks"`
}

// amendmentView is a proposed amendment as its cycle recorded it.
type amendmentView struct {
	Ref      string          `json:"ref"`
	Target   string          `json:"target"`
	Document json.RawMessage `json:"document"`
}

// commitmentJudge follows one run's commitments.
type commitmentJudge struct {
	run      string
	goal     goalView
	checks   []string
	proposed amendments
	bad      []string
	// counts of what was judged
	created, judged, moved, periods, scopes, wakes int
}

func newCommitmentJudge(run *Run) *commitmentJudge {
	j := &commitmentJudge{run: run.Name, proposed: amendments{}}
	for _, r := range run.Records {
		switch r.Event.Type {
		case event.GoalPinned:
			_ = decodeView(r.Event.Object, &j.goal)
		case event.SpecPinned:
			j.setSpec(r.Event.Object.Body)
		}
	}
	return j
}

func (j *commitmentJudge) setSpec(body []byte) {
	var sp specChecksView
	if json.Unmarshal(body, &sp) == nil {
		j.checks = j.checks[:0]
		for _, c := range sp.Checks {
			j.checks = append(j.checks, c.ID)
		}
	}
}

func (j *commitmentJudge) failf(seq int64, format string, args ...any) {
	j.bad = append(j.bad, fmt.Sprintf("%s cycle %d: ", j.run, seq)+fmt.Sprintf(format, args...))
}

// amendment follows the goal and environment in force through the
// amendments a cycle proposed and accepted.
func (j *commitmentJudge) amendment(r event.Record) {
	a, ok := j.proposed.accepted(r)
	switch {
	case !ok:
	case a.Target == "goal":
		j.goal = goalView{}
		_ = json.Unmarshal(a.Document, &j.goal)
	case a.Target == "environment":
		j.setSpec(a.Document)
	}
}

// amendments remembers the documents a run's cycles proposed as
// amendments, by the proposal's ref, to tell what an accepted one puts
// in force.
type amendments map[string]amendmentView

// accepted takes in one record: it remembers a proposal, and returns the
// amendment an acceptance puts in force (ok is false for any other
// record, or an acceptance of a proposal it never saw).
func (m amendments) accepted(r event.Record) (amendmentView, bool) {
	switch r.Event.Type {
	case event.AmendmentProposed:
		var a amendmentView
		if decodeView(r.Event.Object, &a) == nil {
			m[a.Ref] = a
		}
	case event.AmendmentAccepted:
		a, ok := m[string(r.Event.Refs["amendment"])]
		return a, ok
	}
	return amendmentView{}, false
}

func (j *commitmentJudge) declaration(id string) (declarationView, bool) {
	i := slices.IndexFunc(j.goal.Commitments, func(d declarationView) bool { return d.ID == id })
	if i < 0 {
		return declarationView{}, false
	}
	return j.goal.Commitments[i], true
}

// scope is what of a declaration the environment in force has.
func (j *commitmentJudge) scope(d declarationView) []string {
	var out []string
	for _, c := range d.Checks {
		if slices.Contains(j.checks, c) {
			out = append(out, c)
		}
	}
	return out
}

// judge re-derives one lifecycle change of a commitment from the cycle's
// recorded inputs. before is the commitment as its last event left it
// (ok false when this is its first).
func (j *commitmentJudge) judge(seq int64, typ event.Kind, reasons []string, before commitmentView, ok bool, after commitmentView, in wakeInputs) {
	if typ == event.CommitmentCreated {
		j.create(seq, after, in)
		return
	}
	if !ok {
		j.failf(seq, "commitment %s %s without having been created", after.ID, typ)
		return
	}
	has := func(r string) bool { return slices.Contains(reasons, r) }
	reached := func(t string) bool {
		tt, err := time.Parse(time.RFC3339, t)
		return t != "" && err == nil && !in.at.Before(tt)
	}
	passes := func(ids []string) bool {
		for _, id := range ids {
			if !in.observation.passes(id) {
				return false
			}
		}
		return len(ids) > 0
	}
	switch typ {
	case event.CommitmentExpired:
		if !reached(before.Deadline) {
			j.failf(seq, "commitment %s expired before its deadline %q", after.ID, before.Deadline)
		}
	case event.CommitmentCompleted:
		if before.Standing == "" {
			if !in.observation.passes(before.CheckID) {
				j.failf(seq, "commitment %s completed while its check %s does not pass", after.ID, before.CheckID)
			}
			return
		}
		j.judged++
		switch {
		case !reached(before.Deadline):
			j.failf(seq, "standing commitment %s completed before its deadline %q", after.ID, before.Deadline)
		case !passes(before.Scope):
			j.failf(seq, "standing commitment %s completed at its deadline while a check of %v does not pass", after.ID, before.Scope)
		}
	case event.CommitmentAbandoned:
		if before.Standing == "" {
			return
		}
		d, declared := j.declaration(before.Standing)
		switch {
		case has("deadline_passed_unmet"):
			j.judged++
			if !reached(before.Deadline) || passes(before.Scope) {
				j.failf(seq, "standing commitment %s abandoned as unmet, but its deadline %q has not come or its checks %v pass", after.ID, before.Deadline, before.Scope)
			}
		case has("check_removed"):
			if !declared || len(j.scope(d)) > 0 {
				j.failf(seq, "standing commitment %s abandoned for a removed check, but the environment in force still has %v", after.ID, j.scope(d))
			}
		case has("declaration_removed"):
			if declared {
				j.failf(seq, "standing commitment %s abandoned as undeclared, but the goal in force declares it", after.ID)
			}
		default:
			j.failf(seq, "standing commitment %s abandoned for no reason the gate knows (%v)", after.ID, reasons)
		}
	case event.CommitmentModified:
		j.modify(seq, before, after, in)
	}
}

// create checks a standing commitment taken up against the declaration in
// force.
func (j *commitmentJudge) create(seq int64, c commitmentView, in wakeInputs) {
	if c.Standing == "" {
		return
	}
	j.created++
	d, ok := j.declaration(c.Standing)
	if !ok {
		j.failf(seq, "standing commitment %s keeps %q, which the goal in force does not declare", c.ID, c.Standing)
		return
	}
	if !slices.Equal(c.Scope, j.scope(d)) {
		j.failf(seq, "standing commitment %s covers %v; the declaration in the environment in force is %v", c.ID, c.Scope, j.scope(d))
	}
	if !sameTime(c.Deadline, d.By) {
		j.failf(seq, "standing commitment %s has deadline %q; the goal declares %q", c.ID, c.Deadline, d.By)
	}
	if every, _ := time.ParseDuration(d.Every); int64(every/time.Second) != c.EverySeconds {
		j.failf(seq, "standing commitment %s looks every %ds; the goal declares %q", c.ID, c.EverySeconds, d.Every)
	}
}

// modify re-derives each field a Modify changed: a deadline from the
// signal the declaration names (or a redeclaration), the next look from
// the period that came due, the scope from the environment in force.
func (j *commitmentJudge) modify(seq int64, before, after commitmentView, in wakeInputs) {
	redeclared := after.DeclarationRef != before.DeclarationRef
	d, declared := j.declaration(before.Standing)
	if redeclared && !declared {
		j.failf(seq, "commitment %s redeclared from a declaration the goal in force does not have", after.ID)
	}
	if after.Deadline != before.Deadline {
		j.moved++
		signalled := slices.ContainsFunc(in.signals, func(s signalView) bool {
			if s.Source != "external_event" || before.MovedBy == "" || s.Ref != before.MovedBy {
				return false
			}
			var p struct {
				Deadline string `json:"deadline"`
			}
			if json.Unmarshal(s.Payload, &p) != nil {
				return false
			}
			t, err := time.Parse(time.RFC3339, p.Deadline)
			return err == nil && t.After(in.at) && sameTime(after.Deadline, p.Deadline)
		})
		if !signalled && !(redeclared && sameTime(after.Deadline, d.By)) {
			j.failf(seq, "commitment %s deadline moved from %q to %q without an accepted external_event %q asking for it", after.ID, before.Deadline, after.Deadline, before.MovedBy)
		}
	}
	if after.NextDue != before.NextDue && !redeclared {
		j.periods++
		due, err1 := time.Parse(time.RFC3339, before.NextDue)
		next, err2 := time.Parse(time.RFC3339, after.NextDue)
		step := time.Duration(before.EverySeconds) * time.Second
		switch {
		case err1 != nil || err2 != nil || step <= 0:
			j.failf(seq, "commitment %s next look changed from %q to %q without a period", after.ID, before.NextDue, after.NextDue)
		case in.at.Before(due):
			j.failf(seq, "commitment %s moved on from its period due at %s before it came (clock %s)", after.ID, before.NextDue, in.at.Format(time.RFC3339))
		case !next.After(in.at) || next.Sub(due)%step != 0 || next.Sub(in.at) > step:
			j.failf(seq, "commitment %s next look %s is not the first one after %s on its %s schedule", after.ID, after.NextDue, in.at.Format(time.RFC3339), step)
		}
	}
	if !slices.Equal(after.Scope, before.Scope) {
		j.scopes++
		if !declared || !slices.Equal(after.Scope, j.scope(d)) {
			j.failf(seq, "commitment %s scope changed to %v; the declaration in the environment in force is %v", after.ID, after.Scope, j.scope(d))
		}
	}
}

// due checks, after a cycle that evaluated commitments, that no live
// commitment was left past its time: a deadline or a period at or before
// the cycle's clock must have been dealt with in that cycle.
func (j *commitmentJudge) due(seq int64, live map[string]commitmentView, at time.Time) {
	for _, id := range sortedKeys(live) {
		c := live[id]
		for _, t := range []string{c.Deadline, c.NextDue} {
			if tt, err := time.Parse(time.RFC3339, t); err == nil && !at.Before(tt) {
				j.failf(seq, "commitment %s was due at %s and is still live, unjudged, after the cycle at %s", c.ID, t, at.Format(time.RFC3339))
			}
		}
	}
}

// wake checks that a resting run wakes by itself no later than its live
// commitments' next deadline or period: the next_wake of the cycle's
// checkpoint.
func (j *commitmentJudge) wake(seq int64, live map[string]commitmentView, at time.Time, c cycle) {
	if d := c.record.LoopDisposition.String(); d == "CONTINUE" || d == "STOPPED" || d == "FAULTED" {
		return
	}
	due := ""
	for _, id := range sortedKeys(live) {
		for _, t := range []string{live[id].Deadline, live[id].NextDue} {
			if tt, err := time.Parse(time.RFC3339, t); err == nil && tt.After(at) && (due == "" || t < due) {
				due = t
			}
		}
	}
	if due == "" {
		return
	}
	j.wakes++
	r, ok := c.findCheckpoint()
	var chk struct {
		NextWake *struct {
			At string `json:"at"`
		} `json:"next_wake"`
	}
	if !ok || decodeView(r.Event.Object, &chk) != nil {
		j.failf(seq, "no checkpoint record to read the next wake from")
		return
	}
	if chk.NextWake == nil || chk.NextWake.At == "" || chk.NextWake.At > due {
		got := "none"
		if chk.NextWake != nil && chk.NextWake.At != "" {
			got = chk.NextWake.At
		}
		j.failf(seq, "the run rests %s with a commitment due at %s, but wakes by itself at %s", c.record.LoopDisposition, due, got)
	}
}

// sameTime reports whether two RFC 3339 times are the same instant (both
// empty counts as the same).
func sameTime(a, b string) bool {
	if a == "" || b == "" {
		return a == b
	}
	ta, err1 := time.Parse(time.RFC3339, a)
	tb, err2 := time.Parse(time.RFC3339, b)
	return err1 == nil && err2 == nil && ta.Equal(tb)
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// summary says what the judge saw.
func (j *commitmentJudge) summary() string {
	return strings.Join([]string{
		fmt.Sprintf("%d standing commitments taken up as declared", j.created),
		fmt.Sprintf("%d judged at their deadline", j.judged),
		fmt.Sprintf("%d deadlines moved", j.moved),
		fmt.Sprintf("%d periods come due", j.periods),
		fmt.Sprintf("%d scope changes", j.scopes),
		fmt.Sprintf("%d resting cycles set to wake by a commitment's time", j.wakes),
	}, ", ")
}
