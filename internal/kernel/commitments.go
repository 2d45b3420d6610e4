package kernel

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// The commitments stage: live commitments' conditions evaluated and their
// transitions applied through the store's explicit API, before any new
// agenda; deferrals and suppressions lifted when their evidence changed;
// and work a governance boundary deferred or interrupted kept as a
// commitment. (Methods of work, agenda.go.)

// evaluateCommitments reconciles the goal's standing commitments with the
// store, evaluates live commitments' conditions and applies the
// transitions they call for through the store's explicit API.
func (b *work) evaluateCommitments() {
	if len(b.s.Commitments.Commitments) == 0 && len(b.s.Goal.Commitments) == 0 {
		return
	}
	checks := make([]string, 0, len(b.s.Spec.Checks))
	for _, c := range b.s.Spec.Checks {
		checks = append(checks, c.ID)
	}
	ctx := commitment.Context{Now: b.now, Observation: b.s.Environment, Signals: b.signals, Approvals: b.approvals,
		Declarations: b.s.Goal.Commitments, GoalRef: codec.MustRefOf(kindGoal, b.s.Goal), Checks: checks, CycleSeq: b.cycle}
	cands := commitment.Evaluate(b.s.Commitments, ctx)
	evRef := b.record(event.ConditionsEvaluated, "ceval", map[string]any{"candidates": nonNil(cands), "cycle_seq": b.cycle}, nil)
	for _, c := range cands {
		b.transition(c.Transition(b.at), map[string]codec.Ref{"evaluation": evRef})
	}
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// transition applies one commitment transition and records its lifecycle
// event. A conflict is a fault of the cycle, never a silent overwrite.
func (b *work) transition(t commitment.Transition, refs map[string]codec.Ref) {
	store, c, err := b.s.Commitments.Apply(t)
	if err != nil {
		b.fail(fmt.Errorf("commitment %s %s: %w", t.Kind, t.CommitmentID, err))
		return
	}
	b.s.Commitments = store
	reasons := []string{t.Reason}
	if t.Class != "" {
		reasons = append(reasons, t.Class)
	}
	ref := b.record(event.Commitment(lifecycleVerb(t.Kind)), "cmt", c, refs, reasons...)
	b.rec.CommitmentRefs = append(b.rec.CommitmentRefs, ref)
	switch {
	case t.Kind == commitment.Expire && c.ItemID != "":
		// An expired promise is not renewed on the spot: the item waits
		// for new evidence (a change to its target) before it is proposed
		// again.
		r, _ := b.s.Environment.Check(c.CheckID)
		b.suppress(state.Suppression{ItemID: c.ItemID, Reason: "commitment_expired", Since: b.at, EvidenceRef: string(r.TargetSHA256)})
	case t.Kind == commitment.Abandon && t.Reason == commitment.ReasonDeadlineUnmet:
		// Nor is a standing promise given up at its deadline: its failing
		// checks wait for new evidence too.
		for _, id := range c.Failing(b.s.Environment) {
			r, _ := b.s.Environment.Check(id)
			b.suppress(state.Suppression{ItemID: agenda.ItemID(id), Reason: "commitment_abandoned", Since: b.at, EvidenceRef: string(r.TargetSHA256)})
		}
	}
	if t.Kind == commitment.Resume {
		b.emit(event.CommitmentResumeAnnounced, nil, map[string]codec.Ref{"commitment": ref}, "explicit_resume")
	}
	if t.Kind == commitment.Resume || t.Kind == commitment.Expire || t.Due() {
		b.woken = append(b.woken, c.ID)
	}
}

func lifecycleVerb(k commitment.Kind) string {
	switch k {
	case commitment.Create:
		return "created"
	case commitment.Modify:
		return "modified"
	case commitment.Suspend:
		return "suspended"
	case commitment.Resume:
		return "resumed"
	case commitment.Complete:
		return "completed"
	case commitment.Expire:
		return "expired"
	}
	return "abandoned"
}

// liftDeferrals releases deferred items whose evidence has arrived.
func (b *work) liftDeferrals() {
	rs := &b.s.Run
	rs.Deferred = slices.DeleteFunc(rs.Deferred, func(d state.DeferredItem) bool {
		for _, e := range d.Evidence {
			if !b.s.Environment.EvidencePresent(e) {
				return false
			}
		}
		b.emit(event.DeferralLifted, nil, map[string]codec.Ref{"decision": d.DecisionRef}, "evidence_arrived", d.ItemID)
		return true
	})
}

// liftSuppressions releases loop-guard suppressions when the evidence they
// were made under has changed, and drops suppressions of items whose
// check now passes.
func (b *work) liftSuppressions() {
	rs := &b.s.Run
	rs.Suppressed = slices.DeleteFunc(rs.Suppressed, func(sp state.Suppression) bool {
		checkID := strings.TrimPrefix(sp.ItemID, "check:")
		r, ok := b.s.Environment.Check(checkID)
		switch {
		case !ok || r.Status == world.CheckPass:
			b.emit(event.SuppressionLifted, nil, nil, "check_passes", sp.ItemID)
			return true
		case sp.EvidenceRef != "" && string(r.TargetSHA256) != sp.EvidenceRef:
			b.emit(event.SuppressionLifted, nil, nil, "new_evidence", sp.ItemID)
			return true
		case b.wokenAfterDenial(sp):
			b.emit(event.SuppressionLifted, nil, nil, "wake_after_denial", sp.ItemID)
			return true
		}
		return false
	})
}

// deferItem keeps deferred work: as a commitment suspended until the
// evidence arrives (policy "sleep"), or as a deferred item ("defer").
// Promotion to a commitment is explicit and recorded.
func (b *work) deferItem(d governance.Decision, decRef codec.Ref, commitmentID string) {
	rs := &b.s.Run
	pol := b.s.Contract.Policy.Defaults()
	wake := &commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: d.MissingEvidence[0]}
	if pol.DeferTo == "defer" {
		rs.Deferred = append(rs.Deferred, state.DeferredItem{ItemID: b.item, Evidence: d.MissingEvidence, Reason: "evidence_missing", Since: b.at, DecisionRef: decRef})
		slices.SortFunc(rs.Deferred, func(a, c state.DeferredItem) int { return strings.Compare(a.ItemID, c.ItemID) })
		b.emit(event.WorkDeferred, nil, map[string]codec.Ref{"decision": decRef}, "evidence_missing")
		return
	}
	if b.interrupt(commitmentID, "evidence_missing", wake, decRef) {
		return
	}
	c := commitment.Commitment{
		ID: commitment.NewID(b.item, b.cycle), Status: commitment.Suspended, ItemID: b.item, CheckID: b.check.ID, Target: b.check.Path,
		Summary: b.check.Summary, Wake: wake, ExitOnCheckPass: true,
		Origin: commitment.Origin{Kind: "PROMOTE_TO_COMMITMENT", CycleSeq: b.cycle, ResolutionRef: b.resRef, DecisionRef: decRef},
	}
	if pol.CommitmentDeadlineSeconds > 0 {
		c.Deadline = state.FormatTime(b.now.Add(time.Duration(pol.CommitmentDeadlineSeconds) * time.Second))
	}
	promo := map[string]any{"kind": "PROMOTE_TO_COMMITMENT", "item_id": b.item, "commitment_id": c.ID, "agenda_resolution_ref": b.resRef, "decision_ref": decRef,
		"policy": "defer_to_sleep", "cycle_seq": b.cycle}
	pref := b.record(event.PromotionRecorded, "promo", promo, map[string]codec.Ref{"resolution": b.resRef}, "PROMOTE_TO_COMMITMENT")
	b.transition(commitment.Transition{Kind: commitment.Create, New: &c, Reason: "promoted_deferred_work", At: b.at}, map[string]codec.Ref{"promotion": pref})
}

// interrupt suspends the live, active commitment whose work met a
// governance boundary (a deferral for evidence, an escalation to a person)
// until wake holds, and reports whether there was one. A standing
// commitment remembers the item it is held on.
func (b *work) interrupt(commitmentID, reason string, wake *commitment.Condition, decRef codec.Ref) bool {
	c, ok := b.s.Commitments.Get(commitmentID)
	if commitmentID == "" || !ok || c.Status != commitment.Active {
		return false
	}
	t := commitment.Transition{Kind: commitment.Suspend, CommitmentID: c.ID, ExpectedVersion: c.Version, Reason: reason,
		Class: commitment.GovernanceBoundary, At: b.at, Wake: wake}
	if c.Standing != "" {
		t.Item = b.item
	}
	b.transition(t, map[string]codec.Ref{"decision": decRef})
	return true
}
