package ledger

import (
	"bufio"
	"errors"
	"fmt"
	"io"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/state"
)

// Report is the result of walking the whole ledger.
type Report struct {
	OK       bool           `json:"ok"`
	Events   int64          `json:"events"`
	Frontier state.Frontier `json:"frontier"`
	// Torn is set when the file ends in an uncommitted partial line. That is
	// not damage (it is what a crash mid-append leaves), so OK stays true;
	// the next run repairs it.
	Torn *Torn `json:"torn,omitempty"`
	// Damage is the first damaged line, when OK is false.
	Damage *DamageError `json:"-"`
}

// Verify walks the whole chain: framing, each line's own hash, the chain
// link to the previous line, seq continuity and, for every event, strict
// canonical decoding and object refs. It stops at the first damaged line.
// When expect is set (the checkpoint's frontier), the line it names must be
// there with the same seq and hash. The returned error is for I/O problems
// only; damage is in the Report.
func Verify(fsys disk.FS, expect *state.Frontier) (Report, error) {
	f, err := fsys.Open(FileName)
	if err != nil {
		return Report{}, fmt.Errorf("open ledger: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return Report{}, fmt.Errorf("open ledger: %w", err)
	}
	rep, err := verifyStream(io.NewSectionReader(f, 0, size), expect)
	if err == nil && rep.OK && expect != nil && (expect.Seq > rep.Frontier.Seq || expect.Offset > rep.Frontier.Offset) {
		rep.OK = false
		rep.Damage = &DamageError{Offset: rep.Frontier.Offset, Msg: fmt.Sprintf(
			"ledger ends at seq %d but the checkpoint expects seq %d: history is missing (%v)", rep.Frontier.Seq, expect.Seq, ErrBehind)}
	}
	return rep, err
}

func verifyStream(r io.Reader, expect *state.Frontier) (Report, error) {
	rep := Report{OK: true, Frontier: state.GenesisFrontier()}
	br := bufio.NewReaderSize(r, 1<<20)
	var lineNo int64
	for {
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: collect it whole.
			full := append([]byte(nil), b...)
			for errors.Is(err, bufio.ErrBufferFull) {
				b, err = br.ReadSlice('\n')
				full = append(full, b...)
			}
			b = full
		}
		if len(b) > 0 && errors.Is(err, io.EOF) {
			rep.Torn = &Torn{Offset: rep.Frontier.Offset, Length: int64(len(b))}
			return rep, nil
		}
		if errors.Is(err, io.EOF) {
			return rep, nil
		}
		if err != nil {
			return rep, fmt.Errorf("read ledger: %w", err)
		}
		lineNo++
		ln, perr := parseLine(b)
		if perr == nil && (ln.seq != rep.Frontier.Seq+1 || ln.chain != rep.Frontier.Hash) {
			perr = fmt.Errorf("chain broken: line has seq %d chained to %s, expected seq %d chained to %s",
				ln.seq, ln.chain, rep.Frontier.Seq+1, rep.Frontier.Hash)
		}
		if perr == nil {
			_, perr = decodeEvent(ln.event)
		}
		if perr == nil && expect != nil && ln.seq == expect.Seq &&
			(ln.hash != expect.Hash || rep.Frontier.Offset+int64(len(b)) != expect.Offset) {
			perr = fmt.Errorf("the checkpoint names this line as its frontier with hash %s at byte %d; the line differs", expect.Hash, expect.Offset)
		}
		if perr != nil {
			rep.OK = false
			rep.Damage = &DamageError{Line: lineNo, Offset: rep.Frontier.Offset, Msg: perr.Error()}
			return rep, nil
		}
		rep.Events++
		rep.Frontier = state.Frontier{Seq: ln.seq, Hash: ln.hash, Offset: rep.Frontier.Offset + int64(len(b))}
	}
}

// Scan calls fn for every committed record in order, checking the chain as
// it goes. A torn last line is not reported (it was never committed);
// damage stops the scan with a *DamageError. It reads the whole file: use
// it for audits and analysis, never on the hot path.
func Scan(fsys disk.FS, fn func(Record) error) error {
	f, err := fsys.Open(FileName)
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, size), 1<<20)
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
		rec, derr := decodeRecord(b, front.Offset)
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

// ReadAll returns every committed record (see Scan).
func ReadAll(fsys disk.FS) ([]Record, error) {
	var out []Record
	err := Scan(fsys, func(r Record) error { out = append(out, r); return nil })
	return out, err
}
