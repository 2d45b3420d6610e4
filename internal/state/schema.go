package state

import (
	"fmt"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Schema names of the seed's persistent-loop objects.
const (
	RunStateSchema   = "acr.persistent-run-state/v0.1"
	CycleSchema      = "acr.persistent-cycle/v0.1"
	CheckpointSchema = "acr.persistent-checkpoint/v0.1"
	WakeSignalSchema = "acr.wake-signal/v0.1"
	ApprovalSchema   = "acr.approval/v0.1"
	StopSchema       = "acr.stop-request/v0.1"
	AmendmentSchema  = "acr.amendment/v0.1"
)

// TimeFormat is how acr writes clock readings: RFC 3339 in UTC, whole
// seconds, so that readings are canonical strings.
const TimeFormat = time.RFC3339

// FormatTime renders a clock reading.
func FormatTime(t time.Time) string { return t.UTC().Truncate(time.Second).Format(TimeFormat) }

// ParseTime parses a reading written by FormatTime (or any RFC 3339 time).
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("time %q: want RFC 3339, e.g. 2026-01-02T15:04:05Z", s)
	}
	return t.UTC(), nil
}

// Disposition is the scheduler's state after a cycle (seed §4.3). It is
// not a governance decision: WAIT_APPROVAL is not ESCALATE and DEFERRED is
// not DEFER, even when one causes the other.
type Disposition uint8

// The loop dispositions. The zero value is invalid so that a missing value
// is never read as a real one.
const (
	DispositionInvalid Disposition = iota
	Continue
	Idle
	Sleep
	WaitApproval
	Deferred
	Stopped
	Faulted
)

var dispositionNames = [...]string{"", "CONTINUE", "IDLE", "SLEEP", "WAIT_APPROVAL", "DEFERRED", "STOPPED", "FAULTED"}

// Dispositions lists the valid dispositions in order.
func Dispositions() []Disposition {
	return []Disposition{Continue, Idle, Sleep, WaitApproval, Deferred, Stopped, Faulted}
}

func (d Disposition) String() string {
	if int(d) < len(dispositionNames) && d != DispositionInvalid {
		return dispositionNames[d]
	}
	return fmt.Sprintf("Disposition(%d)", uint8(d))
}

// MarshalText writes the disposition's name; the invalid value is an error.
func (d Disposition) MarshalText() ([]byte, error) {
	if d == DispositionInvalid || int(d) >= len(dispositionNames) {
		return nil, fmt.Errorf("invalid loop disposition %d", uint8(d))
	}
	return []byte(dispositionNames[d]), nil
}

// UnmarshalText accepts exactly the seven names.
func (d *Disposition) UnmarshalText(b []byte) error {
	for i, n := range dispositionNames {
		if i > 0 && n == string(b) {
			*d = Disposition(i)
			return nil
		}
	}
	return fmt.Errorf("unknown loop disposition %q", b)
}

// Terminal reports whether the run does nothing more in this disposition.
func (d Disposition) Terminal() bool { return d == Stopped || d == Faulted }

// RunStatus is the life state of the run as a whole.
type RunStatus string

// The run statuses.
const (
	RunRunning RunStatus = "RUNNING"
	RunStopped RunStatus = "STOPPED"
	RunFaulted RunStatus = "FAULTED"
)

// LedgerFormat numbers the forms a run's cycle events can take. A run
// records in the format it started with; readers (verify, audit, report,
// replay) accept every format listed here.
type LedgerFormat int

const (
	// LedgerFormat1 records one event per controller transition and
	// copies every summarised unit into a compaction record. Runs that
	// predate the field have it; it is stored as the field's absence, so
	// their run state keeps its bytes.
	LedgerFormat1 LedgerFormat = 1
	// LedgerFormat2 records a cycle's controller transitions as one
	// record per durable batch and a compaction's summarised cycles as
	// pointers into the ledger, not copies.
	LedgerFormat2 LedgerFormat = 2
	// LedgerFormat3 names each cycle's checkpoint record for what it is
	// (persistent.checkpoint.recorded), times each controller transition
	// by the input it followed, records the seed's §10.3 disposition
	// beside the loop's, carries the adapter id on persistent.run.started,
	// resolves the answers to one request consumed together to one, and
	// checks an amendment's references against the rest of the run; and
	// what a person is told carries more: an issue a run reports
	// (mark_issue) says why and quotes the check's failing output, and a
	// person's denial of an action, with its reason, is kept for the
	// proposer, which a wake signal asks again.
	LedgerFormat3 LedgerFormat = 3
	// CurrentLedgerFormat is the format new runs start in.
	CurrentLedgerFormat = LedgerFormat3
)

