package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// The governance stage: an action request taken across the boundary (a
// fresh one, an approved one, or an undo the evaluator required), and the
// decision mapped onto the scheduler without changing it.

// governor is the governance part of a cycle's builder: it takes an
// action request (a fresh one, an approved one, an undo) across the
// boundary, with the controller's plan and preflight (context.go), and
// maps the decision onto the scheduler without changing it.
type governor struct {
	s *EngineState
	*recorder
	*work
	*schedule
	*control
	// trying is the action request the cycle stopped for, to be tried
	// before governance rules on it (nil when it did not stop).
	trying *trying
}

// resumeApproval acts on a resolved approval: governance rules again on
// the recorded action, with the approval as evidence. Nothing is re-derived.
func (b *governor) resumeApproval(i int) {
	rs := &b.s.Run
	p := rs.PendingApprovals[i]
	rs.PendingApprovals = slices.Delete(slices.Clone(rs.PendingApprovals), i, i+1)
	var action world.Action
	if err := codec.DecodeValue(p.Action, &action); err != nil {
		b.fail(fmt.Errorf("pending approval %s: %w", p.Ref, err))
		return
	}
	b.selectRecorded(p.ItemID, action.CheckID, "approval", "approval_resolved_first", map[string]codec.Ref{"approved_action": p.Ref})
	r, _ := b.s.Environment.Check(action.CheckID)
	b.fp, b.evidence = cognition.Fingerprint(action), string(r.TargetSHA256)
	approval := p.Resolution
	if p.Incident() {
		if state.Resolves(approval.Verdict) {
			b.resolveIncident(p, action)
			return
		}
		// Approving an uncertain effect runs the action again: the answer
		// names the incident, governance binds it to the action.
		a := *approval
		a.ActionRef = action.Ref()
		approval = &a
	}
	approval = withAskedTrial(p, approval)
	if p.ProposalOnly {
		// A1: the person reviewed a proposal. The loop acts on nothing;
		// the item waits for its target to change.
		b.record(event.ProposalReviewed, "prev", map[string]any{"proposal": p.Ref, "verdict": p.Resolution.Verdict,
			"by": p.Resolution.By, "fitness_ref": p.FitnessRef, "cycle_seq": b.cycle}, map[string]codec.Ref{"action": p.Ref}, "verdict_"+p.Resolution.Verdict)
		b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "proposal_reviewed", Since: b.at, EvidenceRef: b.evidence})
		b.move(controller.NoCycle, "proposal_reviewed_by_operator", b.resRef)
		b.conclude(b.resting(), []string{"proposal_reviewed", "autonomy_A1_proposal_only"})
		return
	}
	b.carried = p.Fitness
	b.move(controller.Plan, "approved_plan", b.resRef)
	b.govern(action, approval, "")
}

// rollback plans the undo an evaluation required: the restore action from
// the effect's rollback bundle, governed like any action.
func (b *governor) rollback() {
	rs := &b.s.Run
	r := rs.Rollbacks[0]
	rs.Rollbacks = slices.Delete(slices.Clone(rs.Rollbacks), 0, 1)
	var action world.Action
	if err := codec.DecodeValue(r.Action, &action); err != nil {
		b.fail(fmt.Errorf("rollback of %s: %w", r.ItemID, err))
		return
	}
	b.selectRecorded(r.ItemID, r.CheckID, "rollback", "rollback_first", map[string]codec.Ref{"evaluation": r.EvaluationRef})
	b.fp, b.evidence = cognition.Fingerprint(action), string(action.ExpectSHA256)
	b.move(controller.Plan, "rollback_bundle", b.resRef, r.EvaluationRef)
	b.govern(action, nil, "")
}

// govern takes an action request across the governance boundary (the
// controller's plan and preflight) and maps the decision onto the
// scheduler without altering it. A command fix of a git world that no
// approval's trial covers is tried first: the cycle stops after the plan
// (Pending.Try) and Tried goes on with what the trial did.
func (b *governor) govern(action world.Action, approval *state.Approval, commitmentID string) {
	actionRef := action.Ref()
	b.rec.ActionRequestRef = b.record(event.ActionProposed, "areq", action, nil)
	b.areqRef = b.rec.ActionRequestRef
	fitRef := b.plan(action, actionRef, b.areqRef)
	if b.needsTrial(action, approval) {
		b.trying = &trying{action: action, commitmentID: commitmentID, fitRef: fitRef}
		return
	}
	b.rule(action, approval, commitmentID, fitRef, nil)
}

