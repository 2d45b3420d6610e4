package ledger

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// FileName is the ledger's path inside the state directory.
const FileName = chain.FileName

// Errors callers branch on. Those every store's history shares are
// storage's; they are named here too for the file's callers.
var (
	// ErrExists: Create found a ledger already there.
	ErrExists = storage.ErrExists
	// ErrTornTail: the last line has no newline; RepairTail before appending.
	ErrTornTail = errors.New("ledger has a torn last line")
	// ErrCorrupt: the ledger is damaged somewhere other than a torn tail.
	ErrCorrupt = storage.ErrCorrupt
	// ErrBehind: the ledger ends before a checkpoint's frontier: history
	// the checkpoint relies on is missing.
	ErrBehind = storage.ErrBehind
	// ErrPoisoned: an earlier append failed part-way; the handle must not be
	// used again (reopen to re-read the true end of file).
	ErrPoisoned = storage.ErrPoisoned
)

// DamageError locates damage in the ledger (chain.DamageError).
type DamageError = chain.DamageError

// Torn describes an uncommitted partial line at the end of the file.
type Torn = chain.Torn

// Ledger is an open ledger file. It is not safe for concurrent appends; the
// run lock guarantees one writer.
type Ledger struct {
	fsys     disk.FS
	f        *logFile
	front    state.Frontier
	torn     *Torn
	poisoned bool
	// unsynced: a Write has put lines in the file that no fsync covers yet.
	unsynced bool

	// Index, when set, is told where each cycle appended through this
	// handle lies, so that readers find a cycle without a scan. It is a
	// cache: its errors are ignored, and a stale one is rebuilt.
	Index *Index
	// started is the record that began the cycle being appended.
	started *event.Record
	// CompressAhead, when set before the first append, compresses what
	// the handle appends into the next segment's frames on other
	// goroutines as it goes, so that Seal only has to write them out. Set
	// it when the ledger will be sealed.
	CompressAhead bool
	// OnStage, when set, is called at the named stages of a seal
	// (StageSealPending, StageSealHot): crash tests kill the process there.
	OnStage func(string)
}

// Create makes a new, empty ledger. It fails with ErrExists if one is there.
func Create(fsys disk.FS) (*Ledger, error) {
	ok, err := disk.Exists(fsys, FileName)
	if err != nil {
		return nil, fmt.Errorf("create ledger: %w", err)
	}
	if ok {
		return nil, fmt.Errorf("create ledger: %w", ErrExists)
	}
	if err := fsys.MkdirAll(disk.Dir(FileName)); err != nil {
		return nil, fmt.Errorf("create ledger: %w", err)
	}
	f, err := fsys.OpenAppend(FileName)
	if err != nil {
		return nil, fmt.Errorf("create ledger: %w", err)
	}
	// The new file is empty, so there is no data to fsync; the directory
	// fsync makes its name durable, and every Append fsyncs the file
	// (data and size) before anything depends on what it wrote.
	if err := fsys.SyncDir(disk.Dir(FileName)); err != nil {
		f.Close()
		return nil, fmt.Errorf("create ledger: %w", err)
	}
	return &Ledger{fsys: fsys, f: &logFile{fsys: fsys, hot: f}, front: state.GenesisFrontier()}, nil
}

// Open opens an existing ledger for appending. It reads only the tail: the
// frontier comes from the last complete line. A torn last line is reported
// by Torn, not repaired; appends are refused until RepairTail.
func Open(fsys disk.FS) (*Ledger, error) {
	if _, err := fsys.Stat(FileName); err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	f, err := openLog(fsys, true)
	if err != nil {
		return nil, fmt.Errorf("open ledger: %w", err)
	}
	l := &Ledger{fsys: fsys, f: f}
	if err := l.readTail(); err != nil {
		f.Close()
		return nil, err
	}
	return l, nil
}

func (l *Ledger) readTail() error {
	size, err := l.f.Size()
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	if size == 0 {
		l.front = state.GenesisFrontier()
		return nil
	}
	end := size
	last := make([]byte, 1)
	if _, err := l.f.ReadAt(last, size-1); err != nil {
		return fmt.Errorf("open ledger: read tail: %w", err)
	}
	if last[0] != '\n' {
		start, err := lineStart(l.f, size)
		if err != nil {
			return err
		}
		l.torn = &Torn{Offset: start, Length: size - start}
		end = start
	}
	if end == 0 {
		l.front = state.GenesisFrontier()
		return nil
	}
	rec, err := l.recordEndingAt(end)
	if err != nil {
		return err
	}
	l.front = state.Frontier{Seq: rec.Seq, Hash: rec.Hash, Offset: end}
	return nil
}

