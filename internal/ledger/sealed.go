// Reading sealed history: a segment opened on first use, its frames
// decoded (a few kept), and the cache a Reader shares across opens.

package ledger

import (
	"errors"
	"fmt"
	"io"
	"sort"
	"sync"

	"github.com/klauspost/compress/zstd"

	"github.com/acr-project/acr/internal/disk"
)

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
