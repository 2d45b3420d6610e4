package kernel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// The driver's dependencies. Storage (checkpoints, ledger, inbox) is the
// storage seam's (package storage), so that every backend implements one
// set of interfaces; the world and the other providers are declared here by
// their one consumer.

// World is the sandbox adapter. Prepare computes an action's intent (or
// returns the outcome already recorded for its key); the driver makes the
// intent durable in the ledger before Commit carries it out, at most once.
type World interface {
	Observe(ctx context.Context) (world.Observation, error)
	Prepare(ctx context.Context, key string, a world.Action) (world.Intent, *world.Outcome, error)
	Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error)
	// Readback is the observer's own reading, after an effect, of what
	// the action changed (its target, or the files a command touches).
	Readback(ctx context.Context, a world.Action, out world.Outcome) (world.Readback, error)
	// Durable returns once every effect Commit reported is durable in the
	// world. Commit may return with the last fsync of its effect still
	// running, so that the readback and the cycle's computation overlap
	// the disk's wait; the driver calls Durable before it writes anything
	// that records the effect's outcome.
	Durable() error
}

// gatedWorld is a World that can begin an effect while its intent is
// still on its way to disk: it does what changes nothing the world shows
// first and calls ready at the last moment before the world changes
// (sandbox.World.CommitWhen).
type gatedWorld interface {
	CommitWhen(ctx context.Context, key string, a world.Action, in world.Intent, ready func() error) (world.Outcome, bool, error)
}

// Trier is a world that can try a command fix before governance rules on
// it (a git world: in a throwaway work tree at the branch head, nothing
// committed or pushed). A command that fails is a trial that failed
// (world.CommandTried.Failure), not an error; an error is the world's
// failure (git could not clone or read the head), a provider failure
// after which the cycle does not happen. A world that is not a Trier
// leaves such a fix untried: governance rules on its declared touches.
type Trier interface {
	Try(ctx context.Context, a world.Action) (world.CommandTried, error)
}

// Clock tells the time. Cycles never read the wall clock themselves.
type Clock interface {
	Now() time.Time
}

// Proposer asks the external proposer (docs/providers.md): it sends the
// request, with the files' content added, and returns the reply to record.
// A proposer that times out, fails or answers something that is not a
// valid proposal returns an error: a provider failure, after which the
// cycle does not happen.
type Proposer interface {
	Propose(ctx context.Context, req cognition.ProposalRequest) (cognition.Reply, error)
}

// KnowledgeSource reports changed external knowledge sources (seed §8.1).
type KnowledgeSource interface {
	Poll(now time.Time) ([]strategy.KnowledgeUpdate, error)
}

// Errors the CLI maps to exit codes.
var (
	// ErrFaulted: the run is FAULTED.
	ErrFaulted = errors.New("run faulted")
	// ErrProvider: an input provider failed; the run state did not advance
	// and a later invocation retries.
	ErrProvider = errors.New("input provider failed")
	// ErrInterrupted: the context was cancelled while the cycle gathered
	// its inputs (a check or the proposer was running) or prepared its
	// effect, before anything of it was written. The program that ran was
	// stopped, the run state did not advance, and no failure is counted:
	// the next invocation starts the cycle again.
	ErrInterrupted = errors.New("interrupted before the cycle was written")
	// ErrStopped: an earlier write of this driver failed, or left a cycle
	// open, so it writes nothing more (see Driver.broken). Reopening the
	// run reads what was stored and recovers it.
	ErrStopped = errors.New("the driver stopped writing after a failed write or an open cycle; reopen the run to recover it")
)

// ReplayError reports a ledger whose recorded cycle differs from what the
// current code derives from the same recorded inputs.
type ReplayError struct {
	Seq      int64
	CycleSeq int64
	Msg      string
}

func (e *ReplayError) Error() string {
	return fmt.Sprintf("ledger seq %d (cycle %d) diverges from replay: %s", e.Seq, e.CycleSeq, e.Msg)
}

