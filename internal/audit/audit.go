// Package audit answers "why did it do that?" for any past cycle, from
// evidence only: the cycle's own ledger events and the objects they carry
// (agenda resolution, decision receipt, commitments, strategy refs with
// exact source versions, action, idempotency key, world outcome), the
// contract and authority pinned at the start of the run, and the later
// compaction that summarised the cycle's working memory. It never reads a
// summary block as evidence, and it works the same before and after
// compaction and across restarts, because everything is resolved by ref
// in the ledger.
//
// Reading a cycle costs that cycle's bytes (through the cycle index), the
// run's prologue, and at most a bounded number of later cycle records to
// find the compaction: never a scan of the whole ledger.
package audit

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// Report explains one cycle.
type Report struct {
	RunID      string            `json:"run_id"`
	Cycle      int64             `json:"cycle"`
	CycleRef   codec.Ref         `json:"cycle_ref"`
	Record     state.CycleRecord `json:"cycle_record"`
	Inputs     event.Inputs      `json:"inputs"`
	InboxItems []InboxItem       `json:"inbox_items"`
	// Answers are what the cycle made of the answers and amendments it
	// consumed, with who signed each when the contract lists approvers.
	Answers   []Answer            `json:"answers,omitempty"`
	Chain     []Step              `json:"causal_chain"`
	Agenda    *agenda.Resolution  `json:"agenda,omitempty"`
	Program   *cognition.Program  `json:"cognitive_program,omitempty"`
	Dialogue  *cognition.Dialogue `json:"self_dialogue,omitempty"`
	Action    *world.Action       `json:"action_request,omitempty"`
	ActionRef codec.Ref           `json:"action_ref,omitempty"`
	// Trial is what a git world's command fix did when the cycle tried
	// it before governance ruled on it (action.request.tried): the paths
	// it really changed, and those outside its declared touches.
	Trial       *world.CommandTried  `json:"trial,omitempty"`
	Decision    *governance.Decision `json:"decision,omitempty"`
	DecisionRef codec.Ref            `json:"decision_ref,omitempty"`
	Receipt     *governance.Receipt  `json:"decision_receipt,omitempty"`
	Contract    ContractInForce      `json:"contract_in_force"`
	// Pinned are the versions of the goal, contract, authority and
	// environment the cycle ran under, when the run was amended before
	// it (persistent.cycle.started names them); absent, the cycle ran
	// under the versions pinned at the start.
	Pinned         map[string]codec.Ref `json:"pinned_versions,omitempty"`
	IdempotencyKey string               `json:"idempotency_key,omitempty"`
	Intent         *world.Intent        `json:"intent,omitempty"`
	Outcome        *world.Outcome       `json:"world_outcome,omitempty"`
	Evaluation     *event.Evaluation    `json:"evaluation,omitempty"`
	// Incident is the uncertain effect the cycle asked a person about,
	// with what each path held in the intent and then; Resolution a
	// person's word on one (acr resolve).
	Incident    *event.Incident    `json:"incident,omitempty"`
	IncidentRef codec.Ref          `json:"incident_ref,omitempty"`
	Resolution  *event.Resolution  `json:"resolution,omitempty"`
	Commitments []CommitmentChange `json:"commitments"`
	Strategy    Strategy           `json:"strategy"`
	Compaction  *Compaction        `json:"compacted_by,omitempty"`
	Recovery    []Step             `json:"recovery"`
	Controller  Controller         `json:"controller"`
}

// Controller is the cycle as the cycle controller saw it: the declared
// coordinates and budget, every transition with its actor role, and the
// controller's artifacts.
type Controller struct {
	Declaration *controller.Declaration `json:"declaration,omitempty"`
	// Context is the cycle's source authority, trust state and available
	// capabilities (ledger format 2; absent in older runs).
	Context     *controller.Context         `json:"context,omitempty"`
	Transitions []controller.Transition     `json:"transitions"`
	Tension     *controller.TensionReport   `json:"tension,omitempty"`
	Fitness     *controller.FitnessContract `json:"fitness_contract,omitempty"`
	FitnessRef  codec.Ref                   `json:"fitness_ref,omitempty"`
	Readback    *world.Readback             `json:"readback,omitempty"`
	Learning    *controller.LearningDelta   `json:"learning_delta,omitempty"`
	Candidate   *controller.Candidate       `json:"candidate,omitempty"`
	Cascade     *controller.CascadeRecord   `json:"cascade,omitempty"`
	Violations  []controller.Violation      `json:"violations_refused"`
	// Other holds controller records of kinds this audit does not know,
	// as they are.
	Other []json `json:"other,omitempty"`
}

