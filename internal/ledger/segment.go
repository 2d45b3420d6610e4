package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/acr-project/acr/internal/disk"
)

// SealedDir holds the sealed segments: committed history moved out of
// events.jsonl into compressed files (see Seal).
const SealedDir = "ledger/sealed"

// Seal stages, reported to Ledger.OnStage so that crash tests can kill a
// process inside a seal.
const (
	// StageSealPending: the segment is durable under its pending name;
	// events.jsonl still holds the same lines.
	StageSealPending = "mid-seal"
	// StageSealHot: events.jsonl was replaced by an empty file; the
	// segment still has its pending name.
	StageSealHot = "after-seal-hot"
)

const (
	segmentMagic  = "acr-ledger-segment/1\n"
	trailerMagic  = "acrseg1\n"
	trailerLen    = 8 + 8 + 4 + len(trailerMagic) // start, end, frame count, magic
	frameEntryLen = 8                             // raw length, compressed length (uint32 each)
	// frameSize is how many bytes of lines one compressed frame holds (a
	// longer line gets a frame of its own): reading one record decodes
	// one frame, so this bounds the cost of a random read.
	frameSize = 256 << 10
	// maxFrameMemory bounds what decoding one frame may allocate: a frame
	// holds one line when that line is longer than frameSize.
	maxFrameMemory = 1 << 30
	// pendingSuffix marks a segment whose seal has not committed yet.
	pendingSuffix = ".pending"
	segmentSuffix = ".zst"
	// nextFileName is the empty file a seal renames over events.jsonl.
	nextFileName = FileName + ".next"
	offsetDigits = 20
)

// segmentName is the file name of the segment holding bytes [start, end)
// of the ledger. Zero-padded offsets make the names sort in ledger order.
func segmentName(start, end int64) string {
	return fmt.Sprintf("%0*d-%0*d%s", offsetDigits, start, offsetDigits, end, segmentSuffix)
}

// parseSegmentName reads a segment's range from its file name.
func parseSegmentName(name string) (start, end int64, pending, ok bool) {
	if s, found := strings.CutSuffix(name, pendingSuffix); found {
		name, pending = s, true
	}
	rest, found := strings.CutSuffix(name, segmentSuffix)
	if !found || len(rest) != 2*offsetDigits+1 || rest[offsetDigits] != '-' ||
		!digitsOnly(rest[:offsetDigits]) || !digitsOnly(rest[offsetDigits+1:]) {
		return 0, 0, false, false
	}
	a, err1 := strconv.ParseInt(rest[:offsetDigits], 10, 64)
	b, err2 := strconv.ParseInt(rest[offsetDigits+1:], 10, 64)
	if err1 != nil || err2 != nil || a < 0 || b <= a {
		return 0, 0, false, false
	}
	return a, b, pending, true
}

