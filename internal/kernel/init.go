package kernel

import (
	"fmt"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// Bootstrap is what a person gives acr once.
type Bootstrap struct {
	RunID       string
	Now         time.Time
	Goal        intent.Goal
	Contract    governance.Contract
	Spec        world.Spec
	Observation world.Observation
	// Operations is the catalog of the operations the run's world carries
	// out (the zero value: the built-in ones).
	Operations world.Catalog
	// LedgerFormat is the format the run records in; zero means the
	// current one. Older formats are for tests of the readers that keep
	// older runs working.
	LedgerFormat state.LedgerFormat
}

// DefaultRunID derives a run id from the pinned inputs and the start time.
func DefaultRunID(g intent.Goal, c governance.Contract, sp world.Spec, now time.Time) string {
	b := codec.MustMarshal(map[string]any{"goal": codec.MustRefOf(kindGoal, g), "contract": codec.MustRefOf(kindContract, c),
		"environment": codec.MustRefOf(kindSpec, sp), "started_at": state.FormatTime(now)})
	return "run:persistent:" + codec.Digest(b)[:16]
}

// Init creates the state of a new run and the events that record its
// start: the pinned goal, contract and environment (bodies, so the ledger
// alone can answer what was in force), the first observation, and
// persistent.run.started.
func Init(bs Bootstrap) (EngineState, []event.Event, error) {
	if bs.RunID == "" {
		return EngineState{}, nil, fmt.Errorf("init: run id is required")
	}
	at := state.FormatTime(bs.Now)
	s := EngineState{
		Goal: bs.Goal, Contract: bs.Contract, Spec: bs.Spec, Environment: bs.Observation, Operations: bs.Operations,
		Commitments: commitment.NewStore(), Context: memory.NewBinding(), Strategy: strategy.NewState(bs.Goal.Registry()),
		Run: state.RunState{
			Schema: state.RunStateSchema, RunID: bs.RunID, Status: state.RunRunning, LoopDisposition: state.Continue,
			ReasonCodes: []string{"run_started"}, StartedAt: at, UpdatedAt: at,
			PendingApprovals: []state.PendingApproval{}, Deferred: []state.DeferredItem{}, Suppressed: []state.Suppression{},
			Attempts: []state.Attempt{}, InboxSeen: []string{}, DedupKeys: []state.DedupKey{}, Controller: "sleep",
			Budget: state.BudgetUsage{SoftWarned: []string{}},
		},
	}
	f := bs.LedgerFormat
	if f == 0 {
		f = state.CurrentLedgerFormat
	}
	s.Run.SetFormat(f)
	if f >= state.LedgerFormat3 {
		s.Run.Extensions = &state.Extensions{}
	}
	why := []string{"single_input_bootstrap"}
	if f != state.LedgerFormat1 {
		// The start says the format, so that replay starts the same way.
		why = append(why, formatReason(f))
	}
	b := newBuilder(s, &recorder{runID: s.Run.RunID, at: at})
	goalRef := b.record(event.GoalPinned, kindGoal, s.Goal, nil)
	contractRef := b.record(event.ContractPinned, kindContract, s.Contract, nil)
	specRef := b.record(event.SpecPinned, kindSpec, s.Spec, nil)
	obsRef := b.record(event.Observed, kindObservation, s.Environment, nil)
	var start *event.Object
	if f >= state.LedgerFormat3 {
		// The run's own events are the seed's persistent-loop adapter's:
		// the start says so once, for every persistent.* event after it.
		if start, b.err = event.NewObject("rstart", event.RunStart{Schema: event.RunStartSchema, Adapter: event.LoopAdapter, LedgerFormat: int(f)}); b.err != nil {
			return EngineState{}, nil, b.err
		}
	}
	b.emit(event.RunStarted, start, map[string]codec.Ref{
		"goal": goalRef, "contract": contractRef, "authority": s.Contract.AuthorityRef(), "environment_spec": specRef, "observation": obsRef,
	}, why...)
	b.s.seal()
	chk := state.Checkpoint{
		Schema: state.CheckpointSchema, RunID: bs.RunID, RunStateRef: runStateRef(b.s.Run), ContextBindingRef: b.s.Run.ContextBindingRef,
		CommitmentStoreRef: b.s.Run.CommitmentStoreRef, EnvironmentRef: b.s.Run.EnvironmentRef, StrategyStateRef: b.s.Run.StrategyStateRef,
		LedgerFrontierRefs: []codec.Ref{b.last}, BudgetSnapshot: b.s.Run.Budget,
	}
	b.s.Checkpoint = chk
	b.record(checkpointKind(b.s.Run.Format()), kindCheckpoint, chk, nil)
	if b.err != nil {
		return EngineState{}, nil, b.err
	}
	return b.s, b.events, nil
}

// Fault moves the run to FAULTED outside any cycle (for example after
// repeated provider failures), with the reason recorded. cause, when not
// empty, is the last error in words: the fault event carries it and the
// run waits on it (waiting kind "fault"), so that acr status shows what a
// person has to fix, not only a reason code, and replay derives the same
// state from the event.
func Fault(s EngineState, now time.Time, reasons []string, cause string) (EngineState, []event.Event, error) {
	b := newBuilder(s.clone(), &recorder{runID: s.Run.RunID, cycle: s.Run.CycleSeq, now: now, at: state.FormatTime(now)})
	b.s.Run.Status = state.RunFaulted
	b.s.Run.LoopDisposition = state.Faulted
	b.s.Run.ReasonCodes = reasons
	b.s.Run.Waiting = nil
	var obj *event.Object
	if cause != "" {
		b.s.Run.Waiting = &state.Waiting{Kind: WaitingFault, Reason: cause, Since: b.at}
		if obj, b.err = event.NewObject(kindFault, faultCause{Error: cause}); b.err != nil {
			return EngineState{}, nil, b.err
		}
	}
	b.s.Run.NextWake = nil
	b.s.Run.UpdatedAt = b.at
	if b.s.Run.Format() != state.LedgerFormat1 {
		b.s.Run.LastCheckpointRef = checkpointRef(b.s.Checkpoint)
	}
	b.s.seal()
	b.emit(event.RunFaulted, obj, nil, reasons...)
	chk := b.s.Checkpoint
	chk.RunStateRef = runStateRef(b.s.Run)
	b.s.Checkpoint = chk
	b.record(checkpointKind(b.s.Run.Format()), kindCheckpoint, chk, nil)
	if b.err != nil {
		return EngineState{}, nil, b.err
	}
	return b.s, b.events, nil
}

// WaitingFault is the waiting kind of a run faulted with a known cause:
// it waits for a person (acr wake --signal manual_resume, once the cause
// is dealt with).
const WaitingFault = "fault"

// kindFault is the object kind of a fault event's cause.
const kindFault = "fault"

// faultCause is the object a fault event carries when its cause is known.
type faultCause struct {
	Error string `json:"error"`
}

// FaultCause returns the cause a recorded fault event carries ("" when
// it has none), for replay and recovery to fault the run the same way.
func FaultCause(ev event.Event) string {
	var c faultCause
	if ev.Object != nil && ev.Object.Decode(&c) == nil {
		return c.Error
	}
	return ""
}

// checkpointKind is the kind of the event that records a checkpoint
// record in a run of ledger format f: the seed's name before format 3,
// the name of what it is from then on.
func checkpointKind(f state.LedgerFormat) event.Kind {
	if f >= state.LedgerFormat3 {
		return event.CheckpointRecorded
	}
	return event.CheckpointCreated
}

// formatReason is the reason code of persistent.run.started that names the
// run's ledger format (format 1 runs have none).
func formatReason(f state.LedgerFormat) string { return fmt.Sprintf("ledger_format_%d", f) }
