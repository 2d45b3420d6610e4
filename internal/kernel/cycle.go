package kernel

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/semantic"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Effect is the one world action a cycle may perform. The driver must make
// Pending.Events durable BEFORE executing it, execute it at most once per
// Key, and hand the outcome to Finish.
type Effect struct {
	Key         string       `json:"idempotency_key"`
	Action      world.Action `json:"action"`
	ActionRef   codec.Ref    `json:"action_ref"`
	DecisionRef codec.Ref    `json:"decision_ref"`
	// Approved is the trial the approval of a git world's command fix
	// binds to (nil otherwise): the intent carries it to the world, which
	// commits exactly its tree on its head, or nothing.
	Approved *world.GitTrial `json:"approved_tree,omitempty"`
}

// Pending is a cycle stopped at the governance boundary.
type Pending struct {
	// Events must be appended to the ledger (one durable batch) before the
	// Effect is executed or anything else happens.
	Events []event.Event
	// Effect is the authorized action, or nil when the cycle has none.
	Effect *Effect
	// Ask, when set, is a request for the external proposer: the cycle is
	// stopped in cognition, not yet at the governance boundary. The driver
	// asks the proposer and hands the reply to Answer, which goes on; Events
	// and Effect are then those of the answered cycle.
	Ask *cognition.ProposalRequest
	// Try, when set, is a command fix of a git world to be tried before
	// governance rules on it: the cycle is stopped after its plan. The
	// driver tries it in a throwaway work tree at the branch head (Trier)
	// and hands what it did to Tried, which records it and goes on;
	// Events and Effect are then those of the tried cycle.
	Try *world.Action

	b *builder
}

// Result is a completed cycle.
type Result struct {
	// State is the state after the cycle. The driver may checkpoint it
	// only after Events are durable.
	State EngineState
	// Events must be written (one batch) before the next cycle starts or
	// the cycle is reported, and be durable before the next cycle's effect
	// or any checkpoint. When the cycle had an effect, a power loss before
	// then is survivable because recovery derives the same events again
	// from the durable first batch (its intent) and the world.
	Events  []event.Event
	Summary Summary
}

// Summary is the short account of a cycle that `acr step` prints.
type Summary struct {
	Executed           bool              `json:"executed"`
	CycleSeq           int64             `json:"cycle_seq"`
	CycleRef           codec.Ref         `json:"cycle_ref"`
	LoopDisposition    state.Disposition `json:"loop_disposition"`
	ReasonCodes        []string          `json:"reason_codes"`
	GovernanceDecision string            `json:"governance_decision"`
	Agenda             string            `json:"agenda"`
	Action             string            `json:"action"`
	Outcome            string            `json:"outcome"`
	IdempotencyKey     string            `json:"idempotency_key"`
	StrategicReview    bool              `json:"strategic_review"`
	Compacted          bool              `json:"compacted"`
	Recovered          bool              `json:"recovered,omitempty"`
	// Controller is the controller state the cycle went back to sleep
	// from: no_cycle, propose, blocked, failed or cascade.
	Controller string `json:"controller_state"`
}

// builder is one cycle being built: the state it works on and its parts,
// one type per concern, each declared in its own file:
//
//   - recorder (record.go): the cycle's number and clock reading, its
//     events, its cycle record and summary;
//   - intake (inbox.go): what the cycle took from its inbox;
//   - work (agenda.go): the selected item and what is done about it, the
//     agenda, the commitments, what is set aside and what was tried;
//   - schedule (schedule.go): budgets, and the disposition the run rests in;
//   - control (control.go): the controller's view: its machine and guard,
//     the coordinates, the context, the fitness contract, learning and
//     the cascade;
//   - strategist (strategize.go): strategic tension and review;
//   - thinker (think.go): cognition and the external proposer;
//   - governor (govern.go): the action request across the governance
//     boundary, mapped onto the scheduler;
//   - settler (settle.go): the effect's outcome, judged.
//
// A part holds its own fields and a pointer to the state, and embeds the
// parts it calls, so that its methods read as the builder's (every part
// names its receiver b). The builder embeds them all: the stages it runs
// itself (run, finish, the inbox, answers and amendments) see every part.
// newBuilder makes them together, around one state and one recorder.
type builder struct {
	s EngineState
	*recorder
	*intake
	*work
	*schedule
	*control
	*strategist
	*thinker
	*governor
	*settler
}