// Driver is the imperative shell around the pure cycle functions: it
// gathers inputs, appends events, executes effects and commits
// checkpoints, in the order the Pending and Result types prescribe.
type Driver struct {
	Store  storage.Checkpoints
	Ledger storage.Ledger
	// Split is Ledger's two-step append (Write, then Sync) when its
	// backend has one (a state directory's), nil otherwise: the driver then
	// overlaps the ledger's fsync with the world's (decideAndCommit).
	// The shell that wires the driver says what its backend can do; the
	// driver does not probe for it.
	Split storage.SplitLedger
	// Sealer moves Ledger's committed history into compressed segments
	// when its backend can (a state directory's); nil otherwise.
	Sealer storage.Sealer
	// Joint stores the held batch and the checkpoint after it in one
	// write when its backend can (a JetStream store's); nil otherwise:
	// the driver then appends the batch and commits the checkpoint.
	Joint     storage.JointCommitter
	World     World
	Inbox     storage.Inbox
	Clock     Clock
	Knowledge KnowledgeSource
	// Proposer is asked when a cycle needs a proposal; nil when the
	// contract names none.
	Proposer Proposer
	// KillSwitch reports whether the operator's kill switch is on; nil
	// means there is none.
	KillSwitch func() (bool, error)
	// Revision is written into every manifest.
	Revision string
	// CheckpointEvery is how many cycles may run between directory
	// checkpoints within one invocation. Every cycle's events, including
	// its checkpoint record, are durable in the ledger at once; the
	// directory checkpoint only bounds how much recovery replays.
	CheckpointEvery int
	// SealBytes is when the ledger's committed history moves into
	// compressed segments, for a ledger that can (a state directory's):
	// at the end of an invocation that ran cycles, once the uncompressed
	// part holds this many bytes, and at a checkpoint within one, once it
	// holds 32 times as many. 0 never seals.
	SealBytes int64
	// UncertainErr tells the driver which World error means "cannot tell".
	UncertainErr error
	// RefusedErr tells the driver which World error means "this target is
	// refused by confinement": an answer to record, not a failure.
	RefusedErr error
	// Failpoint, when set, is called at named substages (after-decision,
	// after-ledger-append, after-checkpoint). Crash tests kill the process
	// there.
	Failpoint func(name string)

	// Phase, when set, hears each step of a cycle as it starts (one of
	// the Phase constants) and "" when Step returns, so that a caller
	// timing the gaps between calls sees where a cycle's wall time goes
	// (cmd/acr's ACR_TIMINGS). It runs on the cycle's path: keep it cheap.
	Phase func(name string)

	// Notify, when set, hears of what the driver does that an operator
	// watching the logs should see at once (the ledger records all of it
	// too): an inbox file quarantined, a provider failure and how many in
	// a row, a run faulted by them, a recovery. cmd/acr logs them.
	Notify func(Notice)

	// Snapshot, when set, is the checkpoint Open uses instead of loading it
	// again (the caller had to read it to open the sandbox).
	Snapshot *storage.Snapshot

	// Operations is the catalog of the operations World carries out (the
	// zero value: the built-in ones); Open gives it to the run's state.
	Operations world.Catalog

	state       EngineState
	files       map[string][]byte // checkpoint files not decoded yet (nil once complete)
	manifest    storage.Manifest
	pending     int      // cycles since the last directory checkpoint
	consumed    []string // inbox ids to remove after the next checkpoint
	failures    int      // consecutive provider failures since the last cycle
	recovery    Recovery
	lastSummary *Summary
	// held is an acting cycle's last batch (its outcome, once the effect
	// is durable in the world), kept for the next durable append: a
	// state directory writes it in the same write and fsync as the next
	// cycle's decision, a server stores it in the same atomic batch.
	held []event.Event
	// unsettled names the effect whose last fsync Commit left running
	// (World.Durable not yet called since), as "cycle N: effect KEY".
	unsettled string
	// broken is the first error after which the driver writes nothing
	// more: a write whose outcome is unknown (a failed append, fsync or
	// checkpoint commit may have stored all, part or none of it), or any
	// error while a cycle is open (its first batch was sent, its last is
	// not durable). Whatever this process still holds in memory may then
	// disagree with what the store holds, so a checkpoint, a held batch
	// or a status written from it could claim a state the ledger does not
	// have (a checkpoint over an open cycle hides that cycle from
	// recovery). Only a new Open, which reads what was stored and
	// recovers from it, may write again.
	broken error
}

// Notice is one thing Notify hears of.
type Notice struct {
	// Level is "info", "warn" or "error".
	Level string
	// RunID is the run's id.
	RunID string
	// Cycle is the run's last cycle when it happened.
	Cycle int64
	// What says what happened, in a few words ("inbox file quarantined").
	What string
	// Fields are the details, by name.
	Fields map[string]any
}

