package ledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/state"
)

// IndexFileName is the cycle index beside the ledger.
//
// The index maps a cycle number to the byte range of its events, so that
// reading one cycle of a long run costs that cycle's bytes, not a scan. It
// is a cache: every entry is checked against the ledger before it is
// trusted, and a missing, short or wrong index is rebuilt from the ledger.
// Nothing depends on it being durable, so it is appended without fsync.
//
// Format: one line per cycle, cycles 1, 2, 3, ... in order, each line a
// canonical JSON object whose numbers are fixed-width decimal strings, so
// every line has the same length and line i sits at byte (i-1)*len:
//
//	{"cycle":"000000000042","end":"000000000123456","first_seq":"000000000000812","start":"000000000120001"}
//
// start is the offset of the cycle's persistent.cycle.started line, end the
// offset just after its persistent.cycle.completed line.
const IndexFileName = "ledger/cycles.idx"

const indexLineLen = len(`{"cycle":"000000000000","end":"000000000000000","first_seq":"000000000000000","start":"000000000000000"}` + "\n")

// IndexEntry locates one cycle's events.
type IndexEntry struct {
	Cycle    int64
	Start    int64
	End      int64
	FirstSeq int64
}

func (e IndexEntry) line() []byte {
	return fmt.Appendf(nil, `{"cycle":"%012d","end":"%015d","first_seq":"%015d","start":"%015d"}`+"\n", e.Cycle, e.End, e.FirstSeq, e.Start)
}

func parseIndexLine(b []byte) (IndexEntry, error) {
	var e IndexEntry
	if len(b) != indexLineLen {
		return e, errors.New("index line has the wrong length")
	}
	_, err := fmt.Sscanf(string(b), `{"cycle":"%012d","end":"%015d","first_seq":"%015d","start":"%015d"}`, &e.Cycle, &e.End, &e.FirstSeq, &e.Start)
	if err != nil || !bytesEqual(e.line(), b) {
		return IndexEntry{}, errors.New("malformed index line")
	}
	return e, nil
}

func bytesEqual(a, b []byte) bool { return string(a) == string(b) }

// Index appends entries to the cycle index as cycles complete.
type Index struct {
	fsys  disk.FS
	f     disk.File
	last  int64 // last cycle indexed, -1 when the index is known stale
	valid bool
}

// OpenIndex opens the index for appending. A stale index (one whose last
// entry is not the cycle before the next one written) is left alone:
// writers stop adding to it and readers rebuild it.
func OpenIndex(fsys disk.FS) (*Index, error) {
	f, err := fsys.OpenAppend(IndexFileName)
	if err != nil {
		return nil, fmt.Errorf("open cycle index: %w", err)
	}
	ix := &Index{fsys: fsys, f: f, valid: true}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, err
	}
	n := size / int64(indexLineLen)
	if size%int64(indexLineLen) != 0 {
		ix.valid = false
		return ix, nil
	}
	if n > 0 {
		b := make([]byte, indexLineLen)
		if _, err := f.ReadAt(b, (n-1)*int64(indexLineLen)); err != nil && !errors.Is(err, io.EOF) {
			f.Close()
			return nil, err
		}
		e, err := parseIndexLine(b)
		if err != nil || e.Cycle != n {
			ix.valid = false
			return ix, nil
		}
		ix.last = e.Cycle
	}
	return ix, nil
}

// Add records a completed cycle. It only ever extends a valid index by the
// next cycle; anything else marks the index stale for readers to rebuild.
func (ix *Index) Add(e IndexEntry) error {
	if !ix.valid {
		return nil
	}
	if e.Cycle != ix.last+1 {
		ix.valid = false
		return nil
	}
	if _, err := ix.f.Write(e.line()); err != nil {
		ix.valid = false
		return fmt.Errorf("append to cycle index: %w", err)
	}
	ix.last = e.Cycle
	return nil
}

// Close releases the file.
func (ix *Index) Close() error { return ix.f.Close() }

// ErrNoCycle means the ledger has no completed cycle with that number.
var ErrNoCycle = errors.New("no such cycle in the ledger")

// Cycle returns the records of one completed cycle, using the index and
// checking the entry against the ledger; a missing or stale index is
// rebuilt first (that rebuild reads the ledger once).
func Cycle(fsys disk.FS, cycle int64) ([]Record, error) {
	if cycle < 1 {
		return nil, fmt.Errorf("cycle %d: %w", cycle, ErrNoCycle)
	}
	e, ok, err := lookup(fsys, cycle)
	if err != nil {
		return nil, err
	}
	if !ok {
		if err := RebuildIndex(fsys); err != nil {
			return nil, err
		}
		if e, ok, err = lookup(fsys, cycle); err != nil {
			return nil, err
		}
		if !ok {
			return nil, fmt.Errorf("cycle %d: %w", cycle, ErrNoCycle)
		}
	}
	return readCycle(fsys, e)
}