// digitsOnly reports whether s is decimal digits and nothing else: the
// name acr writes, where strconv would also take a sign.
func digitsOnly(s string) bool {
	for i := range len(s) {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// frame is one compressed block of a segment.
type frame struct {
	start      int64 // ledger offset of its first byte
	raw        int64 // bytes of lines it holds
	at, length int64 // where its compressed bytes are in the segment file
}

// segmentTable is what a segment file says about itself.
type segmentTable struct {
	start, end int64
	frames     []frame
}

// frameSet builds a segment's frames: whole lines, fed in order, cut into
// frames of about frameSize, each compressed on a goroutine of its own as
// soon as it is cut (enc must allow concurrent EncodeAll calls). A writer
// feeds it what it appends, so that by the time it seals most frames are
// compressed already, on another core, off the cycle's path.
type frameSet struct {
	enc  *zstd.Encoder
	jobs []*frameJob
	open []byte // lines fed since the last cut
	size int64  // bytes fed in all
}

// frameJob is one frame being compressed.
type frameJob struct {
	raw  int
	out  []byte
	done chan struct{}
}

// feed adds whole lines. The open frame's buffer is made at its full size
// at once: grown by appends, it was copied about twice over and its
// discarded halves were most of what the ledger allocated (5% of a
// cycle's CPU in growing it). Frames are cut from the buffer in place and
// go to their compressors; only what is left after the last is copied, to
// a buffer of its own (copying the rest after every frame made feeding a
// seal's 64 MiB of lines quadratic).
func (s *frameSet) feed(p []byte) {
	if s.open == nil {
		s.open = make([]byte, 0, openFrameCap)
	}
	s.open = append(s.open, p...)
	s.size += int64(len(p))
	if len(s.open) < frameSize {
		return
	}
	rest := s.open
	for len(rest) >= frameSize {
		n := cutFrame(rest)
		s.cut(rest[:n:n])
		rest = rest[n:]
	}
	s.open = append(make([]byte, 0, max(openFrameCap, len(rest))), rest...)
}

// openFrameCap is the capacity of an open frame's buffer: a frame and a
// cycle's batch or two, which is when it is cut.
const openFrameCap = frameSize + 64<<10

func (s *frameSet) cut(raw []byte) {
	j := &frameJob{raw: len(raw), done: make(chan struct{})}
	s.jobs = append(s.jobs, j)
	go func() {
		defer close(j.done)
		j.out = s.enc.EncodeAll(raw, make([]byte, 0, len(raw)/4))
	}()
}

// segment waits for every frame and returns the segment file of what was
// fed, as the ledger's bytes from offset start.
func (s *frameSet) segment(start int64) []byte {
	if len(s.open) > 0 {
		s.cut(s.open)
		s.open = nil
	}
	size := len(segmentMagic) + len(s.jobs)*frameEntryLen + trailerLen
	for _, j := range s.jobs {
		<-j.done
		size += len(j.out)
	}
	seg := append(make([]byte, 0, size), segmentMagic...)
	for _, j := range s.jobs {
		seg = append(seg, j.out...)
	}
	for _, j := range s.jobs {
		seg = binary.BigEndian.AppendUint32(seg, uint32(j.raw))
		seg = binary.BigEndian.AppendUint32(seg, uint32(len(j.out)))
	}
	seg = binary.BigEndian.AppendUint64(seg, uint64(start))
	seg = binary.BigEndian.AppendUint64(seg, uint64(start+s.size))
	seg = binary.BigEndian.AppendUint32(seg, uint32(len(s.jobs)))
	return append(seg, trailerMagic...)
}

// wait lets every frame's goroutine finish (a frameSet dropped unsealed).
func (s *frameSet) wait() {
	for _, j := range s.jobs {
		<-j.done
	}
}

// encodeSegment compresses lines (complete ledger lines that start at
// offset start) into a segment file.
func encodeSegment(enc *zstd.Encoder, start int64, lines []byte) []byte {
	s := &frameSet{enc: enc}
	s.feed(lines)
	return s.segment(start)
}

// newEncoder is the compressor of segments: zstd's fastest level, frames
// no larger than a window, as many at once as there are cores, in the
// encoder's lower-memory mode (the same output; on the 1000-cycle queue
// peak RSS 46 instead of 51-56 MB, the GC's heap goal 26 instead of 35 MB).
func newEncoder() (*zstd.Encoder, error) {
	return zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest),
		zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithWindowSize(frameSize), zstd.WithLowerEncoderMem(true))
}

// cutFrame returns how many bytes of b (complete lines) the next frame
// takes: whole lines up to frameSize, at least one line.
func cutFrame(b []byte) int {
	if len(b) <= frameSize {
		return len(b)
	}
	if i := bytes.LastIndexByte(b[:frameSize], '\n'); i >= 0 {
		return i + 1
	}
	if i := bytes.IndexByte(b, '\n'); i >= 0 {
		return i + 1
	}
	return len(b)
}