// add files one controller record under its kind.
func (c *Controller) add(ev event.Event) error {
	var err error
	switch ev.Type {
	case event.Transition, event.Transitions:
		var ts []controller.Transition
		if ts, err = controller.TransitionsOf(ev); err == nil {
			c.Transitions = append(c.Transitions, ts...)
		}
	case event.CycleDeclared:
		c.Declaration, err = decode[controller.Declaration](ev.Object)
	case event.ContextRecorded:
		c.Context, err = decode[controller.Context](ev.Object)
	case event.TensionAssessed:
		c.Tension, err = decode[controller.TensionReport](ev.Object)
	case event.FitnessFixed:
		c.Fitness, err = decode[controller.FitnessContract](ev.Object)
		c.FitnessRef = ev.Object.Ref
	case event.ReadbackRecorded:
		c.Readback, err = decode[world.Readback](ev.Object)
	case event.LearningMetabolized:
		c.Learning, err = decode[controller.LearningDelta](ev.Object)
	case event.CandidateForged:
		c.Candidate, err = decode[controller.Candidate](ev.Object)
	case event.CascadeRecorded:
		c.Cascade, err = decode[controller.CascadeRecord](ev.Object)
	case event.ViolationRefused:
		var v *controller.Violation
		if v, err = decode[controller.Violation](ev.Object); err == nil {
			c.Violations = append(c.Violations, *v)
		}
	default:
		var v codec.Value
		if v, err = codec.ParseCanonical(ev.Object.Body); err == nil {
			c.Other = append(c.Other, v)
		}
	}
	return err
}

// json is a raw object kept as-is in the report.
type json = codec.Value

// InboxItem is a consumed inbox item: who sent it and why.
type InboxItem struct {
	Kind   string `json:"kind"`
	ID     string `json:"id"`
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
	What   string `json:"what"`
}

// Step is one event of the causal chain.
type Step struct {
	Seq       int64                `json:"seq"`
	Type      event.Kind           `json:"type"`
	Ref       codec.Ref            `json:"ref"`
	Parents   []codec.Ref          `json:"parents,omitempty"`
	Refs      map[string]codec.Ref `json:"refs,omitempty"`
	Reasons   []string             `json:"reason_codes,omitempty"`
	ObjectRef codec.Ref            `json:"object_ref,omitempty"`
}

// ContractInForce is the contract and authority pinned for the run.
type ContractInForce struct {
	GoalRef      codec.Ref              `json:"goal_ref"`
	GoalID       string                 `json:"goal_id"`
	Ref          codec.Ref              `json:"ref"`
	ID           string                 `json:"id"`
	AuthorityRef codec.Ref              `json:"authority_ref"`
	Authority    governance.Authority   `json:"authority"`
	Coordinates  governance.Coordinates `json:"coordinates"`
	Rule         *governance.Rule       `json:"rule_applied,omitempty"`
}

// CommitmentChange is a lifecycle event the cycle recorded.
type CommitmentChange struct {
	Event      event.Kind            `json:"event"`
	Reason     string                `json:"reason"`
	Commitment commitment.Commitment `json:"commitment"`
}

// Strategy holds the cycle's strategy lane.
type Strategy struct {
	Tension   *strategy.Tension   `json:"tension,omitempty"`
	Trigger   *strategy.Trigger   `json:"trigger,omitempty"`
	Retrieval *strategy.Retrieval `json:"lens_retrieval,omitempty"`
	Overlay   *strategy.Overlay   `json:"routing_overlay,omitempty"`
	// Sources are the lens sources with exact versions that shaped the
	// cycle (from the retrieval and the overlay).
	Sources []strategy.SourceVersion `json:"sources"`
}

// Compaction names the later compaction that summarised this cycle.
type Compaction struct {
	Cycle    int64     `json:"compaction_cycle"`
	EventRef codec.Ref `json:"compaction_ref"`
	BlockID  string    `json:"summary_block"`
	From     int64     `json:"from_cycle"`
	To       int64     `json:"to_cycle"`
	Trigger  string    `json:"trigger"`
}

