package sandbox

import (
	"context"
	"fmt"

	"github.com/acr-project/acr/internal/world"
)

// gate is what a Commit under way must wait for before the world first
// changes: see CommitWhen.
type gate struct {
	// ready is the caller's (see CommitWhen); nil once called.
	ready func() error
	// stage: mark StageBeforeActionCommit once ready returned, because
	// the file path reached that point while the intent could still be
	// in flight (see beforeCommit).
	stage bool
}

// CommitWhen is Commit for a caller whose intent is written and on its
// way to disk: ready returns once it is durable, or says why it cannot
// be. Commit first does what leaves the world as the world shows it: it
// reads and hashes the target, plans again, and writes and fsyncs the
// temporary file of an atomic replace, while the caller's fsync runs. It
// calls ready at the last moment before the world changes: before the
// rename, a directory made, a removal, a record in the idempotency table
// or a program started. So nothing the world shows is ever ahead of the
// intent, and the cycle waits for the two fsyncs together instead of one
// after the other. A temporary file left by a crash before ready holds
// no state, and the next Open sweeps it.
//
// If ready fails, the world is left as it was and the error is returned.
// Commit may return without calling ready (the effect was already there,
// or failed before the world changed): the caller waits for its own fsync
// before it records anything either way. With a nil ready it is Commit:
// the intent is durable already.
func (w *World) CommitWhen(ctx context.Context, key string, a world.Action, in world.Intent, ready func() error) (out world.Outcome, reused bool, err error) {
	h, err := keyHex(key)
	if err != nil {
		return world.Outcome{}, false, fmt.Errorf("commit: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if ready != nil {
		w.gate = &gate{ready: ready}
		defer func() { w.gate = nil }()
	}
	out, reused, err = w.commitIntent(ctx, key, h, a, in)
	if err != nil {
		return world.Outcome{}, false, fmt.Errorf("commit %s: %w", key, err)
	}
	return out, reused, nil
}

// proceed is called at the last moment before the world or the
// idempotency table changes: in a gated Commit it waits for the caller's
// ready (once), and marks StageBeforeActionCommit if the file path left
// that to it. Outside a gated Commit it does nothing.
func (w *World) proceed() error {
	g := w.gate
	if g == nil || g.ready == nil {
		return nil
	}
	ready := g.ready
	g.ready = nil
	if err := ready(); err != nil {
		return err
	}
	if g.stage {
		w.stage(StageBeforeActionCommit)
	}
	return nil
}

// beforeCommit marks the point of a file effect at which the intent must
// be durable and the world not changed yet. In a gated Commit the intent
// may still be in flight here, so the mark waits for proceed: crash tests
// that stop at it find the intent durable, as they do without a gate.
func (w *World) beforeCommit() {
	if w.gate != nil && w.gate.ready != nil {
		w.gate.stage = true
		return
	}
	w.stage(StageBeforeActionCommit)
}
