package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// Line is a committed ledger line as ScanLines hands it out: its framing,
// own hash, chain link and seq are checked, its event is not decoded.
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
	ev, err := decodeEvent(l.Event)
	if err != nil {
		return event.Record{}, &DamageError{Offset: l.Offset, Msg: "event: " + err.Error()}
	}
	return event.Record{Seq: l.Seq, Chain: l.Chain, Hash: l.Hash, Offset: l.Offset, Length: l.Length, Ref: codec.NewRef("evt", l.Event), Event: ev}, nil
}

// ScanLines calls fn for every committed line in order, for readers of a
// long history that look at only some events, such as a report: most of
// a cycle's bytes are observations and intermediate objects such a reader
// never needs, and strict decoding of every event is most of the cost of
// Scan. The reader decides per line, by Type, whether to decode and how.
//
// Every line is checked as Scan checks it, except that its event is not
// decoded: damage anywhere (a flipped byte, a broken chain, a skipped
// seq) stops the scan with a *DamageError, but an event that is not
// canonical is only found by Line.Record or acr ledger verify.
//
// The type is read from the line's bytes: canonical key order puts "type"
// last in an event, so the event ends with "type":"<name>"}. A line where
// that does not hold is decoded in full to learn its type. A torn last
// line is not reported (it was never committed). Memory stays constant in
// the length of the ledger.
func ScanLines(fsys disk.FS, fn func(Line) error) error {
	f, err := openLog(fsys, false)
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)
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
		ln, perr := parseLine(b)
		if perr == nil && (ln.seq != front.Seq+1 || ln.chain != front.Hash) {
			perr = fmt.Errorf("chain broken: line has seq %d chained to %s, expected seq %d chained to %s", ln.seq, ln.chain, front.Seq+1, front.Hash)
		}
		if perr != nil {
			return &DamageError{Line: lineNo, Offset: front.Offset, Msg: perr.Error()}
		}
		typ, ok := eventType(ln.event)
		if !ok {
			ev, derr := decodeEvent(ln.event)
			if derr != nil {
				return &DamageError{Line: lineNo, Offset: front.Offset, Msg: "event: " + derr.Error()}
			}
			typ = ev.Type
		}
		if err := fn(Line{Seq: ln.seq, Chain: ln.chain, Hash: ln.hash, Offset: front.Offset, Length: int64(len(b)), Type: typ, Event: ln.event}); err != nil {
			return err
		}
		front = state.Frontier{Seq: ln.seq, Hash: ln.hash, Offset: front.Offset + int64(len(b))}
	}
}

// typeMember precedes the event type, the last member of a canonical event.
const typeMember = `"type":"`

// eventType reads the type of canonical event bytes without decoding
// them. ok is false when the bytes do not end the way a canonical event
// does; the caller then decodes them in full.
func eventType(ev []byte) (event.Kind, bool) {
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