// ErrUnknownCycle means the ledger has no completed cycle with that number.
var ErrUnknownCycle = ledger.ErrNoCycle

// lookahead bounds the search for the compaction that summarised a cycle;
// compaction runs at least every compact_every_cycles cycles.
const lookahead = 512

// History is what Explain reads of a run's ledger: one cycle's records,
// one cycle's cycle record and the prologue. It is an interface so that
// the audit reads a run wherever its ledger is kept (ledger.Reader for a
// state directory, jsstore for JetStream) and never opens a file.
type History interface {
	// Cycle returns the records of one completed cycle, checked; an error
	// matching ErrUnknownCycle if there is none.
	Cycle(cycle int64) ([]event.Record, error)
	// CycleCompleted returns a completed cycle's cycle record.
	CycleCompleted(cycle int64) (event.Record, error)
	// Prologue returns the records before the first cycle.
	Prologue() ([]event.Record, error)
}

// Explain builds the report for one cycle from the run's history h.
//
// It never writes: with a state directory, a missing or stale cycle index
// is built in memory.
func Explain(h History, cycle int64) (*Report, error) {
	recs, err := h.Cycle(cycle)
	if err != nil {
		return nil, err
	}
	r := &Report{Cycle: cycle, InboxItems: []InboxItem{}, Chain: []Step{}, Commitments: []CommitmentChange{},
		Recovery: []Step{}, Controller: Controller{Transitions: []controller.Transition{}, Violations: []controller.Violation{}}, Strategy: Strategy{Sources: []strategy.SourceVersion{}}}
	for _, rec := range recs {
		if err := r.absorb(rec); err != nil {
			return nil, fmt.Errorf("audit cycle %d, seq %d: %w", cycle, rec.Seq, err)
		}
	}
	pro, err := h.Prologue()
	if err != nil {
		return nil, err
	}
	g, c, err := pinnedDocuments(pro)
	if err != nil {
		return nil, err
	}
	r.Contract = ContractInForce{GoalRef: codec.MustRefOf("goal", g), GoalID: g.ID, Ref: codec.MustRefOf("contract", c), ID: c.ID, AuthorityRef: c.AuthorityRef(), Authority: c.Authority, Coordinates: c.Coordinates}
	if r.Pinned != nil && r.Pinned["contract"] != r.Contract.Ref {
		// An amended contract: the prologue's body is not the one in
		// force, so only its refs are told (acr log shows the
		// amendment.accepted that pinned it).
		r.Contract = ContractInForce{GoalRef: r.Pinned["goal"], Ref: r.Pinned["contract"], AuthorityRef: r.Pinned["authority"]}
	} else if r.Pinned != nil {
		r.Contract.GoalRef = r.Pinned["goal"]
	}
	if r.Decision != nil && r.Contract.ID != "" {
		var i int
		if _, err := fmt.Sscanf(r.Decision.Rule, "rules[%d]", &i); err == nil && i >= 0 && i < len(c.Rules) {
			rule := c.Rules[i]
			r.Contract.Rule = &rule
		}
	}
	comp, err := findCompaction(h, cycle)
	if err != nil {
		return nil, err
	}
	r.Compaction = comp
	return r, nil
}

// pinnedDocuments returns the goal and contract a run started with, from
// its first ledger events.
func pinnedDocuments(recs []event.Record) (intent.Goal, governance.Contract, error) {
	var g intent.Goal
	var c governance.Contract
	var ng, nc bool
	for _, r := range recs {
		switch r.Event.Type {
		case event.GoalPinned:
			ng = r.Event.Object.Decode(&g) == nil
		case event.ContractPinned:
			nc = r.Event.Object.Decode(&c) == nil
		}
	}
	if !ng || !nc {
		return g, c, fmt.Errorf("the ledger does not hold the pinned goal and contract")
	}
	return g, c, nil
}

func decode[T any](o *event.Object) (*T, error) {
	if o == nil {
		return nil, errors.New("event carries no object")
	}
	var v T
	if err := o.Decode(&v); err != nil {
		return nil, err
	}
	return &v, nil
}