// newBuilder wires the parts of a cycle's builder around the state s and
// its recorder r.
func newBuilder(s EngineState, r *recorder) *builder {
	b := &builder{s: s, recorder: r}
	st := &b.s
	b.intake = &intake{s: st, recorder: r}
	b.work = &work{s: st, recorder: r, intake: b.intake}
	b.schedule = &schedule{s: st, recorder: r, work: b.work}
	b.control = &control{s: st, recorder: r, work: b.work}
	b.strategist = &strategist{s: st, recorder: r, intake: b.intake, work: b.work, control: b.control}
	b.governor = &governor{s: st, recorder: r, work: b.work, schedule: b.schedule, control: b.control}
	b.thinker = &thinker{s: st, recorder: r, work: b.work, schedule: b.schedule, control: b.control, governor: b.governor}
	b.settler = &settler{s: st, recorder: r, work: b.work, schedule: b.schedule, control: b.control}
	return b
}

// batchCap is the room made for one batch of a cycle's events.
const batchCap = 20

// ErrNotEligible is returned by Begin when the scheduler says no cycle
// should run; nothing is recorded.
var ErrNotEligible = errors.New("no cycle is eligible")

// Begin runs a cycle up to the governance boundary. It is a pure function
// of the state and the inputs: the same arguments always give the same
// events, byte for byte.
func Begin(s EngineState, in Inputs) (*Pending, error) {
	ok, why := wakeReasons(s, in)
	if !ok {
		return nil, ErrNotEligible
	}
	b := newBuilder(s.clone(), &recorder{runID: s.Run.RunID, cycle: s.Run.CycleSeq + 1, now: in.Now.UTC().Truncate(time.Second), envRef: in.Observation.Ref(),
		// Sized for an acting cycle (about a dozen events before the
		// boundary, 28 in all): growing them from nothing took a tenth of
		// the bytes a cycle allocated.
		events: make([]event.Event, 0, batchCap), refs: make([]codec.Ref, 0, 2*batchCap), isTransition: make([]bool, 0, 2*batchCap)})
	b.at = state.FormatTime(b.now)
	b.rec = state.CycleRecord{
		Schema: state.CycleSchema, RunID: s.Run.RunID, CycleSeq: b.cycle, PriorCycleRef: s.Run.LastCycleRef, StartedAt: b.at,
		InputEnvironmentRef: b.envRef, InputContextRef: s.Run.ContextBindingRef, InputRefs: []codec.Ref{},
		CommitmentRefs: []codec.Ref{}, ReasonCodes: []string{}, ControllerTransitionRef: []codec.Ref{},
	}
	if s.Run.Format() != state.LedgerFormat1 {
		// The checkpoint the cycle starts from; the one it ends with
		// points back at this record, so the two form a chain.
		b.startCheckpointRef = checkpointRef(s.Checkpoint)
		b.rec.CheckpointRef = b.startCheckpointRef
	}
	b.sum = Summary{Executed: true, CycleSeq: b.cycle, GovernanceDecision: "NONE"}

	m, inputEvents, err := inputRecords(&b.s, b.cycle, in, b.envRef)
	if err != nil {
		return nil, err
	}
	b.rec.InputRefs = slices.Concat([]codec.Ref{m.ObservationRef}, m.InboxItems, m.Knowledge)
	b.record(event.CycleStarted, "pin", m, pinnedRefs(&s.Run, map[string]codec.Ref{"prior_cycle": s.Run.LastCycleRef}))
	for _, ev := range inputEvents {
		b.emit(ev.Type, ev.Object, ev.Refs, ev.Reasons...)
	}
	if prior := s.Run.LoopDisposition; prior != state.Continue && prior != state.DispositionInvalid {
		b.emit(event.LoopWoke, nil, nil, why...)
	}
	b.s.Environment = in.Observation
	b.declare(why)
	b.consumeInbox(in)
	if in.KillSwitch && b.stop == nil {
		b.stop = &state.StopRequest{Schema: state.StopSchema, ID: "kill-switch", By: "kill-switch", Kill: true, CreatedAt: b.at}
		b.emit(event.StopRequested, nil, nil, "operator_kill_switch", "kill_switch_file")
	}
	b.receiveKnowledge(in.Knowledge)
	b.run()
	return b.pending()
}

