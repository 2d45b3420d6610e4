package controller

import (
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
)

// TransitionLogSchema names a transition log.
const TransitionLogSchema = "acr.controller-transitions/v0.2"

// TransitionLog is the record of the transitions a cycle took in one
// durable batch (ledger format 2 on). It holds every field the seed asks
// of a transition record: the fields all the cycle's transitions share
// (cycle, parent cycle) once, the time of the first once, and for each
// transition the rest, its own time only where it differs (ledger format
// 3 times each transition by the input it followed: the cycle's clock
// reading, a proposer's reply, an effect's outcome).
// A transition's inputs are the outputs of the transition before it, by
// construction (each state hands on what it produced), so an entry lists
// its inputs only when they are not those. Expand gives the transitions
// back in full.
//
// One record per batch rather than one per transition: the transitions of
// a batch become durable together anyway, and fourteen records of a
// kilobyte each were a third of what a cycle wrote.
type TransitionLog struct {
	Schema        string       `json:"schema"`
	CycleID       string       `json:"cycle_id"`
	ParentCycleID string       `json:"parent_cycle_id"`
	Timestamp     string       `json:"timestamp"`
	Transitions   []LoggedMove `json:"transitions"`
}

// LoggedMove is one transition in a TransitionLog.
type LoggedMove struct {
	Seq           int   `json:"seq"`
	PreviousState Phase `json:"previous_state"`
	NextState     Phase `json:"next_state"`
	ActorRole     Role  `json:"actor_role"`
	// InputHashes is absent when the inputs are the previous entry's
	// outputs; the first entry of a log always lists them.
	InputHashes    *[]codec.Ref             `json:"input_hashes,omitempty"`
	OutputHashes   []codec.Ref              `json:"output_hashes"`
	Reason         string                   `json:"reason"`
	AuthorityUsed  governance.AuthorityMode `json:"authority_used"`
	BudgetConsumed budget.Usage             `json:"budget_consumed"`
	// Timestamp is the transition's own clock reading when it is not the
	// log's (the cycle went on from a later input within the batch: a
	// proposer's reply); absent otherwise.
	Timestamp string `json:"timestamp,omitempty"`
}

// LogOf writes transitions of one cycle as a log. The transitions must be
// consecutive and of the same cycle.
func LogOf(ts []Transition) (TransitionLog, error) {
	if len(ts) == 0 {
		return TransitionLog{}, fmt.Errorf("transition log: no transitions")
	}
	l := TransitionLog{Schema: TransitionLogSchema, CycleID: ts[0].CycleID, ParentCycleID: ts[0].ParentCycleID, Timestamp: ts[0].Timestamp,
		Transitions: make([]LoggedMove, 0, len(ts))}
	for i, t := range ts {
		if t.CycleID != l.CycleID || t.ParentCycleID != l.ParentCycleID {
			return TransitionLog{}, fmt.Errorf("transition log: transition %d is of cycle %q, the log's is %q", t.Seq, t.CycleID, l.CycleID)
		}
		m := LoggedMove{Seq: t.Seq, PreviousState: t.PreviousState, NextState: t.NextState, ActorRole: t.ActorRole,
			OutputHashes: nonNil(t.OutputHashes), Reason: t.Reason, AuthorityUsed: t.AuthorityUsed, BudgetConsumed: t.BudgetConsumed}
		if t.Timestamp != l.Timestamp {
			m.Timestamp = t.Timestamp
		}
		if i == 0 || !slices.Equal(t.InputHashes, ts[i-1].OutputHashes) {
			in := nonNil(t.InputHashes)
			m.InputHashes = &in
		}
		l.Transitions = append(l.Transitions, m)
	}
	return l, nil
}

// Expand returns the log's transitions as full transition records, equal
// to the ones LogOf was given.
func (l TransitionLog) Expand() []Transition {
	out := make([]Transition, 0, len(l.Transitions))
	for i, m := range l.Transitions {
		var in []codec.Ref
		switch {
		case m.InputHashes != nil:
			in = *m.InputHashes
		case i > 0:
			in = out[i-1].OutputHashes
		}
		at := l.Timestamp
		if m.Timestamp != "" {
			at = m.Timestamp
		}
		out = append(out, Transition{Schema: TransitionSchema, CycleID: l.CycleID, ParentCycleID: l.ParentCycleID, Seq: m.Seq,
			PreviousState: m.PreviousState, NextState: m.NextState, ActorRole: m.ActorRole, InputHashes: nonNil(in),
			OutputHashes: nonNil(m.OutputHashes), Timestamp: at, Reason: m.Reason, AuthorityUsed: m.AuthorityUsed, BudgetConsumed: m.BudgetConsumed})
	}
	return out
}