// parseSegmentTable reads a segment's trailer and frame table from the
// end of the file (tail holds its last bytes, size is its length) and
// checks that they describe the whole file.
func parseSegmentTable(tail []byte, size int64) (segmentTable, error) {
	var t segmentTable
	if int64(len(tail)) > size || len(tail) < trailerLen {
		return t, errors.New("segment too short for its trailer")
	}
	tr := tail[len(tail)-trailerLen:]
	if string(tr[20:]) != trailerMagic {
		return t, errors.New("segment trailer is not acr-ledger-segment/1")
	}
	start, end := int64(binary.BigEndian.Uint64(tr[0:8])), int64(binary.BigEndian.Uint64(tr[8:16]))
	count := int64(binary.BigEndian.Uint32(tr[16:20]))
	if start < 0 || end <= start || count == 0 {
		return t, fmt.Errorf("segment trailer has range %d-%d and %d frames", start, end, count)
	}
	tableLen := count * frameEntryLen
	if tableLen+int64(trailerLen)+int64(len(segmentMagic)) > size {
		return t, fmt.Errorf("segment of %d bytes cannot hold %d frames", size, count)
	}
	if int64(len(tail)) < tableLen+int64(trailerLen) {
		return t, errTailShort
	}
	table := tail[int64(len(tail))-int64(trailerLen)-tableLen : len(tail)-trailerLen]
	t.start, t.end = start, end
	t.frames = make([]frame, count)
	at, off := int64(len(segmentMagic)), start
	for i := range t.frames {
		raw := int64(binary.BigEndian.Uint32(table[i*frameEntryLen:]))
		length := int64(binary.BigEndian.Uint32(table[i*frameEntryLen+4:]))
		if raw == 0 || length == 0 {
			return t, fmt.Errorf("segment frame %d is empty", i)
		}
		t.frames[i] = frame{start: off, raw: raw, at: at, length: length}
		at, off = at+length, off+raw
	}
	if off != end {
		return t, fmt.Errorf("segment frames hold %d bytes, its range %d", off-start, end-start)
	}
	if at != size-tableLen-int64(trailerLen) {
		return t, fmt.Errorf("segment frames take %d bytes, the file has %d for them", at-int64(len(segmentMagic)), size-tableLen-int64(trailerLen)-int64(len(segmentMagic)))
	}
	return t, nil
}

// errTailShort: the tail read was too short for the table; read more.
var errTailShort = errors.New("segment tail too short")

// segment is one sealed segment as a reader sees it. Its file and table
// are read on first use: opening the ledger costs one directory listing
// however long the history is.
type segment struct {
	name       string // path inside the state directory
	start, end int64

	mu     sync.Mutex
	f      disk.File
	table  *segmentTable
	cached int // index of the decoded frame kept, -1 for none
	data   []byte
	// recent, when set (a Reader's segments), keeps decoded frames
	// instead of cached and data.
	recent *recentFrames
}

func (s *segment) load(fsys disk.FS) error {
	if s.table != nil {
		return nil
	}
	f, err := fsys.Open(s.name)
	if err != nil {
		return s.damage(s.start, "cannot open: "+err.Error())
	}
	size, err := f.Size()
	if err != nil {
		f.Close()
		return s.damage(s.start, err.Error())
	}
	want := int64(4 << 10)
	for {
		n := min(want, size)
		tail := make([]byte, n)
		if _, err := f.ReadAt(tail, size-n); err != nil && !errors.Is(err, io.EOF) {
			f.Close()
			return s.damage(s.start, err.Error())
		}
		t, err := parseSegmentTable(tail, size)
		if errors.Is(err, errTailShort) && n < size {
			want *= 4
			continue
		}
		if err == nil && (t.start != s.start || t.end != s.end) {
			err = fmt.Errorf("segment says it holds bytes %d-%d, its name %d-%d", t.start, t.end, s.start, s.end)
		}
		if err != nil {
			f.Close()
			return s.damage(s.start, err.Error())
		}
		s.f, s.table, s.cached = f, &t, -1
		return nil
	}
}

func (s *segment) damage(off int64, msg string) error {
	return &DamageError{Offset: off, Msg: fmt.Sprintf("sealed segment %s: %s", s.name, msg)}
}