// rule asks governance for its decision on an action request whose plan
// is fixed, and maps the decision onto the scheduler. t is the cycle's
// own trial of the action (nil when it was not tried).
func (b *governor) rule(action world.Action, approval *state.Approval, commitmentID string, fitRef codec.Ref, t *tried) {
	rs := &b.s.Run
	actionRef := action.Ref()
	approved := approvedTrial(b.s, action, approval)
	req := b.request(action, approval)
	req.Trial = approved
	if t != nil {
		req.Trial, req.TrialFailure = t.trial, t.failure
	}
	d := governance.Decide(&b.s.Contract, &b.s.Spec, req)
	decRef := b.record(event.DecisionRecorded, "gdec", d, map[string]codec.Ref{"action": actionRef}, d.ReasonCodes...)
	rcptRef := b.record(event.ReceiptRecorded, "grcpt", governance.NewReceipt(d, decRef, req), map[string]codec.Ref{"decision": decRef})
	b.rec.GovernanceDecisionRef = decRef
	if rs.Format() != state.LedgerFormat1 {
		// The seed resolves reflexive autonomy (may the loop act on this
		// alone, at its A-level?) before the boundary; here every action
		// request crosses the boundary, and governance.Decide resolves the
		// autonomy as one of its steps (A0 refuses, A1 escalates; the
		// decision's autonomy field and reason codes say which), so the
		// decision is the cycle's autonomy resolution.
		b.rec.AutonomyResolutionRef = decRef
	}
	b.rec.GovernanceDecision = d.Verdict.String()
	b.sum.GovernanceDecision = d.Verdict.String()
	b.sum.Action = b.s.Operations.Describe(action)
	more := b.candidates > 1
	b.judgeProposed(b.fp, "governance_"+strings.ToLower(d.Verdict.String())+"_"+d.ReasonCodes[0])
	if b.preflight(action, req, d, decRef, rcptRef) {
		return
	}

	switch d.Verdict {
	case governance.Execute:
		approver := controller.IntentCustodian
		if approval != nil {
			approver = controller.Operator
		}
		if err := b.guard.ApprovePlan(b.areqRef, approver); err != nil {
			b.refused(err)
			b.block(approver, controller.RuleOwnPlan, decRef)
			b.conclude(b.orResting(more), []string{"self_approval_refused"})
			return
		}
		if b.exhausts("actions", 1) {
			b.block(controller.IntentCustodian, "budget_actions", decRef)
			b.conclude(state.Stopped, []string{"budget_limit", "budget_actions"})
			return
		}
		files := int64(0)
		if b.s.Operations.Of(action.Operation).Writes {
			files = 1
		}
		if over := b.overBudget(budget.Usage{ToolActions: 1, FilesTouched: files}); over != "" {
			b.block(controller.IntentCustodian, "budget_"+over, decRef)
			b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "cycle_budget_" + over, Since: b.at, EvidenceRef: b.evidence})
			b.conclude(b.orResting(more), []string{"cycle_budget", "budget_" + over})
			return
		}
		key := world.IdempotencyKey(rs.RunID, b.cycle, actionRef, decRef)
		b.effect = &Effect{Key: key, Action: action, ActionRef: actionRef, DecisionRef: decRef, Approved: approved}
		b.rec.IdempotencyKey = key
		b.sum.IdempotencyKey = key
		b.move(controller.Checkpoint, "governance_execute", decRef, rcptRef)
		b.emit(event.ActionRequested, nil, map[string]codec.Ref{"action": actionRef, "decision": decRef}, "idempotency_key_derived")
	case governance.Refuse:
		b.block(controller.IntentCustodian, "governance_refused_"+d.ReasonCodes[0], decRef, rcptRef)
		sp := state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "refused_" + d.ReasonCodes[0], DecisionRef: decRef, Since: b.at}
		if rs.Format() != state.LedgerFormat1 {
			// New evidence (the target changed) lifts the refusal and the
			// item is weighed again, under the same pinned contract, so a
			// refusal can only be repeated, never talked out of. Format-1
			// runs kept a refused item aside until its check passed.
			sp.EvidenceRef = b.evidence
		}
		b.suppress(sp)
		if req.TrialFailure != "" {
			// The fix failed its trial: it counts as a failed attempt,
			// so that cognition turns to another remedy.
			if ai := slices.IndexFunc(rs.Attempts, func(a state.Attempt) bool {
				return a.ItemID == b.item && a.Fingerprint == b.fp && a.EvidenceRef == b.evidence
			}); ai >= 0 {
				rs.Attempts[ai].Failures++
			}
		}
		b.noteDenial(action, approval, d)
		b.conclude(b.orResting(more), append([]string{"governance_refused"}, d.ReasonCodes...))
	case governance.IdleVerdict:
		b.move(controller.NoCycle, "nothing_to_do", decRef, rcptRef)
		b.conclude(b.orResting(more), []string{"governance_idle", "nothing_to_do"})
	case governance.Escalate:
		b.seedDisposition(state.WaitApproval)
		rs.PendingApprovals = append(rs.PendingApprovals, state.PendingApproval{
			Ref: actionRef, DecisionRef: decRef, Operation: string(action.Operation), Target: action.Target, CheckID: action.CheckID,
			ItemID: b.item, Reason: d.ReasonCodes[0], RequestedAt: b.at, CycleSeq: b.cycle, Action: mustValue(action),
			ProposalOnly: b.coords.AutonomyLevel() <= 1, FitnessRef: fitRef, Fitness: ptr(mustValue(b.fitness)), Trial: req.Trial,
		})
		b.emit(event.ApprovalRequested, nil, map[string]codec.Ref{"action": actionRef, "decision": decRef}, d.ReasonCodes...)
		// The commitment whose work this was is interrupted at the
		// boundary (§7.3): suspended until a person answers.
		b.interrupt(commitmentID, "awaiting_approval", &commitment.Condition{Kind: commitment.WakeApproval, ActionRef: string(actionRef)}, decRef)
		b.move(controller.Propose, d.ReasonCodes[0], decRef, rcptRef, fitRef)
		b.conclude(b.orResting(more), append([]string{"governance_escalated"}, d.ReasonCodes...))
	case governance.Defer:
		if b.s.Contract.Policy.Defaults().DeferTo == "defer" {
			b.seedDisposition(state.Deferred)
		} else {
			b.seedDisposition(state.Sleep)
		}
		b.block(controller.IntentCustodian, "evidence_missing", decRef, rcptRef)
		b.deferItem(d, decRef, commitmentID)
		b.conclude(b.orResting(more), append([]string{"governance_deferred"}, d.MissingEvidence...))
	}
}

