package kernel

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/acr-project/acr/internal/codec"
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

// splitLedger is a ledger whose append can be made in two steps: Write
// puts a batch after the frontier, Sync makes everything written durable
// (ledger.Ledger). Between them the driver may run Sync on another
// goroutine while the world writes its own file, and nothing else is
// asked of the ledger until that Sync has returned.
type splitLedger interface {
	Write(events []event.Event) ([]event.Record, error)
	Sync() error
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
	Store     storage.Checkpoints
	Ledger    storage.Ledger
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

// Recovery is what opening a run found and did.
type Recovery struct {
	Recovered            bool   `json:"recovered"`
	Classification       string `json:"classification"`
	ActionsReused        int    `json:"actions_reused"`
	ActionsApplied       int    `json:"actions_applied"`
	LedgerRepaired       bool   `json:"ledger_repaired"`
	CyclesRolledForward  int    `json:"cycles_rolled_forward"`
	EventsAppended       int    `json:"events_appended"`
	CycleAbandoned       bool   `json:"cycle_abandoned"`
	ProviderFailures     int    `json:"provider_failures"`
	CheckpointCycle      int64  `json:"checkpoint_cycle"`
	RecoveredToCycle     int64  `json:"recovered_to_cycle"`
	UncertainEffect      bool   `json:"uncertain_effect"`
	LedgerEventsBeyondCP int    `json:"ledger_events_beyond_checkpoint"`
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

// Recovery returns what Open found.
func (d *Driver) Recovery() Recovery { return d.recovery }

func (d *Driver) failpoint(name string) {
	if d.Failpoint != nil {
		d.Failpoint(name)
	}
}

// Open loads the checkpoint and brings the run to a safe boundary: it
// repairs a torn ledger tail, checks the ledger against the checkpoint's
// frontier, and rolls forward any cycles the ledger has beyond the
// checkpoint by replaying their recorded inputs (never asking a provider
// again, never re-applying a committed effect). It is the recovery path of
// every step and run, and of `acr recover`.
func (d *Driver) Open(ctx context.Context) error {
	snap := d.Snapshot
	d.Snapshot = nil
	if snap == nil {
		s, err := d.Store.Load()
		if err != nil {
			return err
		}
		snap = &s
	}
	st, err := DecodeLight(snap.Files)
	if err != nil {
		return err
	}
	st.Operations = d.Operations
	d.state, d.manifest, d.files = st, snap.Manifest, snap.Files
	rec := Recovery{Classification: "clean", CheckpointCycle: st.Run.CycleSeq}
	d.recovery = rec

	// Check the checkpoint's frontier before changing anything: a ledger
	// that is behind it (or differs there) is refused untouched.
	if err := d.Ledger.CheckFrontier(snap.Manifest.LedgerFrontier); err != nil {
		return err
	}
	// Then repair a torn tail: nothing can be appended after it.
	torn, err := d.Ledger.Repair()
	if err != nil {
		return err
	}
	if torn != nil {
		rec.LedgerRepaired, rec.Recovered = true, true
	}
	recs, err := d.Ledger.After(snap.Manifest.LedgerFrontier)
	if err != nil {
		return err
	}
	rec.LedgerEventsBeyondCP = len(recs)
	needed := torn != nil || slices.ContainsFunc(recs, func(r event.Record) bool { return !r.Event.Type.OutOfBand() })
	if needed || len(recs) > 0 {
		if err := d.complete(); err != nil {
			return err
		}
	}
	if needed {
		reasons := []string{}
		if torn != nil {
			reasons = append(reasons, "torn_ledger_tail")
		}
		if len(recs) > 0 {
			reasons = append(reasons, "ledger_ahead_of_checkpoint")
		}
		if err := d.appendOOB(event.RecoveryStarted, nil, reasons); err != nil {
			return err
		}
	}
	if torn != nil {
		obj, _ := event.NewObject("torn", torn)
		if err := d.appendOOB(event.TailRepaired, obj, []string{"torn_last_line_truncated"}); err != nil {
			return err
		}
	}
	// Recovery finishes the cycle it finds open, and a stop request does
	// not cut that short either (see Step): a fix it carries out again, or
	// a readback, runs to the end.
	if err := d.rollForward(context.WithoutCancel(ctx), recs, &rec); err != nil {
		return err
	}
	rec.RecoveredToCycle = d.state.Run.CycleSeq
	d.recovery = rec
	if !needed {
		return nil
	}
	if rec.Classification == "clean" && rec.LedgerRepaired {
		rec.Classification = "torn_tail_repaired"
	}
	d.recovery = rec
	obj, err := event.NewObject("recovery", rec)
	if err != nil {
		return err
	}
	if err := d.appendOOB(event.RecoveryCompleted, obj, []string{rec.Classification}); err != nil {
		return err
	}
	level := "info"
	if rec.UncertainEffect {
		level = "warn"
	}
	d.notify(level, "recovered an interrupted run", map[string]any{"classification": rec.Classification,
		"checkpoint_cycle": rec.CheckpointCycle, "recovered_to_cycle": rec.RecoveredToCycle, "cycles_rolled_forward": rec.CyclesRolledForward,
		"actions_applied": rec.ActionsApplied, "actions_reused": rec.ActionsReused, "ledger_repaired": rec.LedgerRepaired,
		"uncertain_effect": rec.UncertainEffect})
	return d.commit()
}

// rollForward replays the ledger records beyond the checkpoint.
func (d *Driver) rollForward(ctx context.Context, recs []event.Record, rec *Recovery) error {
	var group []event.Record
	flush := func(last bool) error {
		if len(group) == 0 {
			return nil
		}
		g := group
		group = nil
		return d.replayCycle(ctx, g, last, rec)
	}
	for i, r := range recs {
		if r.Event.Type.OutOfBand() {
			if r.Event.Type == event.ProviderFailed {
				d.failures++
			}
			if r.Event.Type == event.NotificationSent {
				d.applyNotified(r)
			}
			if len(group) > 0 {
				// Inside a cycle (an intent, a recovery note): replay skips
				// it when matching, but recovery reads the intent.
				group = append(group, r)
			}
			continue
		}
		if r.Event.Type == event.RunFaulted && r.Event.CycleSeq == d.state.Run.CycleSeq {
			// A fault recorded outside a cycle (Fault) whose checkpoint was
			// not written: apply it again.
			st, _, err := Fault(d.state, parseAt(r.Event.At), r.Event.Reasons, FaultCause(r.Event))
			if err != nil {
				return err
			}
			d.state = st
			rec.Recovered = true
			continue
		}
		if r.Event.Type.CheckpointRecord() && r.Event.CycleSeq == d.state.Run.CycleSeq && len(group) == 0 {
			continue // the fault's checkpoint record
		}
		if r.Event.Type == event.CycleStarted && len(group) > 0 {
			if err := flush(false); err != nil {
				return err
			}
		}
		group = append(group, r)
		if r.Event.Type == event.CycleCompleted {
			if err := flush(i == len(recs)-1); err != nil {
				return err
			}
		}
	}
	rec.ProviderFailures = d.failures
	return flush(true)
}

func parseAt(s string) time.Time {
	t, _ := state.ParseTime(s)
	return t
}

// replayCycle re-derives one recorded cycle from its recorded inputs and
// checks that the derivation reproduces the recorded events. A complete
// cycle just advances the state; an interrupted one is finished: missing
// events are appended, and the effect is looked up by its idempotency key
// (reused if it committed, applied if it never ran).
func (d *Driver) replayCycle(ctx context.Context, recs []event.Record, last bool, rec *Recovery) error {
	var evs []event.Record
	for _, r := range recs {
		if !r.Event.Type.OutOfBand() {
			evs = append(evs, r)
		}
	}
	rec.Recovered = true
	r, err := rederive(d.state, evs, recs)
	var div *Divergence
	switch {
	case errors.Is(err, errUnrecorded):
		if !last {
			return &ReplayError{Seq: evs[0].Seq, CycleSeq: evs[0].Event.CycleSeq, Msg: "an interrupted cycle is followed by more history: " + err.Error()}
		}
		// The cycle's first batch never became durable (its inputs, or the
		// proposer's reply): no decision was, so no effect can have run.
		// Abandon it; the next cycle derives afresh.
		rec.CycleAbandoned = true
		rec.Classification = "interrupted_before_inputs_durable"
		return d.appendOOB(event.CycleAbandoned, nil, []string{"first_batch_incomplete"})
	case errors.As(err, &div):
		return &ReplayError{Seq: div.Seq, CycleSeq: div.Cycle, Msg: div.Error()}
	case err != nil:
		return &ReplayError{Seq: evs[0].Seq, CycleSeq: evs[0].Event.CycleSeq, Msg: err.Error()}
	}
	in, p, n := r.in, r.p, r.matched
	if n < len(p.Events) {
		// Part of the first batch is missing: it was never fsynced, so the
		// effect did not run. Finish the batch from the recorded inputs.
		if _, err := d.appendRecovered(p.Events[n:], rec); err != nil {
			return err
		}
		rec.Classification = "interrupted_in_first_batch"
	}
	rest, st := r.rest, r.st
	if p.Effect != nil && st.Blocked == "" && st.Outcome == nil {
		in, blocked, err := d.recoveredIntent(ctx, recs, p, rec)
		if err != nil {
			return err
		}
		st.Blocked = blocked
		if in != nil {
			st.Rollback = in.Rollback
		}
		if blocked == "" {
			out, reused, err := d.commitEffect(ctx, p, in)
			switch {
			case err != nil && d.UncertainErr != nil && errors.Is(err, d.UncertainErr):
				st.Uncertain, rec.UncertainEffect = true, true
				rec.Classification = "interrupted_effect_uncertain"
				if st.Uncertainty == nil {
					st.Uncertainty = d.uncertainty(err, in)
				}
			case err != nil:
				return fmt.Errorf("recover cycle %d: effect %s: %w", p.b.cycle, p.Effect.Key, err)
			case reused:
				st.Outcome = &out
				rec.ActionsReused++
				rec.Classification = "interrupted_after_action_commit"
			default:
				st.Outcome = &out
				rec.ActionsApplied++
				rec.Classification = "interrupted_before_action_commit"
			}
		}
	}
	if st.Outcome != nil && st.Readback == nil {
		rb, err := d.World.Readback(ctx, p.Effect.Action, *st.Outcome)
		if err != nil {
			return fmt.Errorf("recover cycle %d: readback %s: %w", p.b.cycle, st.Outcome.Target, err)
		}
		st.Readback = &rb
	}
	if st.Outcome != nil && st.At.IsZero() {
		// Learned now: the outcome was not recorded before the crash.
		st.At = d.Clock.Now()
	}
	if err := d.World.Durable(); err != nil {
		return fmt.Errorf("recover cycle %d: %w", p.b.cycle, err)
	}
	res, err := Finish(p, st)
	if err != nil {
		return &ReplayError{Seq: evs[0].Seq, CycleSeq: evs[0].Event.CycleSeq, Msg: err.Error()}
	}
	if div := compare(rest, res.Events); div != nil {
		return &ReplayError{Seq: div.Seq, CycleSeq: div.Cycle, Msg: div.Error()}
	}
	m := min(len(rest), len(res.Events))
	if m < len(rest) {
		return &ReplayError{Seq: rest[m].Seq, CycleSeq: rest[m].Event.CycleSeq, Msg: "ledger has events the replay does not produce"}
	}
	if m < len(res.Events) {
		if _, err := d.appendRecovered(res.Events[m:], rec); err != nil {
			return err
		}
		if rec.Classification == "clean" || rec.Classification == "" {
			rec.Classification = "interrupted_after_first_batch"
		}
	} else if rec.Classification == "clean" {
		rec.Classification = "ledger_ahead_rolled_forward"
	}
	rec.CyclesRolledForward++
	d.state = res.State
	d.noteConsumed(in)
	return nil
}

// recoveredIntent returns the intent an interrupted cycle made durable. If
// the crash came before it was (so the effect cannot have run), the
// controls are checked again and a fresh intent, or the missing control,
// is recorded now.
func (d *Driver) recoveredIntent(ctx context.Context, recs []event.Record, p *Pending, rec *Recovery) (*world.Intent, string, error) {
	if in, ok := recordedIntent(recs, p.Effect.Key); ok {
		return &in, "", nil
	}
	in, prior, refused, err := d.prepare(ctx, p)
	if err != nil {
		return nil, "", fmt.Errorf("recover %w", err)
	}
	if prior != nil {
		return nil, "", nil // commitEffect finds the recorded outcome
	}
	ev, blocked, err := d.effectEvent(p, in, refused)
	if err != nil {
		return nil, "", err
	}
	if _, err := d.appendRecovered([]event.Event{ev}, rec); err != nil {
		return nil, "", err
	}
	return &in, blocked, nil
}

// commitEffect carries out the effect at most once (Commit finds an
// outcome already recorded for the key and reuses it).
func (d *Driver) commitEffect(ctx context.Context, p *Pending, in *world.Intent) (world.Outcome, bool, error) {
	if in == nil {
		i, prior, refused, err := d.prepare(ctx, p)
		if err != nil {
			return world.Outcome{}, false, err
		}
		if refused != "" {
			return world.Outcome{}, false, fmt.Errorf("effect %s: its target is refused by the world now", p.Effect.Key)
		}
		if prior != nil {
			return *prior, true, nil
		}
		in = &i
	}
	return d.World.Commit(ctx, p.Effect.Key, p.Effect.Action, *in)
}

// prepare asks the world for an effect's intent. A target the world
// refuses to touch (a symlink, a special file, a path its confinement
// keeps out) is not a machine error but an answer: the effect is blocked
// with that reason, recorded, and the item set aside.
func (d *Driver) prepare(ctx context.Context, p *Pending) (world.Intent, *world.Outcome, string, error) {
	in, prior, err := d.World.Prepare(ctx, p.Effect.Key, p.Effect.Action)
	if err != nil {
		if d.RefusedErr != nil && errors.Is(err, d.RefusedErr) {
			return world.Intent{}, nil, "target_refused", nil
		}
		return world.Intent{}, nil, "", fmt.Errorf("cycle %d: prepare %s: %w", p.b.cycle, p.Effect.Key, err)
	}
	if d.state.Operations.Of(p.Effect.Action.Operation).Command {
		in.RunID, in.CycleSeq = d.state.Run.RunID, p.b.cycle
	}
	return in, prior, "", nil
}

// effectEvent checks the controls for an effect and returns the event to
// append with the cycle's first batch: the intent when every control is in
// place, else the missing control (or the refusal the world gave).
func (d *Driver) effectEvent(p *Pending, in world.Intent, refused string) (event.Event, string, error) {
	why := refused
	if why == "" {
		why = Controls(p, &in, true, d.Clock.Now())
	}
	if why != "" {
		ev := event.Event{Type: event.ActionBlocked, RunID: d.state.Run.RunID, CycleSeq: p.b.cycle, At: p.b.at,
			Refs: map[string]codec.Ref{"action": p.Effect.ActionRef}, Reasons: []string{why}}
		return ev, why, nil
	}
	ev, err := d.intentEvent(p.b.cycle, p.b.at, in)
	return ev, "", err
}

// recordedSettlement reads back what a recorded cycle learned about its
// effect: the missing control or the intent's bundle from the out-of-band
// records, the outcome and readback from the cycle's own events.
func recordedSettlement(all, rest []event.Record, p *Pending) Settlement {
	var st Settlement
	if p.Effect == nil {
		return st
	}
	for _, r := range all {
		if r.Event.Type == event.ActionBlocked && len(r.Event.Reasons) > 0 {
			st.Blocked = r.Event.Reasons[0]
		}
	}
	if in, ok := recordedIntent(all, p.Effect.Key); ok {
		st.Rollback = in.Rollback
	}
	if o, at, ok := recordedOutcome(rest); ok {
		st.Outcome, st.At = &o, at
	}
	st.Uncertainty = recordedIncident(rest)
	for _, r := range rest {
		if r.Event.Type == event.ReadbackRecorded && r.Event.Object != nil {
			var rb world.Readback
			if r.Event.Object.Decode(&rb) == nil {
				st.Readback = &rb
			}
		}
	}
	return st
}

// recordedOutcome returns the outcome a cycle recorded and when it was
// recorded.
func recordedOutcome(recs []event.Record) (world.Outcome, time.Time, bool) {
	for _, r := range recs {
		if (r.Event.Type == event.ActionCommitted || r.Event.Type == event.ActionNotApplied) && r.Event.Object != nil {
			var o world.Outcome
			if r.Event.Object.Decode(&o) == nil {
				return o, parseAt(r.Event.At), true
			}
		}
	}
	return world.Outcome{}, time.Time{}, false
}

// appendRecovered appends the missing events of an interrupted cycle.
func (d *Driver) appendRecovered(evs []event.Event, rec *Recovery) ([]event.Record, error) {
	recs, err := d.append(evs)
	if err != nil {
		return nil, err
	}
	rec.EventsAppended += len(evs)
	return recs, nil
}

// appendOOB appends an out-of-band event: one that records what the driver
// did (recovery, repair, a provider failure), not what a cycle did.
func (d *Driver) appendOOB(typ event.Kind, obj *event.Object, reasons []string) error {
	at := ""
	if d.Clock != nil {
		at = state.FormatTime(d.Clock.Now())
	}
	_, err := d.append([]event.Event{{Type: typ, RunID: d.state.Run.RunID, CycleSeq: d.state.Run.CycleSeq, At: at, Object: obj, Reasons: reasons}})
	return err
}

// commit makes the ledger durable, writes the directory checkpoint (whose
// frontier must never name a record a power loss could take) and removes
// consumed inbox files.
func (d *Driver) commit() error {
	if d.broken != nil {
		return fmt.Errorf("%w: %w", ErrStopped, d.broken)
	}
	if err := d.complete(); err != nil {
		return err
	}
	if err := d.sync(); err != nil {
		return err
	}
	files, err := d.state.Encode()
	if err != nil {
		return err
	}
	m, err := d.Store.Commit(storage.Commit{Expect: d.manifest.Generation, RunID: d.state.Run.RunID, CycleSeq: d.state.Run.CycleSeq, Revision: d.Revision,
		Frontier: d.Ledger.Frontier(), Files: files})
	if err != nil {
		return d.stop(err)
	}
	d.manifest, d.pending = m, 0
	d.failpoint("after-checkpoint")
	if err := d.seal(min(d.SealBytes, math.MaxInt64/32) * 32); err != nil {
		return err
	}
	if d.Inbox != nil && len(d.consumed) > 0 {
		if err := d.Inbox.Consumed(d.consumed); err != nil {
			return err
		}
		d.consumed = nil
	}
	return nil
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

// decideAndCommit makes the decision batch durable and carries out the
// effect its intent describes; commitErr is the world's error, err the
// ledger's. Where the ledger and the world allow it, their fsyncs run
// together: the batch is written and its fsync starts on another
// goroutine while the world reads the target and writes and fsyncs the
// temporary file of its atomic replace. The world changes only once the
// ledger's fsync has returned (CommitWhen's ready), so the effect is
// never ahead of its intent, and the cycle waits for the two fsyncs
// together instead of one after the other.
func (d *Driver) decideAndCommit(ctx context.Context, batch []event.Event, eff *Effect, in world.Intent) (out world.Outcome, commitErr, err error) {
	led, lok := d.Ledger.(splitLedger)
	gw, wok := d.World.(gatedWorld)
	if !lok || !wok {
		if _, err := d.append(batch); err != nil {
			return world.Outcome{}, nil, err
		}
		d.failpoint("after-decision")
		d.phase(PhaseEffect)
		out, _, commitErr = d.World.Commit(ctx, eff.Key, eff.Action, in)
		return out, commitErr, nil
	}
	if err := d.settleEffect(); err != nil {
		return world.Outcome{}, nil, err
	}
	if d.held != nil {
		batch = slices.Concat(d.held, batch)
		d.held = nil
	}
	if _, err := led.Write(batch); err != nil {
		return world.Outcome{}, nil, err
	}
	wait := syncAhead(led.Sync)
	d.phase(PhaseEffect)
	durable := false
	ready := func() error {
		if err := wait(); err != nil {
			return err
		}
		durable = true
		d.failpoint("after-decision")
		return nil
	}
	out, _, commitErr = gw.CommitWhen(ctx, eff.Key, eff.Action, in, ready)
	if err := wait(); err != nil {
		return world.Outcome{}, nil, err
	}
	if !durable {
		// The world did not change, so it did not wait for the intent.
		d.failpoint("after-decision")
	}
	return out, commitErr, nil
}

// syncAhead runs sync on another goroutine and returns a function that
// waits for its result (as often as it is called). The caller must not
// touch what sync owns until the first wait has returned.
func syncAhead(sync func() error) (wait func() error) {
	done := make(chan struct{})
	var err error
	go func() {
		defer close(done)
		err = sync()
	}()
	return func() error {
		<-done
		return err
	}
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

// intentEvent records an effect's intent in the ledger.
func (d *Driver) intentEvent(cycle int64, at string, in world.Intent) (event.Event, error) {
	obj, err := event.NewObject("intent", in)
	if err != nil {
		return event.Event{}, err
	}
	return event.Event{Type: event.ActionIntent, RunID: d.state.Run.RunID, CycleSeq: cycle, At: at, Object: obj,
		Reasons: []string{"intent_before_effect"}}, nil
}

// recordedIntent finds the intent a cycle recorded for its effect.
func recordedIntent(recs []event.Record, key string) (world.Intent, bool) {
	for _, r := range recs {
		if r.Event.Type == event.ActionIntent && r.Event.Object != nil {
			var in world.Intent
			if r.Event.Object.Decode(&in) == nil && in.Key == key {
				return in, true
			}
		}
	}
	return world.Intent{}, false
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

// RunReport summarises a bounded run. It holds counts, not the cycles
// themselves: a run of a million cycles must not keep a million summaries in
// memory, so each summary goes to the caller's callback as it happens.
type RunReport struct {
	CyclesExecuted    int            `json:"cycles_executed"`
	FinalDisposition  string         `json:"final_disposition"`
	DispositionCounts map[string]int `json:"disposition_counts"`
	ReasonCodes       []string       `json:"reason_codes"`
}

// Run steps up to max cycles. It stops early when a cycle leaves the run
// anywhere but CONTINUE and nothing else is already eligible (a matching
// wake that is already pending lets it go on). It always leaves a
// checkpoint of the final state behind.
//
// Cancelling ctx (SIGINT or SIGTERM in the CLI) ends the run with the
// reason "interrupted" and a checkpoint of the last finished cycle. A
// check or a proposer call in progress is stopped (its process group
// killed) and its cycle is not written: it starts again next time. Once
// a cycle has recorded its decision, it runs to the end: its effect and
// readback are not cut short, so a cycle is never cut in half by a
// signal.
func (d *Driver) Run(ctx context.Context, maxCycles int, each func(Summary)) (RunReport, error) {
	rep := RunReport{DispositionCounts: map[string]int{}}
	var err error
	for rep.CyclesExecuted < maxCycles {
		if ctx.Err() != nil {
			rep.ReasonCodes = []string{"interrupted"}
			break
		}
		var sum Summary
		spec := d.state.Run.EnvironmentSpecRef
		sum, err = d.Step(ctx)
		if errors.Is(err, ErrInterrupted) {
			rep.ReasonCodes, err = []string{"interrupted"}, nil
			break
		}
		if err != nil || !sum.Executed {
			if !sum.Executed && err == nil {
				rep.ReasonCodes = sum.ReasonCodes
			}
			break
		}
		rep.CyclesExecuted++
		rep.DispositionCounts[sum.LoopDisposition.String()]++
		if each != nil {
			each(sum)
		}
		if sum.LoopDisposition.Terminal() {
			break
		}
		if d.state.Run.EnvironmentSpecRef != spec {
			// An accepted amendment changed the environment: the world
			// was opened with the old one (its checks), so the invocation
			// ends here and the next opens it with the new one.
			rep.ReasonCodes = []string{"environment_amended"}
			break
		}
	}
	if rep.CyclesExecuted == maxCycles && rep.ReasonCodes == nil {
		rep.ReasonCodes = []string{"max_cycles_reached"}
	}
	rep.FinalDisposition = d.state.Run.LoopDisposition.String()
	if cerr := d.Close(); cerr != nil && err == nil {
		err = cerr
	}
	return rep, err
}

// Close makes every written batch durable and writes any checkpoint still
// owed (cycles run since the last one). A stopped driver (see broken)
// writes nothing: the error that stopped it was returned when it
// happened, and the next Open recovers what was stored.
func (d *Driver) Close() error {
	if d.broken != nil {
		return nil
	}
	if d.pending > 0 {
		if err := d.commit(); err != nil {
			return err
		}
		return d.seal(d.SealBytes)
	}
	return d.sync()
}

// append makes evs durable in the ledger, after the held batch if there
// is one: both in one write and one fsync (one atomic batch on a server).
func (d *Driver) append(evs []event.Event) ([]event.Record, error) {
	if d.broken != nil {
		return nil, fmt.Errorf("%w: %w", ErrStopped, d.broken)
	}
	if err := d.settleEffect(); err != nil {
		return nil, d.stop(err)
	}
	held := d.held
	if held == nil {
		recs, err := d.Ledger.Append(evs)
		return recs, d.stop(err)
	}
	d.held = nil
	recs, err := d.Ledger.Append(slices.Concat(held, evs))
	if err != nil {
		return nil, d.stop(err)
	}
	return recs[len(held):], nil
}

// stop stops the driver on a failed write (see broken) and returns err.
func (d *Driver) stop(err error) error {
	if err != nil && d.broken == nil {
		d.broken = err
	}
	return err
}

// awaitEffect is settleEffect as a step of its own (PhaseEffectDurable),
// which a cycle takes before its ledger write when the cycle before it
// had an effect.
func (d *Driver) awaitEffect() error {
	if d.unsettled == "" {
		return nil
	}
	d.phase(PhaseEffectDurable)
	return d.settleEffect()
}

// settleEffect waits until the last acting cycle's effect is durable in
// the world. Everything that writes the ledger calls it first, since the
// held batch records the effect's outcome.
func (d *Driver) settleEffect() error {
	if d.unsettled == "" {
		return nil
	}
	if err := d.World.Durable(); err != nil {
		return fmt.Errorf("%s: %w", d.unsettled, err)
	}
	d.unsettled = ""
	return nil
}

// sync makes everything the driver recorded durable in the ledger: every
// other batch was appended durably already, so that is the held batch.
func (d *Driver) sync() error {
	if err := d.settleEffect(); err != nil {
		return err
	}
	if d.held == nil {
		return nil
	}
	_, err := d.append(nil)
	return err
}

// sealer is a ledger that can move committed history into compressed
// segments once its uncompressed part holds minBytes.
type sealer interface {
	Seal(minBytes int64) error
}

// seal compresses the ledger's history when it is long enough. It runs
// after a checkpoint: sealing changes where the ledger's bytes are kept,
// never what they are, so no checkpoint depends on it.
func (d *Driver) seal(minBytes int64) error {
	s, ok := d.Ledger.(sealer)
	if !ok || d.SealBytes <= 0 {
		return nil
	}
	return s.Seal(minBytes)
}