// readAt copies the segment's bytes at ledger offset off into p, up to
// the end of the frame holding off; it returns how many it copied.
func (s *segment) readAt(fsys disk.FS, dec *zstd.Decoder, p []byte, off int64) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.load(fsys); err != nil {
		return 0, err
	}
	fr := s.table.frames
	i := sort.Search(len(fr), func(i int) bool { return fr[i].start+fr[i].raw > off })
	if i == len(fr) {
		return 0, s.damage(off, "offset past the segment")
	}
	if s.recent != nil {
		data, ok := s.recent.get(s, i)
		if !ok {
			var err error
			if data, err = s.decode(dec, i, nil); err != nil {
				return 0, err
			}
			s.recent.put(s, i, data)
		}
		return copy(p, data[off-fr[i].start:]), nil
	}
	if s.cached != i {
		s.cached = -1
		data, err := s.decode(dec, i, s.data[:0])
		if err != nil {
			return 0, err
		}
		s.data, s.cached = data, i
	}
	return copy(p, s.data[off-fr[i].start:]), nil
}

// recentFrames is a small store of the frames a Reader decoded last,
// whatever their segment. One command's reads go back and forth between
// a few frames (a cycle whose records cross a frame's end, the run's
// first cycle for its goal and contract, then the cycle again), and a
// frame costs a decode each time it is dropped; a whole scan keeps only
// the last few. A frame's bytes are never written once stored, so a
// reader may copy from them after the lock is released.
type recentFrames struct {
	mu     sync.Mutex
	frames []recentFrame // least recently used first
}

type recentFrame struct {
	seg  *segment
	i    int
	data []byte
}

// recentFramesKept bounds recentFrames: 8 frames of about 256 KiB.
const recentFramesKept = 8

func (r *recentFrames) get(s *segment, i int) ([]byte, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for k, f := range r.frames {
		if f.seg == s && f.i == i {
			r.frames = append(append(r.frames[:k:k], r.frames[k+1:]...), f)
			return f.data, true
		}
	}
	return nil, false
}

func (r *recentFrames) put(s *segment, i int, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.frames) == recentFramesKept {
		r.frames = append(r.frames[:0:0], r.frames[1:]...)
	}
	r.frames = append(r.frames, recentFrame{seg: s, i: i, data: data})
}

// sealedFrame is one frame of sealed history, to be decoded by whoever
// needs its bytes (Verify's workers, in parallel).
type sealedFrame struct {
	start, raw int64
	load       func() ([]byte, error)
}

// sealedFrames lists every frame of the sealed history in order, reading
// each segment's table.
func (l *logFile) sealedFrames() ([]sealedFrame, error) {
	if len(l.segs) > 0 && l.dec == nil {
		if err := l.openDecoder(); err != nil {
			return nil, err
		}
	}
	var out []sealedFrame
	for _, s := range l.segs {
		s.mu.Lock()
		err := s.load(l.fsys)
		s.mu.Unlock()
		if err != nil {
			return nil, err
		}
		for i, fr := range s.table.frames {
			out = append(out, sealedFrame{start: fr.start, raw: fr.raw, load: func() ([]byte, error) { return s.decode(l.dec, i, nil) }})
		}
	}
	return out, nil
}

// decode reads and decodes frame i into dst without touching the cached
// frame, so that several goroutines may decode frames of one segment at
// once. A frame always ends at a line's end; one that does not is damage.
func (s *segment) decode(dec *zstd.Decoder, i int, dst []byte) ([]byte, error) {
	fr := s.table.frames[i]
	comp := make([]byte, fr.length)
	if _, err := s.f.ReadAt(comp, fr.at); err != nil && !errors.Is(err, io.EOF) {
		return nil, s.damage(fr.start, err.Error())
	}
	data, err := dec.DecodeAll(comp, dst)
	if err == nil && int64(len(data)) != fr.raw {
		err = fmt.Errorf("frame %d decodes to %d bytes, its table says %d", i, len(data), fr.raw)
	}
	if err == nil && data[len(data)-1] != '\n' {
		err = fmt.Errorf("frame %d does not end at a line's end", i)
	}
	if err != nil {
		return nil, s.damage(fr.start, fmt.Sprintf("frame %d: %v", i, err))
	}
	return data, nil
}

