package event

import (
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Payloads of events that are the kernel's own records (other events carry
// the subsystems' objects: agenda resolutions, decisions, outcomes...).

// Inputs is the record of a cycle's inputs, carried by
// persistent.cycle.started.
type Inputs struct {
	Schema         string      `json:"schema"`
	CycleSeq       int64       `json:"cycle_seq"`
	At             string      `json:"at"`
	ObservationRef codec.Ref   `json:"observation_ref"`
	InboxPresent   []string    `json:"inbox_present"`
	InboxItems     []codec.Ref `json:"inbox_items"`
	Knowledge      []codec.Ref `json:"knowledge"`
	KillSwitch     bool        `json:"kill_switch,omitempty"`
	// CommandRuns are the durations of the observation's command checks.
	CommandRuns []world.CommandRun `json:"command_runs,omitempty"`
}

// RunStart is the record persistent.run.started carries from ledger
// format 3 on: the history adapter that records the run's own loop events
// (every persistent.* kind) and the ledger format its cycles record in.
// The other kinds are recorded by their subsystems under their own names
// (seed §11: existing phase-specific events keep their own adapters).
type RunStart struct {
	Schema       string `json:"schema"`
	Adapter      string `json:"adapter"`
	LedgerFormat int    `json:"ledger_format"`
}

// RunStartSchema names the record of a run's start.
const RunStartSchema = "acr.run-start/v0.1"

// InputsSchema names the record of a cycle's inputs.
const InputsSchema = "acr.cycle-inputs/v0.1"

// EvaluationSchema names an evaluation.
const EvaluationSchema = "acr.evaluation/v0.1"

// Evaluation compares the expected effect of an action with what the
// observer read back, by the FitnessContract fixed before the action. It
// is the evaluator's artifact, separate from the executor's outcome.
type Evaluation struct {
	Schema      string    `json:"schema"`
	ActionRef   codec.Ref `json:"action_ref"`
	OutcomeRef  codec.Ref `json:"outcome_ref"`
	ReadbackRef codec.Ref `json:"readback_ref,omitempty"`
	FitnessRef  codec.Ref `json:"fitness_ref"`
	Expected    string    `json:"expected"`
	Observed    string    `json:"observed"`
	// Result: accepted | partially_accepted | rejected | inconclusive |
	// rollback_required | operator_review_required.
	Result string `json:"result"`
	Actor  string `json:"actor"`
}