// lineStart returns the offset just after the last newline before end
// (0 if there is none), reading backwards in growing chunks so that a tail
// costs O(line length), not O(file).
func lineStart(r io.ReaderAt, end int64) (int64, error) {
	chunk := int64(4 << 10) // most lines are shorter

	pos := end
	for pos > 0 {
		n := min(chunk, pos)
		buf := make([]byte, n)
		if _, err := r.ReadAt(buf, pos-n); err != nil && !errors.Is(err, io.EOF) {
			return 0, fmt.Errorf("read ledger tail: %w", err)
		}
		if i := bytes.LastIndexByte(buf, '\n'); i >= 0 {
			return pos - n + int64(i) + 1, nil
		}
		pos -= n
		chunk *= 2
	}
	return 0, nil
}

// recordEndingAt reads and verifies the complete line whose newline is the
// byte before end: framing, its own hash and the event's well-formedness
// (the checker, not a full decode: opening a run needs the tail's seq and
// hash, and this is on every invocation's path). The Record it returns has
// no decoded Event.
func (l *Ledger) recordEndingAt(end int64) (event.Record, error) {
	start, err := lineStart(l.f, end-1)
	if err != nil {
		return event.Record{}, err
	}
	buf := make([]byte, end-start)
	if _, err := l.f.ReadAt(buf, start); err != nil && !(errors.Is(err, io.EOF) && int64(len(buf)) == end-start) {
		return event.Record{}, fmt.Errorf("read ledger at %d: %w", start, err)
	}
	ln, err := chain.ParseLine(buf)
	if err == nil {
		var c chain.Checker
		err = c.Check(ln.Event)
	}
	if err != nil {
		return event.Record{}, &DamageError{Offset: start, Msg: err.Error()}
	}
	return event.Record{Seq: ln.Seq, Chain: ln.Chain, Hash: ln.Hash, Offset: start, Length: int64(len(buf)), Ref: codec.NewRef("evt", ln.Event)}, nil
}

func readRecord(r io.ReaderAt, start, end int64) (event.Record, error) {
	buf := make([]byte, end-start)
	if _, err := r.ReadAt(buf, start); err != nil && !(errors.Is(err, io.EOF) && int64(len(buf)) == end-start) {
		return event.Record{}, fmt.Errorf("read ledger at %d: %w", start, err)
	}
	return chain.DecodeRecord(buf, start)
}

// Frontier returns the end of the committed ledger.
func (l *Ledger) Frontier() state.Frontier { return l.front }

// Torn returns the torn tail found at Open, or nil.
func (l *Ledger) Torn() *Torn { return l.torn }

// Close releases the file.
func (l *Ledger) Close() error { return l.f.Close() }

// Append writes a batch of events as consecutive lines with one write and
// one fsync, and returns them as records. The fsync also makes durable any
// batch Write left pending. Nothing may depend on the batch before Append
// returns without error. After an error the handle is poisoned: the file
// may hold a partial batch that only a reopen (and RepairTail) can account
// for.
func (l *Ledger) Append(events []event.Event) ([]event.Record, error) {
	recs, err := l.Write(events)
	if err != nil {
		return nil, err
	}
	if err := l.Sync(); err != nil {
		return nil, err
	}
	return recs, nil
}

// Write is Append without the fsync: the batch is in the file (other
// readers see it) but a power loss may take it, together with everything
// written after it. It becomes durable with the next Append or Sync. The
// driver writes a cycle's last batch this way, so that it shares the next
// cycle's fsync: no effect depends on it before then (recovery re-derives a
// lost outcome from the durable intent and the world's hashes).
func (l *Ledger) Write(events []event.Event) ([]event.Record, error) {
	if l.poisoned {
		return nil, ErrPoisoned
	}
	if l.torn != nil {
		return nil, ErrTornTail
	}
	if len(events) == 0 {
		return nil, nil
	}
	// Encode first (a sealed event hands over its bytes), so that the
	// batch's buffer is allocated once, at its final size.
	encoded := make([][]byte, len(events))
	refs := make([]codec.Ref, len(events))
	size := 0
	for i := range events {
		eb, ref, err := events[i].Encode()
		if err != nil {
			return nil, err
		}
		encoded[i], refs[i] = eb, ref
		size += len(eb) + chain.MaxFraming
	}
	buf := make([]byte, 0, size)
	recs := make([]event.Record, 0, len(events))
	front := l.front
	h := sha256.New()
	for i, ev := range events {
		eb, ref := encoded[i], refs[i]
		start := len(buf)
		var own string
		buf, own = chain.AppendLine(buf, h, front.Seq+1, front.Hash, eb)
		n := int64(len(buf) - start)
		recs = append(recs, event.Record{
			Seq: front.Seq + 1, Chain: front.Hash, Hash: own, Offset: front.Offset,
			Length: n, Ref: ref, Event: ev,
		})
		front = state.Frontier{Seq: front.Seq + 1, Hash: own, Offset: front.Offset + n}
	}
	l.f.compress = l.CompressAhead
	if _, err := l.f.Write(buf); err != nil {
		l.poisoned = true
		return nil, fmt.Errorf("append to ledger: %w", err)
	}
	l.front = front
	l.unsynced = true
	l.indexCycles(recs)
	return recs, nil
}

