package event

import "strings"

// Kind names what an event records. Kinds are dotted names, fixed: a
// ledger written by one version of acr is read by the next.
//
// The constants below are the one list of kinds: Kinds and Valid
// (kinds_gen.go) are generated from them, and a test fails when that file
// is stale.
type Kind string

//go:generate go run ./kindgen

// The run's beginning and its terminal and resumed states.
const (
	GoalPinned     Kind = "intent.goal.pinned"
	ContractPinned Kind = "governance.contract.pinned"
	SpecPinned     Kind = "environment.spec.pinned"
	RunStarted     Kind = "persistent.run.started"
	RunStopped     Kind = "persistent.run.stopped"
	RunFaulted     Kind = "persistent.run.faulted"
	RunResumed     Kind = "persistent.run.resumed"
)

// A cycle's frame: its inputs manifest first, its record last.
const (
	CycleStarted   Kind = "persistent.cycle.started"
	CycleCompleted Kind = "persistent.cycle.completed"
	// CheckpointRecorded carries the checkpoint record (the refs a
	// restart needs) of the state a cycle ends in, every cycle, from
	// ledger format 3 on. It is the ledger's record of the checkpoint,
	// not the checkpoint files: those are a snapshot of the state the
	// newest such record describes, written when the run comes to rest
	// and every --checkpoint-every cycles (docs/on-disk-format.md).
	CheckpointRecorded Kind = "persistent.checkpoint.recorded"
	// CheckpointCreated is the same record under the seed's name, as runs
	// of ledger formats 1 and 2 wrote it (every cycle, whether files were
	// written or not). Readers accept both: see CheckpointRecord.
	CheckpointCreated Kind = "persistent.checkpoint.created"
)

// Inputs carried by a cycle's first batch, recorded once.
const (
	Observed          Kind = "environment.observed"
	InboxConsumed     Kind = "inbox.item.consumed"
	KnowledgeObserved Kind = "knowledge.update.observed"
)

// Scheduler transitions (seed §11 names).
const (
	LoopWoke            Kind = "persistent.loop.woke"
	LoopIdled           Kind = "persistent.loop.idled"
	LoopSlept           Kind = "persistent.loop.slept"
	LoopDeferred        Kind = "persistent.loop.deferred"
	LoopWaitingApproval Kind = "persistent.loop.waiting_approval"
)

// Inbox items as a cycle consumed them.
const (
	WakeAccepted      Kind = "persistent.wake.accepted"
	WakeRejected      Kind = "persistent.wake.rejected"
	WakeCoalesced     Kind = "persistent.wake.coalesced"
	StopRequested     Kind = "persistent.stop.requested"
	ApprovalRequested Kind = "approval.requested"
	ApprovalResolved  Kind = "approval.resolved"
	ApprovalIgnored   Kind = "approval.ignored"
	// ApprovalRecorded records a signed approval of a request that needs
	// several different approvers, before the last one it needs: the
	// request stays open.
	ApprovalRecorded Kind = "approval.recorded"
	// AmendmentProposed records an amendment of a pinned document (acr
	// amend) taken up by a cycle, with its diff: it waits for a person.
	AmendmentProposed Kind = "amendment.proposed"
	// AmendmentAccepted records a pinned document replaced, with the old
	// and the new version's refs.
	AmendmentAccepted Kind = "amendment.accepted"
	// AmendmentRefused records an amendment not taken: invalid, stale (it
	// amends a version no longer pinned), unchanged, or denied.
	AmendmentRefused Kind = "amendment.refused"
)

// Run budgets.
const (
	BudgetSoftLimitReached Kind = "budget.soft_limit.reached"
	BudgetReplenished      Kind = "budget.replenished"
	BudgetReplenishIgnored Kind = "budget.replenish.ignored"
)

// Observation encoded for the cycle.
const (
	SemanticEncoded Kind = "semantic.state.encoded"
	SelfObserved    Kind = "self.observation.recorded"
)