// notify tells Notify, if set.
func (d *Driver) notify(level, what string, fields map[string]any) {
	if d.Notify != nil {
		d.Notify(Notice{Level: level, RunID: d.state.Run.RunID, Cycle: d.state.Run.CycleSeq, What: what, Fields: fields})
	}
}

// State returns the driver's current state. Until a cycle has run (or
// recovery needed it), only the run state, the checkpoint record, the
// environment spec and the strategy state are decoded: that is all an idle
// invocation looks at.
func (d *Driver) State() EngineState { return d.state }

// complete decodes the parts of the state that Open left undecoded
// because an idle invocation does not need them.
func (d *Driver) complete() error {
	if d.files == nil {
		return nil
	}
	if err := DecodeRest(&d.state, d.files); err != nil {
		return err
	}
	d.files = nil
	return nil
}

// lastObservation makes sure the state holds the last observation when
// obs differs from it, for Eligible to compare their verdicts. Open left
// it undecoded; an observation equal to it needs no decoding at all.
func (d *Driver) lastObservation(obs world.Observation) error {
	if d.files == nil || obs.Ref() == d.state.Run.EnvironmentRef || d.state.Environment.Schema != "" {
		return nil
	}
	return d.state.decodeEnvironment(d.files)
}

// Manifest returns the manifest of the last checkpoint loaded or written.
func (d *Driver) Manifest() storage.Manifest { return d.manifest }

func (d *Driver) failpoint(name string) {
	if d.Failpoint != nil {
		d.Failpoint(name)
	}
}

func (d *Driver) noteConsumed(in Inputs) {
	for _, it := range in.Inbox {
		d.consumed = append(d.consumed, it.ID)
	}
}

// gather collects a cycle's inputs from the providers. A provider failure
// or garbage from one is returned as ErrProvider; the store's own failure
// (reading the inbox) is returned as it is: it is not the provider's, and
// must not count towards FAULTED.
func (d *Driver) gather(ctx context.Context) (Inputs, error) {
	now := d.Clock.Now().UTC().Truncate(time.Second)
	obs, err := d.World.Observe(ctx)
	if err != nil {
		return Inputs{}, fmt.Errorf("%w: observe: %w", ErrProvider, err)
	}
	if err := ValidateObservation(obs, &d.state.Spec); err != nil {
		return Inputs{}, fmt.Errorf("%w: observation: %w", ErrProvider, err)
	}
	in := Inputs{Now: now, Observation: obs, InboxPresent: []string{}, Runs: obs.Runs}
	if d.Inbox != nil {
		items, bad, err := d.Inbox.List()
		if err != nil {
			return Inputs{}, fmt.Errorf("read the inbox: %w", err)
		}
		for _, r := range bad {
			if err := d.Inbox.Quarantine(r.Name); err != nil {
				return Inputs{}, err
			}
			obj, _ := event.NewObject("quarantine", map[string]string{"name": r.Name, "reason": r.Reason})
			if _, err := d.append([]event.Event{{Type: event.InboxQuarantined, RunID: d.state.Run.RunID,
				CycleSeq: d.state.Run.CycleSeq, At: state.FormatTime(now), Object: obj, Reasons: []string{"undecodable_inbox_file"}}}); err != nil {
				return Inputs{}, err
			}
			d.notify("warn", "inbox file quarantined", map[string]any{"file": r.Name, "reason": r.Reason})
		}
		for _, it := range items {
			in.InboxPresent = append(in.InboxPresent, it.ID)
			if !slices.Contains(d.state.Run.InboxSeen, it.ID) && !slices.Contains(d.consumed, it.ID) {
				in.Inbox = append(in.Inbox, it)
			}
		}
	}
	if d.Knowledge != nil {
		ups, err := d.Knowledge.Poll(now)
		if err != nil {
			return Inputs{}, fmt.Errorf("%w: knowledge source: %w", ErrProvider, err)
		}
		for _, u := range ups {
			if err := strategy.ValidateUpdate(u); err != nil {
				return Inputs{}, fmt.Errorf("%w: %w", ErrProvider, err)
			}
		}
		in.Knowledge = ups
	}
	if d.KillSwitch != nil {
		on, err := d.KillSwitch()
		if err != nil {
			return Inputs{}, fmt.Errorf("%w: kill switch: %w", ErrProvider, err)
		}
		in.KillSwitch = on
	}
	return in, nil
}

