// The ledger as one file (logFile): the sealed segments, then events.jsonl.

package ledger

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"

	"github.com/klauspost/compress/zstd"

	"github.com/acr-project/acr/internal/disk"
)

// logFile is the ledger as one file: the sealed segments, in order, then
// the hot file events.jsonl, which holds the bytes from base on. Offsets
// are ledger offsets wherever they are: a frontier, an index entry or a
// record's offset means the same bytes before and after a seal.
type logFile struct {
	fsys disk.FS
	segs []*segment
	// pending are segments whose seal committed (events.jsonl was
	// emptied) but kept their pending names; the first write renames them.
	pending []*segment
	// stale are pending segments whose seal did not commit: their lines
	// are still in events.jsonl. The first write removes them.
	stale []string
	base  int64
	hot   disk.File
	dec   *zstd.Decoder

	// ahead, when set, compresses what Write appends (see frameSet); its
	// frames cover events.jsonl from its first byte. enc is its encoder.
	ahead    *frameSet
	enc      *zstd.Encoder
	compress bool
	// segmentMax, when set, replaces maxSegment (tests).
	segmentMax int64
	// cache, when set, owns the segments and the decoder (a Reader's).
	cache *segmentCache
}

// openLog opens the ledger for reading (writable false) or appending.
// It never writes: a seal a crash interrupted is settled by the first
// write (settle).
func openLog(fsys disk.FS, writable bool) (*logFile, error) {
	var hot disk.File
	var err error
	if writable {
		hot, err = fsys.OpenAppend(FileName)
	} else {
		hot, err = fsys.Open(FileName)
	}
	if err != nil {
		return nil, err
	}
	l := &logFile{fsys: fsys, hot: hot}
	if c, ok := fsys.(*cachedFS); ok {
		l.cache = c.cache
	}
	if err := l.list(); err != nil {
		hot.Close()
		return nil, err
	}
	return l, nil
}

// list reads the sealed directory. Pending segments count as sealed when
// events.jsonl is empty: a seal empties it only after its segments are
// durable, and nothing is appended before the seal is settled.
func (l *logFile) list() error {
	names, err := l.sealedNames()
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("list %s: %w", SealedDir, err)
	}
	var segs, pending []*segment
	for _, name := range names {
		start, end, isPending, ok := parseSegmentName(name)
		if !ok {
			continue // a temporary file of an interrupted write
		}
		s := &segment{name: SealedDir + "/" + name, start: start, end: end, cached: -1}
		if l.cache != nil {
			s = l.cache.segment(s)
		}
		if isPending {
			pending = append(pending, s)
		} else {
			segs = append(segs, s)
		}
	}
	if len(pending) > 0 {
		size, err := l.hot.Size()
		if err != nil {
			return fmt.Errorf("open ledger: %w", err)
		}
		if size == 0 {
			segs = append(segs, pending...)
			sort.Slice(segs, func(i, j int) bool { return segs[i].start < segs[j].start })
			l.pending = pending
		} else {
			for _, p := range pending {
				l.stale = append(l.stale, p.name)
			}
		}
	}
	at, err := contiguous(0, segs)
	if err != nil {
		return err
	}
	if len(l.stale) > 0 {
		if _, err := contiguous(at, pending); err != nil {
			return err
		}
	}
	l.segs, l.base = segs, at
	return nil
}

// sealedNames lists the sealed directory. A Reader, which opens the
// ledger for each of its many reads, answers from a stat of the directory
// while it is unchanged since its last listing (disk.DirMemo): on a long
// history, listing and parsing the segments' names again for every read
// was most of what a command spent beyond the reads themselves.
func (l *logFile) sealedNames() ([]string, error) {
	c := l.cache
	if c == nil {
		entries, err := l.fsys.ReadDir(SealedDir)
		return entryNames(entries), err
	}
	c.listMu.Lock()
	defer c.listMu.Unlock()
	now := c.listed.Now()
	fi, statErr := l.fsys.Stat(SealedDir)
	if statErr == nil && c.listed.Holds(fi, now) {
		return c.names, nil
	}
	c.listed.Forget()
	entries, err := l.fsys.ReadDir(SealedDir)
	if err != nil {
		return nil, err
	}
	c.names = entryNames(entries)
	if statErr == nil {
		c.listed.Remember(fi, now)
	}
	return c.names, nil
}

