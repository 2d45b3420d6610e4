package report

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// needsObject reports whether Digest or IncidentOf reads the object of
// events of type typ; Read leaves the object out of the others.
func needsObject(typ event.Kind) bool {
	switch typ {
	case event.InboxConsumed, event.AgendaSelected, event.AgendaEmpty, event.ActionProposed,
		event.DecisionRecorded, event.CompactionCompleted, event.CheckpointCreated, event.CheckpointRecorded, event.CycleCompleted,
		event.SemanticEncoded, event.ActionIntent, event.ApprovalResolved, event.ApprovalIgnored, event.ApprovalRecorded:
		return true
	}
	return lifecycle(typ) != "" || Incidental(typ)
}

// Shown reports whether the report reads events of type typ. Read skips
// every other line without decoding it; most of a cycle's bytes
// (observations, cognition) are never shown, and of the semantic state
// only its facts' kinds and subjects (which checks failed) are read.
func Shown(typ event.Kind) bool {
	switch typ {
	case event.CycleStarted, event.CycleCompleted, event.CheckpointCreated, event.CheckpointRecorded, event.LoopWoke,
		event.InboxConsumed, event.WakeRejected, event.WakeCoalesced, event.StopRequested, event.RunResumed,
		event.ApprovalRequested, event.ApprovalResolved, event.ApprovalIgnored, event.ReviewRequested,
		event.AgendaSelected, event.AgendaEmpty, event.ActionProposed, event.DecisionRecorded,
		event.GuardTripped, event.ActionCommitted, event.ActionNotApplied, event.EvaluationRecorded,
		event.CompactionCompleted, event.CompactionFailed, event.BudgetSoftLimitReached, event.RunFaulted,
		event.SemanticEncoded, event.ActionIntent:
		return true
	}
	return lifecycle(typ) != "" || Incidental(typ)
}

// Incidental reports whether events of type typ are incidents: recorded by
// the driver outside the cycle's own work (recoveries, repairs, provider
// failures, quarantined inbox files). The intent record of an effect is
// not one: the cycle's outcome tells what became of it.
func Incidental(typ event.Kind) bool {
	return typ.OutOfBand() && typ != event.ActionIntent
}

// lifecycle returns the verb of a commitment lifecycle event type, or "".
func lifecycle(typ event.Kind) string {
	verb, ok := typ.CommitmentVerb()
	if !ok {
		return ""
	}
	switch verb {
	case "created", "modified", "suspended", "resumed", "completed", "expired", "abandoned":
		return verb
	}
	return ""
}

// Event is a ledger event as the report reads it: the envelope, and the
// fields of its object that the report shows. Read decodes a line into it
// in one pass; decoding into event.Event and then the object again costs
// four times as much, which is most of the time of a long report.
type Event struct {
	Type     event.Kind           `json:"type"`
	CycleSeq int64                `json:"cycle_seq"`
	At       string               `json:"at"`
	Refs     map[string]codec.Ref `json:"refs"`
	Reasons  []string             `json:"reason_codes"`
	Object   *Object              `json:"object"`
}

// Object is an event's object: its ref and the fields the report shows.
type Object struct {
	Ref  codec.Ref `json:"ref"`
	Body Fields    `json:"body"`
}