// lookup reads and checks one index entry; ok is false when the index
// does not (correctly) cover the cycle.
func lookup(fsys disk.FS, cycle int64) (IndexEntry, bool, error) {
	f, err := fsys.Open(IndexFileName)
	if errors.Is(err, fs.ErrNotExist) {
		return IndexEntry{}, false, nil
	}
	if err != nil {
		return IndexEntry{}, false, err
	}
	defer f.Close()
	b := make([]byte, indexLineLen)
	if _, err := f.ReadAt(b, (cycle-1)*int64(indexLineLen)); err != nil {
		return IndexEntry{}, false, nil
	}
	e, err := parseIndexLine(b)
	if err != nil || e.Cycle != cycle {
		return IndexEntry{}, false, nil
	}
	first, err := ReadAt(fsys, e.Start)
	if err != nil || first.Event.Type != "persistent.cycle.started" || first.Event.CycleSeq != cycle || first.Seq != e.FirstSeq {
		return IndexEntry{}, false, nil
	}
	return e, true, nil
}

func readCycle(fsys disk.FS, e IndexEntry) ([]Record, error) {
	f, err := fsys.Open(FileName)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	first, err := ReadAt(fsys, e.Start)
	if err != nil {
		return nil, err
	}
	recs, err := readRange(f, state.Frontier{Seq: first.Seq - 1, Hash: first.Chain, Offset: e.Start}, e.End)
	if err != nil {
		return nil, err
	}
	if len(recs) == 0 || recs[len(recs)-1].Event.Type != "persistent.cycle.completed" || recs[len(recs)-1].Event.CycleSeq != e.Cycle {
		return nil, &DamageError{Offset: e.Start, Msg: fmt.Sprintf("cycle %d does not end where the index says", e.Cycle)}
	}
	return recs, nil
}

// RebuildIndex rebuilds the cycle index from the ledger (one full read)
// and replaces it atomically.
func RebuildIndex(fsys disk.FS) error {
	var out []byte
	starts := map[int64]Record{}
	next := int64(1)
	err := Scan(fsys, func(r Record) error {
		switch r.Event.Type {
		case "persistent.cycle.started":
			starts[r.Event.CycleSeq] = r
		case "persistent.cycle.completed":
			s, ok := starts[r.Event.CycleSeq]
			if !ok || r.Event.CycleSeq != next {
				return &DamageError{Offset: r.Offset, Msg: fmt.Sprintf("cycle %d completes out of order", r.Event.CycleSeq)}
			}
			out = append(out, IndexEntry{Cycle: next, Start: s.Offset, End: r.Offset + r.Length, FirstSeq: s.Seq}.line()...)
			delete(starts, next)
			next++
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("rebuild cycle index: %w", err)
	}
	return disk.ReplaceFile(fsys, IndexFileName, out)
}

// CycleCompleted returns only the persistent.cycle.completed record of a
// cycle (its cycle record), reading one line.
func CycleCompleted(fsys disk.FS, cycle int64) (Record, error) {
	e, ok, err := lookup(fsys, cycle)
	if err != nil {
		return Record{}, err
	}
	if !ok {
		if err := RebuildIndex(fsys); err != nil {
			return Record{}, err
		}
		if e, ok, err = lookup(fsys, cycle); err != nil || !ok {
			return Record{}, fmt.Errorf("cycle %d: %w", cycle, ErrNoCycle)
		}
	}
	f, err := fsys.Open(FileName)
	if err != nil {
		return Record{}, err
	}
	defer f.Close()
	start, err := lineStart(f, e.End-1)
	if err != nil {
		return Record{}, err
	}
	r, err := readRecord(f, start, e.End)
	if err != nil {
		return Record{}, err
	}
	if r.Event.Type != "persistent.cycle.completed" || r.Event.CycleSeq != cycle {
		return Record{}, &DamageError{Offset: start, Msg: fmt.Sprintf("cycle %d does not end where the index says", cycle)}
	}
	return r, nil
}

// Prologue returns the records before the first cycle: the run's start,
// with its pinned goal, contract and environment.
func Prologue(fsys disk.FS) ([]Record, error) {
	end := int64(-1)
	if e, ok, err := lookup(fsys, 1); err == nil && ok {
		end = e.Start
	}
	f, err := fsys.Open(FileName)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if end < 0 {
		size, err := f.Size()
		if err != nil {
			return nil, err
		}
		end = size
		recs, err := readWhole(f, size)
		if err != nil {
			return nil, err
		}
		for i, r := range recs {
			if r.Event.Type == "persistent.cycle.started" {
				return recs[:i], nil
			}
		}
		return recs, nil
	}
	return readRange(f, state.GenesisFrontier(), end)
}

func readWhole(f disk.File, size int64) ([]Record, error) {
	buf := make([]byte, size)
	if _, err := f.ReadAt(buf, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	if i := lastNewline(buf); i >= 0 {
		buf = buf[:i+1]
	} else {
		buf = nil
	}
	return readRange(bytesReaderAt(buf), state.GenesisFrontier(), int64(len(buf)))
}

func lastNewline(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] == '\n' {
			return i
		}
	}
	return -1
}

type bytesReaderAt []byte

func (b bytesReaderAt) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(b)) {
		return 0, io.EOF
	}
	n := copy(p, b[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}
