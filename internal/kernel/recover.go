package kernel

// Opening a run: the checkpoint is loaded, the ledger checked against it,
// and a cycle the last invocation left open is finished (rolled forward)
// from what its ledger and its world say, never carried out twice.

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

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

// Recovery returns what Open found.
func (d *Driver) Recovery() Recovery { return d.recovery }

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
