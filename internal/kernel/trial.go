package kernel

import (
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// This file is governance's seam to a git world's trial of a command fix.
// A command fix of a git world is tried before governance rules on it:
// govern stops after the plan (Begin, or Answer, returns a Pending with
// Try set), the driver tries the fix in a throwaway work tree at the
// branch head (Trier, the only I/O involved), and Tried records what the
// fix did and goes on to the governance boundary, which rules on the
// paths the fix really changed. Both halves are pure; replay and recovery
// hand Tried the recorded trial, so a recorded cycle is never tried again.

// trying is a cycle stopped before governance for its command fix to be
// tried.
type trying struct {
	action       world.Action
	commitmentID string
	fitRef       codec.Ref
	tried        bool
}

// needsTrial says whether an action request is tried before governance
// rules on it: a command fix of a git world (the spec has git) that is
// not the action of a person's answer (an approval carries the trial the
// person saw; an answer written before trials were recorded is ruled on
// as it was then), and that governance would let run or put to a person
// on its declared touches. What governance refuses, defers or finds
// nothing to do for is ruled on at once: no program runs, even in a
// throwaway work tree, before governance has said it may.
func (b *governor) needsTrial(action world.Action, approval *state.Approval) bool {
	if approval != nil || b.s.Spec.Git == nil || !b.s.Operations.Of(action.Operation).Command {
		return false
	}
	switch governance.Decide(&b.s.Contract, &b.s.Spec, b.request(action, approval)).Verdict {
	case governance.Execute, governance.Escalate:
		return true
	}
	return false
}

// Tried goes on with a cycle that stopped for its command fix to be tried
// (Pending.Try), given what the trial did. It records the trial (the
// ActionTried event, with the changed paths the action's declared paths
// do not cover) and governance rules on it: a failed trial is the fix
// failing (refused, trial_failed, and counted against the fix); a change
// outside the declared touches is refused (changed_outside_touches)
// before anyone is asked; otherwise the contract's rules rule on the
// paths the trial changed, and an approval it needs carries the trial.
// A nil trial is a cycle that was not tried (a world without trials, or a
// ledger written before trials were recorded): governance rules on the
// declared touches, as it did then. Like Begin it is pure.
func Tried(p *Pending, t *world.CommandTried) (*Pending, error) {
	b := p.b
	tr := b.trying
	if tr == nil || tr.tried || p.Try == nil {
		return nil, fmt.Errorf("cycle %d did not stop for a trial", b.cycle)
	}
	tr.tried = true
	var trial *world.GitTrial
	failure := ""
	if t != nil {
		rec := *t
		rec.Changed = nonNil(slices.Clone(rec.Changed))
		slices.Sort(rec.Changed)
		rec.Changed = slices.Compact(rec.Changed)
		rec.Outside = world.Outside(b.s.Operations.Paths(tr.action), rec.Changed)
		reasons := []string{"trial_recorded_before_governance"}
		switch {
		case rec.Failure != "":
			reasons = append(reasons, "trial_failed")
		case len(rec.Outside) > 0:
			reasons = append(reasons, "changed_outside_touches")
		}
		b.record(event.ActionTried, "tried", rec, map[string]codec.Ref{"action": tr.action.Ref()}, reasons...)
		gt := rec.Trial()
		trial, failure = &gt, rec.Failure
	}
	b.rule(tr.action, nil, tr.commitmentID, tr.fitRef, &tried{trial: trial, failure: failure})
	return b.pending()
}

// tried is a cycle's own trial of its action, as governance takes it.
type tried struct {
	trial   *world.GitTrial
	failure string
}

// triedRecorded hands a replayed cycle that stopped to try its command fix
// the trial its ledger records, at the place the cycle records it: right
// after the events derived so far. A ledger that goes on there with
// another event was written before trials were recorded (the cycle was
// ruled on its declared touches, untried). ok is false when the ledger
// ends there: the cycle's first batch never became durable.
func triedRecorded(p *Pending, recs []event.Record) (*Pending, bool, error) {
	for p.Try != nil {
		n := len(p.Events)
		if len(recs) <= n {
			return p, false, nil
		}
		var t *world.CommandTried
		if recs[n].Event.Type == event.ActionTried && recs[n].Event.Object != nil {
			t = new(world.CommandTried)
			if err := recs[n].Event.Object.Decode(t); err != nil {
				return p, false, fmt.Errorf("recorded trial: %w", err)
			}
		}
		var err error
		if p, err = Tried(p, t); err != nil {
			return p, false, err
		}
	}
	return p, true, nil
}