// ValidateObservation rejects an observation that is malformed or does not
// match the environment's checks (garbage from a provider must not reach
// a cycle).
func ValidateObservation(o world.Observation, spec *world.Spec) error {
	if o.Schema != world.ObservationSchema {
		return fmt.Errorf("schema %q, want %q", o.Schema, world.ObservationSchema)
	}
	if o.Files == nil || o.Checks == nil || o.Evidence == nil {
		return fmt.Errorf("files, checks and evidence must be lists")
	}
	if len(o.Checks) != len(spec.Checks) {
		return fmt.Errorf("%d check results for %d checks", len(o.Checks), len(spec.Checks))
	}
	for _, r := range o.Checks {
		if !slices.ContainsFunc(spec.Checks, func(c world.Check) bool { return c.ID == r.ID }) {
			return fmt.Errorf("result for unknown check %q", r.ID)
		}
		if r.Status != world.CheckPass && r.Status != world.CheckFail {
			return fmt.Errorf("check %q has status %q", r.ID, r.Status)
		}
	}
	for i := 1; i < len(o.Files); i++ {
		if o.Files[i-1].Path >= o.Files[i].Path {
			return fmt.Errorf("files are not sorted and unique")
		}
	}
	return nil
}

// The steps of a cycle Driver.Phase names, in the order an acting cycle
// takes them. A cycle without an effect goes from PhaseFinish to
// PhaseCycleAppend; PhasePropose happens only when the contract names a
// proposer; PhaseEffectDurable only when the cycle before had an effect;
// PhaseCheckpoint includes the steps after the ledger append when no
// checkpoint is due.
const (
	PhaseGather         = "gather"          // the providers, and whether a cycle is due (docs/cli.md lists the rest)
	PhaseBegin          = "begin"           // the cycle up to its action request (pure)
	PhasePropose        = "propose"         // waiting for the proposer
	PhaseTry            = "try"             // a git world's command fix tried before governance
	PhasePrepare        = "prepare"         // the effect's controls and intent
	PhaseEffectDurable  = "effect-durable"  // waiting until the last cycle's effect is durable, before this cycle's append
	PhaseDecisionAppend = "decision-append" // decision and intent written (their fsync runs on during PhaseEffect when it can)
	PhaseEffect         = "effect"          // the world's Commit
	PhaseReadback       = "readback"        // reading the effect back
	PhaseFinish         = "finish"          // the rest of the cycle (pure)
	PhaseCycleAppend    = "cycle-append"    // a quiet cycle's events written and fsynced
	PhaseCheckpoint     = "checkpoint"      // the state after the cycle, and the checkpoint when due
)

func (d *Driver) phase(name string) {
	if d.Phase != nil {
		d.Phase(name)
	}
}