// Answer is one answer or amendment a cycle consumed under a contract
// that lists approvers: the event it led to, its reasons, and the signer
// its signature shows (absent when it carried no readable signature).
type Answer struct {
	Event   event.Kind    `json:"event"`
	Item    codec.Ref     `json:"item,omitempty"`
	Reasons []string      `json:"reason_codes,omitempty"`
	Signer  *state.Signer `json:"signer,omitempty"`
}

// isAnswer reports whether an event records what became of an answer or
// amendment.
func isAnswer(k event.Kind) bool {
	return slices.Contains([]event.Kind{event.ApprovalResolved, event.ApprovalIgnored, event.ApprovalRecorded,
		event.AmendmentProposed, event.AmendmentAccepted, event.AmendmentRefused}, k)
}

// absorb files one event of the cycle into the report.
func (r *Report) absorb(rec event.Record) error {
	ev := rec.Event
	step := Step{Seq: rec.Seq, Type: ev.Type, Ref: rec.Ref, Parents: ev.Parents, Refs: ev.Refs, Reasons: ev.Reasons}
	if ev.Object != nil {
		step.ObjectRef = ev.Object.Ref
	}
	if ev.Type == event.ActionIntent {
		var err error
		r.Intent, err = decode[world.Intent](ev.Object)
		return err
	}
	if ev.Type.OutOfBand() {
		r.Recovery = append(r.Recovery, step)
		return nil
	}
	r.Chain = append(r.Chain, step)
	r.RunID = ev.RunID
	var err error
	switch {
	case ev.Type == event.CycleStarted:
		var m *event.Inputs
		if m, err = decode[event.Inputs](ev.Object); err == nil {
			r.Inputs = *m
		}
		if ev.Refs["contract"] != "" {
			r.Pinned = map[string]codec.Ref{}
			for _, k := range []string{"goal", "contract", "authority", "environment_spec"} {
				if ref := ev.Refs[k]; ref != "" {
					r.Pinned[k] = ref
				}
			}
		}
	case ev.Type == event.InboxConsumed:
		r.InboxItems = append(r.InboxItems, inboxItem(ev.Object))
	case ev.Type == event.AgendaSelected || ev.Type == event.AgendaEmpty:
		r.Agenda, err = decode[agenda.Resolution](ev.Object)
	case ev.Type == event.ProgramCompiled:
		r.Program, err = decode[cognition.Program](ev.Object)
	case ev.Type == event.DialogueCompleted:
		r.Dialogue, err = decode[cognition.Dialogue](ev.Object)
	case ev.Type == event.ActionProposed:
		r.Action, err = decode[world.Action](ev.Object)
		r.ActionRef = ev.Object.Ref
	case ev.Type == event.ActionTried:
		r.Trial, err = decode[world.CommandTried](ev.Object)
	case ev.Type == event.DecisionRecorded:
		r.Decision, err = decode[governance.Decision](ev.Object)
		r.DecisionRef = ev.Object.Ref
	case ev.Type == event.ReceiptRecorded:
		r.Receipt, err = decode[governance.Receipt](ev.Object)
	case ev.Type == event.ActionCommitted || ev.Type == event.ActionNotApplied:
		r.Outcome, err = decode[world.Outcome](ev.Object)
		if err == nil {
			r.IdempotencyKey = r.Outcome.Key
		}
	case ev.Type == event.EvaluationRecorded:
		r.Evaluation, err = decode[event.Evaluation](ev.Object)
	case ev.Type == event.ApprovalRequested && ev.Object != nil && ev.Object.Ref.Kind() == "unc":
		r.Incident, err = decode[event.Incident](ev.Object)
		r.IncidentRef = ev.Object.Ref
	case ev.Type == event.EffectResolved:
		r.Resolution, err = decode[event.Resolution](ev.Object)
	case isAnswer(ev.Type):
		a := Answer{Event: ev.Type, Item: ev.Refs["item"], Reasons: ev.Reasons}
		switch {
		case ev.Object != nil && ev.Object.Ref.Kind() == "signer":
			a.Signer, err = decode[state.Signer](ev.Object)
		case ev.Type == event.AmendmentProposed:
			var p *state.PendingAmendment
			if p, err = decode[state.PendingAmendment](ev.Object); err == nil {
				a.Signer = p.Signer
			}
		}
		if a.Signer != nil || slices.Contains(a.Reasons, inbox.SigMissing) || slices.Contains(a.Reasons, inbox.SigMalformed) {
			// Only a run whose contract lists approvers records this.
			r.Answers = append(r.Answers, a)
		}
	case isCommitmentChange(ev.Type) && ev.Object != nil:
		var c *commitment.Commitment
		if c, err = decode[commitment.Commitment](ev.Object); err == nil {
			r.Commitments = append(r.Commitments, CommitmentChange{Event: ev.Type, Reason: strings.Join(ev.Reasons, ","), Commitment: *c})
		}
	case ev.Type == event.StrategicTension:
		r.Strategy.Tension, err = decode[strategy.Tension](ev.Object)
	case ev.Type == event.ReviewEvaluated:
		r.Strategy.Trigger, err = decode[strategy.Trigger](ev.Object)
	case ev.Type == event.LensRetrieved:
		if r.Strategy.Retrieval, err = decode[strategy.Retrieval](ev.Object); err == nil {
			for _, c := range r.Strategy.Retrieval.Candidates {
				r.Strategy.addSource(c.SourceVersion)
			}
		}
	case ev.Type == event.RoutingOverlaid:
		if r.Strategy.Overlay, err = decode[strategy.Overlay](ev.Object); err == nil {
			for _, sv := range r.Strategy.Overlay.Lenses {
				r.Strategy.addSource(sv)
			}
		}
	case ev.Type.In("controller") && ev.Object != nil, ev.Type == event.ReadbackRecorded:
		err = r.Controller.add(ev)
	case ev.Type == event.CycleCompleted:
		var cr *state.CycleRecord
		if cr, err = decode[state.CycleRecord](ev.Object); err == nil {
			r.Record, r.CycleRef = *cr, ev.Object.Ref
			if r.IdempotencyKey == "" {
				r.IdempotencyKey = cr.IdempotencyKey
			}
		}
	}
	return err
}

