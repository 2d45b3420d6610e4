package sandbox

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/acr-project/acr/internal/disk"
)

// TableName is the idempotency table's file (a disk.FS name): every record
// of every key, one line each, appended and never rewritten. Its format is
// in the package comment.
const TableName = KeysDir + "/table.log"

// keyTable is the I/O shell around the table file: it opens the file on
// first use, reads it once into an index, reads single records at the
// offsets the index gives, and appends. It is used under World.mu.
//
// Nothing is read before the first look-up, so an invocation that never
// acts (an idle run, a read-only command) never reads the table at all.
type keyTable struct {
	fs disk.FS
	// f is the table file once it was opened: read-only until the first
	// append, then open for appending (and reading) for good. It is nil
	// while the file does not exist.
	f        disk.File
	writable bool
	// loaded is set once the file has been read into index; err keeps the
	// damage found then, so that every later look-up reports it without
	// reading the whole file again.
	loaded bool
	err    error
	index  tableIndex
	// end is where the next line goes: just after the last intact line.
	// size is the file's length as last seen; it exceeds end while a torn
	// tail is waiting to be cut off by the next append.
	end, size int64
	// legacy is set when the directory holds the per-key files of an
	// earlier release; only then does a key missing from the index cost a
	// look at its old file.
	legacy bool
	// dirSynced is set once this World has fsynced the table's directory.
	dirSynced bool
	buf       []byte
}

// load reads the table into the index, once.
func (t *keyTable) load() error {
	if t.loaded {
		return t.err
	}
	t.loaded = true
	t.index = tableIndex{}
	f, err := t.fs.Open(TableName)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case err != nil:
		t.err = fmt.Errorf("open %s: %w", TableName, err)
		return t.err
	default:
		size, err := f.Size()
		if err != nil {
			_ = f.Close()
			t.err = fmt.Errorf("open %s: %w", TableName, err)
			return t.err
		}
		res, err := scanTable(f, size, TableName)
		if err != nil {
			_ = f.Close()
			t.err = err
			return t.err
		}
		t.f, t.index, t.end, t.size = f, res.index, res.end, size
	}
	entries, err := t.fs.ReadDir(KeysDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.err = fmt.Errorf("list %s: %w", KeysDir, err)
		return t.err
	}
	for _, e := range entries {
		if e.IsDir() && isFanDir(e.Name()) {
			t.legacy = true
			break
		}
	}
	return nil
}

// get returns the latest record of kind for key, as the canonical bytes
// of the record object. The bytes are valid until the next get.
func (t *keyTable) get(key keyID, kind recKind) ([]byte, bool, error) {
	if err := t.load(); err != nil {
		return nil, false, err
	}
	all := t.index[key]
	s := *all.of(kind)
	if s.n == 0 {
		return nil, false, nil
	}
	if int64(cap(t.buf)) < s.n {
		t.buf = make([]byte, s.n)
	}
	b := t.buf[:s.n]
	if _, err := t.f.ReadAt(b, s.off); err != nil {
		return nil, false, fmt.Errorf("read %s at byte %d: %w", TableName, s.off, err)
	}
	l, err := parseLine(b)
	if err != nil {
		// The line was intact when the table was read: the file changed
		// under the run since.
		return nil, false, fmt.Errorf("%s at byte %d: %w", TableName, s.off, err)
	}
	if l.key != key || l.kind != kind {
		return nil, false, fmt.Errorf("%s at byte %d: the line is not the %s record the index says it is", TableName, s.off, kind)
	}
	return l.record, true, nil
}

// pendingLine is a line about to be appended.
type pendingLine struct {
	key  keyID
	kind recKind
	line []byte
}

// append writes lines at the end of the table with one write and, when
// durable is set, makes them durable before returning: fsync of the file,
// and, the first time this World makes anything durable, of its directory
// too (see the package comment for why once per World rather than only
// when the file is created). A torn tail left by a crash is cut off first,
// so that the new lines follow the last intact one.
func (t *keyTable) append(lines []pendingLine, durable bool) error {
	if err := t.load(); err != nil {
		return err
	}
	if !t.writable {
		if t.f == nil {
			// The first record of a new table. The directory exists in
			// every table Create made; MkdirAll is for one made by hand.
			if err := t.fs.MkdirAll(KeysDir); err != nil {
				return fmt.Errorf("create %s: %w", TableName, err)
			}
		}
		f, err := t.fs.OpenAppend(TableName)
		if err != nil {
			return fmt.Errorf("open %s for appending: %w", TableName, err)
		}
		if t.f != nil {
			// Read-only: closing it cannot lose anything.
			_ = t.f.Close()
		}
		t.f, t.writable = f, true
	}
	if t.size > t.end {
		if err := t.f.Truncate(t.end); err != nil {
			return fmt.Errorf("cut the torn tail of %s at byte %d: %w", TableName, t.end, err)
		}
		t.size = t.end
	}
	var batch []byte
	if len(lines) == 1 {
		batch = lines[0].line
	} else {
		for _, l := range lines {
			batch = append(batch, l.line...)
		}
	}
	// Until the write and the fsync are known to have worked, the file may
	// hold any prefix of the batch: the next append cuts it off.
	t.size = t.end + int64(len(batch))
	if _, err := t.f.Write(batch); err != nil {
		return fmt.Errorf("append to %s: %w", TableName, err)
	}
	if durable {
		if err := t.f.Sync(); err != nil {
			return fmt.Errorf("append to %s: %w", TableName, err)
		}
		if !t.dirSynced {
			if err := t.fs.SyncDir(KeysDir); err != nil {
				return fmt.Errorf("append to %s: fsync %s: %w", TableName, KeysDir, err)
			}
			t.dirSynced = true
		}
	}
	for _, l := range lines {
		t.index.add(tableLine{key: l.key, kind: l.kind}, span{off: t.end, n: int64(len(l.line))})
		t.end += int64(len(l.line))
	}
	return nil
}

// close releases the table file.
func (t *keyTable) close() error {
	if t.f == nil {
		return nil
	}
	err := t.f.Close()
	t.f = nil
	if err != nil {
		return fmt.Errorf("close %s: %w", TableName, err)
	}
	return nil
}

// isFanDir reports whether name is one of the fan-out directories of the
// per-key layout: two lower-case hex digits.
func isFanDir(name string) bool {
	return len(name) == 2 && lowerHex(name[0]) && lowerHex(name[1])
}

func lowerHex(c byte) bool { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') }
