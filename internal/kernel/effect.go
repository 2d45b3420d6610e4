package kernel

// An effect: its intent is made durable with the decision, then the world
// carries it out (overlapping the two fsyncs where both sides allow it).

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/world"
)

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
	if d.state.Operations.Of(p.Effect.Action.Operation).Command || in.Git != nil {
		in.RunID, in.CycleSeq = d.state.Run.RunID, p.b.cycle
	}
	if p.Effect.Approved != nil && in.Git != nil {
		// The tree the person approved goes with the intent, durable
		// before the effect: the world commits it or nothing.
		in.Approved = p.Effect.Approved
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
	led := d.Split
	gw, wok := d.World.(gatedWorld)
	if led == nil || !wok {
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