// Fields are the object fields the report shows, under the JSON names acr
// writes them with. Objects of every shown type decode into this one
// struct (an event carries at most one object, and no two of them use
// one name for different things); fields an object lacks stay zero.
type Fields struct {
	// agenda resolution
	Selected *agenda.Candidate `json:"selected"`
	// action request
	Operation string `json:"operation"`
	Target    string `json:"target"`
	// governance decision (EXECUTE, ...) or approval (approve, deny)
	Verdict         string   `json:"verdict"`
	MissingEvidence []string `json:"missing_evidence"`
	// governance decision and cycle record
	ReasonCodes []string `json:"reason_codes"`
	// cycle record
	CycleSeq           int64             `json:"cycle_seq"`
	StartedAt          string            `json:"started_at"`
	LoopDisposition    state.Disposition `json:"loop_disposition"`
	GovernanceDecision string            `json:"governance_decision"`
	// checkpoint record
	BudgetSnapshot *state.BudgetUsage `json:"budget_snapshot"`
	// compaction
	Trigger string `json:"trigger"`
	Block   *struct {
		ID        string `json:"id"`
		FromCycle int64  `json:"from_cycle"`
		ToCycle   int64  `json:"to_cycle"`
	} `json:"block"`
	// commitment; a signer (id, fingerprint, key type) on an answer's event
	ID          string `json:"id"`
	Fingerprint string `json:"fingerprint"`
	KeyType     string `json:"key_type"`
	Version     int64  `json:"version"`
	Status      string `json:"status"`
	Summary     string `json:"summary"`
	// inbox items: wake signal, approval, stop request
	Source    string    `json:"source"`
	Ref       string    `json:"ref"`
	ActionRef codec.Ref `json:"action_ref"`
	By        string    `json:"by"`
	Reason    string    `json:"reason"`
	Kill      bool      `json:"kill"`
	// semantic state: what the cycle observed, as facts (check_failing,
	// check_passing with the check's id as subject, and others)
	Facts []struct {
		Kind    string `json:"kind"`
		Subject string `json:"subject"`
	} `json:"facts"`
	// an effect's intent: the change as a unified diff
	Diff string `json:"diff"`
	// incidents: provider failure, quarantined inbox file, torn tail
	Error  string `json:"error"`
	Name   string `json:"name"`
	Offset int64  `json:"offset"`
	Length int64  `json:"length"`
}

// envelope is an event without its object, for the types whose object
// the report does not read: skipping an object costs less than decoding it.
type envelope struct {
	Type     event.Kind           `json:"type"`
	CycleSeq int64                `json:"cycle_seq"`
	At       string               `json:"at"`
	Refs     map[string]codec.Ref `json:"refs"`
	Reasons  []string             `json:"reason_codes"`
}

// decodeEvent decodes the canonical bytes of an event of type typ. The
// ledger line's hash has been checked, so the bytes are what acr wrote;
// decoding is lenient about what the report does not show (acr ledger
// verify checks every event strictly). An incident whose object has
// another shape keeps its envelope: its detail is a courtesy.
func decodeEvent(typ event.Kind, b []byte) (Event, error) {
	if needsObject(typ) {
		var ev Event
		err := json.Unmarshal(b, &ev)
		if err == nil || !Incidental(typ) {
			return ev, err
		}
	}
	var e envelope
	if err := json.Unmarshal(b, &e); err != nil {
		return Event{}, err
	}
	return Event{Type: e.Type, CycleSeq: e.CycleSeq, At: e.At, Refs: e.Refs, Reasons: e.Reasons}, nil
}

// body returns an event's object fields, or an error if it carries none.
func body(ev *Event) (*Fields, error) {
	if ev.Object == nil {
		return nil, fmt.Errorf("%s carries no object", ev.Type)
	}
	return &ev.Object.Body, nil
}

// isAnswer reports whether events of type typ record an answer, which
// carries its signer as its object when it was signed.
func isAnswer(typ event.Kind) bool {
	return typ == event.ApprovalResolved || typ == event.ApprovalIgnored || typ == event.ApprovalRecorded
}

// signedBy says who signed an answer, from the signer its event carries
// (f nil: an unsigned answer to a run whose contract lists no approvers).
func signedBy(f *Fields) string {
	switch {
	case f == nil || f.Fingerprint == "":
		return ""
	case f.ID == "":
		return ", signed with " + f.KeyType + " " + f.Fingerprint + " (not a listed key)"
	}
	return ", signed by " + f.ID + " with " + f.KeyType + " " + f.Fingerprint
}

