// The segment file format: names, zstd frames of whole lines, and the
// table of frames at a segment's end.

package ledger

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"

	"github.com/klauspost/compress/zstd"
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