func (s *segment) close() error {
	if s.f == nil {
		return nil
	}
	return s.f.Close()
}

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

// segmentCache keeps what a reader learnt of sealed segments (their
// files, tables, recently decoded frames) and one decoder, across the many
// short reads one command makes: a segment never changes once it has its
// name, so what was read of it stays true.
type segmentCache struct {
	mu     sync.Mutex
	segs   map[string]*segment
	dec    *zstd.Decoder
	recent recentFrames

	// listed tells when names, the sealed directory's last listing,
	// still holds (see sealedNames).
	listMu sync.Mutex
	listed disk.DirMemo
	names  []string
}

// cachedFS is a file system whose ledger reads share a segmentCache
// (NewReader's): every openLog on it reuses the segments already open.
type cachedFS struct {
	disk.FS
	cache *segmentCache
}

// segment returns the cached segment of that name and range, or caches s.
func (c *segmentCache) segment(s *segment) *segment {
	c.mu.Lock()
	defer c.mu.Unlock()
	if have, ok := c.segs[s.name]; ok && have.start == s.start && have.end == s.end {
		return have
	}
	if c.segs == nil {
		c.segs = map[string]*segment{}
	}
	s.recent = &c.recent
	c.segs[s.name] = s
	return s
}

func (c *segmentCache) decoder() (*zstd.Decoder, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.dec == nil {
		dec, err := newDecoder()
		if err != nil {
			return nil, err
		}
		c.dec = dec
	}
	return c.dec, nil
}

func newDecoder() (*zstd.Decoder, error) {
	return zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(maxFrameMemory))
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