// Sync makes every batch written so far durable. It is free when there is
// nothing pending.
func (l *Ledger) Sync() error {
	if l.poisoned {
		return ErrPoisoned
	}
	if !l.unsynced {
		return nil
	}
	if err := l.f.Sync(); err != nil {
		l.poisoned = true
		return fmt.Errorf("append to ledger: %w", err)
	}
	l.unsynced = false
	return nil
}

// indexCycles tells the index about every cycle a batch completes.
func (l *Ledger) indexCycles(recs []event.Record) {
	if l.Index == nil {
		return
	}
	for i := range recs {
		r := &recs[i]
		switch r.Event.Type {
		case event.CycleStarted:
			l.started = r
		case event.CycleCompleted:
			if s := l.started; s != nil && s.Event.CycleSeq == r.Event.CycleSeq {
				_ = l.Index.Add(IndexEntry{Cycle: s.Event.CycleSeq, Start: s.Offset, End: r.Offset + r.Length, FirstSeq: s.Seq})
			}
			l.started = nil
		}
	}
}

// Repair implements storage.Ledger: RepairTail, reporting the cut.
func (l *Ledger) Repair() (*storage.Repair, error) {
	t, torn, err := l.RepairTail()
	if err != nil || t == nil {
		return nil, err
	}
	return &storage.Repair{At: t.Offset, Length: t.Length, SHA256: codec.FingerprintOf(torn)}, nil
}

// After implements storage.Ledger: the records after from, to the end.
func (l *Ledger) After(from state.Frontier) ([]event.Record, error) {
	return readRange(l.f, from, l.front.Offset)
}

// RepairTail cuts a torn last line off: the torn bytes are kept in
// events.jsonl.broken (appended, with their offset, so repeated repairs
// keep every copy), the file is truncated to the last complete line and
// fsynced. It returns what was cut; the caller records it as an event.
func (l *Ledger) RepairTail() (*Torn, []byte, error) {
	if l.torn == nil {
		return nil, nil, nil
	}
	t := *l.torn
	torn := make([]byte, t.Length)
	if _, err := l.f.ReadAt(torn, t.Offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("repair ledger tail: %w", err)
	}
	bf, err := l.fsys.OpenAppend(FileName + ".broken")
	if err != nil {
		return nil, nil, fmt.Errorf("repair ledger tail: %w", err)
	}
	defer bf.Close()
	header := fmt.Appendf(nil, "# torn tail cut at byte %d, %d bytes:\n", t.Offset, t.Length)
	if _, err := bf.Write(append(append(header, torn...), '\n')); err != nil {
		return nil, nil, fmt.Errorf("repair ledger tail: keep broken copy: %w", err)
	}
	if err := bf.Sync(); err != nil {
		return nil, nil, fmt.Errorf("repair ledger tail: %w", err)
	}
	if err := l.fsys.SyncDir(disk.Dir(FileName)); err != nil {
		return nil, nil, fmt.Errorf("repair ledger tail: %w", err)
	}
	if err := l.f.Truncate(t.Offset); err != nil {
		return nil, nil, fmt.Errorf("repair ledger tail: truncate: %w", err)
	}
	if err := l.f.Sync(); err != nil {
		return nil, nil, fmt.Errorf("repair ledger tail: %w", err)
	}
	l.torn = nil
	return &t, torn, nil
}

