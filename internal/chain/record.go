package chain

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// FileName is the name a history's damage is reported under: the ledger
// file of a state directory; a history kept elsewhere (a JetStream store)
// has the same bytes, and its offsets are those of the same file.
const FileName = "ledger/events.jsonl"

// DamageError locates damage in a history. It matches storage.ErrCorrupt.
type DamageError struct {
	Line   int64 // 1-based line number, 0 if unknown
	Offset int64 // byte offset of the damaged line
	Msg    string
}

func (e *DamageError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s line %d (byte %d): %s", FileName, e.Line, e.Offset, e.Msg)
	}
	return fmt.Sprintf("%s at byte %d: %s", FileName, e.Offset, e.Msg)
}

// Unwrap lets errors.Is(err, storage.ErrCorrupt) match.
func (e *DamageError) Unwrap() error { return storage.ErrCorrupt }

// Torn describes an uncommitted partial line at the end of a history.
type Torn struct {
	Offset int64 // where the partial line starts (the new end after repair)
	Length int64 // how many bytes it has
}

// DecodeRecord decodes one whole line that starts at byte start: framing,
// own hash, and its event strictly.
func DecodeRecord(buf []byte, start int64) (event.Record, error) {
	ln, err := ParseLine(buf)
	if err != nil {
		return event.Record{}, &DamageError{Offset: start, Msg: err.Error()}
	}
	ev, err := DecodeEvent(ln.Event)
	if err != nil {
		return event.Record{}, &DamageError{Offset: start, Msg: "event: " + err.Error()}
	}
	return event.Record{
		Seq: ln.Seq, Chain: ln.Chain, Hash: ln.Hash, Offset: start, Length: int64(len(buf)),
		Ref: codec.NewRef("evt", ln.Event), Event: ev,
	}, nil
}

// ReadRange returns the records between two byte offsets of r (both on
// line boundaries), checking framing, hashes, chain and seq continuity
// from from's seq and hash.
func ReadRange(r io.ReaderAt, from state.Frontier, to int64) ([]event.Record, error) {
	if to <= from.Offset {
		return nil, nil
	}
	buf := make([]byte, to-from.Offset)
	if _, err := r.ReadAt(buf, from.Offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	var recs []event.Record
	prev, seq, off := from.Hash, from.Seq, from.Offset
	for len(buf) > 0 {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			return nil, &DamageError{Offset: off, Msg: "range ends inside a line"}
		}
		rec, err := DecodeRecord(buf[:i+1], off)
		if err != nil {
			return nil, err
		}
		if rec.Seq != seq+1 || rec.Chain != prev {
			return nil, &DamageError{Offset: off, Msg: fmt.Sprintf("chain broken: want seq %d after %s", seq+1, prev)}
		}
		recs = append(recs, rec)
		prev, seq, off = rec.Hash, rec.Seq, off+rec.Length
		buf = buf[i+1:]
	}
	return recs, nil
}

// Scan calls fn for every committed record of a history read from r, in
// order, decoding each strictly and checking the chain as it goes. A torn
// last line is not reported (it was never committed); damage stops the
// scan with a *DamageError.
func Scan(r io.Reader, fn func(event.Record) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	front := state.GenesisFrontier()
	var line int64
	for {
		b, err := br.ReadBytes('\n')
		if errors.Is(err, io.EOF) {
			return nil // a partial last line was never committed
		}
		if err != nil {
			return fmt.Errorf("read ledger: %w", err)
		}
		line++
		rec, derr := DecodeRecord(b, front.Offset)
		if derr == nil && (rec.Seq != front.Seq+1 || rec.Chain != front.Hash) {
			derr = &DamageError{Offset: front.Offset, Msg: "chain broken"}
		}
		if derr != nil {
			var de *DamageError
			if errors.As(derr, &de) {
				de.Line = line
			}
			return derr
		}
		if err := fn(rec); err != nil {
			return err
		}
		front = state.Frontier{Seq: rec.Seq, Hash: rec.Hash, Offset: front.Offset + rec.Length}
	}
}

