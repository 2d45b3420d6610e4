package kernel

import (
	"fmt"
	"slices"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// Inputs is everything from outside the state that a cycle uses. All of it
// is recorded in the cycle's first ledger batch (bodies once, refs after),
// so the cycle can be replayed from the ledger without asking any provider
// again.
type Inputs struct {
	// Now is the clock reading the cycle runs under.
	Now time.Time
	// Observation is the world as observed at cycle start.
	Observation world.Observation
	// InboxPresent lists the ids of every item in the inbox, consumed or
	// not, so consumed ids whose files are gone can be forgotten.
	InboxPresent []string
	// Inbox holds the items not consumed before, in inbox order.
	Inbox []inbox.Item
	// Knowledge holds knowledge-source update candidates.
	Knowledge []strategy.KnowledgeUpdate
	// KillSwitch is set when the operator's kill-switch file exists: the
	// run stops at once and takes no action.
	KillSwitch bool
	// Runs are how long the observation's command checks ran: recorded
	// with the inputs, not part of the observation (see world.CommandRun).
	Runs []world.CommandRun
}

// Event types that carry inputs.
const ()

func inboxKind(k inbox.Kind) string {
	switch k {
	case inbox.KindWake:
		return "sig"
	case inbox.KindApproval:
		return "apr"
	case inbox.KindAmendment:
		return "amd"
	default:
		return "stopreq"
	}
}

// inputRecords builds the manifest and the input-carrying events.
func inputRecords(s *EngineState, cycle int64, in Inputs, obsRef codec.Ref) (event.Inputs, []event.Event, error) {
	at := state.FormatTime(in.Now)
	m := event.Inputs{Schema: event.InputsSchema, CycleSeq: cycle, At: at, ObservationRef: obsRef,
		InboxPresent: slices.Clone(in.InboxPresent), InboxItems: []codec.Ref{}, Knowledge: []codec.Ref{}, KillSwitch: in.KillSwitch,
		CommandRuns: slices.Clone(in.Runs)}
	if m.InboxPresent == nil {
		m.InboxPresent = []string{}
	}
	slices.Sort(m.InboxPresent)
	var evs []event.Event
	if m.ObservationRef != s.Run.EnvironmentRef {
		obj, err := event.NewObject(kindObservation, in.Observation)
		if err != nil {
			return m, nil, err
		}
		evs = append(evs, event.Event{Type: event.Observed, Object: obj})
	}
	for _, it := range in.Inbox {
		obj := &event.Object{Ref: codec.NewRef(inboxKind(it.Kind), it.Body), Body: it.Body}
		m.InboxItems = append(m.InboxItems, obj.Ref)
		evs = append(evs, event.Event{Type: event.InboxConsumed, Object: obj, Refs: map[string]codec.Ref{}, Reasons: []string{"inbox_" + string(it.Kind)}})
	}
	for _, u := range in.Knowledge {
		obj, err := event.NewObject("know", u)
		if err != nil {
			return m, nil, err
		}
		m.Knowledge = append(m.Knowledge, obj.Ref)
		evs = append(evs, event.Event{Type: event.KnowledgeObserved, Object: obj})
	}
	return m, evs, nil
}

// inputsFromRecords reconstructs a cycle's Inputs from its recorded
// events. The observation is either in the cycle's own events or, when
// unchanged, the state's environment. It fails when something the manifest
// names is missing: the cycle's first batch never became durable.
func inputsFromRecords(s *EngineState, recs []event.Record) (Inputs, event.Inputs, error) {
	var m event.Inputs
	if len(recs) == 0 || recs[0].Event.Type != event.CycleStarted || recs[0].Event.Object == nil {
		return Inputs{}, m, fmt.Errorf("cycle does not begin with %s", event.CycleStarted)
	}
	if err := recs[0].Event.Object.Decode(&m); err != nil {
		return Inputs{}, m, err
	}
	now, err := state.ParseTime(m.At)
	if err != nil {
		return Inputs{}, m, err
	}
	in := Inputs{Now: now, InboxPresent: m.InboxPresent, KillSwitch: m.KillSwitch, Runs: m.CommandRuns}
	bodies := map[codec.Ref]*event.Object{}
	for _, r := range recs[1:] {
		if o := r.Event.Object; o != nil {
			bodies[o.Ref] = o
		}
	}
	if m.ObservationRef == s.Run.EnvironmentRef {
		in.Observation = s.Environment
	} else if o, ok := bodies[m.ObservationRef]; ok {
		if err := o.Decode(&in.Observation); err != nil {
			return Inputs{}, m, err
		}
	} else {
		return Inputs{}, m, fmt.Errorf("observation %s not recorded", m.ObservationRef)
	}
	for _, ref := range m.InboxItems {
		o, ok := bodies[ref]
		if !ok {
			return Inputs{}, m, fmt.Errorf("inbox item %s not recorded", ref)
		}
		id, err := itemID(ref.Kind(), o.Body)
		if err != nil {
			return Inputs{}, m, err
		}
		it, err := inbox.Decode(id, o.Body)
		if err != nil {
			return Inputs{}, m, err
		}
		in.Inbox = append(in.Inbox, it)
	}
	for _, ref := range m.Knowledge {
		o, ok := bodies[ref]
		if !ok {
			return Inputs{}, m, fmt.Errorf("knowledge update %s not recorded", ref)
		}
		var u strategy.KnowledgeUpdate
		if err := o.Decode(&u); err != nil {
			return Inputs{}, m, err
		}
		in.Knowledge = append(in.Knowledge, u)
	}
	return in, m, nil
}

// itemID reads the id an inbox item body carries.
func itemID(kind string, body []byte) (string, error) {
	var probe struct {
		ID string `json:"id"`
	}
	val, err := codec.ParseCanonical(body)
	if err != nil {
		return "", err
	}
	for _, m := range val.Obj {
		if m.Key == "id" && m.Val.Kind == codec.KindString {
			probe.ID = m.Val.Str
		}
	}
	if probe.ID == "" {
		return "", fmt.Errorf("recorded %s item has no id", kind)
	}
	return probe.ID, nil
}