// Step runs at most one cycle. When nothing is eligible it records
// nothing and returns a summary with Executed false. After an error that
// leaves the cycle open, or a write whose outcome is unknown, the driver
// is stopped: Step and Close write nothing more (ErrStopped).
func (d *Driver) Step(ctx context.Context) (sum Summary, err error) {
	if d.broken != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrStopped, d.broken)
	}
	d.phase(PhaseGather)
	defer d.phase("")
	open := false
	defer func() {
		if err != nil && open && d.broken == nil {
			d.broken = err
		}
	}()
	if sum, err := d.faulted(); err != nil {
		return sum, err
	}
	in, err := d.gather(ctx)
	if err != nil && ctx.Err() != nil {
		return Summary{}, fmt.Errorf("%w: %w", ErrInterrupted, err)
	}
	if errors.Is(err, ErrProvider) {
		return Summary{}, d.providerFailed(err)
	}
	if err != nil {
		// The store (its inbox) failed, not an input provider: no
		// provider failure is counted, and nothing is written.
		return Summary{}, err
	}
	if err := d.lastObservation(in.Observation); err != nil {
		return Summary{}, err
	}
	if ok, why := Eligible(d.state, in); !ok {
		return Summary{Executed: false, CycleSeq: d.state.Run.CycleSeq, CycleRef: d.state.Run.LastCycleRef,
			LoopDisposition: d.state.Run.LoopDisposition, ReasonCodes: why, GovernanceDecision: "NONE"}, nil
	}
	if err := d.complete(); err != nil {
		return Summary{}, err
	}
	d.phase(PhaseBegin)
	p, err := Begin(d.state, in)
	if err != nil {
		return Summary{}, err
	}
	for p.Ask != nil {
		d.phase(PhasePropose)
		if d.Proposer == nil {
			return Summary{}, d.providerFailed(fmt.Errorf("%w: the contract names a proposer, but none is wired in", ErrProvider))
		}
		reply, err := d.Proposer.Propose(ctx, *p.Ask)
		if err != nil && ctx.Err() != nil {
			return Summary{}, fmt.Errorf("%w: proposer: %w", ErrInterrupted, err)
		}
		if err != nil {
			return Summary{}, d.providerFailed(fmt.Errorf("%w: proposer: %w", ErrProvider, err))
		}
		d.phase(PhaseBegin)
		if p, err = Answer(p, reply, d.Clock.Now()); err != nil {
			return Summary{}, err
		}
	}
	for p.Try != nil {
		d.phase(PhaseTry)
		var t *world.CommandTried
		if tw, ok := d.World.(Trier); ok {
			tried, err := tw.Try(ctx, *p.Try)
			if err != nil && ctx.Err() != nil {
				return Summary{}, fmt.Errorf("%w: try: %w", ErrInterrupted, err)
			}
			if err != nil {
				return Summary{}, d.providerFailed(fmt.Errorf("%w: try %s: %w", ErrProvider, p.Try.Describe(), err))
			}
			t = &tried
		}
		d.phase(PhaseBegin)
		if p, err = Tried(p, t); err != nil {
			return Summary{}, err
		}
	}
	batch := p.Events
	var intent *world.Intent
	var st Settlement
	if p.Effect != nil {
		// The controls are checked and the intent (or the missing control)
		// goes into the same write and fsync as the decision: durable
		// before the effect, at no extra cost.
		d.phase(PhasePrepare)
		in, prior, blocked, err := d.prepare(ctx, p)
		if err != nil && ctx.Err() != nil {
			return Summary{}, fmt.Errorf("%w: prepare: %w", ErrInterrupted, err)
		}
		if err != nil {
			return Summary{}, err
		}
		if prior != nil {
			st.Outcome = prior
		} else {
			ev, why, err := d.effectEvent(p, in, blocked)
			if err != nil {
				return Summary{}, err
			}
			batch = append(slices.Clone(batch), ev)
			st.Blocked, st.Rollback = why, in.Rollback
			if why == "" {
				intent = &in
			}
		}
	}
	if p.Effect == nil {
		// No effect: nothing happens between the two batches that the
		// first must be durable for, so the whole cycle is one append and
		// one fsync.
		open = true
		return d.finishQuiet(p, in)
	}
	if err := d.awaitEffect(); err != nil {
		return Summary{}, err
	}
	// From the decision's append on, the cycle is open until its last
	// batch is durable: an error in between stops the driver. A stop
	// request no longer reaches the programs from here on: a fix cut short
	// is an effect nobody can vouch for, which only a person can settle,
	// so the effect and its readback run to the end (each within its own
	// timeout) and the cycle is finished and recorded.
	open = true
	ctx = context.WithoutCancel(ctx)
	d.phase(PhaseDecisionAppend)
	if intent != nil {
		out, commitErr, err := d.decideAndCommit(ctx, batch, p.Effect, *intent)
		if err != nil {
			return Summary{}, err
		}
		switch {
		case commitErr != nil && d.UncertainErr != nil && errors.Is(commitErr, d.UncertainErr):
			st.Uncertain, st.Uncertainty = true, d.uncertainty(commitErr, intent)
		case commitErr != nil:
			return Summary{}, fmt.Errorf("cycle %d: commit %s: %w", p.b.cycle, p.Effect.Key, commitErr)
		default:
			st.Outcome = &out
		}
	} else {
		if _, err := d.append(batch); err != nil {
			return Summary{}, err
		}
		d.failpoint("after-decision")
	}
	if st.Outcome != nil {
		d.phase(PhaseReadback)
		rb, err := d.World.Readback(ctx, p.Effect.Action, *st.Outcome)
		if err != nil {
			return Summary{}, fmt.Errorf("cycle %d: readback %s: %w", p.b.cycle, st.Outcome.Target, err)
		}
		st.Readback = &rb
		st.At = d.Clock.Now()
	}
	d.phase(PhaseFinish)
	res, err := Finish(p, st)
	if err != nil {
		return Summary{}, err
	}
	// The cycle's last batch waits in memory for the next durable append
	// (the next cycle's decision and intent, or the flush before a
	// checkpoint) and goes into the same write: no effect depends on it
	// before then, and recovery re-derives it from the durable intent and
	// the world's hashes if a crash takes it. The effect's own last fsync
	// (its directory's) may still be running: it is waited for just before
	// that append (settleEffect), so that the checkpoint and the next
	// cycle's observation and decision overlap it. Until then the effect
	// is what the batch is, visible and not yet durable: a power loss
	// takes both, and recovery finds the durable intent and the world's
	// before-hash and makes the effect then, once.
	d.held = res.Events
	d.unsettled = fmt.Sprintf("cycle %d: effect %s", p.b.cycle, p.Effect.Key)
	d.failpoint("after-ledger-append")
	d.phase(PhaseCheckpoint)
	return d.advance(res, in)
}

