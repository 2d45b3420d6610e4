package jsstore

import (
	"errors"
	"fmt"
	"time"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// Ledger is a run's ledger on <prefix>.ledger.<run> in the runs stream:
// one message per append (more only when its lines pass the server's
// payload limit), whose body is the lines the file ledger would write for
// it, byte for byte (line.go: the packed format, and the one-line messages
// of earlier releases, which it reads too). It implements storage.Ledger.
//
// Frontier.Offset is the stream sequence of the message that holds the
// record (0 for genesis), so a frontier finds its record with one direct
// get and After reads from that message on. Record.Offset is the stream
// sequence of its message too; Record.Length its line's length, as in a
// file.
//
// A Ledger is one writer's handle, not safe for concurrent appends. Every
// Append is guarded by the stream sequence of the last record the handle
// knows: if another writer appended since, nothing is stored and the
// error is storage.ErrConflict.
type Ledger struct {
	run      *Run
	front    state.Frontier
	poisoned bool
	// last is the ledger message at front.Offset as this handle read or
	// wrote it (empty at genesis): CheckFrontier of the frontier it holds,
	// which is what a run's open asks, reads nothing back.
	last jetstream.Record

	// Failpoint, when set, is called while an append's records are
	// staged on the server and before they are committed ("batch-staged").
	// Crash tests end the writer there.
	Failpoint func(stage string)
}

// CreateLedger opens a new run's ledger; it fails with storage.ErrExists
// if the run has records already. (JetStream has no empty ledger file: a
// ledger exists once it has a record.)
func (r *Run) CreateLedger() (*Ledger, error) {
	l, err := r.OpenLedger()
	if err != nil {
		return nil, err
	}
	if l.front.Seq != 0 {
		return nil, fmt.Errorf("create ledger of %s: %w", r.ID, storage.ErrExists)
	}
	return l, nil
}

// OpenLedger opens the run's ledger for appending: its frontier is read
// from the last record, and a ledger without records is at genesis.
func (r *Run) OpenLedger() (*Ledger, error) {
	l := &Ledger{run: r, front: state.GenesisFrontier()}
	last, err := r.s.blocks.Ledger.Last(r.ctx, r.ID)
	if errors.Is(err, jetstream.ErrNotFound) {
		return l, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open ledger of %s: %w", r.ID, err)
	}
	rec, err := lastRecord(r.s.pack, last)
	if err != nil {
		return nil, fmt.Errorf("open ledger of %s: last record (stream sequence %d): %w", r.ID, last.Seq, err)
	}
	l.front, l.last = state.Frontier{Seq: rec.Seq, Hash: rec.Hash, Offset: int64(last.Seq)}, last
	return l, nil
}

// Frontier implements storage.Ledger: the last record this handle knows
// (read at open, moved by its own appends).
func (l *Ledger) Frontier() state.Frontier { return l.front }

// Append implements storage.Ledger: the events become records in one
// atomic batch after the frontier, all or none. storage.ErrConflict
// means another writer appended first and nothing was stored;
// ErrUnavailable means the outcome is unknown, and the handle refuses
// further appends (storage.ErrPoisoned): reopen the run, which reads what
// was stored. The records' lines are packed into as few messages as the
// server's max_payload allows (one for any cycle's records); a batch
// holds at most 1000 messages, and a line must fit one (ErrTooLarge).
func (l *Ledger) Append(events []event.Event) ([]event.Record, error) {
	if l.poisoned {
		return nil, storage.ErrPoisoned
	}
	if len(events) == 0 {
		return nil, nil
	}
	lines, recs, err := encodeEvents(l.front, events)
	if err != nil {
		return nil, err
	}
	bodies, counts := packLines(lines, l.run.s.blocks.Ledger.RecordRoom())
	hdrs := linesHeaders(counts)
	for i, b := range bodies {
		var enc string
		if bodies[i], enc = l.run.s.pack.pack(b); enc != "" {
			hdrs[i].Set(hdrEncoding, enc)
		}
	}
	c, err := l.run.s.blocks.Ledger.CommitBatch(l.run.ctx, l.run.ID, jetstream.Frontier{Ledger: uint64(l.front.Offset)},
		jetstream.Batch{Records: bodies, RecordHeaders: hdrs, Failpoint: l.Failpoint})
	if errors.Is(err, jetstream.ErrConflict) {
		return nil, fmt.Errorf("append to ledger of %s: %w: %w", l.run.ID, storage.ErrConflict, err)
	}
	if err != nil {
		if !errors.Is(err, jetstream.ErrTooLarge) {
			l.poisoned = true
		}
		return nil, fmt.Errorf("append to ledger of %s: %w", l.run.ID, err)
	}
	i := 0
	for k, n := range counts {
		for range n {
			recs[i].Offset = int64(c.First) + int64(k)
			i++
		}
	}
	last := recs[len(recs)-1]
	l.front = state.Frontier{Seq: last.Seq, Hash: last.Hash, Offset: int64(c.Frontier.Ledger)}
	l.last = jetstream.Record{Seq: c.Frontier.Ledger, Header: hdrs[len(hdrs)-1], Data: bodies[len(bodies)-1]}
	return recs, nil
}

// CheckFrontier implements storage.Ledger: the message at stream
// sequence f.Offset must be this run's and hold f's seq with f's hash. A
// frontier past the end is storage.ErrBehind; a different record there
// storage.ErrCorrupt. The frontier of the message the handle holds (the
// ledger's end, where a run at rest is checkpointed) is checked without a
// request.
func (l *Ledger) CheckFrontier(f state.Frontier) error {
	if f.Seq == 0 {
		if f.Offset != 0 || f.Hash != state.GenesisHash {
			return fmt.Errorf("%w: checkpoint frontier is malformed", storage.ErrCorrupt)
		}
		return nil
	}
	// On a replicated stream a direct get may be answered by a replica
	// that has not applied the latest writes yet: a ledger that looks
	// behind the checkpoint is read again for a while before it is
	// called damaged.
	for wait := 10 * time.Millisecond; f.Seq > l.front.Seq || f.Offset > l.front.Offset; wait *= 2 {
		if wait > 2*time.Second {
			return fmt.Errorf("%w: checkpoint expects seq %d at stream sequence %d, ledger of %s ends at seq %d, stream sequence %d",
				storage.ErrBehind, f.Seq, f.Offset, l.run.ID, l.front.Seq, l.front.Offset)
		}
		time.Sleep(wait)
		again, err := l.run.OpenLedger()
		if err != nil {
			return err
		}
		l.front, l.last = again.front, again.last
	}
	if f.Offset <= 0 {
		return fmt.Errorf("%w: checkpoint frontier seq %d has no stream sequence", storage.ErrCorrupt, f.Seq)
	}
	m, err := l.message(uint64(f.Offset))
	if errors.Is(err, jetstream.ErrNotFound) {
		return fmt.Errorf("%w: checkpoint frontier seq %d: no record of %s at stream sequence %d", storage.ErrCorrupt, f.Seq, l.run.ID, f.Offset)
	}
	if err != nil {
		return fmt.Errorf("check frontier of %s: %w", l.run.ID, err)
	}
	rec, ok, err := recordIn(l.run.s.pack, m, f.Seq)
	if err != nil {
		return fmt.Errorf("check frontier of %s: stream sequence %d: %w", l.run.ID, f.Offset, err)
	}
	if !ok {
		return fmt.Errorf("%w: checkpoint frontier seq %d: the ledger message of %s at stream sequence %d does not hold it", storage.ErrCorrupt, f.Seq, l.run.ID, f.Offset)
	}
	if rec.Hash != f.Hash {
		return fmt.Errorf("%w: checkpoint frontier is seq %d hash %s, ledger of %s has seq %d hash %s at stream sequence %d",
			storage.ErrCorrupt, f.Seq, f.Hash, l.run.ID, rec.Seq, rec.Hash, f.Offset)
	}
	return nil
}

// message returns the run's ledger message at stream sequence seq: the
// one the handle holds if it is that one, else read.
func (l *Ledger) message(seq uint64) (jetstream.Record, error) {
	if seq == l.last.Seq && l.last.Data != nil {
		return l.last, nil
	}
	return l.run.s.blocks.Ledger.Get(l.run.ctx, l.run.ID, seq)
}

// Repair implements storage.Ledger: an atomic batch is stored whole or
// not at all, so there is never a partial record to cut.
func (l *Ledger) Repair() (*storage.Repair, error) { return nil, nil }

// After implements storage.Ledger: the records after from up to the
// handle's frontier, read from the message at from.Offset on (the rest
// of from's own message, then the messages after it), each line checked
// as the file ledger checks it and the chain checked from from's seq and
// hash.
func (l *Ledger) After(from state.Frontier) ([]event.Record, error) {
	if from.Seq > l.front.Seq || from.Offset > l.front.Offset {
		return nil, fmt.Errorf("read ledger of %s: %w: from seq %d, the ledger ends at seq %d", l.run.ID, storage.ErrBehind, from.Seq, l.front.Seq)
	}
	if from.Offset < 0 {
		return nil, fmt.Errorf("read ledger of %s: %w: negative stream sequence", l.run.ID, storage.ErrCorrupt)
	}
	if from.Seq == l.front.Seq {
		if from.Hash != l.front.Hash {
			return nil, fmt.Errorf("read ledger of %s: %w: seq %d has hash %s, not %s", l.run.ID, storage.ErrCorrupt, from.Seq, l.front.Hash, from.Hash)
		}
		return nil, nil
	}
	// The message at from.Offset holds from's record and maybe records
	// after it (one append is one message): read from it on.
	var (
		msgs  []jetstream.Record
		end   = uint64(l.front.Offset)
		after = uint64(max(from.Offset-1, 0))
	)
	errEnd := errors.New("end")
	err := l.run.s.blocks.Ledger.Read(l.run.ctx, l.run.ID, after, func(r jetstream.Record) error {
		if r.Seq > end {
			return errEnd
		}
		msgs = append(msgs, r)
		return nil
	})
	if err != nil && !errors.Is(err, errEnd) {
		return nil, fmt.Errorf("read ledger of %s: %w", l.run.ID, err)
	}
	recs, err := decodeMessages(l.run.s.pack, from, msgs)
	if err != nil {
		return nil, fmt.Errorf("read ledger of %s: %w", l.run.ID, err)
	}
	if len(recs) == 0 || recs[len(recs)-1].Seq != l.front.Seq || recs[len(recs)-1].Hash != l.front.Hash {
		return nil, fmt.Errorf("read ledger of %s: %w: the records after seq %d do not reach the frontier seq %d", l.run.ID, storage.ErrCorrupt, from.Seq, l.front.Seq)
	}
	return recs, nil
}
