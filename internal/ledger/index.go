package ledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
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

// Last is the last cycle the on-disk index covers.
func (ix *Index) Last() int64 { return ix.last }

// Valid reports whether the on-disk index is in step with the ledger, so
// that Add keeps extending it. A stale index is left for Rebuild.
func (ix *Index) Valid() bool { return ix.valid }

// Rebuild replaces a stale index with one built from the ledger (one full
// read) and carries on appending to it. Only the run's writer calls it.
func (ix *Index) Rebuild() error {
	entries, err := buildIndex(ix.fsys)
	if err != nil {
		return err
	}
	if err := writeIndex(ix.fsys, entries); err != nil {
		return err
	}
	f, err := ix.fsys.OpenAppend(IndexFileName)
	if err != nil {
		return fmt.Errorf("open cycle index: %w", err)
	}
	_ = ix.f.Close()
	ix.f, ix.valid, ix.last = f, true, int64(len(entries))
	return nil
}

// ErrNoCycle means the ledger has no completed cycle with that number
// (chain.ErrNoCycle: every store's history reader returns it).
var ErrNoCycle = chain.ErrNoCycle

// Reader reads cycles out of a ledger and never writes: it uses the
// on-disk cycle index where that is right, and where it is missing, short
// or stale it builds the index in memory, once per Reader. Read-only
// commands use one Reader, so they work on a read-only copy of a state
// directory and leave every byte of it as it was.
type Reader struct {
	fsys  disk.FS
	mem   []IndexEntry
	built bool
}

// NewReader returns a Reader of the ledger on fsys.
// Sealed segments it reads stay open for the Reader's life, with the
// last few frames it decoded (a command's reads go back and forth
// between a few) and its listing of ledger/sealed, which it answers from
// a stat while the directory is unchanged (see sealedNames).
func NewReader(fsys disk.FS) *Reader {
	return &Reader{fsys: &cachedFS{FS: fsys, cache: &segmentCache{}}}
}

// entry finds where a cycle's events are.
func (r *Reader) entry(cycle int64) (IndexEntry, bool, error) {
	if cycle < 1 {
		return IndexEntry{}, false, nil
	}
	if !r.built {
		e, ok, err := lookup(r.fsys, cycle)
		if err != nil || ok {
			return e, ok, err
		}
		if err := r.build(); err != nil {
			return IndexEntry{}, false, err
		}
	}
	if cycle > int64(len(r.mem)) {
		return IndexEntry{}, false, nil
	}
	return r.mem[cycle-1], true, nil
}

func (r *Reader) build() error {
	entries, err := buildIndex(r.fsys)
	if err != nil {
		return err
	}
	r.mem, r.built = entries, true
	return nil
}

// retry reports whether a read through the on-disk index failed in a way
// the ledger-built index may not: the index is a cache, never evidence.
func (r *Reader) retry(err error) bool {
	var de *DamageError
	if r.built || !errors.As(err, &de) {
		return false
	}
	return r.build() == nil
}

// Cycle returns the records of one completed cycle, checked against the
// ledger (framing, hashes, chain, and that they are that cycle).
func (r *Reader) Cycle(cycle int64) ([]event.Record, error) {
	e, ok, err := r.entry(cycle)
	if err != nil {
		return nil, err
	}
	if !ok {
		return nil, fmt.Errorf("cycle %d: %w", cycle, ErrNoCycle)
	}
	recs, err := readCycle(r.fsys, e)
	if err != nil && r.retry(err) {
		return r.Cycle(cycle)
	}
	return recs, err
}

// CycleCompleted returns only the persistent.cycle.completed record of a
// cycle (its cycle record), reading one line.
func (r *Reader) CycleCompleted(cycle int64) (event.Record, error) {
	e, ok, err := r.entry(cycle)
	if err != nil {
		return event.Record{}, err
	}
	if !ok {
		return event.Record{}, fmt.Errorf("cycle %d: %w", cycle, ErrNoCycle)
	}
	rec, err := readCompleted(r.fsys, e)
	if err != nil && r.retry(err) {
		return r.CycleCompleted(cycle)
	}
	return rec, err
}