// settle finishes or undoes a seal a crash interrupted, before the first
// write: committed segments get their final names, stale ones are
// removed.
func (l *logFile) settle() error {
	if len(l.pending) > 0 {
		for _, p := range l.pending {
			final := SealedDir + "/" + segmentName(p.start, p.end)
			if err := l.fsys.Rename(p.name, final); err != nil {
				return fmt.Errorf("settle ledger seal: %w", err)
			}
			p.mu.Lock()
			p.name = final
			p.mu.Unlock()
		}
		if err := l.fsys.SyncDir(SealedDir); err != nil {
			return fmt.Errorf("settle ledger seal: %w", err)
		}
		l.pending = nil
	}
	for len(l.stale) > 0 {
		if err := l.fsys.Remove(l.stale[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("settle ledger seal: %w", err)
		}
		l.stale = l.stale[1:]
	}
	return nil
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

// seal moves the lines of events.jsonl (all complete) into new segments.
// The order makes every crash recoverable without loss:
//
//  1. the segments are written and fsynced under pending names, and the
//     directory fsynced: their lines are now in two places;
//  2. events.jsonl is replaced by an empty file, renamed over it (the
//     commit point: pending segments count once events.jsonl is empty);
//  3. the segments are renamed to their final names, so that appends to
//     the new events.jsonl cannot make them look uncommitted.
//
// A reader that opened the ledger before step 2 keeps reading the old
// events.jsonl through its open handle, so it never sees a gap. One
// segment holds at most maxSegment bytes of lines, which bounds the
// memory a seal takes when events.jsonl is long (a run that did not seal
// before).
func (l *logFile) seal(onStage func(string)) error {
	if err := l.settle(); err != nil {
		return err
	}
	size, err := l.hot.Size()
	if err != nil || size == 0 {
		return err
	}
	if err := l.fsys.MkdirAll(SealedDir); err != nil {
		return fmt.Errorf("seal ledger: %w", err)
	}
	var made []*segment
	if l.ahead != nil && l.ahead.size == size {
		// Everything in the file went through Write on this handle: its
		// frames are (mostly) compressed already.
		frames := l.ahead
		l.ahead = nil
		s, err := l.writePending(l.base, size, frames)
		if err != nil {
			return err
		}
		made = append(made, s)
	} else {
		l.dropAhead()
		if made, err = l.sealFromFile(size); err != nil {
			return err
		}
	}
	if err := l.fsys.SyncDir(SealedDir); err != nil {
		return fmt.Errorf("seal ledger: %w", err)
	}
	stage(onStage, StageSealPending)
	// The new events.jsonl is empty, so only its name needs to be durable:
	// created beside, renamed over the old one, the directory fsynced.
	// The handle stays open as the file appends go to.
	hot, err := l.fsys.OpenAppend(nextFileName)
	if err == nil {
		err = hot.Truncate(0) // a leftover of an interrupted seal is empty too; be sure
		if err != nil {
			hot.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("seal ledger: %w", err)
	}
	if err := l.fsys.Rename(nextFileName, FileName); err != nil {
		hot.Close()
		return fmt.Errorf("seal ledger: empty %s: %w", FileName, err)
	}
	if err := l.fsys.SyncDir(disk.Dir(FileName)); err != nil {
		hot.Close()
		return fmt.Errorf("seal ledger: %w", err)
	}
	stage(onStage, StageSealHot)
	l.hot.Close()
	l.hot = hot
	l.segs, l.base, l.pending = append(l.segs, made...), l.base+size, made
	return l.settle()
}

// maxSegment is the most bytes of lines one segment holds when a seal
// compresses events.jsonl from the file.
const maxSegment = 64 << 20

// sealFromFile writes events.jsonl's size bytes as pending segments of at
// most maxSegment bytes each (cut at line ends), reading one at a time.
func (l *logFile) sealFromFile(size int64) ([]*segment, error) {
	if l.enc == nil {
		enc, err := newEncoder()
		if err != nil {
			return nil, fmt.Errorf("seal ledger: %w", err)
		}
		l.enc = enc
	}
	limit := l.segmentMax
	if limit <= 0 {
		limit = maxSegment
	}
	var made []*segment
	for at := int64(0); at < size; {
		n := min(size-at, limit)
		lines := make([]byte, n)
		if _, err := l.hot.ReadAt(lines, at); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("seal ledger: read %s: %w", FileName, err)
		}
		for at+int64(len(lines)) < size && bytes.IndexByte(lines, '\n') < 0 {
			// One line longer than a segment: it gets a segment of its own.
			more := make([]byte, min(size-at-int64(len(lines)), 1<<20))
			if _, err := l.hot.ReadAt(more, at+int64(len(lines))); err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("seal ledger: read %s: %w", FileName, err)
			}
			lines = append(lines, more...)
		}
		if at+int64(len(lines)) < size {
			lines = lines[:bytes.LastIndexByte(lines, '\n')+1]
		}
		if lines[len(lines)-1] != '\n' {
			return nil, fmt.Errorf("seal ledger: %s does not end with a complete line", FileName)
		}
		frames := &frameSet{enc: l.enc}
		frames.feed(lines)
		s, err := l.writePending(l.base+at, int64(len(lines)), frames)
		if err != nil {
			return nil, err
		}
		made = append(made, s)
		at += int64(len(lines))
	}
	return made, nil
}

// writePending writes the segment of frames (n bytes of lines, the
// ledger's from start) under its pending name.
func (l *logFile) writePending(start, n int64, frames *frameSet) (*segment, error) {
	if frames.size != n || (len(frames.open) > 0 && frames.open[len(frames.open)-1] != '\n') {
		frames.wait()
		return nil, fmt.Errorf("seal ledger: %s does not end with a complete line", FileName)
	}
	name := SealedDir + "/" + segmentName(start, start+n) + pendingSuffix
	if err := l.fsys.WriteFile(name, frames.segment(start)); err != nil {
		return nil, fmt.Errorf("seal ledger: %w", err)
	}
	return &segment{name: name, start: start, end: start + n, cached: -1}, nil
}

func stage(onStage func(string), name string) {
	if onStage != nil {
		onStage(name)
	}
}