// Format is the run's ledger format (the absent field is format 1).
func (rs *RunState) Format() LedgerFormat {
	if rs.LedgerFormat == 0 {
		return LedgerFormat1
	}
	return rs.LedgerFormat
}

// SetFormat fixes the run's ledger format, storing format 1 as the
// field's absence.
func (rs *RunState) SetFormat(f LedgerFormat) {
	if f == LedgerFormat1 {
		f = 0
	}
	rs.LedgerFormat = f
}

// RunState is the current runtime state of a run (seed §4.1). It is the
// present, not history: the ledger is the history.
type RunState struct {
	Schema      string            `json:"schema"`
	ID          codec.Ref         `json:"id"`
	Version     int64             `json:"version"`
	Fingerprint codec.Fingerprint `json:"fingerprint"`
	RunID       string            `json:"run_id"`
	// LedgerFormat is the form of the events this run's cycles record
	// (see Format). It is fixed when the run starts, so that a run keeps
	// replaying byte for byte under a newer acr; absent means 1.
	LedgerFormat LedgerFormat `json:"ledger_format,omitempty"`
	CycleSeq     int64        `json:"cycle_seq"`
	Status       RunStatus    `json:"status"`
	// LoopDisposition is the scheduler state the last cycle ended in.
	LoopDisposition Disposition `json:"loop_disposition"`
	ReasonCodes     []string    `json:"reason_codes"`

	GoalRefs                  []codec.Ref `json:"goal_refs"`
	ContractRef               codec.Ref   `json:"contract_ref"`
	AuthorityRef              codec.Ref   `json:"authority_ref"`
	EnvironmentSpecRef        codec.Ref   `json:"environment_spec_ref"`
	EnvironmentRef            codec.Ref   `json:"environment_ref"`
	ContextBindingRef         codec.Ref   `json:"context_binding_ref"`
	ActiveAgendaResolutionRef codec.Ref   `json:"active_agenda_resolution_ref"`
	CommitmentStoreRef        codec.Ref   `json:"commitment_store_ref"`
	StrategyStateRef          codec.Ref   `json:"strategy_state_ref"`
	LastCheckpointRef         codec.Ref   `json:"last_checkpoint_ref"`
	LastCycleRef              codec.Ref   `json:"last_cycle_ref"`

	StartedAt string `json:"started_at"`
	// UpdatedAt is the clock reading of the last change.
	UpdatedAt string `json:"updated_at"`
	// NextWake is the known future wake condition, if any (SLEEP).
	NextWake *Wake `json:"next_wake"`
	// Waiting explains the current waiting state, with its age and deadline.
	Waiting *Waiting    `json:"waiting"`
	Budget  BudgetUsage `json:"budget"`

	PendingApprovals []PendingApproval `json:"pending_approvals"`
	Deferred         []DeferredItem    `json:"deferred"`
	// Suppressed items are not proposed again: refused, denied, or caught
	// repeating without progress.
	Suppressed []Suppression `json:"suppressed"`
	// Attempts feed the forever-loop guard: how often an action fingerprint
	// was tried on the same evidence.
	Attempts []Attempt `json:"attempts"`
	// InboxSeen lists inbox item ids already consumed whose files may still
	// exist, so they are never consumed twice.
	InboxSeen []string `json:"inbox_seen"`
	// DedupKeys remembers recently consumed wake dedup keys until expiry.
	DedupKeys []DedupKey `json:"dedup_keys"`
	// AnswersConsumed lists the inbox ids of the last MaxAnswersConsumed
	// approvals and denials consumed, oldest first, whatever became of
	// them: unlike InboxSeen it outlives the files, so a copy of a consumed
	// answer put back into the inbox is recognised as a replay.
	AnswersConsumed []string `json:"answers_consumed,omitempty"`
	// Controller is the controller state from which the last cycle went
	// back to sleep (no_cycle, propose, blocked, failed or cascade).
	Controller string `json:"controller_state"`
	// Rollbacks are undo actions an evaluation asked for, carried out by
	// the next cycle through the effect's rollback bundle.
	Rollbacks []RollbackRequest `json:"rollbacks,omitempty"`
	// Fixed lists the items this run fixed, by the cycle that fixed them:
	// one that fails again is state drift, not new work.
	Fixed []FixedItem `json:"fixed,omitempty"`
	// Proposed remembers what an external proposer proposed for an item
	// and how it was judged, and what a person denied for it, so that the
	// next request can tell it (the most recent AttemptsKeptPerItem per
	// item).
	Proposed []ProposedAttempt `json:"proposed,omitempty"`
	// PendingAmendments are proposed amendments of the pinned goal,
	// contract or environment waiting for a person's answer.
	PendingAmendments []PendingAmendment `json:"pending_amendments,omitempty"`
	// Amendments counts the amendments accepted in this run.
	Amendments int64 `json:"amendments,omitempty"`
	// Extensions is the seed's room (§4.1) for what an extension of acr
	// keeps with the run. acr writes none and keeps whatever is there
	// from cycle to cycle. Runs from ledger format 3 on have it, empty;
	// earlier runs have it absent, so their run state keeps its bytes.
	Extensions *Extensions `json:"extensions,omitempty"`
}

