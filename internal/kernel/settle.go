package kernel

import (
	"slices"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// The effect's settlement: the world's answer recorded, read back by the
// observer, judged by the evaluator against the fixed FitnessContract,
// then rolled back or metabolized.

// settler is the effect and settlement part of a cycle's builder: the
// outcome of the effect governance authorized, read back and judged
// against the fixed fitness contract, and what the judgement leads to
// (accepted, a rollback, a person's review, an uncertain effect as an
// incident, incident.go).
type settler struct {
	s *EngineState
	*recorder
	*work
	*schedule
	*control
}

// settle records the world's answer to the effect: act, observe the
// effect, evaluate it against the fixed FitnessContract, roll back or
// metabolize, maybe forge a candidate, cascade.
func (b *settler) settle(st Settlement) {
	rs := &b.s.Run
	e := b.effect
	if st.Blocked != "" {
		// A control was missing at the checkpoint: nothing was done.
		b.block(controller.Executor, st.Blocked)
		b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "control_missing_" + st.Blocked, Since: b.at, EvidenceRef: b.evidence})
		b.conclude(b.afterSetback(), []string{"control_missing", st.Blocked})
		return
	}
	b.move(controller.Act, "controls_in_place", e.ActionRef)
	if st.Uncertain || st.Outcome == nil {
		p := state.PendingApproval{
			Ref: e.ActionRef, DecisionRef: e.DecisionRef, Operation: string(e.Action.Operation), Target: e.Action.Target, CheckID: e.Action.CheckID,
			ItemID: b.item, Reason: "uncertain_effect", RequestedAt: b.at, CycleSeq: b.cycle, Action: mustValue(e.Action),
		}
		obj := b.incident(e, st.Uncertainty, &p)
		rs.PendingApprovals = append(rs.PendingApprovals, p)
		b.emit(event.ApprovalRequested, obj, map[string]codec.Ref{"action": e.ActionRef}, "recovery_uncertain_effect")
		b.moveAs(controller.Executor, controller.ObserveEffect, "effect_uncertain", budget.Usage{ToolActions: 1})
		b.move(controller.Evaluate, "no_readback")
		ev := event.Evaluation{Schema: event.EvaluationSchema, ActionRef: e.ActionRef, FitnessRef: b.fitnessRef, Expected: b.expected(e.Action),
			Observed: "unknown: recovery could not tell whether the effect happened", Result: "operator_review_required", Actor: "evaluator"}
		evRef := b.record(event.EvaluationRecorded, "evalr", ev, nil, ev.Result)
		b.rec.EvaluationRef = evRef
		b.move(controller.Metabolize, ev.Result, evRef)
		b.metabolize(ev.Result, "", evRef)
		b.conclude(b.resting(), []string{"recovery_uncertain_effect"})
		return
	}
	out := *st.Outcome
	rs.Budget.Actions++
	typ := event.ActionCommitted
	if out.Status != world.OutcomeCommitted {
		typ = event.ActionNotApplied
	}
	outRef := b.record(typ, "wout", out, map[string]codec.Ref{"action": e.ActionRef, "decision": e.DecisionRef}, string(out.Status))
	b.guard.Author(outRef, controller.Executor)
	b.rec.WorldOutcomeRef = outRef
	b.sum.Outcome = string(out.Status)
	files := int64(0)
	switch {
	case len(out.Changed) > 0:
		files = int64(len(out.Changed))
	case out.AfterSHA256 != out.BeforeSHA256:
		files = 1
	}
	b.moveAs(controller.Executor, controller.ObserveEffect, string(out.Status), budget.Usage{ToolActions: 1, FilesTouched: files}, outRef)

	var rbRef codec.Ref
	if st.Readback != nil {
		rbRef = b.record(event.ReadbackRecorded, "rdbk", *st.Readback, map[string]codec.Ref{"outcome": outRef}, "independent_readback")
		b.guard.Author(rbRef, controller.Observer)
	}
	b.move(controller.Evaluate, "effect_observed", rbRef)

	result, why := evaluateEffect(b.s.Operations.Of(e.Action.Operation), e.Action, out, st.Readback, b.fitness)
	ev := event.Evaluation{Schema: event.EvaluationSchema, ActionRef: e.ActionRef, OutcomeRef: outRef, ReadbackRef: rbRef, FitnessRef: b.fitnessRef,
		Expected: b.expected(e.Action), Observed: why, Result: result, Actor: "evaluator"}
	if result == "rollback_required" && st.Rollback == nil {
		ev.Result, ev.Observed = "operator_review_required", why+"; no rollback bundle to undo it"
	}
	evRef := b.record(event.EvaluationRecorded, "evalr", ev, map[string]codec.Ref{"outcome": outRef, "fitness": b.fitnessRef}, ev.Result)
	b.guard.Author(evRef, controller.Evaluator)
	if err := b.guard.AcceptEvaluation(evRef, outRef, []codec.Ref{outRef, rbRef}); err != nil {
		b.refused(err)
		ev.Result = "operator_review_required"
	}
	if b.guard.Fitness() != b.fitnessRef {
		b.refused(&controller.Violation{Rule: controller.RuleFitnessFixed, Actor: controller.Evaluator, Artifact: evRef, Detail: "evaluated against another fitness contract"})
		ev.Result = "operator_review_required"
	}
	b.rec.EvaluationRef = evRef
	b.judgeProposed(b.fp, ev.Result)

	ai := slices.IndexFunc(rs.Attempts, func(a state.Attempt) bool {
		return a.ItemID == b.item && a.Fingerprint == b.fp && a.EvidenceRef == b.evidence
	})
	if b.s.Operations.Of(e.Action.Operation).Reports && out.Status == world.OutcomeCommitted {
		// Reported for a person: do not report it again until the checked
		// file changes.
		r, _ := b.s.Environment.Check(e.Action.CheckID)
		b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "reported_awaiting_human", Since: b.at, EvidenceRef: string(r.TargetSHA256)})
	}
	reasons := []string{"action_" + string(out.Status), "evaluation_" + ev.Result}
	disp := state.Continue
	switch ev.Result {
	case "accepted":
		rs.Attempts = slices.DeleteFunc(rs.Attempts, func(a state.Attempt) bool { return a.ItemID == b.item })
		b.s.Strategy = strategy.Settle(b.s.Strategy, []string{b.item})
		if !b.s.Operations.Of(e.Action.Operation).Undoes {
			b.noteFixed()
		} else {
			// The fix was undone: set the item aside until the target
			// changes from the restored bytes, or the same fix would be
			// tried and undone again.
			b.suppress(state.Suppression{ItemID: b.item, Reason: "rolled_back_regression", Since: b.at, EvidenceRef: string(st.Readback.SHA256)})
		}
	case "rejected":
		if ai >= 0 {
			rs.Attempts[ai].Failures++
		}
	case "rollback_required":
		req := state.RollbackRequest{ItemID: b.item, CheckID: e.Action.CheckID, FromCycle: b.cycle, Reason: why,
			Action: mustValue(st.Rollback.RestoreAction(e.Action.CheckID, out.AfterSHA256)), EvaluationRef: evRef}
		rs.Rollbacks = append(rs.Rollbacks, req)
		b.move(controller.Rollback, ev.Result, evRef)
		reqRef := b.record(event.RollbackRequested, "rbreq", req, map[string]codec.Ref{"evaluation": evRef}, "rollback_bundle_queued")
		b.move(controller.Metabolize, "rollback_queued", reqRef)
		b.metabolize(ev.Result, out.Target, outRef, rbRef, evRef)
		b.conclude(disp, reasons)
		return
	case "operator_review_required":
		rs.PendingApprovals = append(rs.PendingApprovals, state.PendingApproval{
			Ref: e.ActionRef, DecisionRef: e.DecisionRef, Operation: string(e.Action.Operation), Target: e.Action.Target, CheckID: e.Action.CheckID,
			ItemID: b.item, Reason: "evaluation_needs_operator_review", RequestedAt: b.at, CycleSeq: b.cycle, Action: mustValue(e.Action), ProposalOnly: true,
		})
		b.emit(event.ApprovalRequested, nil, map[string]codec.Ref{"action": e.ActionRef, "evaluation": evRef}, "evaluation_needs_operator_review")
		disp = b.resting()
	}
	b.move(controller.Metabolize, ev.Result, evRef)
	b.metabolize(ev.Result, out.Target, outRef, rbRef, evRef)
	b.conclude(disp, reasons)
}

func (b *settler) expected(a world.Action) string {
	if a.CheckID != "" && slices.Contains(b.fitness.Criteria, "check_passes") {
		return "check " + a.CheckID + " passes, no regression"
	}
	return "outcome committed and read back"
}
