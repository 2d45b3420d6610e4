package kernel

import (
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// answer consumes one approval or denial from the inbox. The rules
// (docs/operations.md, "Answering an approval request"):
//
//   - an answer is consumed once for the life of the run: its id is kept in
//     RunState.AnswersConsumed, and a copy put back is ignored as a replay;
//   - it answers exactly the request it names, the action's ref and the
//     cycle that asked: the same action asked about again later is a new
//     request, which an old answer does not match;
//   - of several answers to one request consumed together, the last counts
//     (an answer another one replaces comes first, then inbox order), and
//     each one is recorded: approval.resolved for the one that counts,
//     approval.ignored (replaced_by_later_answer, naming it) for every
//     other, so that a request is resolved once however many people raced
//     to answer it. (Runs before ledger format 3 resolved every answer no
//     other replaced explicitly, the later marked replaces_earlier_answer,
//     and replay keeps that.);
//   - an answer to a request answered by an earlier cycle is ignored
//     (request_already_answered): the first answer consumed is final;
//   - only a person answers: one signed by a role of the loop is refused;
//   - when the contract lists approvers, an answer counts only with a
//     valid signature by a listed key whose id is its by, of an approver
//     the request's rule lets answer (checkAnswer); one that does not is
//     recorded approval.ignored with the reason and the signer, and
//     leaves the request open. A rule that needs several approvers
//     records each signed approval (approval.recorded) until the last it
//     needs resolves the request; one denial resolves it.
//
// replaced maps the id of each answer among the cycle's inbox items that a
// later answer replaces to the ref of that later answer; checks holds each
// answer's signature check.
func (b *builder) answer(it inbox.Item, refs map[string]codec.Ref, replaced map[string]codec.Ref, checks map[string]answerCheck) {
	rs := &b.s.Run
	a := *it.Approval
	if slices.Contains(rs.AnswersConsumed, it.ID) {
		b.emit(event.ApprovalIgnored, nil, refs, "answer_already_consumed")
		return
	}
	rs.AnswersConsumed = append(rs.AnswersConsumed, it.ID)
	if n := len(rs.AnswersConsumed) - state.MaxAnswersConsumed; n > 0 {
		rs.AnswersConsumed = slices.Delete(rs.AnswersConsumed, 0, n)
	}
	if i := slices.IndexFunc(rs.PendingAmendments, func(p state.PendingAmendment) bool { return p.Ref == a.ActionRef }); i >= 0 {
		if state.Resolves(a.Verdict) {
			b.emit(event.ApprovalIgnored, nil, refs, "not_an_uncertain_effect")
			return
		}
		b.answerAmendment(i, a, refs, replaced[it.ID], checks[it.ID])
		return
	}
	// The request still open, or answered earlier in this same cycle.
	open := func(p state.PendingApproval) bool {
		return p.Ref == a.ActionRef && (p.Resolution == nil || b.answeredNow(p.Resolution.ID))
	}
	i := slices.IndexFunc(rs.PendingApprovals, func(p state.PendingApproval) bool { return open(p) && p.CycleSeq == a.RequestCycle })
	switch {
	case i < 0 && rs.Format() >= state.LedgerFormat3 && slices.ContainsFunc(rs.PendingApprovals, func(p state.PendingApproval) bool {
		return p.Ref == a.ActionRef && p.CycleSeq == a.RequestCycle && p.Resolution != nil
	}):
		b.emit(event.ApprovalIgnored, nil, refs, "request_already_answered")
		return
	case i < 0 && slices.ContainsFunc(rs.PendingApprovals, open):
		b.emit(event.ApprovalIgnored, nil, refs, "answers_another_request")
		return
	case i < 0:
		b.emit(event.ApprovalIgnored, nil, refs, "no_pending_approval_for_ref")
		return
	case state.Resolves(a.Verdict) && !rs.PendingApprovals[i].Incident():
		// ran and not_ran say whether an uncertain effect happened; no
		// other request takes them.
		b.emit(event.ApprovalIgnored, nil, refs, "not_an_uncertain_effect")
		return
	}
	if role, ok := loopRole(a.By); ok {
		// Only a person answers an approval: one signed by a role of
		// the loop is the loop approving its own plan.
		b.guard.Author(a.ActionRef, controller.Distiller)
		b.refused(b.guard.ApprovePlan(a.ActionRef, role))
		b.emit(event.ApprovalIgnored, nil, refs, "self_approval_refused", "by_"+role.String())
		return
	}
	refs["action"] = a.ActionRef
	chk := checks[it.ID]
	if chk.why != "" {
		b.withSigner(event.ApprovalIgnored, chk.signer, refs, chk.why)
		return
	}
	if by, ok := replaced[it.ID]; ok {
		refs["replaced_by"] = by
		b.emit(event.ApprovalIgnored, nil, refs, "replaced_by_later_answer")
		return
	}
	p := &rs.PendingApprovals[i]
	if chk.need > 1 && p.Resolution != nil {
		// Resolved by another approver's answer earlier in this cycle.
		b.emit(event.ApprovalIgnored, nil, refs, "request_already_answered")
		return
	}
	if chk.need > 1 && a.Verdict == state.VerdictApprove {
		if slices.ContainsFunc(p.Approvals, func(s state.Signer) bool { return s.ID == chk.signer.ID }) {
			b.withSigner(event.ApprovalIgnored, chk.signer, refs, "approver_already_approved")
			return
		}
		p.Approvals = append(slices.Clone(p.Approvals), *chk.signer)
		if len(p.Approvals) < chk.need {
			b.record(event.ApprovalRecorded, kindSigner, chk.signer, refs, "verdict_approve", fmt.Sprintf("approvals_%d_of_%d", len(p.Approvals), chk.need))
			return
		}
	}
	reasons := []string{"verdict_" + a.Verdict}
	if prev := rs.PendingApprovals[i].Resolution; prev != nil {
		// Only before ledger format 3: one answer replaced another
		// resolved in this cycle.
		b.approvals = slices.DeleteFunc(b.approvals, func(x state.Approval) bool { return x.ID == prev.ID })
		reasons = append(reasons, "replaces_earlier_answer")
	}
	rs.PendingApprovals[i].Resolution = &a
	b.approvals = append(b.approvals, a)
	b.withSigner(event.ApprovalResolved, chk.signer, refs, reasons...)
}

// kindSigner is the ref kind of a signer recorded on an answer's event.
const kindSigner = "signer"

// answerCheck is what a cycle found of an answer's signature before
// consuming it: who signed it (nil for an unsigned or undecodable one),
// why it does not count ("" when it does, and always when the contract
// lists no approvers), and how many different approvers the request it
// answers needs.
type answerCheck struct {
	signer *state.Signer
	why    string
	need   int
}

// group is the answers to one request among which the last counts: all of
// them, or, for a request that needs several approvers, each approver's.
func (c answerCheck) group() string {
	if c.need > 1 && c.signer != nil {
		return c.signer.ID
	}
	return ""
}

// checkAnswers checks the signature of every answer among items against
// the contract the cycle began with (the cycle's own, whatever an
// amendment it accepts changes later in it).
func (b *builder) checkAnswers(items []inbox.Item) map[string]answerCheck {
	out := map[string]answerCheck{}
	for _, it := range items {
		if it.Kind == inbox.KindApproval {
			out[it.ID] = b.checkAnswer(it.Approval)
		}
	}
	return out
}

// checkAnswer checks one answer. When the contract lists approvers, the
// answer must be signed by a listed key whose id is its by (inbox.
// CheckSignature), of an approver the request's rule lets answer
// (approver_not_allowed otherwise); an amendment any approver answers.
func (b *builder) checkAnswer(a *state.Approval) answerCheck {
	c := &b.s.Contract
	if !c.Signed() {
		return answerCheck{need: 1}
	}
	signer, why := inbox.CheckSignature(b.s.Run.RunID, a, c.KeyOwner)
	ids, need := c.ApproverIDs(), 1
	if i := slices.IndexFunc(b.s.Run.PendingApprovals, func(p state.PendingApproval) bool {
		return p.Ref == a.ActionRef && p.CycleSeq == a.RequestCycle
	}); i >= 0 {
		var action world.Action
		if codec.DecodeValue(b.s.Run.PendingApprovals[i].Action, &action) == nil {
			ids, need = c.Answerers(b.s.Operations, action)
		}
	}
	if why == "" && !slices.Contains(ids, signer.ID) {
		why = "approver_not_allowed"
	}
	return answerCheck{signer: signer, why: why, need: need}
}

// withSigner emits an event about an answer or amendment, carrying its
// signer when a key could be read from its signature; a valid one is
// marked signed_by_approver.
func (b *builder) withSigner(typ event.Kind, signer *state.Signer, refs map[string]codec.Ref, reasons ...string) {
	if signer == nil {
		b.emit(typ, nil, refs, reasons...)
		return
	}
	if typ == event.ApprovalResolved || typ == event.AmendmentAccepted || (typ == event.AmendmentRefused && reasons[0] == "denied") {
		reasons = append(reasons, "signed_by_approver")
	}
	b.record(typ, kindSigner, signer, refs, reasons...)
}

// answeredNow reports whether the answer with this id resolved its request
// in the cycle being built (and so may still be replaced by a later one).
func (b *builder) answeredNow(id string) bool {
	return slices.ContainsFunc(b.approvals, func(x state.Approval) bool { return x.ID == id })
}

// replacedAnswers maps each answer among items that another answer among
// them replaces to the ref of the replacing answer. An answer signed by a
// role of the loop replaces nothing. From ledger format 3 on, every answer
// to a request that is not the one that counts for it (inbox.Answer: the
// last no other replaces) is replaced by that one, whether it names it or
// not; answers consumed before and answers signed by the loop take no
// part (they are ignored for what they are).
//
// An answer whose signature does not count (checks) takes no part either,
// and an answer to a request that needs several approvers competes only
// with the same approver's answers (answerCheck.group).
func replacedAnswers(items []inbox.Item, consumed []string, f state.LedgerFormat, checks map[string]answerCheck) map[string]codec.Ref {
	person := func(a *state.Approval) bool { _, loop := loopRole(a.By); return !loop }
	refOf := map[string]codec.Ref{}
	for _, it := range items {
		refOf[it.ID] = codec.NewRef(inboxKind(it.Kind), it.Body)
	}
	out := map[string]codec.Ref{}
	if f < state.LedgerFormat3 {
		valid := slices.DeleteFunc(slices.Clone(items), func(it inbox.Item) bool { return checks[it.ID].why != "" })
		for old, by := range inbox.Replaced(valid, person) {
			out[old] = refOf[by]
		}
		return out
	}
	answers := slices.DeleteFunc(slices.Clone(items), func(it inbox.Item) bool {
		return it.Kind != inbox.KindApproval || !person(it.Approval) || slices.Contains(consumed, it.ID) || checks[it.ID].why != ""
	})
	for _, it := range answers {
		a := it.Approval
		group := slices.DeleteFunc(slices.Clone(answers), func(o inbox.Item) bool { return checks[o.ID].group() != checks[it.ID].group() })
		if counts := inbox.Answer(group, a.ActionRef, a.RequestCycle); counts != nil && counts.ID != it.ID {
			out[it.ID] = refOf[counts.ID]
		}
	}
	return out
}