// Digest folds the events of one completed cycle, in ledger order from
// persistent.cycle.started to persistent.cycle.completed, into a Cycle.
// Events of types Shown rejects are ignored.
func Digest(events []Event) (Cycle, error) {
	c := Cycle{Decision: "NONE"}
	by := map[codec.Ref]string{} // consumed inbox item -> who sent it
	done := false
	for i := range events {
		ev := &events[i]
		var f *Fields
		var err error
		if needsObject(ev.Type) && (ev.Object != nil || !isAnswer(ev.Type)) {
			if f, err = body(ev); err != nil {
				return Cycle{}, fmt.Errorf("cycle %d: %w", ev.CycleSeq, err)
			}
		}
		switch ev.Type {
		case event.CycleStarted:
			c.Seq, c.At = ev.CycleSeq, ev.At
		case event.LoopWoke:
			c.WokeBy = ev.Reasons
		case event.InboxConsumed:
			line, who := inboxItem(ev.Object.Ref.Kind(), f)
			c.Inbox = append(c.Inbox, line)
			by[ev.Object.Ref] = who
		case event.WakeRejected, event.WakeCoalesced, event.StopRequested, event.RunResumed,
			event.GuardTripped, event.CompactionFailed, event.BudgetSoftLimitReached:
			c.Notes = append(c.Notes, note(ev))
		case event.ApprovalRequested:
			c.Approvals = append(c.Approvals, ApprovalChange{Kind: "requested", ActionRef: ev.Refs["action"], Action: c.Action, Reason: strings.Join(ev.Reasons, ", ")})
		case event.ApprovalResolved:
			c.Approvals = append(c.Approvals, ApprovalChange{Kind: "resolved", ActionRef: ev.Refs["action"],
				Verdict: strings.TrimPrefix(first(ev.Reasons), "verdict_"), By: by[ev.Refs["item"]] + signedBy(f)})
		case event.ApprovalRecorded:
			c.Approvals = append(c.Approvals, ApprovalChange{Kind: "recorded", ActionRef: ev.Refs["action"],
				Verdict: "approve", By: by[ev.Refs["item"]] + signedBy(f), Reason: strings.Join(ev.Reasons, ", ")})
		case event.ApprovalIgnored:
			c.Approvals = append(c.Approvals, ApprovalChange{Kind: "ignored", ActionRef: ev.Refs["item"], Reason: strings.Join(ev.Reasons, ", ") + signedBy(f)})
		case event.ReviewRequested:
			c.Review = append([]string{}, ev.Reasons...)
		case event.SemanticEncoded:
			c.Observed, c.Failing, c.Passing = true, nil, nil
			for _, fact := range f.Facts {
				switch fact.Kind {
				case "check_failing":
					c.Failing = append(c.Failing, fact.Subject)
				case "check_passing":
					c.Passing = append(c.Passing, fact.Subject)
				}
			}
			slices.Sort(c.Failing)
			slices.Sort(c.Passing)
		case event.AgendaSelected, event.AgendaEmpty:
			if f.Selected != nil {
				c.Agenda, c.AgendaSummary = f.Selected.ItemID, f.Selected.Summary
			}
			c.AgendaReasons = ev.Reasons
		case event.ActionProposed:
			c.Action = strings.TrimSpace(f.Operation + " " + f.Target)
		case event.ActionIntent:
			c.Diff = f.Diff
		case event.DecisionRecorded:
			c.Decision, c.DecisionReasons = f.Verdict, f.ReasonCodes
			if len(f.MissingEvidence) > 0 {
				c.DecisionReasons = append(slices.Clone(c.DecisionReasons), "missing evidence: "+strings.Join(f.MissingEvidence, ", "))
			}
		case event.ActionCommitted, event.ActionNotApplied:
			// The outcome status is the event's reason.
			c.Outcome = first(ev.Reasons)
		case event.EvaluationRecorded:
			c.Evaluation = first(ev.Reasons)
		case event.CompactionCompleted:
			c.Compaction = &Compaction{Trigger: f.Trigger}
			if f.Block != nil {
				c.Compaction.Block, c.Compaction.From, c.Compaction.To = f.Block.ID, f.Block.FromCycle, f.Block.ToCycle
			}
		case event.CheckpointCreated, event.CheckpointRecorded:
			if f.BudgetSnapshot == nil {
				return Cycle{}, fmt.Errorf("cycle %d: checkpoint record %s has no budget snapshot", ev.CycleSeq, ev.Object.Ref)
			}
			c.Budget = f.BudgetSnapshot
		case event.CycleCompleted:
			if f.LoopDisposition == state.DispositionInvalid {
				return Cycle{}, fmt.Errorf("cycle %d: cycle record %s has no loop disposition", ev.CycleSeq, ev.Object.Ref)
			}
			c.Seq, c.Disposition, c.Reasons = f.CycleSeq, f.LoopDisposition, f.ReasonCodes
			if c.Decision == "NONE" && f.GovernanceDecision != "" {
				c.Decision = f.GovernanceDecision
			}
			if c.At == "" {
				c.At = f.StartedAt
			}
			done = true
		default:
			if verb := lifecycle(ev.Type); verb != "" {
				c.Commitments = append(c.Commitments, CommitmentChange{ID: f.ID, Event: verb, Status: f.Status, Version: f.Version,
					Summary: f.Summary, Reason: strings.Join(ev.Reasons, ", ")})
			}
		}
	}
	if !done {
		return Cycle{}, fmt.Errorf("cycle %d: no persistent.cycle.completed event", c.Seq)
	}
	return c, nil
}

