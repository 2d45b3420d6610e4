package jsstore

import (
	"errors"
	"fmt"

	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// History is a run's ledger as its readers see it (audit, report, acr
// log, acr replay --verify, acr ledger verify): the same methods as the
// file ledger's reader, over the same line format (chain.Memory), so
// that they produce the same output on both backends.
//
// A History is a copy of the ledger as it was when it was read: its
// messages, whose bodies are the file ledger's lines byte for byte (one
// or more whole lines each, line.go), read by
// batched direct gets and held in memory in the file ledger's layout. Its
// readers then check framing, hashes and chain exactly as they do for a
// file. Memory is the ledger's size; a reader that streams the stream
// page by page is the next step when runs grow long.
//
// Byte offsets in what it reports (a damaged line's offset, a record's
// Offset) are offsets in that copy, except Verify's frontier, whose
// Offset is the stream sequence as everywhere else in this package.
type History struct {
	*chain.Memory
	run *Run
	// endOf maps a ledger message's stream sequence to the byte offset
	// just after its last line in the copy, and seqAt back. A frontier's
	// record is the last of its message (every append ends one).
	endOf map[int64]int64
	seqAt map[int64]int64
	size  int64
}

// History reads the run's whole ledger for a reader. A run without
// records has an empty history (storage.ErrNoRun is for checkpoints).
func (r *Run) History() (*History, error) {
	var buf []byte
	h := &History{run: r, endOf: map[int64]int64{0: 0}, seqAt: map[int64]int64{0: 0}}
	err := r.s.blocks.Ledger.Read(r.ctx, r.ID, 0, func(rec jetstream.Record) error {
		lines, err := messageLines(r.s.pack, rec)
		if err != nil {
			return err
		}
		for _, l := range lines {
			buf = append(buf, l...)
		}
		h.endOf[int64(rec.Seq)] = int64(len(buf))
		h.seqAt[int64(len(buf))] = int64(rec.Seq)
		return nil
	})
	if err != nil && !errors.Is(err, jetstream.ErrNotFound) {
		return nil, fmt.Errorf("read ledger of %s: %w", r.ID, err)
	}
	h.Memory, h.size = chain.NewMemory(buf), int64(len(buf))
	return h, nil
}

// Expect returns the committed checkpoint's ledger frontier in the terms
// of this copy (its Offset a byte offset), for Verify; nil when the run
// has no checkpoint.
func (h *History) Expect() (*state.Frontier, error) {
	snap, err := h.run.Checkpoints().Load()
	if errors.Is(err, storage.ErrNoRun) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	f := snap.Manifest.LedgerFrontier
	end, ok := h.endOf[f.Offset]
	if !ok {
		end = h.size + 1 // not in the ledger: Verify reports it behind
	}
	f.Offset = end
	return &f, nil
}

// Verify walks the whole chain of the copy (see chain.Verify); the
// report's frontier Offset is the last record's stream sequence.
func (h *History) Verify(expect *state.Frontier) (chain.Report, error) {
	rep, err := h.Memory.Verify(expect)
	if seq, ok := h.seqAt[rep.Frontier.Offset]; ok {
		rep.Frontier.Offset = seq
	}
	return rep, err
}