// Line is a committed line as ScanLines hands it out: its framing, own
// hash, chain link and seq are checked, its event is not decoded.
type Line struct {
	Seq    int64
	Chain  string // hash of the previous line
	Hash   string // hash of this line
	Offset int64  // byte offset of the line's first byte
	Length int64  // bytes including the newline
	// Type is the event's type, read without decoding the event.
	Type event.Kind
	// Event is the event's canonical bytes. They alias a read buffer and
	// are valid only until the callback returns.
	Event []byte
}

// Record decodes the line's event strictly, as Scan does.
func (l Line) Record() (event.Record, error) {
	ev, err := DecodeEvent(l.Event)
	if err != nil {
		return event.Record{}, &DamageError{Offset: l.Offset, Msg: "event: " + err.Error()}
	}
	return event.Record{Seq: l.Seq, Chain: l.Chain, Hash: l.Hash, Offset: l.Offset, Length: l.Length, Ref: codec.NewRef("evt", l.Event), Event: ev}, nil
}

// ScanLines calls fn for every committed line of a history read from r,
// in order, for readers of a long history that look at only some events,
// such as a report: most of a cycle's bytes are observations and
// intermediate objects such a reader never needs, and strict decoding of
// every event is most of the cost of Scan. The reader decides per line,
// by Type, whether to decode and how.
//
// Every line is checked as Scan checks it, except that its event is not
// decoded: damage anywhere (a flipped byte, a broken chain, a skipped
// seq) stops the scan with a *DamageError, but an event that is not
// canonical is only found by Line.Record or Verify.
//
// The type is read from the line's bytes (EventType); a line where that
// fails is decoded in full to learn its type. A torn last line is not
// reported (it was never committed). Memory stays constant in the length
// of the history.
func ScanLines(r io.Reader, fn func(Line) error) error {
	br := bufio.NewReaderSize(r, 1<<20)
	front := state.GenesisFrontier()
	var lineNo int64
	var long []byte // reused for lines longer than the read buffer
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			b = long
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("read ledger: %w", err)
		}
		lineNo++
		ln, perr := ParseLine(b)
		if perr == nil && (ln.Seq != front.Seq+1 || ln.Chain != front.Hash) {
			perr = fmt.Errorf("chain broken: line has seq %d chained to %s, expected seq %d chained to %s", ln.Seq, ln.Chain, front.Seq+1, front.Hash)
		}
		if perr != nil {
			return &DamageError{Line: lineNo, Offset: front.Offset, Msg: perr.Error()}
		}
		typ, ok := EventType(ln.Event)
		if !ok {
			ev, derr := DecodeEvent(ln.Event)
			if derr != nil {
				return &DamageError{Line: lineNo, Offset: front.Offset, Msg: "event: " + derr.Error()}
			}
			typ = ev.Type
		}
		if err := fn(Line{Seq: ln.Seq, Chain: ln.Chain, Hash: ln.Hash, Offset: front.Offset, Length: int64(len(b)), Type: typ, Event: ln.Event}); err != nil {
			return err
		}
		front = state.Frontier{Seq: ln.Seq, Hash: ln.Hash, Offset: front.Offset + int64(len(b))}
	}
}

// typeMember precedes the event type, the last member of a canonical event.
const typeMember = `"type":"`

// EventType reads the type of canonical event bytes without decoding
// them: canonical key order puts "type" last in an event, so the event
// ends with "type":"<name>"}. ok is false when the bytes do not end the
// way a canonical event does; the caller then decodes them in full.
func EventType(ev []byte) (event.Kind, bool) {
	if len(ev) < len(typeMember)+4 || ev[len(ev)-1] != '}' || ev[len(ev)-2] != '"' {
		return "", false
	}
	body := ev[:len(ev)-2]
	i := bytes.LastIndex(body, []byte(typeMember))
	if i < 1 || (body[i-1] != ',' && body[i-1] != '{') {
		return "", false
	}
	name := body[i+len(typeMember):]
	// A quote or backslash inside would be an escape sequence this
	// shortcut does not interpret.
	if len(name) == 0 || bytes.ContainsAny(name, `"\`) {
		return "", false
	}
	return event.Kind(name), true
}