// Extensions are named values an extension keeps with the run, opaque to
// acr: canonical JSON, carried unchanged.
type Extensions map[string]codec.Value

// ProposedAttempt is one action a proposer proposed for an item.
type ProposedAttempt struct {
	ItemID      string `json:"item_id"`
	Fingerprint string `json:"fingerprint"`
	// Action says what the action does, in a few words.
	Action string `json:"action"`
	Cycle  int64  `json:"cycle"`
	// Result is the evaluation's result once the action ran, or why it
	// was not taken (the critic's or governance's reason).
	Result string `json:"result"`
	// DeniedBy and Reason are set when a person denied the action (ledger
	// format 3 on; the action may then be a declared fix): the proposer is
	// told who and why the next time it is asked about the item.
	DeniedBy string `json:"denied_by,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// RollbackRequest is an undo the evaluator required: the restore action
// built from the undone effect's rollback bundle.
type RollbackRequest struct {
	ItemID    string `json:"item_id"`
	CheckID   string `json:"check_id,omitempty"`
	FromCycle int64  `json:"from_cycle"`
	Reason    string `json:"reason"`
	// Action is the canonical body of the restore action.
	Action codec.Value `json:"action"`
	// EvaluationRef is the evaluation that required the undo.
	EvaluationRef codec.Ref `json:"evaluation_ref"`
}

// FixedItem records that an item was fixed (its fix was accepted).
type FixedItem struct {
	ItemID string `json:"item_id"`
	Cycle  int64  `json:"cycle"`
	// Times counts how often the item had to be fixed.
	Times int64 `json:"times"`
}

// Wake is a known future wake condition.
type Wake struct {
	// At is the time after which the run is eligible again ("" if none).
	At string `json:"at,omitempty"`
	// Source is the wake source of At when it is a commitment's:
	// commitment_deadline_due (a live commitment's deadline or period
	// comes then) or commitment_wake_condition (a suspended commitment
	// waits for that time); empty for a scheduled look.
	Source string `json:"source,omitempty"`
	// Conditions lists what else resumes the run (a commitment's wake
	// condition, an approval, evidence arriving).
	Conditions []string `json:"conditions,omitempty"`
	Reason     string   `json:"reason"`
}

// Waiting describes why the run waits.
type Waiting struct {
	Kind     string `json:"kind"` // approval | deferral | sleep | idle | fault
	Reason   string `json:"reason"`
	Since    string `json:"since"`
	Deadline string `json:"deadline,omitempty"`
}

// BudgetUsage counts what the run has consumed. Limits live in the
// Contract, which no cycle can change.
type BudgetUsage struct {
	Cycles              int64 `json:"cycles"`
	CognitiveOperations int64 `json:"cognitive_operations"`
	Actions             int64 `json:"actions"`
	Compactions         int64 `json:"compactions"`
	WallClockSeconds    int64 `json:"wall_clock_seconds"`
	// SoftWarned lists the budgets whose soft level was ever reached.
	SoftWarned []string `json:"soft_warned"`
	// SoftBase is each budget's use when its soft allowance was last
	// replenished (a budget_replenished wake signal; absent: never). The
	// soft level counts from there: a budget whose use since then reaches
	// it is temporarily exhausted.
	SoftBase map[string]int64 `json:"soft_base,omitempty"`
}

// PendingApproval is an escalated action waiting for a person. Ref binds the
// approval to this exact action.
type PendingApproval struct {
	Ref         codec.Ref `json:"ref"`
	DecisionRef codec.Ref `json:"decision_ref"`
	Operation   string    `json:"operation"`
	Target      string    `json:"target"`
	CheckID     string    `json:"check_id,omitempty"`
	ItemID      string    `json:"item_id"`
	Reason      string    `json:"reason"`
	RequestedAt string    `json:"requested_at"`
	CycleSeq    int64     `json:"cycle_seq"`
	// Action is the canonical body of the escalated action request; an
	// approval executes exactly this, never a re-derived one.
	Action codec.Value `json:"action"`
	// Resolution is the person's answer once consumed; the next cycle acts
	// on it.
	Resolution *Approval `json:"resolution"`
	// ProposalOnly marks an A1 proposal: the person reviews it, and the
	// loop acts on nothing whatever the answer.
	ProposalOnly bool `json:"proposal_only,omitempty"`
	// FitnessRef is the FitnessContract fixed with the plan, and Fitness
	// its body: the cycle that acts on the approval judges by exactly this
	// contract, not one derived again.
	FitnessRef codec.Ref    `json:"fitness_ref,omitempty"`
	Fitness    *codec.Value `json:"fitness,omitempty"`
	// Trial, for a command fix of a git world, is the cycle's own trial of
	// it (the head it was tried on, the tree it produced, the paths it
	// changed): what governance ruled on when it asked. Absent for other
	// actions and in runs written before trials were recorded.
	Trial *world.GitTrial `json:"trial,omitempty"`
	// Key, Cause and Evidence describe an uncertain effect (Reason
	// uncertain_effect) recorded as an incident: Ref is then the
	// incident's ref, so that each incident has a ref of its own; Key is
	// the idempotency key the effect was to run under, Cause the world's
	// reason, Evidence each path's hash in the intent and now. Besides
	// approve (run it again) and deny, it takes the verdicts ran and
	// not_ran (acr resolve). An uncertain effect recorded before incidents
	// has none of them, and its Ref is the action's.
	Key      string               `json:"idempotency_key,omitempty"`
	Cause    string               `json:"cause,omitempty"`
	Evidence []world.PathEvidence `json:"evidence,omitempty"`
	// Approvals are the signed approvals recorded so far for a request
	// whose rule needs several different approvers (the contract's
	// rules[].approvals): the request is resolved by the last one it
	// needs, and stays open until then.
	Approvals []Signer `json:"approvals,omitempty"`
}

// Incident reports whether p is an uncertain effect recorded as an
// incident, which acr resolve answers.
func (p PendingApproval) Incident() bool { return p.Key != "" }

// DeferredItem is known work waiting for evidence.
type DeferredItem struct {
	ItemID      string    `json:"item_id"`
	Evidence    []string  `json:"evidence"`
	Reason      string    `json:"reason"`
	Since       string    `json:"since"`
	DecisionRef codec.Ref `json:"decision_ref"`
}

// Suppression keeps an item off the agenda and says why.
type Suppression struct {
	ItemID      string    `json:"item_id"`
	Fingerprint string    `json:"fingerprint"`
	Reason      string    `json:"reason"`
	DecisionRef codec.Ref `json:"decision_ref,omitempty"`
	Since       string    `json:"since"`
	// EvidenceRef is the observation the suppression was made under; new
	// evidence (a different target hash) lifts a loop suppression.
	EvidenceRef string `json:"evidence_ref,omitempty"`
}

// Attempt counts tries of one action fingerprint on one piece of evidence.
type Attempt struct {
	ItemID      string `json:"item_id"`
	Fingerprint string `json:"fingerprint"`
	EvidenceRef string `json:"evidence_ref"`
	Count       int    `json:"count"`
	Failures    int    `json:"failures"`
	// LastCycle is the cycle of the latest try; only the most recent
	// attempts per item are kept (enough to see a remedy flip-flop
	// between two states), so the run state does not grow with history.
	LastCycle int64 `json:"last_cycle"`
}

// AttemptsKeptPerItem bounds the forever-loop guard's memory per item.
const AttemptsKeptPerItem = 8

// DedupKey is a consumed wake signal's dedup key, remembered until expiry.
type DedupKey struct {
	Key     string `json:"key"`
	Expires string `json:"expires"`
}

// CycleRecord is what one cycle did, as refs (seed §4.2). It never holds
// reasoning: every lane points to the object a subsystem produced, and
// lanes the direct path skipped stay empty.
type CycleRecord struct {
	Schema                  string      `json:"schema"`
	RunID                   string      `json:"run_id"`
	CycleSeq                int64       `json:"cycle_seq"`
	PriorCycleRef           codec.Ref   `json:"prior_cycle_ref"`
	StartedAt               string      `json:"started_at"`
	InputEnvironmentRef     codec.Ref   `json:"input_environment_ref"`
	InputContextRef         codec.Ref   `json:"input_context_ref"`
	InputRefs               []codec.Ref `json:"input_refs"`
	SemanticStateRef        codec.Ref   `json:"semantic_state_ref"`
	SelfObservationRef      codec.Ref   `json:"self_observation_ref"`
	StrategicTensionRef     codec.Ref   `json:"strategic_tension_ref"`
	ReviewTriggerRef        codec.Ref   `json:"review_trigger_ref"`
	LensRetrievalRef        codec.Ref   `json:"lens_retrieval_ref"`
	RoutingProfileRef       codec.Ref   `json:"routing_profile_ref"`
	AgendaResolutionRef     codec.Ref   `json:"agenda_resolution_ref"`
	CommitmentRefs          []codec.Ref `json:"commitment_refs"`
	CognitiveProgramRef     codec.Ref   `json:"cognitive_program_ref"`
	DialogueRef             codec.Ref   `json:"dialogue_ref"`
	AutonomyResolutionRef   codec.Ref   `json:"autonomy_resolution_ref"`
	GovernanceDecisionRef   codec.Ref   `json:"governance_decision_ref"`
	ActionRequestRef        codec.Ref   `json:"action_request_ref"`
	IdempotencyKey          string      `json:"idempotency_key"`
	WorldOutcomeRef         codec.Ref   `json:"world_outcome_ref"`
	EvaluationRef           codec.Ref   `json:"evaluation_ref"`
	ContextCompressionRef   codec.Ref   `json:"context_compression_ref"`
	CheckpointRef           codec.Ref   `json:"checkpoint_ref"`
	LoopDisposition         Disposition `json:"loop_disposition"`
	ReasonCodes             []string    `json:"reason_codes"`
	GovernanceDecision      string      `json:"governance_decision"`
	ControllerTransitionRef []codec.Ref `json:"controller_transition_refs"`

	// GovernanceDisposition is the disposition seed §10.3 maps the
	// cycle's governance decision to: WAIT_APPROVAL for ESCALATE, SLEEP or
	// DEFERRED (by the policy's defer_to) for DEFER; absent for the other
	// verdicts and before ledger format 3. LoopDisposition is what the
	// loop chose: CONTINUE while other work remains this cycle
	// (docs/controller.md says why).
	GovernanceDisposition Disposition `json:"governance_disposition,omitempty"`
}

// Checkpoint points at everything a restart needs (seed §4.5). It holds
// refs only; it is not a commit receipt and certifies no world transition.
type Checkpoint struct {
	Schema             string      `json:"schema"`
	RunID              string      `json:"run_id"`
	CycleSeq           int64       `json:"cycle_seq"`
	RunStateRef        codec.Ref   `json:"run_state_ref"`
	CycleRef           codec.Ref   `json:"cycle_ref"`
	ContextBindingRef  codec.Ref   `json:"context_binding_ref"`
	CommitmentStoreRef codec.Ref   `json:"commitment_store_ref"`
	EnvironmentRef     codec.Ref   `json:"environment_ref"`
	StrategyStateRef   codec.Ref   `json:"strategy_state_ref"`
	LedgerFrontierRefs []codec.Ref `json:"ledger_frontier_refs"`
	LastWorldCommitRef codec.Ref   `json:"last_world_commit_ref"`
	NextWake           *Wake       `json:"next_wake"`
	BudgetSnapshot     BudgetUsage `json:"budget_snapshot"`
}

// WakeSignal is evidence that the scheduler may resume (seed §4.4). It
// never carries authority: it changes eligibility, nothing else.
type WakeSignal struct {
	Schema       string       `json:"schema"`
	ID           string       `json:"id"`
	EventID      string       `json:"event_id,omitempty"`
	Source       string       `json:"source"`
	Ref          string       `json:"ref,omitempty"`
	DedupKey     string       `json:"dedup_key"`
	Priority     int          `json:"priority"`
	CausalParent string       `json:"causal_parent,omitempty"`
	CreatedAt    string       `json:"created_at"`
	ExpiresAt    string       `json:"expires_at"`
	By           string       `json:"by"`
	Reason       string       `json:"reason,omitempty"`
	Payload      *codec.Value `json:"payload,omitempty"`
}

// WakeSources lists the sources a wake signal may name (seed §4.4).
func WakeSources() []string {
	return []string{"new_environment_observation", "commitment_wake_condition", "commitment_deadline_due",
		"approval_resolved", "external_event", "scheduled_tick", "budget_replenished", "knowledge_source_changed", "manual_resume"}
}

// MaxAnswersConsumed bounds RunState.AnswersConsumed. An older answer
// needs no entry: it names a request from a cycle that has been answered
// and acted on, and no later request carries that cycle again.
const MaxAnswersConsumed = 64

// Approval resolves a pending approval request, for exactly one action.
// It names the request it answers by the action's ref and the cycle that
// asked (RequestCycle): an action asked about again later is a new request,
// which an old answer does not match.
type Approval struct {
	Schema    string    `json:"schema"`
	ID        string    `json:"id"`
	ActionRef codec.Ref `json:"action_ref"`
	// RequestCycle is the cycle_seq of the pending approval answered.
	RequestCycle int64 `json:"request_cycle,omitempty"`
	// Verdict is approve or deny; or, for an uncertain effect, ran or
	// not_ran (acr resolve).
	Verdict string `json:"verdict"`
	By      string `json:"by"`
	Reason  string `json:"reason,omitempty"`
	// Replaces is the id of a queued, not yet consumed answer to the same
	// request that this one replaces: of the two, this one counts.
	Replaces  string `json:"replaces,omitempty"`
	CreatedAt string `json:"created_at"`
	// Signature proves who gave the answer, when the contract lists
	// approvers (absent otherwise).
	Signature *Signature `json:"signature,omitempty"`
	// Trial, on an approval of a command fix in a git world, is the trial
	// the person saw (acr approve shows its diff): the head it was tried
	// on, the tree it produced and the paths it changed. The approval
	// binds to that tree: the effect commits exactly it on that head, or
	// nothing. Absent on other answers and on answers written before it
	// existed.
	Trial *world.GitTrial `json:"trial,omitempty"`
}

// Signature proves who gave an answer or proposed an amendment: an SSH
// signature (ssh-keygen -Y sign, namespace "acr") over the item's
// statement (inbox.Statement: the run, what is answered or proposed, by
// whom, and Nonce), by a key the contract lists under the item's by.
type Signature struct {
	// Nonce makes each signed statement unique.
	Nonce string `json:"nonce"`
	// SSHSig is the armored signature, exactly as ssh-keygen writes it.
	SSHSig string `json:"sshsig"`
}

// The verdicts of an answer.
const (
	VerdictApprove = "approve"
	VerdictDeny    = "deny"
	// VerdictRan says an uncertain effect happened: it is recorded as
	// done by the person, and nothing runs.
	VerdictRan = "ran"
	// VerdictNotRan says it did not: the item goes back to the agenda.
	VerdictNotRan = "not_ran"
)

// Resolves reports whether a verdict is a person's word on an uncertain
// effect (ran or not_ran) rather than an answer to a request.
func Resolves(verdict string) bool { return verdict == VerdictRan || verdict == VerdictNotRan }

// The documents an amendment can replace.
const (
	AmendContract    = "contract"
	AmendGoal        = "goal"
	AmendEnvironment = "environment"
)

// AmendTargets lists the documents an amendment can replace.
func AmendTargets() []string { return []string{AmendContract, AmendEnvironment, AmendGoal} }

// Amendment proposes to replace one pinned document of the run (its
// contract, goal or environment) with Document. Amends is the ref of the
// pinned version it was written against: accepted, it replaces exactly
// that version, and an amendment of a version no longer pinned is stale.
// Diff is the unified diff of the pretty-printed documents, for a person.
type Amendment struct {
	Schema    string      `json:"schema"`
	ID        string      `json:"id"`
	Target    string      `json:"target"`
	Amends    codec.Ref   `json:"amends"`
	Document  codec.Value `json:"document"`
	Diff      string      `json:"diff"`
	By        string      `json:"by"`
	Reason    string      `json:"reason,omitempty"`
	CreatedAt string      `json:"created_at"`
	// Signature proves who proposed it, when the contract lists
	// approvers (absent otherwise).
	Signature *Signature `json:"signature,omitempty"`
}

// Signer is who signed an answer or amendment, as its signature shows:
// the id the contract lists the key under ("" for a key it does not
// list), the key's fingerprint (SHA256:..., as ssh-keygen -l prints it)
// and its type.
type Signer struct {
	ID          string `json:"id,omitempty"`
	Fingerprint string `json:"fingerprint"`
	KeyType     string `json:"key_type"`
}

// PendingAmendment is a proposed amendment waiting for a person's answer
// (acr approve REF or acr deny REF, REF being Ref). It is accepted by a
// later cycle than the one that proposed it (CycleSeq), never the same.
type PendingAmendment struct {
	Ref       codec.Ref   `json:"ref"`
	Target    string      `json:"target"`
	Amends    codec.Ref   `json:"amends"`
	NewRef    codec.Ref   `json:"new_ref"`
	Document  codec.Value `json:"document"`
	Diff      string      `json:"diff"`
	By        string      `json:"by"`
	CycleSeq  int64       `json:"cycle_seq"`
	CreatedAt string      `json:"created_at"`
	// Signer is who proposed it, proven by signature, when the contract
	// lists approvers.
	Signer *Signer `json:"signer,omitempty"`
}

// StopRequest asks the run to stop at its next invocation. Kill marks the
// operator kill switch, which stops the run even mid-wait.
type StopRequest struct {
	Schema    string `json:"schema"`
	ID        string `json:"id"`
	By        string `json:"by"`
	Reason    string `json:"reason,omitempty"`
	Kill      bool   `json:"kill,omitempty"`
	CreatedAt string `json:"created_at"`
}

// NotifiedSchema names the record of the last condition notified.
const NotifiedSchema = "acr.notified/v0.1"

// Notified is the last condition of a run that its notify program was run
// for (kernel.Alert): a condition is notified once, however many
// invocations find it. It is kept in a checkpoint file of its own
// ("notified", absent until the first notification), apart from the run
// state, because it records what the driver did, not what a cycle
// decided; the ledger records each notification (persistent.notification.sent).
type Notified struct {
	Schema string    `json:"schema"`
	Key    codec.Ref `json:"key"`
	Kind   string    `json:"kind"`
	Cycle  int64     `json:"cycle_seq"`
	At     string    `json:"at"`
	// Delivered says whether the program ran to exit 0; either way the
	// condition is not notified again.
	Delivered bool `json:"delivered"`
}
