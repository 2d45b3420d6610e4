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
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/semantic"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
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

	b *builder
}

// Result is a completed cycle.
type Result struct {
	// State is the state after the cycle. The driver may checkpoint it
	// only after Events are durable.
	State EngineState
	// Events must be appended (one durable batch) before the next cycle
	// starts or the cycle is reported.
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

// builder accumulates one cycle's events, linking each to the previous one
// as its causal parent.
type builder struct {
	s      EngineState
	cycle  int64
	now    time.Time
	at     string
	events []event.Event
	refs   []codec.Ref // refs of all events of the cycle, in order
	// isTransition marks which of refs are controller transitions.
	isTransition []bool
	last         codec.Ref
	rec          state.CycleRecord
	reasons      []string
	sum          Summary
	err          error

	// per-cycle working values
	signals    []state.WakeSignal
	approvals  []state.Approval
	stop       *state.StopRequest
	resumed    bool
	res        agenda.Resolution
	resRef     codec.Ref
	candidates int
	effect     *Effect
	check      world.Check
	item       string
	fp         string
	evidence   string
	compactReq bool
	strategic  strategy.Tension

	// cognition stopped for the external proposer (propose.go)
	thought *thinking

	// the controller's view of the cycle (control.go)
	ctl        *controller.Machine
	guard      *controller.Guard
	coords     controller.Coordinates
	cycleID    string
	maxDepth   int64
	deadline   time.Time
	handoff    []codec.Ref // outputs of the last transition
	nEvents    int64       // events emitted by the cycle, both batches
	evMark     int64       // nEvents at the last transition
	via        controller.Phase
	fitness    controller.FitnessContract
	fitnessRef codec.Ref
	areqRef    codec.Ref
	carried    *codec.Value // the fitness contract an approved plan keeps
	woken      []string     // commitments whose condition or deadline came
	restOut    []codec.Ref
	restUsed   budget.Usage

	// budgets (schedule.go): the limit the deadline comes from, and the
	// stop or rest decided at the cycle's start
	deadlineWhy    string
	stoppedAtStart bool
	pausedAtStart  []string
}

func (b *builder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// memoryRefs are the refs of the cycle's events working memory keeps.
func (b *builder) memoryRefs() []codec.Ref {
	out := make([]codec.Ref, 0, len(b.refs))
	for i, r := range b.refs {
		if !b.isTransition[i] {
			out = append(out, r)
		}
	}
	return out
}

// emit appends an event. obj may be nil.
func (b *builder) emit(typ event.Kind, obj *event.Object, refs map[string]codec.Ref, reasons ...string) codec.Ref {
	ev := event.Event{Type: typ, RunID: b.s.Run.RunID, CycleSeq: b.cycle, At: b.at, Refs: refs, Reasons: reasons, Object: obj}
	if b.last != "" {
		ev.Parents = []codec.Ref{b.last}
	}
	ref, err := ev.Ref()
	if err != nil {
		b.fail(err)
		return ""
	}
	b.events = append(b.events, ev)
	b.refs = append(b.refs, ref)
	b.isTransition = append(b.isTransition, typ == event.Transition)
	b.last = ref
	b.nEvents++
	return ref
}

// object wraps v as a content-addressed object.
func (b *builder) object(kind string, v any) (*event.Object, codec.Ref) {
	obj, err := event.NewObject(kind, v)
	if err != nil {
		b.fail(err)
		return nil, ""
	}
	return obj, obj.Ref
}

// record emits an event that carries v and returns v's ref.
func (b *builder) record(typ event.Kind, kind string, v any, refs map[string]codec.Ref, reasons ...string) codec.Ref {
	obj, ref := b.object(kind, v)
	b.emit(typ, obj, refs, reasons...)
	return ref
}

// ErrNotEligible is returned by Begin when the scheduler says no cycle
// should run; nothing is recorded.
var ErrNotEligible = errors.New("no cycle is eligible")

// Begin runs a cycle up to the governance boundary. It is a pure function
// of the state and the inputs: the same arguments always give the same
// events, byte for byte.
func Begin(s EngineState, in Inputs) (*Pending, error) {
	if ok, _ := Eligible(s, in); !ok {
		return nil, ErrNotEligible
	}
	b := &builder{s: s.clone(), cycle: s.Run.CycleSeq + 1, now: in.Now.UTC().Truncate(time.Second)}
	b.at = state.FormatTime(b.now)
	b.rec = state.CycleRecord{
		Schema: state.CycleSchema, RunID: s.Run.RunID, CycleSeq: b.cycle, PriorCycleRef: s.Run.LastCycleRef, StartedAt: b.at,
		InputEnvironmentRef: in.Observation.Ref(), InputContextRef: s.Run.ContextBindingRef, InputRefs: []codec.Ref{},
		CommitmentRefs: []codec.Ref{}, ReasonCodes: []string{}, ControllerTransitionRef: []codec.Ref{},
	}
	b.sum = Summary{Executed: true, CycleSeq: b.cycle, GovernanceDecision: "NONE"}

	m, inputEvents, err := inputRecords(&b.s, b.cycle, in)
	if err != nil {
		return nil, err
	}
	b.rec.InputRefs = slices.Concat([]codec.Ref{m.ObservationRef}, m.InboxItems, m.Knowledge)
	b.record(event.CycleStarted, "pin", m, map[string]codec.Ref{"prior_cycle": s.Run.LastCycleRef})
	for _, ev := range inputEvents {
		b.emit(ev.Type, ev.Object, ev.Refs, ev.Reasons...)
	}
	_, why := Eligible(s, in)
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
	p := &Pending{Events: b.events, Effect: b.effect, b: b}
	if t := b.thought; t != nil && t.prog.Proposer && t.reply == nil && b.err == nil {
		req := b.thought.request
		p.Ask = &req
	}
	return p, nil
}

// Finish completes a cycle with what the driver learned about its Effect
// (the zero Settlement when there was none).
func Finish(p *Pending, st Settlement) (*Result, error) {
	b := p.b
	b.events = nil // the first batch belongs to Pending
	if p.Effect != nil {
		b.settle(st)
	}
	b.finish()
	if b.err != nil {
		return nil, b.err
	}
	return &Result{State: b.s, Events: b.events, Summary: b.sum}, nil
}

// consumeInbox processes the new inbox items: wake signals (validated,
// coalesced by dedup key), approval resolutions and stop requests.
func (b *builder) consumeInbox(in Inputs) {
	rs := &b.s.Run
	present := map[string]bool{}
	for _, id := range in.InboxPresent {
		present[id] = true
	}
	rs.InboxSeen = slices.DeleteFunc(rs.InboxSeen, func(id string) bool { return !present[id] })
	rs.DedupKeys = slices.DeleteFunc(rs.DedupKeys, func(k state.DedupKey) bool { return expired(k.Expires, b.now) })
	replaced := replacedAnswers(in.Inbox)
	for _, it := range in.Inbox {
		ref := codec.NewRef(inboxKind(it.Kind), it.Body)
		refs := map[string]codec.Ref{"item": ref}
		if !slices.Contains(rs.InboxSeen, it.ID) {
			rs.InboxSeen = append(rs.InboxSeen, it.ID)
		}
		switch it.Kind {
		case inbox.KindWake:
			w := *it.Wake
			switch {
			case !inbox.ValidSource(w.Source):
				b.emit(event.WakeRejected, nil, refs, "unknown_source")
			case expired(w.ExpiresAt, b.now):
				b.emit(event.WakeRejected, nil, refs, "expired")
			case w.CausalParent == "":
				b.emit(event.WakeRejected, nil, refs, "no_causal_parent")
			case inbox.CheckPayload(w.Payload) != nil:
				b.emit(event.WakeRejected, nil, refs, "carries_authority")
				b.refused(b.guard.Raise(b.coords, controller.Coordinates{Authority: governance.AuthExternalAction}, controller.Observer, ref))
			case slices.ContainsFunc(rs.DedupKeys, func(k state.DedupKey) bool { return k.Key == w.DedupKey }):
				b.emit(event.WakeCoalesced, nil, refs, "duplicate_dedup_key")
			default:
				rs.DedupKeys = append(rs.DedupKeys, state.DedupKey{Key: w.DedupKey, Expires: w.ExpiresAt})
				b.signals = append(b.signals, w)
				b.emit(event.WakeAccepted, nil, refs, "source_"+w.Source)
				if w.Source == "budget_replenished" {
					b.replenish(w, refs)
				}
				if w.Source == "manual_resume" && rs.Status == state.RunFaulted {
					rs.Status = state.RunRunning
					b.resumed = true
					b.emit(event.RunResumed, nil, refs, "manual_resume")
				}
				if w.Source == "scheduled_tick" || w.Source == "manual_resume" {
					b.compactReq = b.compactReq || w.Reason == "compact"
				}
			}
		case inbox.KindApproval:
			b.answer(it, refs, replaced)
		case inbox.KindStop:
			st := *it.Stop
			b.stop = &st
			b.emit(event.StopRequested, nil, refs, stopReason(st))
		}
	}
	slices.Sort(rs.InboxSeen)
	slices.SortFunc(rs.DedupKeys, func(a, c state.DedupKey) int { return strings.Compare(a.Key, c.Key) })
}

// loopRole reports whether an approver names one of the loop's own roles.
func loopRole(by string) (controller.Role, bool) {
	var r controller.Role
	if r.UnmarshalText([]byte(strings.ToLower(strings.TrimSpace(by)))) != nil || r == controller.Operator {
		return controller.RoleInvalid, false
	}
	return r, true
}

func stopReason(st state.StopRequest) string {
	if st.Kill {
		return "operator_kill_switch"
	}
	return "explicit_stop"
}

func expired(at string, now time.Time) bool {
	if at == "" {
		return false
	}
	t, err := state.ParseTime(at)
	return err == nil && !now.Before(t)
}

func (b *builder) receiveKnowledge(updates []strategy.KnowledgeUpdate) {
	var fresh []strategy.KnowledgeUpdate
	b.s.Strategy, fresh = strategy.Receive(b.s.Strategy, updates, b.at)
	for _, u := range fresh {
		_, ref := b.object("know", u)
		b.emit(event.KnowledgeCandidate, nil, map[string]codec.Ref{"update": ref}, "knowledge_source_changed", "candidate_not_promoted")
	}
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
	if rs.Status == state.RunFaulted {
		b.block(controller.IntentCustodian, "run_faulted_awaiting_manual_resume")
		b.conclude(state.Faulted, []string{"run_faulted_awaiting_manual_resume"})
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
	b.move(controller.Align, "context_snapshot", b.rec.SemanticStateRef, b.rec.SelfObservationRef)

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

// assessTension writes the controller's TensionReport: is anything worth
// a cycle, and why, with the evidence ref of each claim.
func (b *builder) assessTension(sem semantic.Encoded) (controller.TensionReport, codec.Ref) {
	rs := &b.s.Run
	obs := b.s.Environment.Ref()
	blocked := b.blocked()
	in := controller.TensionInputs{CycleID: b.cycleID, Observation: obs, Due: b.woken}
	for _, f := range sem.Failing() {
		if _, ok := blocked["check:"+f.Subject]; !ok {
			in.Failing = append(in.Failing, f.Subject)
		}
	}
	in.Drifted = b.drifted(in.Failing)
	for i, w := range b.signals {
		if w.Source == "manual_resume" {
			in.OperatorSignals = append(in.OperatorSignals, controller.TensionSource{Class: controller.TensionOperatorRequest,
				Subject: w.Source, Ref: codec.NewRef("sig", codec.MustMarshal(b.signals[i]))})
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

// evaluateCommitments evaluates live commitments' conditions and applies
// the transitions they call for through the store's explicit API.
func (b *builder) evaluateCommitments() {
	if len(b.s.Commitments.Commitments) == 0 {
		return
	}
	ctx := commitment.Context{Now: b.now, Observation: b.s.Environment, Signals: b.signals, Approvals: b.approvals}
	cands := commitment.Evaluate(b.s.Commitments, ctx)
	evRef := b.record(event.ConditionsEvaluated, "ceval", map[string]any{"candidates": nonNil(cands), "cycle_seq": b.cycle}, nil)
	for _, c := range cands {
		b.transition(commitment.Transition{Kind: c.Kind, CommitmentID: c.CommitmentID, ExpectedVersion: c.ExpectedVersion, Reason: c.Reason, At: b.at},
			map[string]codec.Ref{"evaluation": evRef})
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
func (b *builder) transition(t commitment.Transition, refs map[string]codec.Ref) {
	store, c, err := b.s.Commitments.Apply(t)
	if err != nil {
		b.fail(fmt.Errorf("commitment %s %s: %w", t.Kind, t.CommitmentID, err))
		return
	}
	b.s.Commitments = store
	ref := b.record(event.Commitment(lifecycleVerb(t.Kind)), "cmt", c, refs, t.Reason)
	b.rec.CommitmentRefs = append(b.rec.CommitmentRefs, ref)
	if t.Kind == commitment.Expire {
		// An expired promise is not renewed on the spot: the item waits
		// for new evidence (a change to its target) before it is proposed
		// again.
		r, _ := b.s.Environment.Check(c.CheckID)
		b.suppress(state.Suppression{ItemID: c.ItemID, Reason: "commitment_expired", Since: b.at, EvidenceRef: string(r.TargetSHA256)})
	}
	if t.Kind == commitment.Resume {
		b.emit(event.CommitmentResumeAnnounced, nil, map[string]codec.Ref{"commitment": ref}, "explicit_resume")
	}
	if t.Kind == commitment.Resume || t.Kind == commitment.Expire {
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
func (b *builder) liftDeferrals() {
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
func (b *builder) liftSuppressions() {
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
		}
		return false
	})
}

// strategize computes strategic tension and, when the trigger says so,
// runs a review whose overlay may reshape cognition.
func (b *builder) strategize() {
	pol := b.s.Contract.Policy.Defaults()
	failures := map[string]int{}
	for _, f := range semantic.FailuresByItem(b.s.Run.Attempts) {
		failures[f.ItemID] = f.Failures
	}
	targets := map[string]string{}
	for _, c := range b.s.Commitments.Commitments {
		targets[c.ID] = c.Target
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

// blocked lists items that must not be proposed now, with the reason.
func (b *builder) blocked() map[string]string {
	rs := &b.s.Run
	out := map[string]string{}
	for _, sp := range rs.Suppressed {
		out[sp.ItemID] = sp.Reason
	}
	for _, p := range rs.PendingApprovals {
		out[p.ItemID] = "awaiting_approval"
	}
	for _, d := range rs.Deferred {
		out[d.ItemID] = "awaiting_evidence"
	}
	for _, c := range b.s.Commitments.Commitments {
		if c.Status == commitment.Suspended {
			out[c.ItemID] = "commitment_suspended"
		}
	}
	return out
}

func (b *builder) resolveAgenda(sem semantic.Encoded) {
	in := agenda.Inputs{CycleSeq: b.cycle, Blocked: b.blocked()}
	for _, f := range sem.Failing() {
		summary := f.Subject
		if i := slices.IndexFunc(b.s.Spec.Checks, func(c world.Check) bool { return c.ID == f.Subject }); i >= 0 {
			summary = b.s.Spec.Checks[i].Summary
		}
		in.Issues = append(in.Issues, agenda.Issue{CheckID: f.Subject, Priority: f.Priority, Summary: summary})
	}
	for _, c := range b.s.Commitments.Commitments {
		if c.Status == commitment.Active {
			in.Reactivated = append(in.Reactivated, agenda.Work{CommitmentID: c.ID, CheckID: c.CheckID, Summary: c.Summary})
		}
	}
	b.res = agenda.Resolve(in)
	b.candidates = len(b.res.Candidates)
	typ := event.AgendaSelected
	if b.res.Outcome == agenda.NoAgenda {
		typ = event.AgendaEmpty
	}
	b.emit(event.CandidatesProposed, nil, nil, fmt.Sprintf("candidates_%d", len(b.res.Candidates)))
	b.resRef = b.record(typ, "ares", b.res, nil, b.res.ReasonCodes...)
	b.rec.AgendaResolutionRef = b.resRef
	b.s.Run.ActiveAgendaResolutionRef = b.resRef
	if b.res.Selected != nil {
		b.sum.Agenda = b.res.Selected.ItemID
	}
}

// think runs cognition on the selected item and takes its action request
// to governance.
func (b *builder) think() {
	rs := &b.s.Run
	sel := *b.res.Selected
	b.item = sel.ItemID
	ci := slices.IndexFunc(b.s.Spec.Checks, func(c world.Check) bool { return c.ID == sel.CheckID })
	if ci < 0 {
		b.fail(fmt.Errorf("agenda selected unknown check %q", sel.CheckID))
		return
	}
	b.check = b.s.Spec.Checks[ci]
	result, _ := b.s.Environment.Check(b.check.ID)
	failed := map[string]bool{}
	for _, a := range rs.Attempts {
		if a.ItemID == b.item && a.Failures > 0 {
			failed[a.Fingerprint] = true
		}
	}
	routing := cognition.Routing{}
	if ov := b.s.Strategy.Overlay; ov != nil {
		routing = cognition.Routing{Ref: ov.Ref(), CritiqueFirst: ov.CritiqueFirst, SkipFailed: slices.Contains(ov.SkipFailedFixes, b.item)}
	}
	t := &thinking{result: result, routing: routing, failed: failed, commitmentID: sel.CommitmentID}
	t.draft = b.draftResult(result)
	t.affs = cognition.Retrieve(b.check, t.draft)
	if b.needsProposal(t.affs, failed) {
		t.prog = cognition.CompileProposal(b.cycle, b.item, b.check, t.affs, routing)
	} else {
		t.prog = cognition.Compile(b.cycle, b.item, b.check, t.affs, routing)
	}
	if b.exhausts("cognitive_operations", int64(cognition.Cost(t.prog))) {
		// A program's cost is known before it runs (a proposer's at least
		// its fixed steps): one that would go past the hard level does
		// not run, and no proposer is asked.
		b.block(controller.Distiller, "budget_cognitive_operations", b.resRef)
		b.conclude(state.Stopped, []string{"budget_limit", "budget_cognitive_operations"})
		return
	}
	t.progRef = b.record(event.ProgramCompiled, "cprog", t.prog, nil)
	b.rec.CognitiveProgramRef = t.progRef
	b.thought = t
	if t.prog.Proposer {
		// Stop here: the driver asks the proposer, Answer goes on.
		t.request = b.proposalRequest(result)
		t.requestRef = b.record(event.ProposalRequested, "preq", t.request, map[string]codec.Ref{"program": t.progRef})
		return
	}
	b.decide()
}

// decide runs the self-dialogue over the compiled program (and the
// proposer's reply, when it was asked) and takes the action request, if
// any, to governance.
func (b *builder) decide() {
	rs := &b.s.Run
	pol := b.s.Contract.Policy.Defaults()
	t := b.thought
	progRef := t.progRef
	result := t.result
	sit := cognition.Situation{Check: b.check, Result: t.draft, FailedPrint: t.failed, Spec: &b.s.Spec, Routing: t.routing}
	var dlg cognition.Dialogue
	var action *world.Action
	if t.reply != nil {
		if b.exhausts("cognitive_operations", int64(cognition.ReplyCost(*t.reply))) {
			// The reply fixes what weighing it costs: a reply too long for
			// the hard level is not weighed.
			b.block(controller.Distiller, "budget_cognitive_operations", b.resRef, progRef)
			b.conclude(state.Stopped, []string{"budget_limit", "budget_cognitive_operations"})
			return
		}
		dlg, action = cognition.RunProposal(t.prog, progRef, sit, *t.reply, b.reportAction(t))
		b.noteProposals(dlg, action)
	} else {
		dlg, action = cognition.Run(t.prog, progRef, sit)
	}
	b.rec.DialogueRef = b.record(event.DialogueCompleted, "dlg", dlg, map[string]codec.Ref{"program": progRef}, dlg.Result)
	rs.Budget.CognitiveOperations += int64(dlg.Operations)
	depth := int64(1)
	if b.sum.StrategicReview {
		depth = 2
	}
	used := budget.Usage{Branches: int64(b.candidates), Cost: int64(dlg.Operations), RecursiveDepth: depth}
	if action == nil {
		// The distiller produced no Resultant: the controller does not
		// force one. A proposer that found nothing (or only actions the
		// critic rejected) is not asked again until the evidence changes.
		sp := state.Suppression{ItemID: b.item, Reason: "no_acceptable_remedy", Since: b.at}
		if t.reply != nil {
			sp.EvidenceRef = string(result.TargetSHA256)
		}
		b.suppress(sp)
		b.moveAs(controller.Distiller, controller.NoCycle, "no_acceptable_remedy", used, b.resRef, progRef, b.rec.DialogueRef)
		b.conclude(b.afterSetback(), []string{"no_action_request", dlg.Reason})
		return
	}
	if over := b.overBudget(used); over != "" {
		b.moveAs(controller.Distiller, controller.Blocked, "budget_"+over, used, b.resRef, progRef, b.rec.DialogueRef)
		b.suppress(state.Suppression{ItemID: b.item, Reason: "cycle_budget_" + over, Since: b.at, EvidenceRef: string(result.TargetSHA256)})
		b.conclude(b.afterSetback(), []string{"cycle_budget", "budget_" + over})
		return
	}

	// Forever-loop guard: the same remedy on the same evidence, again.
	b.fp, b.evidence = cognition.Fingerprint(*action), string(result.TargetSHA256)
	ai := slices.IndexFunc(rs.Attempts, func(a state.Attempt) bool {
		return a.ItemID == b.item && a.Fingerprint == b.fp && a.EvidenceRef == b.evidence
	})
	if ai >= 0 && rs.Attempts[ai].Count >= pol.RepeatLimit {
		// Stop rule: recursion that repeats without new evidence.
		b.emit(event.GuardTripped, nil, nil, "repeat_without_progress", b.item)
		b.moveAs(controller.Distiller, controller.Blocked, "repeat_without_progress", used, b.resRef, progRef, b.rec.DialogueRef)
		b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "repeat_without_progress", Since: b.at, EvidenceRef: b.evidence})
		b.conclude(b.afterSetback(), []string{"repeat_without_progress"})
		return
	}
	if ai < 0 {
		rs.Attempts = append(rs.Attempts, state.Attempt{ItemID: b.item, Fingerprint: b.fp, EvidenceRef: b.evidence})
		ai = len(rs.Attempts) - 1
	}
	rs.Attempts[ai].Count++
	rs.Attempts[ai].LastCycle = b.cycle
	rs.Attempts = boundAttempts(rs.Attempts, b.item)
	sortAttempts(rs.Attempts)
	b.moveAs(controller.Distiller, controller.Plan, "resultant_ready", used, b.resRef, progRef, b.rec.DialogueRef)
	b.govern(*action, nil, t.commitmentID)
}

// boundAttempts keeps only the most recent attempts of an item.
func boundAttempts(as []state.Attempt, item string) []state.Attempt {
	var mine []state.Attempt
	for _, a := range as {
		if a.ItemID == item {
			mine = append(mine, a)
		}
	}
	if len(mine) <= state.AttemptsKeptPerItem {
		return as
	}
	slices.SortFunc(mine, func(a, c state.Attempt) int { return int(c.LastCycle - a.LastCycle) })
	drop := mine[state.AttemptsKeptPerItem:]
	return slices.DeleteFunc(as, func(a state.Attempt) bool { return slices.Contains(drop, a) })
}

func sortAttempts(as []state.Attempt) {
	slices.SortFunc(as, func(a, c state.Attempt) int {
		return strings.Compare(a.ItemID+"\x00"+a.Fingerprint+"\x00"+a.EvidenceRef, c.ItemID+"\x00"+c.Fingerprint+"\x00"+c.EvidenceRef)
	})
}

// resumeApproval acts on a resolved approval: governance rules again on
// the recorded action, with the approval as evidence. Nothing is re-derived.
func (b *builder) resumeApproval(i int) {
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
	b.govern(action, p.Resolution, "")
}

// selectRecorded makes work decided in an earlier cycle (an approved
// action, a required undo) this cycle's agenda, ahead of anything new.
func (b *builder) selectRecorded(itemID, checkID string, source agenda.Source, reason string, refs map[string]codec.Ref) {
	b.item = itemID
	if ci := slices.IndexFunc(b.s.Spec.Checks, func(c world.Check) bool { return c.ID == checkID }); ci >= 0 {
		b.check = b.s.Spec.Checks[ci]
	}
	b.res = agenda.Resolution{Schema: agenda.Schema, CycleSeq: b.cycle, Candidates: []agenda.Candidate{}, Excluded: []agenda.Exclusion{},
		Outcome: agenda.Selected, Selected: &agenda.Candidate{ItemID: itemID, CheckID: checkID, Source: source}, ReasonCodes: []string{reason}}
	b.resRef = b.record(event.AgendaSelected, "ares", b.res, refs, b.res.ReasonCodes...)
	b.rec.AgendaResolutionRef = b.resRef
	b.s.Run.ActiveAgendaResolutionRef = b.resRef
	b.sum.Agenda = itemID
}

// rollback plans the undo an evaluation required: the restore action from
// the effect's rollback bundle, governed like any action.
func (b *builder) rollback() {
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
// scheduler without altering it.
func (b *builder) govern(action world.Action, approval *state.Approval, commitmentID string) {
	rs := &b.s.Run
	actionRef := action.Ref()
	b.rec.ActionRequestRef = b.record(event.ActionProposed, "areq", action, nil)
	b.areqRef = b.rec.ActionRequestRef
	fitRef := b.plan(action, actionRef, b.areqRef)
	result, known := b.s.Environment.Check(action.CheckID)
	present := map[string]bool{}
	for _, e := range b.s.Environment.Evidence {
		present[e.ID] = e.Present
	}
	req := governance.Request{
		Action: action, ActionRef: actionRef, ContractRef: rs.ContractRef, CycleSeq: b.cycle, Now: b.at,
		EvidencePresent: present, RequiredEvidence: b.check.RequiresEvidence, ObservationRef: b.s.Environment.Ref(),
		StillNeeded: !known || result.Status == world.CheckFail || action.CheckID == "" || action.Operation == world.OpRestore, Approval: approval,
	}
	d := governance.Decide(&b.s.Contract, &b.s.Spec, req)
	decRef := b.record(event.DecisionRecorded, "gdec", d, map[string]codec.Ref{"action": actionRef}, d.ReasonCodes...)
	rcptRef := b.record(event.ReceiptRecorded, "grcpt", governance.NewReceipt(d, decRef, req), map[string]codec.Ref{"decision": decRef})
	b.rec.GovernanceDecisionRef = decRef
	b.rec.GovernanceDecision = d.Verdict.String()
	b.sum.GovernanceDecision = d.Verdict.String()
	b.sum.Action = action.Describe()
	more := b.candidates > 1
	b.judgeProposed(b.fp, "governance_"+strings.ToLower(d.Verdict.String())+"_"+d.ReasonCodes[0])

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
		if action.Operation.Writes() {
			files = 1
		}
		if over := b.overBudget(budget.Usage{ToolActions: 1, FilesTouched: files}); over != "" {
			b.block(controller.IntentCustodian, "budget_"+over, decRef)
			b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "cycle_budget_" + over, Since: b.at, EvidenceRef: b.evidence})
			b.conclude(b.orResting(more), []string{"cycle_budget", "budget_" + over})
			return
		}
		key := world.IdempotencyKey(rs.RunID, b.cycle, actionRef, decRef)
		b.effect = &Effect{Key: key, Action: action, ActionRef: actionRef, DecisionRef: decRef}
		b.rec.IdempotencyKey = key
		b.sum.IdempotencyKey = key
		b.move(controller.Checkpoint, "governance_execute", decRef, rcptRef)
		b.emit(event.ActionRequested, nil, map[string]codec.Ref{"action": actionRef, "decision": decRef}, "idempotency_key_derived")
	case governance.Refuse:
		b.block(controller.IntentCustodian, "governance_refused_"+d.ReasonCodes[0], decRef, rcptRef)
		b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "refused_" + d.ReasonCodes[0], DecisionRef: decRef, Since: b.at})
		b.conclude(b.orResting(more), append([]string{"governance_refused"}, d.ReasonCodes...))
	case governance.IdleVerdict:
		b.move(controller.NoCycle, "nothing_to_do", decRef, rcptRef)
		b.conclude(b.orResting(more), []string{"governance_idle", "nothing_to_do"})
	case governance.Escalate:
		rs.PendingApprovals = append(rs.PendingApprovals, state.PendingApproval{
			Ref: actionRef, DecisionRef: decRef, Operation: string(action.Operation), Target: action.Target, CheckID: action.CheckID,
			ItemID: b.item, Reason: d.ReasonCodes[0], RequestedAt: b.at, CycleSeq: b.cycle, Action: mustValue(action),
			ProposalOnly: b.coords.AutonomyLevel() <= 1, FitnessRef: fitRef, Fitness: ptr(mustValue(b.fitness)),
		})
		b.emit(event.ApprovalRequested, nil, map[string]codec.Ref{"action": actionRef, "decision": decRef}, d.ReasonCodes...)
		b.move(controller.Propose, d.ReasonCodes[0], decRef, rcptRef, fitRef)
		b.conclude(b.orResting(more), append([]string{"governance_escalated"}, d.ReasonCodes...))
	case governance.Defer:
		b.block(controller.IntentCustodian, "evidence_missing", decRef, rcptRef)
		b.deferItem(d, decRef, commitmentID)
		b.conclude(b.orResting(more), append([]string{"governance_deferred"}, d.MissingEvidence...))
	}
}

func ptr[T any](v T) *T { return &v }

func mustValue(v any) codec.Value {
	val, err := codec.Parse(codec.MustMarshal(v))
	if err != nil {
		panic(err)
	}
	return val
}

// deferItem keeps deferred work: as a commitment suspended until the
// evidence arrives (policy "sleep"), or as a deferred item ("defer").
// Promotion to a commitment is explicit and recorded.
func (b *builder) deferItem(d governance.Decision, decRef codec.Ref, commitmentID string) {
	rs := &b.s.Run
	pol := b.s.Contract.Policy.Defaults()
	wake := &commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: d.MissingEvidence[0]}
	if pol.DeferTo == "defer" {
		rs.Deferred = append(rs.Deferred, state.DeferredItem{ItemID: b.item, Evidence: d.MissingEvidence, Reason: "evidence_missing", Since: b.at, DecisionRef: decRef})
		slices.SortFunc(rs.Deferred, func(a, c state.DeferredItem) int { return strings.Compare(a.ItemID, c.ItemID) })
		b.emit(event.WorkDeferred, nil, map[string]codec.Ref{"decision": decRef}, "evidence_missing")
		return
	}
	if c, ok := b.s.Commitments.ForItem(b.item); ok && commitmentID != "" {
		b.transition(commitment.Transition{Kind: commitment.Suspend, CommitmentID: c.ID, ExpectedVersion: c.Version, Reason: "evidence_missing", At: b.at, Wake: wake},
			map[string]codec.Ref{"decision": decRef})
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

func (b *builder) suppress(sp state.Suppression) {
	rs := &b.s.Run
	rs.Suppressed = slices.DeleteFunc(rs.Suppressed, func(x state.Suppression) bool { return x.ItemID == sp.ItemID })
	rs.Suppressed = append(rs.Suppressed, sp)
	slices.SortFunc(rs.Suppressed, func(a, c state.Suppression) int { return strings.Compare(a.ItemID, c.ItemID) })
}

// orResting is CONTINUE when other agenda candidates remain this cycle,
// else the resting disposition.
func (b *builder) orResting(more bool) state.Disposition {
	if more {
		return state.Continue
	}
	return b.resting()
}

// afterSetback is the disposition after an item was set aside.
func (b *builder) afterSetback() state.Disposition { return b.orResting(b.candidates > 1) }

// settle records the world's answer to the effect: act, observe the
// effect, evaluate it against the fixed FitnessContract, roll back or
// metabolize, maybe forge a candidate, cascade.
func (b *builder) settle(st Settlement) {
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
		rs.PendingApprovals = append(rs.PendingApprovals, state.PendingApproval{
			Ref: e.ActionRef, DecisionRef: e.DecisionRef, Operation: string(e.Action.Operation), Target: e.Action.Target, CheckID: e.Action.CheckID,
			ItemID: b.item, Reason: "uncertain_effect", RequestedAt: b.at, CycleSeq: b.cycle, Action: mustValue(e.Action),
		})
		b.emit(event.ApprovalRequested, nil, map[string]codec.Ref{"action": e.ActionRef}, "recovery_uncertain_effect")
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

	result, why := evaluateEffect(e.Action, out, st.Readback, b.fitness)
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
	if e.Action.Operation == world.OpMarkIssue && out.Status == world.OutcomeCommitted {
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
		if e.Action.Operation != world.OpRestore {
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

// metabolize writes the LearningDelta, forges a candidate at A4 after a
// demonstrated gap, and records the cascade. The controller is left in
// cascade; finish takes it back to sleep.
func (b *builder) metabolize(result, target string, evidence ...codec.Ref) {
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

func (b *builder) expected(a world.Action) string {
	if a.CheckID != "" && slices.Contains(b.fitness.Criteria, "check_passes") {
		return "check " + a.CheckID + " passes, no regression"
	}
	return "outcome committed and read back"
}

// conclude sets the cycle's disposition and reasons. A later call (the
// end-of-cycle budget stop) may override it.
func (b *builder) conclude(d state.Disposition, reasons []string) {
	b.s.Run.LoopDisposition = d
	b.reasons = slices.DeleteFunc(slices.Clone(reasons), func(s string) bool { return s == "" })
}

// finish is the common tail of every cycle: working memory and compaction,
// budgets, the cycle record, the run state, the checkpoint record, and the
// disposition events.
func (b *builder) finish() {
	rs := &b.s.Run
	pol := b.s.Contract.Policy.Defaults()
	if !b.stoppedAtStart {
		rs.Budget.Cycles++
	}
	rs.Budget.WallClockSeconds = budget.WallClock(rs, b.now)

	// Working memory: record this cycle, then compact if the cadence says so.
	// The unit lists the cycle's events except its controller transitions:
	// those hang off the cycle record (controller_transition_refs), and
	// listing them here would double working memory for nothing.
	unit := memory.Unit{CycleSeq: b.cycle, EventRefs: b.memoryRefs(), Item: b.item, Verdict: b.rec.GovernanceDecision, Disposition: rs.LoopDisposition.String()}
	b.s.Context = memory.Record(b.s.Context, unit, b.protected())
	mp := memory.Policy{MaxUnits: pol.CompactAfterUnits, EveryCycles: pol.CompactEveryCycles, KeepUnits: 8, KeepBlocks: pol.KeepSummaryBlocks}
	if due, trigger := memory.Due(b.s.Context, b.cycle, mp, b.compactReq); due && !rs.LoopDisposition.Terminal() {
		if b.exhausts("compactions", 1) {
			b.conclude(state.Stopped, []string{"budget_limit", "budget_compactions"})
		} else {
			nb, comp, err := memory.Compact(b.s.Context, b.cycle, trigger, mp)
			if err != nil {
				b.emit(event.CompactionFailed, nil, nil, err.Error())
				b.conclude(state.Faulted, []string{"compaction_failed"})
			} else {
				b.s.Context = nb
				rs.Budget.Compactions++
				b.rec.ContextCompressionRef = b.record(event.CompactionCompleted, "ccomp", comp, nil, trigger)
				b.sum.Compacted = true
			}
		}
	}

	if b.exhausts("cycles", 1) && !rs.LoopDisposition.Terminal() {
		// No next cycle fits: stop at the end of the last one.
		b.conclude(state.Stopped, []string{"budget_limit", "budget_cycles"})
	}
	b.softPause()

	d := rs.LoopDisposition
	switch d {
	case state.Stopped:
		rs.Status = state.RunStopped
	case state.Faulted:
		rs.Status = state.RunFaulted
	}
	if d == state.Faulted && b.ctl.State() != controller.Failed && b.ctl.State() != controller.Blocked {
		b.move(controller.Failed, strings.Join(b.reasons, ","))
	}
	from := b.ctl.State()
	b.moveAs(roleOf(from), controller.Sleep, "rest_"+strings.ToLower(d.String()), b.restUsed, b.restOut...)
	rs.Controller = b.via.String()
	b.sum.Controller = rs.Controller
	b.setWaiting(d)
	rs.ReasonCodes = nonNil(b.reasons)
	rs.CycleSeq = b.cycle
	rs.UpdatedAt = b.at

	// The cycle record, then the checkpoint record that points at it.
	b.rec.LoopDisposition = d
	b.rec.ReasonCodes = rs.ReasonCodes
	cycRef := codec.MustRefOf(kindCycle, b.rec)
	rs.LastCheckpointRef = b.s.Run.LastCheckpointRef
	rs.LastCycleRef = cycRef
	b.s.seal()
	b.emitDisposition(d)
	chk := state.Checkpoint{
		Schema: state.CheckpointSchema, RunID: rs.RunID, CycleSeq: b.cycle, RunStateRef: runStateRef(*rs), CycleRef: cycRef,
		ContextBindingRef: rs.ContextBindingRef, CommitmentStoreRef: rs.CommitmentStoreRef, EnvironmentRef: rs.EnvironmentRef,
		StrategyStateRef: rs.StrategyStateRef, LedgerFrontierRefs: []codec.Ref{b.last}, LastWorldCommitRef: b.s.Checkpoint.LastWorldCommitRef,
		NextWake: rs.NextWake, BudgetSnapshot: rs.Budget,
	}
	if b.rec.WorldOutcomeRef != "" && b.sum.Outcome == string(world.OutcomeCommitted) {
		chk.LastWorldCommitRef = b.rec.WorldOutcomeRef
	}
	b.s.Checkpoint = chk
	chkRef := b.record(event.CheckpointCreated, kindCheckpoint, chk, map[string]codec.Ref{"cycle": cycRef})
	b.record(event.CycleCompleted, kindCycle, b.rec, map[string]codec.Ref{"checkpoint": chkRef}, rs.LoopDisposition.String())

	b.sum.CycleRef = cycRef
	b.sum.LoopDisposition = d
	b.sum.ReasonCodes = rs.ReasonCodes
}

// emitDisposition records the scheduler transition (seed §11 names).
func (b *builder) emitDisposition(d state.Disposition) {
	switch d {
	case state.Idle:
		b.emit(event.LoopIdled, nil, nil, b.reasons...)
	case state.Sleep:
		b.emit(event.LoopSlept, nil, nil, b.reasons...)
	case state.Deferred:
		b.emit(event.LoopDeferred, nil, nil, b.reasons...)
	case state.WaitApproval:
		b.emit(event.LoopWaitingApproval, nil, nil, b.reasons...)
	case state.Stopped:
		b.emit(event.RunStopped, nil, nil, b.reasons...)
	case state.Faulted:
		b.emit(event.RunFaulted, nil, nil, b.reasons...)
	}
}

// protected lists what compaction must never drop.
func (b *builder) protected() []memory.Protected {
	rs := &b.s.Run
	ps := []memory.Protected{
		{Kind: "goal", Ref: string(codec.MustRefOf(kindGoal, b.s.Goal))},
		{Kind: "contract", Ref: string(codec.MustRefOf(kindContract, b.s.Contract))},
		{Kind: "authority", Ref: string(b.s.Contract.AuthorityRef())},
	}
	for _, c := range b.s.Commitments.Commitments {
		ps = append(ps, memory.Protected{Kind: "commitment", Ref: fmt.Sprintf("%s@v%d", c.ID, c.Version)})
	}
	for _, sv := range b.s.Strategy.Active {
		ps = append(ps, memory.Protected{Kind: "strategy_source", Ref: sv.SourceRef + "@" + sv.SourceVersion})
	}
	for _, p := range rs.PendingApprovals {
		ps = append(ps, memory.Protected{Kind: "pending_approval", Ref: string(p.Ref)})
	}
	for _, d := range rs.Deferred {
		for _, e := range d.Evidence {
			ps = append(ps, memory.Protected{Kind: "deferred_evidence", Ref: d.ItemID + "<-" + e})
		}
	}
	return ps
}
