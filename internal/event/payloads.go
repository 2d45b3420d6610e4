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

// IncidentSchema names an uncertain effect's incident.
const IncidentSchema = "acr.uncertain-effect/v0.1"

// Incident is an effect recovery could not classify: the action, the
// idempotency key it was to run under, the cycle, the world's reason, and
// what the world shows about each path the action may touch. Its ref
// names the approval request a person answers (acr approve runs it again,
// acr resolve --ran or --not-ran says whether it happened): each incident
// has a ref of its own, even for the same action.
type Incident struct {
	Schema    string               `json:"schema"`
	Key       string               `json:"idempotency_key"`
	ActionRef codec.Ref            `json:"action_ref"`
	CycleSeq  int64                `json:"cycle_seq"`
	Reason    string               `json:"reason"`
	Evidence  []world.PathEvidence `json:"evidence"`
}

// ResolutionSchema names a person's word on an uncertain effect.
const ResolutionSchema = "acr.effect-resolution/v0.1"

// Resolution is a person's word on an uncertain effect (acr resolve):
// Verdict "ran" (the effect happened; it is recorded as done by By, and
// nothing runs) or "not_ran" (it did not; the item goes back to the
// agenda and doing it again goes through governance as usual).
type Resolution struct {
	Schema    string    `json:"schema"`
	Incident  codec.Ref `json:"incident"`
	Key       string    `json:"idempotency_key"`
	ActionRef codec.Ref `json:"action_ref"`
	Verdict   string    `json:"verdict"`
	By        string    `json:"by"`
	Reason    string    `json:"reason,omitempty"`
	CycleSeq  int64     `json:"cycle_seq"`
}

// NotificationSchema names the record of a notification.
const NotificationSchema = "acr.notification-record/v0.1"

// Notification records one run of the notify program for a condition of
// the run (kernel.Alert): the condition's key and kind, the program, and
// how it ended. It is out of band: it records what the driver did.
type Notification struct {
	Schema    string    `json:"schema"`
	Key       codec.Ref `json:"key"`
	Kind      string    `json:"kind"`
	CycleSeq  int64     `json:"cycle_seq"`
	Program   string    `json:"program"`
	Delivered bool      `json:"delivered"`
	// Detail says how the program failed, when it did.
	Detail string `json:"detail,omitempty"`
}