// request is what governance is asked about an action request, without
// a trial.
func (b *governor) request(action world.Action, approval *state.Approval) governance.Request {
	result, known := b.s.Environment.Check(action.CheckID)
	present := map[string]bool{}
	for _, e := range b.s.Environment.Evidence {
		present[e.ID] = e.Present
	}
	return governance.Request{
		Action: action, ActionRef: action.Ref(), ContractRef: b.s.Run.ContractRef, CycleSeq: b.cycle, Now: b.at,
		EvidencePresent: present, RequiredEvidence: b.check.RequiresEvidence, ObservationRef: b.envRef,
		StillNeeded: !known || result.Status == world.CheckFail || action.CheckID == "" || b.s.Operations.Of(action.Operation).Undoes, Approval: approval,
		Operations: b.s.Operations,
	}
}

// approvedTrial is the trial an approval of a command fix in a git world
// binds to (nil for any other action or answer): governance rules on the
// paths it changed, and the effect commits its tree or nothing.
func approvedTrial(s *EngineState, action world.Action, approval *state.Approval) *world.GitTrial {
	if approval == nil || approval.Trial == nil || approval.Verdict != state.VerdictApprove || s.Spec.Git == nil || !s.Operations.Of(action.Operation).Command {
		return nil
	}
	return approval.Trial
}

// withAskedTrial binds an approval that carries no trial (one written by
// hand, or by a tool that does not try the fix) to the trial governance
// ruled on when it asked (p.Trial, which acr status showed): the effect
// then commits that tree or nothing, never a tree nobody saw. An answer
// with its own trial, or to a request asked without one, is as it came.
func withAskedTrial(p state.PendingApproval, approval *state.Approval) *state.Approval {
	if approval == nil || approval.Trial != nil || p.Trial == nil || approval.Verdict != state.VerdictApprove {
		return approval
	}
	a := *approval
	a.Trial = p.Trial
	return &a
}

func ptr[T any](v T) *T { return &v }

func mustValue(v any) codec.Value {
	val, err := codec.Parse(codec.MustMarshal(v))
	if err != nil {
		panic(err)
	}
	return val
}