// pending is the cycle as it stands: at the governance boundary, or
// stopped for the proposer.
func (b *builder) pending() (*Pending, error) {
	if b.err != nil {
		return nil, b.err
	}
	p := &Pending{Effect: b.effect, b: b}
	if t := b.thought; t != nil && t.prog.Proposer && t.reply == nil && b.err == nil {
		req := b.thought.request
		p.Ask = &req
	}
	if tr := b.trying; p.Ask == nil && tr != nil && !tr.tried && b.err == nil {
		a := tr.action
		p.Try = &a
	}
	if p.Ask == nil && p.Try == nil && p.Effect != nil {
		// The first batch ends here, durable before the effect: its
		// transitions go with it. A cycle without an effect is one
		// batch, so they wait for the end of the cycle.
		b.logMoves()
		if b.err != nil {
			return nil, b.err
		}
	}
	p.Events = b.events
	return p, nil
}

// Finish completes a cycle with what the driver learned about its Effect
// (the zero Settlement when there was none).
func Finish(p *Pending, st Settlement) (*Result, error) {
	b := p.b
	if p.Try != nil {
		// Governance has not ruled yet: the cycle goes on with Tried.
		return nil, fmt.Errorf("cycle %d stopped to try its command fix before governance: it goes on with Tried, not Finish", b.cycle)
	}
	b.events = make([]event.Event, 0, batchCap) // the first batch belongs to Pending
	if p.Effect != nil {
		if st.Outcome != nil {
			b.tick(st.At)
		}
		b.settle(st)
	}
	b.finish()
	if b.err != nil {
		return nil, b.err
	}
	return &Result{State: b.s, Events: b.events, Summary: b.sum}, nil
}