func first(ss []string) string {
	if len(ss) == 0 {
		return ""
	}
	return ss[0]
}

// note renders an event worth one line of a cycle's detail.
func note(ev *Event) string {
	what := map[event.Kind]string{
		event.BudgetSoftLimitReached: "soft budget limit reached",
		event.GuardTripped:           "loop guard tripped",
		event.WakeRejected:           "wake signal rejected",
		event.WakeCoalesced:          "wake signal coalesced",
		event.StopRequested:          "stop requested",
		event.RunResumed:             "run resumed",
		event.CompactionFailed:       "compaction failed",
	}[ev.Type]
	if what == "" {
		what = string(ev.Type)
	}
	if len(ev.Reasons) > 0 {
		what += ": " + strings.Join(ev.Reasons, ", ")
	}
	return what
}

// inboxItem says what a consumed inbox item was (by the kind of its ref)
// and who sent it.
func inboxItem(kind string, f *Fields) (line, who string) {
	switch kind {
	case "sig":
		line = "wake " + f.Source
		if f.Ref != "" {
			line += " " + f.Ref
		}
	case "apr":
		line = f.Verdict + " " + string(f.ActionRef)
	default:
		line = "stop"
		if f.Kill {
			line = "stop --kill"
		}
	}
	if f.By != "" {
		line += " by " + f.By
	}
	if f.Reason != "" {
		line += " (" + f.Reason + ")"
	}
	return line, f.By
}

// IncidentOf describes an event recorded outside a cycle's own work.
func IncidentOf(ev Event) Incident {
	in := Incident{Cycle: ev.CycleSeq, At: ev.At, Type: ev.Type, Reasons: ev.Reasons}
	if ev.Object != nil {
		f := &ev.Object.Body
		switch ev.Type {
		case event.ProviderFailed:
			in.Detail = f.Error
		case event.InboxQuarantined:
			in.Detail = strings.TrimSpace(f.Name + " " + f.Reason)
		case event.TailRepaired:
			in.Detail = fmt.Sprintf("%d torn bytes cut at byte %d", f.Length, f.Offset)
		}
	}
	return in
}
