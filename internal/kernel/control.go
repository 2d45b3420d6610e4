package kernel

import (
	"cmp"
	"errors"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// This file maps the Phase-12 pipeline onto the cycle controller (see
// docs/controller.md): which controller state each substage is, which role
// acts in it, and the records that make every transition auditable.

// Event types of the controller.
const ()

// control is the controller's part of a cycle's builder
// (docs/controller.md): its machine and the transitions not logged yet,
// the guard, the declared coordinates and the cycle's deadline, the
// context it observed (context.go), the fitness contract an action is
// judged by, and what the cycle learns and cascades.
type control struct {
	s *EngineState
	*recorder
	*work
	ctl      *controller.Machine
	moves    []controller.Transition // not logged yet (ledger format 2)
	guard    *controller.Guard
	coords   controller.Coordinates
	cycleID  string
	maxDepth int64
	deadline time.Time
	// deadlineWhy is the limit the deadline comes from (schedule.go).
	deadlineWhy string
	handoff     []codec.Ref // outputs of the last transition
	evMark      int64       // nEvents at the last transition
	via         controller.Phase
	fitness     controller.FitnessContract
	fitnessRef  codec.Ref
	areqRef     codec.Ref
	carried     *codec.Value // the fitness contract an approved plan keeps
	ctx         controller.Context
	hasCtx      bool // ctx was made (ledger format 2, the cycle observed)
	restOut     []codec.Ref
	restUsed    budget.Usage
}

// roleOf is the role that works in a controller state, and so the actor of
// the transition that leaves it.
func roleOf(s controller.Phase) controller.Role {
	switch s {
	case controller.Sleep, controller.Wake, controller.Observe, controller.ObserveEffect:
		return controller.Observer
	case controller.Distill, controller.Plan, controller.ForgeCandidate:
		return controller.Distiller
	case controller.Checkpoint, controller.Act, controller.Rollback:
		return controller.Executor
	case controller.Evaluate:
		return controller.Evaluator
	case controller.Metabolize:
		return controller.Promoter
	}
	return controller.IntentCustodian
}

// declare records the cycle's operating coordinates and budget, starts the
// controller machine and wakes it.
func (b *control) declare(why []string) {
	c := &b.s.Contract
	b.coords = controller.Declare(c)
	cb := c.Cycle()
	b.maxDepth = min(int64(max(b.coords.Depth(), 0)), cb.MaxRecursiveDepth)
	b.cycleID = controller.CycleID(b.s.Run.RunID, b.cycle)
	b.ctl = controller.Start(b.cycleID, controller.CycleID(b.s.Run.RunID, b.cycle-1), b.at, cb)
	b.guard = controller.NewGuard()
	b.deadline = b.now.Add(time.Duration(cb.MaxWallTimeSeconds) * time.Second)
	b.deadlineWhy = "watchdog_max_wall_time"
	if l := c.Budgets.WallClockSeconds; l.Hard > 0 {
		// No effect runs past the run's wall-clock budget either.
		if started, err := state.ParseTime(b.s.Run.StartedAt); err == nil {
			if end := started.Add(time.Duration(l.Hard) * time.Second); end.Before(b.deadline) {
				b.deadline, b.deadlineWhy = end, "budget_wall_clock_seconds"
			}
		}
	}
	decl := controller.Declaration{Schema: controller.DeclarationSchema, CycleID: b.cycleID,
		ParentCycleID: controller.CycleID(b.s.Run.RunID, b.cycle-1), Coordinates: b.coords, MaxDepth: b.maxDepth, Budget: cb}
	ref := b.record(event.CycleDeclared, "cdecl", decl, nil)
	reason := "continue"
	if len(why) > 0 {
		reason = strings.Join(why, ",")
	}
	b.handoff = append(slices.Clone(b.rec.InputRefs), ref)
	b.move(controller.Wake, reason)
}

// move takes the controller to the next state and records the transition.
// Its inputs are what the state being left was handed; its outputs (out)
// are what that state produced, and become the next state's inputs.
func (b *control) move(to controller.Phase, reason string, out ...codec.Ref) {
	b.moveAs(roleOf(b.ctl.State()), to, reason, budget.Usage{}, out...)
}

// moveAs is move with an explicit actor (the operator, for a stop) and the
// budget the left state consumed beyond its events.
func (b *control) moveAs(role controller.Role, to controller.Phase, reason string, used budget.Usage, out ...codec.Ref) {
	if b.err != nil || b.ctl == nil {
		return
	}
	from := b.ctl.State()
	used.Events = b.nEvents - b.evMark
	t, err := b.ctl.Move(controller.Step{To: to, Role: role, Reason: reason, Inputs: b.handoff, Outputs: out,
		Authority: b.authorityUsed(from), Used: used})
	if err != nil {
		b.fail(err)
		return
	}
	if b.s.Run.Format() == state.LedgerFormat1 {
		ref := b.record(event.Transition, "ctrans", t, nil, reason)
		b.rec.ControllerTransitionRef = append(b.rec.ControllerTransitionRef, ref)
	} else {
		if b.moves == nil {
			b.moves = make([]controller.Transition, 0, movesCap)
		}
		b.moves = append(b.moves, t)
	}
	b.evMark = b.nEvents
	b.handoff = slices.Clone(t.OutputHashes)
	if to != controller.Sleep {
		b.via = to
	}
}

// movesCap is the room made for the transitions of one batch: eight
// before the governance boundary of an acting cycle, fewer after.
const movesCap = 10

// logMoves records the transitions taken since the last log as one
// record (ledger format 2), at the end of a durable batch: the cycle's
// first batch (up to the governance boundary) and its last.
func (b *control) logMoves() {
	if len(b.moves) == 0 || b.err != nil {
		return
	}
	l, err := controller.LogOf(b.moves)
	if err != nil {
		b.fail(err)
		return
	}
	b.moves = nil
	reasons := make([]string, 0, len(l.Transitions))
	for _, m := range l.Transitions {
		reasons = append(reasons, m.NextState.String())
	}
	ref := b.record(event.Transitions, "ctlog", l, nil, reasons...)
	b.rec.ControllerTransitionRef = append(b.rec.ControllerTransitionRef, ref)
}

// authorityUsed is the authority a state exercises: reading the world to
// observe it, the action's own authority to act, proposing to propose.
func (b *control) authorityUsed(s controller.Phase) governance.AuthorityMode {
	switch s {
	case controller.Observe, controller.ObserveEffect:
		return governance.AuthRead
	case controller.Propose:
		return governance.AuthPropose
	case controller.Act:
		if b.effect != nil && b.s.Operations.Of(b.effect.Action.Operation).Writes {
			return governance.AuthProjectWrite
		}
		return governance.AuthRead
	}
	return governance.AuthNone
}

// block ends the cycle's controller path in blocked, with reason.
func (b *control) block(role controller.Role, reason string, out ...codec.Ref) {
	b.moveAs(role, controller.Blocked, reason, budget.Usage{}, out...)
}

// refused records a violation the guard refused. The act does not happen.
func (b *control) refused(err error) bool {
	var v *controller.Violation
	if !errors.As(err, &v) {
		b.fail(err)
		return true
	}
	b.record(event.ViolationRefused, "cviol", v, nil, v.Rule)
	return true
}

// overBudget checks a cost against the cycle budget before it is spent.
func (b *control) overBudget(more budget.Usage) string {
	more.Events = b.nEvents - b.evMark
	return b.ctl.Exceeds(more)
}

// fitnessFor writes the FitnessContract of an action: how its result will
// be judged, fixed before the action.
func (b *control) fitnessFor(a world.Action, actionRef codec.Ref) controller.FitnessContract {
	f := controller.FitnessContract{Schema: controller.FitnessSchema, CycleID: b.cycleID, ActionRef: actionRef, CheckID: a.CheckID,
		Target: a.Target, Criteria: append([]string{"readback_agrees"}, b.s.Operations.Criteria(a)...), PassingBefore: []string{}, ProposedBy: controller.Distiller}
	for _, c := range b.s.Spec.Checks {
		r, ok := b.s.Environment.Check(c.ID)
		if !ok || r.Status != world.CheckPass || c.Path == "" {
			continue
		}
		if (b.s.Operations.OnSet(a) && world.MatchAny(b.s.Operations.Paths(a), c.Path)) || c.Path == a.Target {
			f.PassingBefore = append(f.PassingBefore, c.ID)
		}
	}
	slices.Sort(f.Criteria)
	slices.Sort(f.PassingBefore)
	return f
}

// plan fixes the plan's FitnessContract and goes to preflight. A plan an
// operator approved keeps the contract fixed when it was proposed.
func (b *control) plan(action world.Action, actionRef, requestRef codec.Ref) codec.Ref {
	var ref codec.Ref
	var f controller.FitnessContract
	if b.carried != nil && codec.DecodeValue(*b.carried, &f) == nil {
		ref = codec.MustRefOf("fit", f)
		b.emit(event.FitnessCarried, nil, map[string]codec.Ref{"fitness": ref, "action": actionRef}, "fixed_when_proposed")
	} else {
		f = b.fitnessFor(action, actionRef)
		ref = b.record(event.FitnessFixed, "fit", f, map[string]codec.Ref{"action": actionRef})
	}
	b.guard.Author(requestRef, controller.Distiller)
	b.guard.Author(ref, controller.Distiller)
	if err := b.guard.FixFitness(ref, controller.Distiller); err != nil {
		b.refused(err)
	}
	b.fitness, b.fitnessRef = f, ref
	b.move(controller.Preflight, "plan_ready", requestRef, ref)
	return ref
}

// Settlement is what the driver learned about a cycle's effect. The
// driver fills it; replay reads it back from the ledger.
type Settlement struct {
	// Outcome is the world's answer (nil when the effect did not run).
	Outcome *world.Outcome
	// Readback is the observer's own reading of the target afterwards.
	Readback *world.Readback
	// Uncertain: recovery could not tell whether an interrupted effect
	// happened.
	Uncertain bool
	// Uncertainty is what the world showed about an uncertain effect: its
	// reason and each path's hash in the intent and now. Nil for an
	// uncertain effect recorded before incidents (replay of an older
	// ledger), which is then asked about by the action's ref.
	Uncertainty *Uncertainty
	// Blocked names a control that was missing, so the effect was not
	// carried out ("" when all were in place).
	Blocked string
	// Rollback is the bundle the durable intent carried: how to undo the
	// effect if the evaluator requires it.
	Rollback *world.RollbackBundle
	// At is when the driver learned the Outcome (zero: the cycle's own
	// clock reading). From ledger format 3 on, the cycle's records after
	// the effect carry it; replay reads it back from the recorded outcome.
	At time.Time
}

// Controls checks the controls an effect needs before it may run (the
// controller's checkpoint state): the run lock, the idempotency key, a
// durable intent with a rollback bundle for any change, and the cycle's
// wall-time budget. It returns the first missing one, or "". Pure: the
// driver passes what it holds and the time.
func Controls(p *Pending, in *world.Intent, lockHeld bool, now time.Time) string {
	switch {
	case p.Effect == nil:
		return ""
	case !lockHeld:
		return "lock_unavailable"
	case p.Effect.Key == "":
		return "idempotency_key_missing"
	case in == nil || in.Key != p.Effect.Key:
		return "checkpoint_missing"
	case in.Changes && in.Rollback == nil:
		return "rollback_bundle_unavailable"
	case now.After(p.b.deadline):
		return p.b.deadlineWhy
	}
	return ""
}

// evaluateEffect is the evaluator's judgement of an effect against the
// fixed FitnessContract, resting on the observer's readback, not on the
// executor's word. k is the action's operation's entry in the run's
// catalog.
func evaluateEffect(k world.OperationKind, a world.Action, out world.Outcome, rb *world.Readback, f controller.FitnessContract) (string, string) {
	switch {
	case rb == nil:
		return "operator_review_required", "no independent readback"
	case out.Status == world.OutcomeStale:
		return "inconclusive", "target changed before the effect"
	case out.Status == world.OutcomeFailed && out.AfterSHA256 == out.BeforeSHA256:
		return "rejected", "the effect failed"
	case rb.SHA256 != out.AfterSHA256:
		return "operator_review_required", "the readback disagrees with the executor's report"
	case len(out.Outside) > 0:
		// A command that changed what it did not declare is for a person:
		// the contract was ruled on its touches, not on these files.
		return "operator_review_required", "the command changed files outside its touches: " + strings.Join(out.Outside, ", ")
	case out.Status == world.OutcomeFailed && out.AfterSHA256 != out.BeforeSHA256:
		// A command that failed half-way leaves the files it touched in a
		// state nobody asked for: undo it.
		return "rollback_required", "the effect failed after changing its files"
	}
	var regressed []string
	for _, id := range f.PassingBefore {
		if !slices.Contains(f.Criteria, "no_regression") {
			break
		}
		if slices.Contains(rb.Failing, id) {
			regressed = append(regressed, id)
		}
	}
	switch {
	case out.Status == world.OutcomeCommitted && len(regressed) > 0:
		return "rollback_required", "regressed " + strings.Join(regressed, ",")
	case k.Undoes:
		if out.Status == world.OutcomeCommitted || out.Status == world.OutcomeNoChange {
			return "accepted", "snapshot restored"
		}
		return "rejected", "snapshot not restored"
	case k.Reports && out.Status == world.OutcomeCommitted:
		return "partially_accepted", "reported, not fixed"
	case a.CheckID == "" || !slices.Contains(f.Criteria, "check_passes"):
		if out.Status == world.OutcomeCommitted {
			return "accepted", "committed and read back"
		}
		return "inconclusive", "nothing changed"
	case slices.Contains(rb.Passing, a.CheckID):
		return "accepted", "check " + a.CheckID + " passes on readback"
	case out.Status == world.OutcomeCommitted && out.AfterSHA256 != out.BeforeSHA256:
		// The target changed but the check does not pass yet: progress,
		// not failure (a queue drained one item at a time).
		return "partially_accepted", "target changed, check " + a.CheckID + " not passing yet"
	}
	return "rejected", "check " + a.CheckID + " still fails"
}

// learn writes the LearningDelta: only accepted durable changes.
func (b *control) learn(result string, evidence []codec.Ref) controller.LearningDelta {
	d := controller.LearningDelta{Schema: controller.LearningSchema, CycleID: b.cycleID, ResultantStatus: result,
		SupportingEvidence: nonNil(evidence), Changes: []string{}, Superseded: []codec.Ref{}, RemainingUnknowns: []string{},
		RevisitConditions: []string{}, MemoryClass: "residue"}
	switch result {
	case "accepted":
		d.Changes = append(d.Changes, "item "+b.item+" fixed")
		d.MemoryClass = "source"
		d.NextTrigger = "check " + b.check.ID + " fails again"
		d.RevisitConditions = append(d.RevisitConditions, "target "+b.check.Path+" changes")
	case "partially_accepted":
		d.Changes = append(d.Changes, "item "+b.item+" progressed")
		d.MemoryClass = "reflection"
		d.NextTrigger = "next cycle"
		d.RemainingUnknowns = append(d.RemainingUnknowns, "whether check "+b.check.ID+" will pass")
	default:
		d.NextTrigger = "evidence changes"
		d.RemainingUnknowns = append(d.RemainingUnknowns, result+": no durable change kept")
	}
	return d
}

// forge produces a disabled guard/test candidate for a demonstrated gap.
// Only at A4; the candidate can never load or promote itself.
func (b *control) forge(gap string, evidence codec.Ref) codec.Ref {
	c := controller.Candidate{Schema: controller.CandidateSchema, ID: "guard-" + b.item, Gap: gap, Evidence: evidence, Kind: "guard",
		Spec:    "keep check " + b.check.ID + " (" + b.check.Summary + ") passing on " + b.check.Path,
		Tests:   []string{"check " + b.check.ID + " passes after every change to " + b.check.Path},
		Enabled: false, AuthorBy: controller.Distiller}
	ref := b.record(event.CandidateForged, "cand", c, map[string]codec.Ref{"evidence": evidence}, "candidate_disabled", gap)
	b.guard.Author(ref, controller.Distiller)
	// The candidate asks to promote itself: refused and recorded.
	if err := b.guard.Promote(ref, controller.Distiller, ref); err != nil {
		b.refused(err)
	}
	return ref
}

// cascade records the impacted surfaces and who should hear of them,
// capped at the cycle's fan-out budget.
func (b *control) cascade(target string) (codec.Ref, budget.Usage) {
	cr := controller.CascadeRecord{Schema: controller.CascadeSchema, CycleID: b.cycleID, Surfaces: []string{}, Recipients: []string{}, Impact: "none"}
	if target != "" {
		cr.Surfaces = append(cr.Surfaces, target)
		cr.Impact = "changed"
	}
	for _, c := range b.s.Commitments.Commitments {
		if c.Target == target && target != "" {
			cr.Recipients = append(cr.Recipients, "commitment:"+c.ID)
		}
	}
	if slices.ContainsFunc(b.s.Run.PendingApprovals, func(p state.PendingApproval) bool { return p.Resolution == nil }) {
		cr.Recipients = append(cr.Recipients, "operator")
	}
	most := b.ctl.Budget().MaxCascadeFanout
	if int64(len(cr.Recipients)) > most {
		cr.Recipients = cr.Recipients[:most]
		cr.Impact += ",fanout_capped"
	}
	ref := b.record(event.CascadeRecorded, "casc", cr, nil)
	return ref, budget.Usage{CascadeFanout: int64(len(cr.Recipients))}
}

// tick moves the clock of the cycle's events and transitions to the
// reading of an input the cycle goes on from (ledger format 3; earlier
// formats make every record of a cycle at its clock reading). A reading
// before the cycle's own, or none, changes nothing.
func (b *control) tick(t time.Time) {
	if b.s.Run.Format() < state.LedgerFormat3 || t.IsZero() {
		return
	}
	at := state.FormatTime(t)
	if at <= cmp.Or(b.clock, b.at) {
		return
	}
	b.clock = at
	b.ctl.Tick(at)
}

// metabolize writes the LearningDelta, forges a candidate at A4 after a
// demonstrated gap, and records the cascade. The controller is left in
// cascade; finish takes it back to sleep.
func (b *control) metabolize(result, target string, evidence ...codec.Ref) {
	delta := b.learn(result, evidence)
	dRef := b.record(event.LearningMetabolized, "ldelta", delta, nil, result)
	b.guard.Author(dRef, controller.Promoter)
	next := dRef
	if gap, ok := b.gapDemonstrated(); ok && b.coords.AutonomyLevel() >= 4 {
		b.move(controller.ForgeCandidate, gap, dRef)
		next = b.forge(gap, dRef)
	}
	b.move(controller.Cascade, "metabolized", next)
	ref, used := b.cascade(target)
	b.restOut, b.restUsed = []codec.Ref{ref}, used
}