// run is the body of a cycle up to the governance boundary. Each step is
// a controller state (control.go, docs/controller.md).
func (b *builder) run() {
	rs := &b.s.Run
	if b.stop != nil {
		b.block(controller.Operator, stopReason(*b.stop))
		b.conclude(state.Stopped, []string{stopReason(*b.stop)})
		return
	}
	if b.amended {
		// The cycle that accepts an amendment ends there: the next one
		// runs under the new version (amend.go).
		b.block(controller.Operator, "amendment_accepted")
		b.conclude(state.Continue, []string{"amendment_accepted"})
		return
	}
	if rs.Status == state.RunStopped {
		// A run stopped on a budget woke only to take an amendment or an
		// answer to one, and stays stopped.
		b.stoppedAtStart = true
		b.block(controller.IntentCustodian, "run_stopped")
		b.conclude(state.Stopped, slices.Clone(rs.ReasonCodes))
		return
	}
	if rs.Status == state.RunFaulted {
		b.block(controller.IntentCustodian, "run_faulted_awaiting_manual_resume")
		b.conclude(state.Faulted, []string{"run_faulted_awaiting_manual_resume"})
		return
	}
	if why := b.s.Contract.Invalidated(b.now); why != "" {
		// Seed §15: the contract no longer holds (it lapsed, or a person
		// revoked it by amendment). Nothing is done under it: the run
		// stops until a person amends the contract.
		b.stoppedAtStart = true
		b.block(controller.IntentCustodian, why)
		b.conclude(state.Stopped, []string{"contract_invalidated", why})
		return
	}
	if name, ok := b.hardBudgetAtStart(); ok {
		b.stoppedAtStart = true
		b.block(controller.IntentCustodian, "budget_"+name)
		b.conclude(state.Stopped, []string{"budget_limit", "budget_" + name})
		return
	}
	if names := softExhausted(&b.s, b.now); len(names) > 0 {
		b.pausedAtStart = names
		b.softReached(names, restingOn(rs))
		b.block(controller.IntentCustodian, "budget_soft_limit")
		b.conclude(state.Deferred, budgetReasons(names))
		return
	}

	if b.coords.Authority.Rank() < governance.AuthRead.Rank() {
		// Observing reads the project: authority none may not even look.
		b.block(controller.IntentCustodian, "authority_none")
		b.conclude(b.resting(), []string{"authority_none"})
		return
	}

	// Observe: semantic state and self-observation.
	b.move(controller.Observe, "inputs_accepted", b.rec.InputRefs...)
	sem := semantic.Encode(b.s.Environment, &b.s.Spec)
	b.rec.SemanticStateRef = b.record(event.SemanticEncoded, "sem", sem, nil)
	self := semantic.Observe(rs, b.cycle, len(b.s.Commitments.Commitments))
	b.rec.SelfObservationRef = b.record(event.SelfObserved, "self", self, nil)
	ctxRef := b.observeContext()
	b.move(controller.Align, "context_snapshot", b.rec.SemanticStateRef, b.rec.SelfObservationRef, ctxRef)

	// Align with the accepted intent.
	if al := intent.Align(&b.s.Goal, b.now); !al.Aligned {
		b.emit(event.CycleBlocked, nil, nil, append([]string{"intent_review_required"}, al.Reasons...)...)
		b.block(controller.IntentCustodian, "intent_review_required")
		b.conclude(state.Deferred, append([]string{"intent_review_required"}, al.Reasons...))
		return
	}
	b.move(controller.AssessTension, "intent_aligned", rs.GoalRefs...)

	// Existing commitments come before new agenda candidates; then
	// strategy, then the controller's tension report.
	b.evaluateCommitments()
	b.liftDeferrals()
	b.liftSuppressions()
	b.liftPreflight()
	b.strategize()
	tension, tensionRef := b.assessTension(sem)

	// A resolved approval is acted on first: its action was decided before.
	if i := slices.IndexFunc(rs.PendingApprovals, func(p state.PendingApproval) bool { return p.Resolution != nil }); i >= 0 {
		b.move(controller.Distill, "approval_resolved", tensionRef)
		b.resumeApproval(i)
		return
	}
	// So is an undo the evaluator required.
	if len(rs.Rollbacks) > 0 {
		b.move(controller.Distill, "rollback_required", tensionRef)
		b.rollback()
		return
	}
	satisfied := b.s.Goal.StopOnSuccess && intent.Satisfied(&b.s.Goal, b.s.Environment)
	resolved := false
	if !tension.Material {
		// No agenda is still a first-class outcome of the pipeline: the
		// (empty) resolution is recorded with the no_cycle.
		b.resolveAgenda(sem)
		resolved = true
		if b.res.Outcome == agenda.NoAgenda {
			b.move(controller.NoCycle, controller.TensionNone, tensionRef, b.resRef)
			if satisfied {
				b.conclude(state.Stopped, []string{"goal_satisfied"})
				return
			}
			b.conclude(b.resting(), append(b.restingReasons(), "no_material_tension"))
			return
		}
		// The agenda found work the tension report did not name: distill
		// it rather than drop it.
	}
	b.move(controller.Distill, strings.Join(tension.Classes, ","), tensionRef)
	if b.maxDepth < 1 {
		// D0: observe and report tension, think about nothing.
		b.move(controller.NoCycle, "cognitive_depth_D0")
		b.conclude(b.resting(), []string{"cognitive_depth_D0"})
		return
	}

	if !resolved {
		b.resolveAgenda(sem)
	}
	if b.res.Outcome == agenda.NoAgenda {
		b.move(controller.NoCycle, "no_agenda", b.resRef)
		if satisfied {
			b.conclude(state.Stopped, []string{"goal_satisfied"})
			return
		}
		b.conclude(b.resting(), b.restingReasons())
		return
	}
	if over := b.overBudget(budget.Usage{Branches: int64(b.candidates)}); over != "" {
		b.block(controller.Distiller, "budget_"+over, b.resRef)
		b.conclude(b.resting(), []string{"cycle_budget", "budget_" + over})
		return
	}
	b.think()
}