// The commitment store's lifecycle (one kind per transition).
const (
	ConditionsEvaluated       Kind = "commitment.conditions.evaluated"
	CommitmentCreated         Kind = "commitment.created"
	CommitmentModified        Kind = "commitment.modified"
	CommitmentSuspended       Kind = "commitment.suspended"
	CommitmentResumed         Kind = "commitment.resumed"
	CommitmentCompleted       Kind = "commitment.completed"
	CommitmentExpired         Kind = "commitment.expired"
	CommitmentAbandoned       Kind = "commitment.abandoned"
	CommitmentResumeAnnounced Kind = "persistent.commitment.resumed"
)

// Agenda resolution, deferrals and suppressions.
const (
	DeferralLifted     Kind = "agenda.deferral.lifted"
	SuppressionLifted  Kind = "agenda.suppression.lifted"
	CandidatesProposed Kind = "agenda.candidates.proposed"
	AgendaSelected     Kind = "agenda.resolution.selected"
	AgendaEmpty        Kind = "agenda.resolution.empty"
	PromotionRecorded  Kind = "agenda.promotion.recorded"
	WorkDeferred       Kind = "persistent.work.deferred"
	GuardTripped       Kind = "loop.guard.tripped"
)

// Strategic tension, review, lenses and routing.
const (
	StrategicTension   Kind = "strategy.tension.observed"
	ReviewEvaluated    Kind = "strategy.review.evaluated"
	ReviewRequested    Kind = "strategy.review.requested"
	ReviewCapped       Kind = "strategy.review.capped"
	LensRetrieved      Kind = "strategy.lens.retrieved"
	RoutingOverlaid    Kind = "strategy.routing.overlaid"
	KnowledgeCandidate Kind = "strategy.knowledge.candidate"
)

// Cognition: the program, the proposer, the dialogue.
const (
	ProgramCompiled   Kind = "cognition.program.compiled"
	ProposalRequested Kind = "cognition.proposal.requested"
	ProposalReceived  Kind = "cognition.proposal.received"
	DialogueCompleted Kind = "cognition.run.completed"
)

// The governance boundary.
const (
	ActionProposed Kind = "action.request.proposed"
	// ActionTried records what a command fix of a git world did when the
	// driver tried it in a throwaway work tree before governance ruled on
	// it (world.CommandTried): the paths it really changed, which are the
	// ones governance rules on. Ledgers written before it have none.
	ActionTried      Kind = "action.request.tried"
	DecisionRecorded Kind = "governance.decision.recorded"
	ReceiptRecorded  Kind = "governance.receipt.recorded"
)

// The effect: its request, intent, outcome, readback and evaluation.
const (
	ActionRequested    Kind = "sandbox.action.requested"
	ActionIntent       Kind = "sandbox.action.intent"
	ActionBlocked      Kind = "sandbox.action.blocked"
	ActionCommitted    Kind = "sandbox.action.committed"
	ActionNotApplied   Kind = "sandbox.action.not_applied"
	ReadbackRecorded   Kind = "effect.readback.recorded"
	EvaluationRecorded Kind = "evaluation.recorded"
	// EffectResolved records a person's word on an uncertain effect
	// (acr resolve): it ran, or it did not. Nothing runs on it.
	EffectResolved Kind = "sandbox.effect.resolved"
)

// The cycle controller's transitions and artifacts.
const (
	// Transition is one controller transition (ledger format 1).
	Transition Kind = "controller.transition.recorded"
	// Transitions are the controller transitions of one durable batch of
	// a cycle (ledger format 2).
	Transitions         Kind = "controller.transitions.recorded"
	CycleDeclared       Kind = "controller.cycle.declared"
	CycleBlocked        Kind = "controller.cycle.blocked"
	TensionAssessed     Kind = "controller.tension.assessed"
	FitnessFixed        Kind = "controller.fitness.fixed"
	FitnessCarried      Kind = "controller.fitness.carried"
	ViolationRefused    Kind = "controller.violation.refused"
	LearningMetabolized Kind = "controller.learning.metabolized"
	CandidateForged     Kind = "controller.candidate.forged"
	CascadeRecorded     Kind = "controller.cascade.recorded"
	RollbackRequested   Kind = "controller.rollback.requested"
	ProposalReviewed    Kind = "controller.proposal.reviewed"
	// ContextRecorded carries the controller's part of the ContextSnapshot:
	// source authority, trust state, available capabilities (ledger
	// format 2).
	ContextRecorded Kind = "controller.context.recorded"
)