// finishQuiet completes a cycle without an effect: both batches in one
// durable append.
func (d *Driver) finishQuiet(p *Pending, in Inputs) (Summary, error) {
	d.phase(PhaseFinish)
	res, err := Finish(p, Settlement{})
	if err != nil {
		return Summary{}, err
	}
	if err := d.awaitEffect(); err != nil {
		return Summary{}, err
	}
	d.phase(PhaseCycleAppend)
	if _, err := d.append(slices.Concat(p.Events, res.Events)); err != nil {
		return Summary{}, err
	}
	d.failpoint("after-decision")
	d.failpoint("after-ledger-append")
	d.phase(PhaseCheckpoint)
	return d.advance(res, in)
}

// advance makes a completed, durable cycle the driver's state and
// checkpoints when due.
func (d *Driver) advance(res *Result, in Inputs) (Summary, error) {
	d.state = res.State
	d.failures = 0
	d.noteConsumed(in)
	d.pending++
	if d.pending >= max(d.CheckpointEvery, 1) || res.Summary.LoopDisposition != state.Continue {
		if err := d.commit(); err != nil {
			return Summary{}, err
		}
	}
	sum := res.Summary
	d.lastSummary = &sum
	if sum.LoopDisposition == state.Faulted {
		return sum, ErrFaulted
	}
	return sum, nil
}

// providerFailed records a provider failure outside any cycle, leaves the
// run state as it was, and faults the run once failures pass the policy's
// limit.
func (d *Driver) providerFailed(cause error) error {
	if err := d.complete(); err != nil {
		return errors.Join(cause, err)
	}
	d.failures++
	body := map[string]any{"error": cause.Error(), "consecutive": d.failures}
	var pf *world.ProviderFault
	if errors.As(cause, &pf) {
		body["fault"] = pf
	}
	obj, _ := event.NewObject("pfail", body)
	now := state.FormatTime(d.Clock.Now())
	if _, err := d.append([]event.Event{{Type: event.ProviderFailed, RunID: d.state.Run.RunID,
		CycleSeq: d.state.Run.CycleSeq, At: now, Object: obj, Reasons: []string{"provider_failure"}}}); err != nil {
		return errors.Join(cause, err)
	}
	limit := d.state.Contract.Policy.Defaults().MaxProviderFailures
	d.notify("warn", "provider failed; the run state did not advance", map[string]any{"error": cause.Error(), "consecutive": d.failures, "limit": limit})
	if d.failures < limit {
		return cause
	}
	d.notify("error", "run faulted: provider failures reached the policy's limit (acr wake --signal manual_resume resumes it)",
		map[string]any{"consecutive": d.failures, "limit": limit})
	st, evs, err := Fault(d.state, d.Clock.Now(), []string{"provider_failures_exceeded", fmt.Sprintf("failures_%d", d.failures)}, cause.Error())
	if err != nil {
		return err
	}
	if _, err := d.append(evs); err != nil {
		return err
	}
	d.state = st
	if err := d.commit(); err != nil {
		return err
	}
	return fmt.Errorf("%w: %w", ErrFaulted, cause)
}
