package kernel

import (
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/semantic"
	"github.com/acr-project/acr/internal/strategy"
)

// The strategy stage: strategic tension over the run's history and the
// review it may trigger (seed §8), then the controller's tension report
// over this cycle's inputs, which reads it.

// strategist is the strategy part of a cycle's builder: strategic tension
// over the run's history, the review it may trigger, and the controller's
// tension report over the cycle's inputs.
type strategist struct {
	s *EngineState
	*recorder
	*intake
	*work
	*control
	strategic strategy.Tension
}

// assessTension writes the controller's TensionReport: is anything worth
// a cycle, and why, with the evidence ref of each claim.
func (b *strategist) assessTension(sem semantic.Encoded) (controller.TensionReport, codec.Ref) {
	rs := &b.s.Run
	obs := b.envRef
	blocked := b.blocked()
	in := controller.TensionInputs{CycleID: b.cycleID, Observation: obs, Due: b.woken}
	for _, f := range sem.Failing() {
		if _, ok := blocked["check:"+f.Subject]; !ok {
			in.Failing = append(in.Failing, f.Subject)
		}
	}
	in.Drifted = b.drifted(in.Failing)
	if b.hasCtx {
		in.Gaps = controller.Gaps(in.Failing, b.ctx.Capabilities)
		in.Opportunities = controller.Opportunities(b.s.Operations, &b.s.Spec, b.ctx.Capabilities, in.Failing)
	}
	for i, w := range b.signals {
		if w.Source == "manual_resume" {
			in.OperatorSignals = append(in.OperatorSignals, controller.TensionSource{Class: controller.TensionOperatorRequest,
				Subject: w.Source, Ref: codec.MustRefOf("sig", b.signals[i])})
		}
	}
	for _, p := range rs.PendingApprovals {
		if p.Resolution != nil {
			in.OperatorSignals = append(in.OperatorSignals, controller.TensionSource{Class: controller.TensionOperatorRequest, Subject: "approval", Ref: p.Ref})
		}
	}
	for _, r := range rs.Rollbacks {
		in.Failing = append(in.Failing, "rollback:"+r.ItemID)
	}
	for _, sg := range b.strategic.Signals {
		if sg.Class == strategy.ConflictingCommitments {
			in.Conflicts = append(in.Conflicts, sg.Subject)
		}
	}
	if b.compactReq {
		in.Maintenance = append(in.Maintenance, "compaction")
	}
	t := controller.Assess(in)
	return t, b.record(event.TensionAssessed, "tens", t, map[string]codec.Ref{"observation": obs}, t.Classes...)
}

// strategize computes strategic tension and, when the trigger says so,
// runs a review whose overlay may reshape cognition.
func (b *strategist) strategize() {
	pol := b.s.Contract.Policy.Defaults()
	failures := map[string]int{}
	for _, f := range semantic.FailuresByItem(b.s.Run.Attempts) {
		failures[f.ItemID] = f.Failures
	}
	targets := map[string]string{}
	for _, c := range b.s.Commitments.Commitments {
		if c.Target != "" {
			// A standing commitment covers checks, not one target: it
			// conflicts with nothing by its path.
			targets[c.ID] = c.Target
		}
	}
	var open []strategy.KnowledgeCandidate
	for _, c := range b.s.Strategy.Candidates {
		if !c.Reviewed {
			open = append(open, c)
		}
	}
	t := strategy.Assess(strategy.Inputs{CycleSeq: b.cycle, Failures: failures, Targets: targets, Candidates: open, FailureThreshold: pol.FailureThreshold})
	b.strategic = t
	b.rec.StrategicTensionRef = b.record(event.StrategicTension, "tension", t, nil)
	tr := strategy.NeedsReview(t, b.s.Strategy)
	b.rec.ReviewTriggerRef = b.record(event.ReviewEvaluated, "trigger", tr, nil, tr.Reasons...)
	if tr.Decision != strategy.Review {
		return
	}
	if b.maxDepth < 2 {
		// A review is D2 cognition: a cycle declared below it skips the
		// review rather than deepen itself.
		b.emit(event.ReviewCapped, nil, map[string]codec.Ref{"trigger": b.rec.ReviewTriggerRef}, "cognitive_depth_below_D2")
		return
	}
	b.emit(event.ReviewRequested, nil, map[string]codec.Ref{"trigger": b.rec.ReviewTriggerRef}, tr.Reasons...)
	var ret strategy.Retrieval
	var ov *strategy.Overlay
	b.s.Strategy, ret, ov = strategy.Apply(t, tr, b.s.Goal.Registry(), b.s.Strategy)
	b.rec.LensRetrievalRef = b.record(event.LensRetrieved, "lensret", ret, nil, "candidates_not_active")
	if ov != nil {
		b.rec.RoutingProfileRef = b.record(event.RoutingOverlaid, "route", *ov, nil, "routing_overlay_not_truth")
	}
	b.sum.StrategicReview = true
}
