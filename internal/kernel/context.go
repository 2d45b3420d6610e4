package kernel

import (
	"slices"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// The controller's context (docs/controller.md, "Inputs"): which sources
// speak with authority, how far the context can be trusted, what the run
// can do. It is made in the observe state, after the inbox was read, and
// read by the tension report (capability gaps, opportunities) and by
// preflight (unresolved source authority, trust against readiness).
// Ledger format 2 only: a format-1 run derives its cycles as it always
// did, so that it replays byte for byte.

// kindControllerContext is the object kind of a cycle's context record.
const kindControllerContext = "cctx"

// Reasons a preflight stops a cycle before it acts or proposes.
const (
	reasonSourceUnresolved = "source_authority_unresolved"
	reasonTrustBelow       = "trust_below_readiness"
)

// observeContext records the cycle's context and returns its ref ("" in
// ledger format 1, which has none).
func (b *control) observeContext() codec.Ref {
	rs := &b.s.Run
	if rs.Format() == state.LedgerFormat1 {
		return ""
	}
	obs := b.envRef
	var goal codec.Ref
	if len(rs.GoalRefs) > 0 {
		goal = rs.GoalRefs[0]
	}
	b.ctx = controller.Context{Schema: controller.ContextSchema, CycleID: b.cycleID,
		Sources:      controller.Sources(goal, rs.ContractRef, rs.EnvironmentSpecRef, obs, rs.PendingAmendments, b.s.Contract.Proposer != nil),
		Trust:        controller.AssessTrust(b.s.Operations, b.s.Environment, obs, rs.PendingApprovals),
		Capabilities: controller.Capabilities(b.s.Operations, &b.s.Contract, &b.s.Spec)}
	b.hasCtx = true
	return b.record(event.ContextRecorded, kindControllerContext, b.ctx, map[string]codec.Ref{"observation": obs},
		"trust_"+b.ctx.Trust.Level, "readiness_"+b.coords.Readiness)
}

// trustRef names the concerns a trust verdict was made under: a
// suppression that waits on them is lifted when they change.
func trustRef(t controller.Trust) codec.Ref { return codec.MustRefOf("trust", t.Concerns) }

// preflight runs the controller's checks that governance does not: an
// action the loop would take on its own whose authority depends on an
// amendment a person has not answered (the stop rule "source authority
// unresolved"), and an action to take or propose whose context is trusted
// less than the cycle's readiness needs. Either stops the cycle in
// blocked and sets the item aside until what it waited on changes; the
// rest of the agenda is served. It reports whether it stopped the cycle.
// An undo of the run's own effect is exempt: it restores bytes the run
// itself replaced, is refused by the world if they changed since, and is
// the one action that removes doubt rather than adding to it.
func (b *governor) preflight(action world.Action, req governance.Request, d governance.Decision, decRef, rcptRef codec.Ref) bool {
	if !b.hasCtx || b.s.Operations.Of(action.Operation).Undoes || (d.Verdict != governance.Execute && d.Verdict != governance.Escalate) {
		return false
	}
	if d.Verdict == governance.Execute {
		if p, ok := b.contested(action, req); ok {
			why := []string{reasonSourceUnresolved, "amendment_pending_" + p.Target}
			b.emit(event.CycleBlocked, nil, map[string]codec.Ref{"decision": decRef, "amendment": p.Ref}, why...)
			b.block(controller.IntentCustodian, reasonSourceUnresolved, decRef, rcptRef)
			b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: reasonSourceUnresolved, DecisionRef: p.Ref, Since: b.at,
				EvidenceRef: b.evidence})
			b.conclude(b.afterSetback(), why)
			return true
		}
	}
	trust := b.ctx.Trust.For(b.s.Operations.Paths(action))
	if controller.Ready(b.coords.Readiness, trust) {
		return false
	}
	why := []string{reasonTrustBelow, "trust_" + trust, "readiness_" + b.coords.Readiness}
	var concerns []string
	for _, c := range b.ctx.Trust.Concerns {
		if !slices.Contains(concerns, c.Reason) {
			concerns = append(concerns, c.Reason)
		}
	}
	b.emit(event.CycleBlocked, nil, map[string]codec.Ref{"decision": decRef}, append(slices.Clone(why), concerns...)...)
	b.block(controller.IntentCustodian, reasonTrustBelow, decRef, rcptRef)
	b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: reasonTrustBelow, DecisionRef: trustRef(b.ctx.Trust), Since: b.at,
		EvidenceRef: b.evidence})
	b.conclude(b.afterSetback(), why)
	return true
}

// contested finds a live amendment (proposed by a person against the
// version pinned now, not answered yet) whose answer decides whether the
// loop may take this action on its own: a contract under which governance
// would not execute it, or an environment that no longer declares the
// check it addresses as it is, or under which governance would not
// execute it. While the person has not answered, the pinned version
// still rules, but acting now would settle alone what the person is
// deciding: the authority for this action is unresolved. An amendment on
// which the action does not depend contests nothing, and a goal
// amendment never does: the goal's mission, objectives and constraints
// are prose the loop does not act on, its success conditions say when to
// stop, not what may be done.
func (b *governor) contested(action world.Action, req governance.Request) (state.PendingAmendment, bool) {
	for _, p := range b.s.Run.PendingAmendments {
		if p.Target == state.AmendGoal || p.Amends != PinnedRef(*b.s, p.Target) {
			continue
		}
		n, err := checkAmendment(*b.s, state.Amendment{Target: p.Target, Document: p.Document}, b.s.Run.Format() >= state.LedgerFormat3)
		if err != nil {
			continue // it can never be accepted
		}
		switch p.Target {
		case state.AmendContract:
			if governance.Decide(&n.contract, &b.s.Spec, req).Verdict != governance.Execute {
				return p, true
			}
		case state.AmendEnvironment:
			if action.CheckID != "" {
				old, _ := b.s.Spec.CheckByID(action.CheckID)
				now, ok := n.spec.CheckByID(action.CheckID)
				if !ok || !slices.Equal(codec.MustMarshal(old), codec.MustMarshal(now)) {
					return p, true
				}
			}
			if governance.Decide(&b.s.Contract, &n.spec, req).Verdict != governance.Execute {
				return p, true
			}
		}
	}
	return state.PendingAmendment{}, false
}

// liftPreflight lifts the suppressions a preflight made once what they
// waited on changed: the amendment was answered (or can no longer be
// accepted), or the trust concerns are not those the verdict was made
// under. The item is then weighed again like any other.
func (b *control) liftPreflight() {
	if !b.hasCtx {
		return
	}
	rs := &b.s.Run
	live := map[codec.Ref]bool{}
	for _, src := range b.ctx.Sources {
		for _, r := range src.Pending {
			live[r] = true
		}
	}
	concerns := trustRef(b.ctx.Trust)
	rs.Suppressed = slices.DeleteFunc(rs.Suppressed, func(sp state.Suppression) bool {
		switch {
		case sp.Reason == reasonSourceUnresolved && !live[sp.DecisionRef]:
			b.emit(event.SuppressionLifted, nil, map[string]codec.Ref{"amendment": sp.DecisionRef}, "amendment_answered", sp.ItemID)
			return true
		case sp.Reason == reasonTrustBelow && sp.DecisionRef != concerns:
			b.emit(event.SuppressionLifted, nil, nil, "trust_changed", sp.ItemID)
			return true
		}
		return false
	})
}