// Cycle returns the records of one completed cycle (see Reader.Cycle).
// It never writes; reading many cycles, use one Reader.
func Cycle(fsys disk.FS, cycle int64) ([]event.Record, error) { return NewReader(fsys).Cycle(cycle) }

// CycleCompleted returns a cycle's cycle record (see
// Reader.CycleCompleted). It never writes.
func CycleCompleted(fsys disk.FS, cycle int64) (event.Record, error) {
	return NewReader(fsys).CycleCompleted(cycle)
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
	if err != nil || first.Event.Type != event.CycleStarted || first.Event.CycleSeq != cycle || first.Seq != e.FirstSeq {
		return IndexEntry{}, false, nil
	}
	return e, true, nil
}

func readCycle(fsys disk.FS, e IndexEntry) ([]event.Record, error) {
	f, err := openLog(fsys, false)
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
	if len(recs) == 0 || recs[len(recs)-1].Event.Type != event.CycleCompleted || recs[len(recs)-1].Event.CycleSeq != e.Cycle {
		return nil, &DamageError{Offset: e.Start, Msg: fmt.Sprintf("cycle %d does not end where the index says", e.Cycle)}
	}
	return recs, nil
}

func readCompleted(fsys disk.FS, e IndexEntry) (event.Record, error) {
	f, err := openLog(fsys, false)
	if err != nil {
		return event.Record{}, err
	}
	defer f.Close()
	start, err := lineStart(f, e.End-1)
	if err != nil {
		return event.Record{}, err
	}
	r, err := readRecord(f, start, e.End)
	if err != nil {
		return event.Record{}, err
	}
	if r.Event.Type != event.CycleCompleted || r.Event.CycleSeq != e.Cycle {
		return event.Record{}, &DamageError{Offset: start, Msg: fmt.Sprintf("cycle %d does not end where the index says", e.Cycle)}
	}
	return r, nil
}

// buildIndex computes the cycle index from the ledger (one full read).
func buildIndex(fsys disk.FS) ([]IndexEntry, error) {
	var out []IndexEntry
	starts := map[int64]event.Record{}
	next := int64(1)
	err := Scan(fsys, func(r event.Record) error {
		switch r.Event.Type {
		case event.CycleStarted:
			starts[r.Event.CycleSeq] = r
		case event.CycleCompleted:
			s, ok := starts[r.Event.CycleSeq]
			if !ok || r.Event.CycleSeq != next {
				return &DamageError{Offset: r.Offset, Msg: fmt.Sprintf("cycle %d completes out of order", r.Event.CycleSeq)}
			}
			out = append(out, IndexEntry{Cycle: next, Start: s.Offset, End: r.Offset + r.Length, FirstSeq: s.Seq})
			delete(starts, next)
			next++
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("build cycle index: %w", err)
	}
	return out, nil
}

// writeIndex replaces the on-disk index. It is a cache: written without
// fsync, and a lost or torn write is just a stale index again.
func writeIndex(fsys disk.FS, entries []IndexEntry) error {
	var out []byte
	for _, e := range entries {
		out = append(out, e.line()...)
	}
	return fsys.WriteCache(IndexFileName, out)
}

// Prologue returns the records before the first cycle: the run's start,
// with its pinned goal, contract and environment.
func Prologue(fsys disk.FS) ([]event.Record, error) {
	end := int64(-1)
	if e, ok, err := lookup(fsys, 1); err == nil && ok {
		end = e.Start
	}
	f, err := openLog(fsys, false)
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
			if r.Event.Type == event.CycleStarted {
				return recs[:i], nil
			}
		}
		return recs, nil
	}
	return readRange(f, state.GenesisFrontier(), end)
}

func readWhole(f disk.File, size int64) ([]event.Record, error) {
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