// CheckFrontier confirms that the ledger contains the line a checkpoint
// recorded as its frontier, with the same seq and hash. A ledger that ends
// before it is ErrBehind; a different line there is corruption.
func (l *Ledger) CheckFrontier(f state.Frontier) error {
	if f.Seq == 0 {
		if f.Offset != 0 || f.Hash != state.GenesisHash {
			return &DamageError{Msg: "checkpoint frontier is malformed"}
		}
		return nil
	}
	if l.front.Offset < f.Offset || l.front.Seq < f.Seq {
		return fmt.Errorf("%w: checkpoint expects seq %d at byte %d, ledger ends at seq %d, byte %d",
			ErrBehind, f.Seq, f.Offset, l.front.Seq, l.front.Offset)
	}
	rec, err := l.recordEndingAt(f.Offset)
	if err != nil {
		return err
	}
	if rec.Seq != f.Seq || rec.Hash != f.Hash {
		return &DamageError{Offset: rec.Offset, Msg: fmt.Sprintf(
			"checkpoint frontier is seq %d hash %s, ledger has seq %d hash %s there", f.Seq, f.Hash, rec.Seq, rec.Hash)}
	}
	return nil
}

// ReadRange returns the records between two byte offsets (both on line
// boundaries), checking framing, hashes, chain and seq continuity.
func (l *Ledger) ReadRange(from state.Frontier, to int64) ([]event.Record, error) {
	return readRange(l.f, from, to)
}

func readRange(r io.ReaderAt, from state.Frontier, to int64) ([]event.Record, error) {
	return chain.ReadRange(r, from, to)
}

// ReadAt reads the one record that starts at offset.
func ReadAt(fsys disk.FS, offset int64) (event.Record, error) {
	f, err := openLog(fsys, false)
	if err != nil {
		return event.Record{}, fmt.Errorf("open ledger: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return event.Record{}, err
	}
	for chunk := int64(4096); ; chunk *= 2 {
		n := min(chunk, size-offset)
		if n <= 0 {
			break
		}
		buf := make([]byte, n)
		if _, err := f.ReadAt(buf, offset); err != nil && !errors.Is(err, io.EOF) {
			return event.Record{}, fmt.Errorf("read ledger at %d: %w", offset, err)
		}
		if i := bytes.IndexByte(buf, '\n'); i >= 0 {
			return chain.DecodeRecord(buf[:i+1], offset)
		}
		if offset+n >= size {
			break
		}
	}
	return event.Record{}, &DamageError{Offset: offset, Msg: "no complete line at this offset"}
}

// ReadAfter reads, without writing or locking, the records after from to
// the last complete line: what was appended since a checkpoint, for a
// reader (acr status) that must not wait for the run's lock. A torn last
// line is left out: it is not a record until recovery says so.
func ReadAfter(fsys disk.FS, from state.Frontier) ([]event.Record, error) {
	f, size, err := openSized(fsys)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if size < from.Offset {
		return nil, fmt.Errorf("%w: the checkpoint's frontier is at offset %d, the ledger ends at %d", ErrBehind, from.Offset, size)
	}
	buf := make([]byte, size-from.Offset)
	if _, err := f.ReadAt(buf, from.Offset); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	end := from.Offset + int64(bytes.LastIndexByte(buf, '\n')+1)
	return readRange(f, from, end)
}

// IsNotExist reports whether err means there is no ledger.
func IsNotExist(err error) bool { return errors.Is(err, fs.ErrNotExist) }

// Seal moves the history in events.jsonl into a compressed segment under
// ledger/sealed when events.jsonl holds at least minBytes: the ledger's
// bytes and offsets stay what they were, only where they are kept
// changes. Lines a Write left pending are sealed too, and so made
// durable (until the seal commits, a power loss may take them, as it
// may take any pending write). A failed seal leaves
// the ledger readable and complete (the next writer settles it), but this
// handle is poisoned.
func (l *Ledger) Seal(minBytes int64) error {
	if l.poisoned {
		return ErrPoisoned
	}
	if l.torn != nil {
		return ErrTornTail
	}
	size, err := l.f.hotSize()
	if err != nil {
		return fmt.Errorf("seal ledger: %w", err)
	}
	if size == 0 || size < minBytes {
		return nil
	}
	if err := l.f.seal(l.OnStage); err != nil {
		l.poisoned = true
		return err
	}
	// Lines a Write left pending are in the segment, which is durable.
	l.unsynced = false
	return nil
}

// ReadBytes returns the ledger's committed bytes, sealed history
// included, exactly as they were appended (a torn last line is left out).
func ReadBytes(fsys disk.FS) ([]byte, error) {
	f, size, err := openSized(fsys)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b := make([]byte, size)
	if _, err := f.ReadAt(b, 0); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read ledger: %w", err)
	}
	return b[:lastNewline(b)+1], nil
}

// openSized opens the ledger for reading and says how long it is.
func openSized(fsys disk.FS) (*logFile, int64, error) {
	f, err := openLog(fsys, false)
	if err != nil {
		return nil, 0, fmt.Errorf("open ledger: %w", err)
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("open ledger: %w", err)
	}
	return f, size, nil
}