func entryNames(entries []fs.DirEntry) []string {
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
	}
	return names
}

// contiguous checks that segs (sorted) follow each other from at, and
// returns where they end.
func contiguous(at int64, segs []*segment) (int64, error) {
	for _, s := range segs {
		if s.start != at {
			return 0, &DamageError{Offset: at, Msg: fmt.Sprintf("%s: %s does not start where the history before it ends (byte %d)", SealedDir, s.name, at)}
		}
		at = s.end
	}
	return at, nil
}

// ReadAt reads ledger bytes wherever they are.
func (l *logFile) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read ledger at %d: negative offset", off)
	}
	n := 0
	for n < len(p) {
		o := off + int64(n)
		if o >= l.base {
			m, err := l.hot.ReadAt(p[n:], o-l.base)
			return n + m, err
		}
		if l.dec == nil {
			if err := l.openDecoder(); err != nil {
				return n, err
			}
		}
		i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].end > o })
		m, err := l.segs[i].readAt(l.fsys, l.dec, p[n:], o)
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

// openDecoder makes the decoder on the first read of sealed history: the
// cache's when there is one, else this file's own.
func (l *logFile) openDecoder() error {
	var err error
	if l.cache != nil {
		l.dec, err = l.cache.decoder()
	} else {
		l.dec, err = newDecoder()
	}
	if err != nil {
		return fmt.Errorf("read ledger: %w", err)
	}
	return nil
}

// Size is the ledger's length: sealed history and events.jsonl.
func (l *logFile) Size() (int64, error) {
	n, err := l.hot.Size()
	return l.base + n, err
}

// Write appends to events.jsonl. With compression ahead on, the lines
// are also fed to the frames of the next segment.
func (l *logFile) Write(p []byte) (int, error) {
	if err := l.settle(); err != nil {
		return 0, err
	}
	if l.compress && l.ahead == nil {
		if err := l.startAhead(); err != nil {
			return 0, err
		}
	}
	n, err := l.hot.Write(p)
	if l.ahead != nil {
		if err != nil {
			l.dropAhead() // the file holds part of p: rebuild from it at the seal
		} else {
			l.ahead.feed(p)
		}
	}
	return n, err
}

// startAhead begins the next segment's frames with what events.jsonl
// holds already (lines an earlier invocation left unsealed).
func (l *logFile) startAhead() error {
	if l.enc == nil {
		enc, err := newEncoder()
		if err != nil {
			return fmt.Errorf("ledger compressor: %w", err)
		}
		l.enc = enc
	}
	l.ahead = &frameSet{enc: l.enc}
	size, err := l.hot.Size()
	if err != nil || size == 0 {
		return err
	}
	lines := make([]byte, size)
	if _, err := l.hot.ReadAt(lines, 0); err != nil && !errors.Is(err, io.EOF) {
		l.ahead = nil
		return fmt.Errorf("read %s: %w", FileName, err)
	}
	l.ahead.feed(lines)
	return nil
}

func (l *logFile) dropAhead() {
	if l.ahead != nil {
		l.ahead.wait()
		l.ahead = nil
	}
}

// Sync fsyncs events.jsonl.
func (l *logFile) Sync() error { return l.hot.Sync() }

// Truncate cuts the ledger to size bytes; sealed history cannot be cut.
func (l *logFile) Truncate(size int64) error {
	if size < l.base {
		return fmt.Errorf("truncate ledger to %d: bytes before %d are sealed", size, l.base)
	}
	if err := l.settle(); err != nil {
		return err
	}
	l.dropAhead()
	return l.hot.Truncate(size - l.base)
}

// Close releases every file.
func (l *logFile) Close() error {
	l.dropAhead()
	if l.enc != nil {
		l.enc.Close()
	}
	err := l.hot.Close()
	if l.cache != nil {
		return err // the cache's segments and decoder live on
	}
	for _, s := range l.segs {
		if cerr := s.close(); cerr != nil && err == nil {
			err = cerr
		}
	}
	if l.dec != nil {
		l.dec.Close()
	}
	return err
}

// hotSize is the length of events.jsonl alone.
func (l *logFile) hotSize() (int64, error) { return l.hot.Size() }
