package kernel

// A bounded run of cycles, and what makes its records durable: appends,
// the held batch, checkpoints and sealing.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/storage"
)

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
	joint := d.Joint != nil && d.held != nil
	if joint {
		// The held batch goes with the checkpoint, in one write.
		if err := d.settleEffect(); err != nil {
			return d.stop(err)
		}
	} else if err := d.sync(); err != nil {
		return err
	}
	files, err := d.state.Encode()
	if err != nil {
		return err
	}
	c := storage.Commit{Expect: d.manifest.Generation, RunID: d.state.Run.RunID, CycleSeq: d.state.Run.CycleSeq, Revision: d.Revision, Files: files}
	var m storage.Manifest
	if joint {
		held := d.held
		d.held = nil
		m, err = d.Joint.AppendAndCommit(held, c)
	} else {
		c.Frontier = d.Ledger.Frontier()
		m, err = d.Store.Commit(c)
	}
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

// seal compresses the ledger's history when it is long enough. It runs
// after a checkpoint: sealing changes where the ledger's bytes are kept,
// never what they are, so no checkpoint depends on it.
func (d *Driver) seal(minBytes int64) error {
	if d.Sealer == nil || d.SealBytes <= 0 {
		return nil
	}
	return d.Sealer.Seal(minBytes)
}