func (s *Strategy) addSource(sv strategy.SourceVersion) {
	if !slices.Contains(s.Sources, sv) {
		s.Sources = append(s.Sources, sv)
	}
}

func inboxItem(o *event.Object) InboxItem {
	it := InboxItem{Kind: o.Ref.Kind()}
	switch it.Kind {
	case "sig":
		if w, err := decode[state.WakeSignal](o); err == nil {
			it.ID, it.By, it.Reason, it.What = w.ID, w.By, w.Reason, "wake "+w.Source+" "+w.Ref
		}
	case "apr":
		if a, err := decode[state.Approval](o); err == nil {
			it.ID, it.By, it.Reason, it.What = a.ID, a.By, a.Reason, a.Verdict+" "+string(a.ActionRef)
		}
	default:
		if s, err := decode[state.StopRequest](o); err == nil {
			it.ID, it.By, it.Reason, it.What = s.ID, s.By, s.Reason, "stop"
		}
	}
	return it
}

// findCompaction looks at the cycle records after cycle for the first
// compaction whose summary covers it.
func findCompaction(lr History, cycle int64) (*Compaction, error) {
	for c := cycle; c < cycle+lookahead; c++ {
		rec, err := lr.CycleCompleted(c)
		if errors.Is(err, ledger.ErrNoCycle) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		var cr state.CycleRecord
		if err := rec.Event.Object.Decode(&cr); err != nil {
			return nil, err
		}
		if cr.ContextCompressionRef == "" {
			continue
		}
		recs, err := lr.Cycle(c)
		if err != nil {
			return nil, err
		}
		for _, r := range recs {
			if r.Event.Type != event.CompactionCompleted {
				continue
			}
			comp, err := memory.ViewCompaction(r.Event.Object.Body)
			if err != nil {
				return nil, fmt.Errorf("cycle %d: %w", c, err)
			}
			if comp.Covers(cycle) {
				return &Compaction{Cycle: c, EventRef: r.Ref, BlockID: comp.Block.ID, From: comp.Block.FromCycle, To: comp.Block.ToCycle, Trigger: comp.Trigger}, nil
			}
		}
	}
	return nil, nil
}

func isCommitmentChange(k event.Kind) bool {
	_, ok := k.CommitmentVerb()
	return ok
}
