package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// An effect recovery cannot classify (the world says it cannot tell
// whether it happened) waits for a person as an incident: its own ref,
// the idempotency key, the world's reason and each path's hash in the
// intent and now. A person answers with acr approve (run it again), acr
// deny (set the item aside), or acr resolve: ran (recorded as done by that
// person; nothing runs, and the item is set aside until its check passes
// or its evidence changes) or not_ran (recorded; the item goes back to the
// agenda, and doing it again goes through governance as usual).

// Uncertainty is what the world showed about an effect whose outcome
// could not be told.
type Uncertainty struct {
	// Reason is the world's own account of why it cannot tell.
	Reason string
	// Evidence is each path the action may touch: its hash in the intent
	// and now.
	Evidence []world.PathEvidence
}

// evidencer is a World that can show what an uncertain effect's paths
// hold now against its intent (sandbox.World.Evidence).
type evidencer interface {
	Evidence(in world.Intent) ([]world.PathEvidence, error)
}

// uncertainty gathers what the world shows about an effect it could not
// classify (err) from the intent recorded for it (nil when none is at
// hand). The evidence is never nil, so that the incident records a list.
func (d *Driver) uncertainty(err error, in *world.Intent) *Uncertainty {
	u := &Uncertainty{Reason: err.Error(), Evidence: []world.PathEvidence{}}
	if in != nil {
		// The world's error names the key, which the incident records.
		u.Reason = strings.TrimPrefix(u.Reason, "commit "+in.Key+": ")
	}
	if ev, ok := d.World.(evidencer); ok && in != nil {
		paths, eerr := ev.Evidence(*in)
		if eerr != nil {
			u.Reason += fmt.Sprintf(" (what the paths hold now could not be read: %v)", eerr)
		} else if paths != nil {
			u.Evidence = paths
		}
	}
	return u
}

// incident records an uncertain effect as an incident when the world
// showed what it could (u is nil only when replaying a cycle recorded
// before incidents): it fills in p's ref, key, cause and evidence and
// returns the object the approval request carries.
func (b *settler) incident(e *Effect, u *Uncertainty, p *state.PendingApproval) *event.Object {
	if u == nil {
		return nil
	}
	inc := event.Incident{Schema: event.IncidentSchema, Key: e.Key, ActionRef: e.ActionRef, CycleSeq: b.cycle, Reason: u.Reason,
		Evidence: slices.Clone(u.Evidence)}
	obj, ref := b.object("unc", inc)
	p.Ref, p.Key, p.Cause, p.Evidence = ref, e.Key, u.Reason, inc.Evidence
	return obj
}

// recordedIncident reads back the incident a recorded cycle's approval
// request carries (nil when it has none).
func recordedIncident(recs []event.Record) *Uncertainty {
	for _, r := range recs {
		if r.Event.Type == event.ApprovalRequested && r.Event.Object != nil && r.Event.Object.Ref.Kind() == "unc" {
			var inc event.Incident
			if r.Event.Object.Decode(&inc) == nil {
				return &Uncertainty{Reason: inc.Reason, Evidence: inc.Evidence}
			}
		}
	}
	return nil
}

// resolveIncident records a person's word on an uncertain effect (the
// request p, the action it was) and acts on it without touching the
// world: ran sets the item aside as done, not_ran leaves it to the
// agenda. Either way the next cycle weighs the agenda again.
func (b *governor) resolveIncident(p state.PendingApproval, action world.Action) {
	a := p.Resolution
	res := event.Resolution{Schema: event.ResolutionSchema, Incident: p.Ref, Key: p.Key, ActionRef: action.Ref(), Verdict: a.Verdict,
		By: a.By, Reason: a.Reason, CycleSeq: b.cycle}
	ref := b.record(event.EffectResolved, "eres", res, map[string]codec.Ref{"incident": p.Ref, "action": res.ActionRef}, "verdict_"+a.Verdict)
	if a.Verdict == state.VerdictRan {
		b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "effect_resolved_as_done", Since: b.at, EvidenceRef: b.evidence})
	}
	b.move(controller.NoCycle, "effect_resolved_by_operator", ref)
	b.conclude(state.Continue, []string{"effect_resolved", "verdict_" + a.Verdict})
}