// Working-memory compaction.
const (
	CompactionCompleted Kind = "context.compaction.completed"
	CompactionFailed    Kind = "context.compaction.failed"
)

// Out-of-band records of what the driver did or learned.
const (
	RecoveryStarted   Kind = "persistent.recovery.started"
	RecoveryCompleted Kind = "persistent.recovery.completed"
	CycleAbandoned    Kind = "persistent.recovery.cycle_abandoned"
	ProviderFailed    Kind = "persistent.provider.failed"
	TailRepaired      Kind = "ledger.tail.repaired"
	InboxQuarantined  Kind = "inbox.item.quarantined"
	// LeaseBroken records that a person broke the lease of a run kept in
	// a store (acr lease break), whose holder they knew to be gone: it
	// names the holder and who broke it, and its place in the ledger
	// fences the holder, whose next append expects the record before it.
	LeaseBroken Kind = "persistent.lease.broken"
	// NotificationSent records that the notify program was run for a
	// condition of the run that needs a person or ends it, and how it
	// ended: a condition is notified once, and a crash neither loses nor
	// repeats it (kernel.Driver.Notified).
	NotificationSent Kind = "persistent.notification.sent"
)

// OutOfBand reports whether events of this kind are not produced by a
// cycle step: they record what the driver did or learned from a provider
// (repairs, recoveries, provider failures, a quarantined inbox file, an
// effect's intent or a missing control), and replay skips them when it
// derives cycles again.
func (k Kind) OutOfBand() bool {
	s := string(k)
	return strings.HasPrefix(s, "persistent.recovery.") || strings.HasPrefix(s, "persistent.provider.") || strings.HasPrefix(s, "persistent.notification.") ||
		strings.HasPrefix(s, "ledger.") || k == InboxQuarantined || k == ActionIntent || k == ActionBlocked || k == LeaseBroken
}

// LoopAdapter is the seed's id of the history adapter the persistent
// loop records its own events through (seed §11): the persistent.* kinds.
const LoopAdapter = "acr.persistent-loop-temporal/v0.1"

// Adapter returns the history adapter that records events of kind k:
// LoopAdapter for the loop's own persistent.* kinds, "" for the kinds a
// subsystem records under its own family name (intent., governance.,
// controller., ...).
func (k Kind) Adapter() string {
	if k.In("persistent") {
		return LoopAdapter
	}
	return ""
}

// CheckpointRecord reports whether events of kind k carry a checkpoint
// record: persistent.checkpoint.recorded, or persistent.checkpoint.created
// in runs of ledger formats 1 and 2.
func (k Kind) CheckpointRecord() bool { return k == CheckpointRecorded || k == CheckpointCreated }

// In reports whether k belongs to a family of kinds, the first part of
// its name ("controller", "strategy", ...).
func (k Kind) In(family string) bool { return strings.HasPrefix(string(k), family+".") }

// Commitment is the kind of the commitment store's transition named by
// its verb ("created", "suspended", ...).
func Commitment(verb string) Kind { return Kind("commitment." + verb) }

// CommitmentVerb returns the verb of a commitment lifecycle kind, and
// whether k is one (the conditions evaluation is not).
func (k Kind) CommitmentVerb() (string, bool) {
	v, ok := strings.CutPrefix(string(k), "commitment.")
	return v, ok && k != ConditionsEvaluated
}
