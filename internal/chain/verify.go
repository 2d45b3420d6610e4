package chain

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"io"
	"runtime"
	"sync"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
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
	// OpenCycle is the cycle started at the end of the ledger and not
	// completed (0: none). Not damage either: what a crash leaves, which
	// the next open of the run recovers.
	OpenCycle int64 `json:"open_cycle,omitempty"`
}

// Verify walks a whole history of size bytes read from r: framing, each
// line's own hash, the chain link to the previous line, seq continuity
// and, for every event, canonical syntax, the envelope's fields and that
// a carried object's ref is the hash of its body (what decoding the event
// would check, without building it); then the history's structure
// (Structure). It stops at the first damaged line. When expect is set
// (a checkpoint's frontier), the line it names must be there with the
// same seq and hash, and no cycle may be open there. frames are the
// history's first bytes kept elsewhere (a state directory's sealed
// segments), each decoded by whoever checks it; r's bytes start where the
// last frame ends. The returned error is for I/O problems only; damage is
// in the Report.
//
// The bytes are cut into chunks at line boundaries and the chunks are
// checked in parallel, one worker per CPU; only the links between chunks
// are checked in order. Memory stays bounded by the chunks in flight,
// whatever the history's length.
func Verify(r io.ReaderAt, size int64, expect *state.Frontier, frames []Frame) (Report, error) {
	rep, err := verifyChunks(r, size, expect, frames, runtime.GOMAXPROCS(0), verifyChunkSize)
	if err == nil && rep.OK && expect != nil && (expect.Seq > rep.Frontier.Seq || expect.Offset > rep.Frontier.Offset) {
		rep.OK = false
		rep.Damage = &DamageError{Offset: rep.Frontier.Offset, Msg: fmt.Sprintf(
			"ledger ends at seq %d but the checkpoint expects seq %d: history is missing (%v)", rep.Frontier.Seq, expect.Seq, storage.ErrBehind)}
	}
	return rep, err
}

// Frame is a run of whole lines of the history's beginning kept in a form
// of its own (a compressed frame of a sealed segment): Load gives its
// bytes, which start at Start and are Raw long.
type Frame struct {
	Start, Raw int64
	Load       func() ([]byte, error)
}

// verifyChunkSize is the size of the blocks Verify reads and hands to its
// workers: large enough that per-chunk overhead vanishes, small enough that
// the chunks in flight stay a few MiB.
const verifyChunkSize = 256 << 10

// chunk is a run of complete lines starting at byte offset off of the file.
type chunk struct {
	data []byte
	off  int64
	buf  []byte // the whole buffer data lives in, recycled after the check
	// load, when set, produces data on the worker: a sealed frame, which
	// ends at a line's end, decoded in parallel with the others.
	load func() ([]byte, error)
}

// chunkResult is what a worker found in one chunk. Links between lines of
// the chunk are checked by the worker; the link from the previous chunk's
// last line to this chunk's first is checked by the collector.
type chunkResult struct {
	lines             int64
	firstSeq, lastSeq int64
	firstChain        string
	lastHash          string
	end               int64 // file offset after the last good line
	damageLine        int64 // 1-based line within the chunk, 0 if none
	damageOff         int64
	damageMsg         string
	err               error // I/O error reading the chunk
	// marks are the chunk's good lines as the structure check needs
	// them, in order; the collector checks them (Structure is sequential).
	marks []mark
}

// mark is one line as Structure sees it.
type mark struct {
	line, off, seq, cycle int64
	kind                  event.Kind
}

func verifyChunks(r io.ReaderAt, size int64, expect *state.Frontier, frames []Frame, workers, chunkSize int) (Report, error) {
	rep := Report{OK: true, Frontier: state.GenesisFrontier()}
	// On the way out, done stops the reader and the workers, and the wait
	// lets them finish what they are on: they read r, which the caller
	// closes once this returns (sealed frames decode with its decoder).
	var running sync.WaitGroup
	defer running.Wait()
	done := make(chan struct{})
	defer close(done)
	type job struct {
		c   chunk
		out chan chunkResult
	}
	jobs := make(chan job, workers)
	order := make(chan chan chunkResult, 2*workers)
	free := make(chan []byte, 3*workers)
	var torn *Torn

	running.Add(1 + workers)
	go func() { // reader: cut the file into chunks of whole lines
		defer running.Done()
		defer close(jobs)
		defer close(order)
		var carry, pending []byte
		carryOff := int64(0)
		send := func(c chunk) bool {
			out := make(chan chunkResult, 1)
			select {
			case order <- out:
			case <-done:
				return false
			}
			select {
			case jobs <- job{c, out}:
			case <-done:
				return false
			}
			return true
		}
		start := int64(0)
		for _, f := range frames {
			if !send(chunk{off: f.Start, load: f.Load}) {
				return
			}
			start = f.Start + f.Raw
		}
		carryOff = start
		for off := start; off < size; {
			n := int(min(int64(chunkSize), size-off))
			// The carry still lives in a buffer a worker may recycle: move
			// it aside before taking a buffer from the free list.
			pending = append(pending[:0], carry...)
			var buf []byte
			select {
			case buf = <-free:
			default:
			}
			if cap(buf) < len(pending)+n {
				buf = make([]byte, 0, max(len(pending)+n, 2*chunkSize))
			}
			buf = append(buf[:0], pending...)
			got, err := r.ReadAt(buf[len(pending):len(pending)+n], off)
			if err != nil && !(errors.Is(err, io.EOF) && got == n) {
				out := make(chan chunkResult, 1)
				out <- chunkResult{err: fmt.Errorf("read ledger at byte %d: %w", off, err)}
				select {
				case order <- out:
				case <-done:
				}
				return
			}
			buf = buf[:len(pending)+got]
			off += int64(got)
			cut := bytes.LastIndexByte(buf, '\n') + 1
			if cut == 0 {
				carry = buf // a line longer than a chunk: keep reading
				continue
			}
			c := chunk{data: buf[:cut], off: carryOff, buf: buf}
			carry = buf[cut:]
			carryOff += int64(cut)
			if !send(c) {
				return
			}
		}
		if len(carry) > 0 {
			torn = &Torn{Offset: carryOff, Length: int64(len(carry))}
		}
	}()
	for range workers {
		go func() {
			defer running.Done()
			var ck Checker
			h := sha256.New()
			for j := range jobs {
				if j.c.load != nil {
					data, err := j.c.load()
					if err != nil {
						j.out <- chunkResult{err: err}
						continue
					}
					j.c.data = data
				}
				j.out <- verifyChunk(j.c, expect, &ck, h)
				select {
				case free <- j.c.buf:
				default:
				}
			}
		}()
	}

	var lineNo int64
	var shape Structure
	for out := range order {
		res := <-out
		if res.err != nil {
			return rep, res.err
		}
		damage := func(line, off int64, msg string) (Report, error) {
			rep.OK = false
			rep.Damage = &DamageError{Line: lineNo + line, Offset: off, Msg: msg}
			return rep, nil
		}
		if res.firstSeq != 0 { // the first line parsed: check its link to the previous chunk
			if res.firstSeq != rep.Frontier.Seq+1 || res.firstChain != rep.Frontier.Hash {
				return damage(1, rep.Frontier.Offset, chainMsg(res.firstSeq, res.firstChain, rep.Frontier))
			}
		}
		for _, m := range res.marks {
			err := shape.Next(m.kind, m.cycle, m.seq)
			if err == nil && expect != nil && m.seq == expect.Seq {
				err = shape.AtFrontier()
			}
			if err != nil {
				// The chain is whole up to here; the history is not.
				rep.Events += m.line - 1
				return damage(m.line, m.off, err.Error())
			}
		}
		rep.Events += res.lines
		if res.lines > 0 {
			rep.Frontier = state.Frontier{Seq: res.lastSeq, Hash: res.lastHash, Offset: res.end}
		}
		if res.damageLine > 0 {
			return damage(res.damageLine, res.damageOff, res.damageMsg)
		}
		lineNo += res.lines
	}
	rep.Torn = torn // the reader has finished: order is closed
	rep.OpenCycle, _ = shape.Open()
	return rep, nil
}

func chainMsg(seq int64, chain string, prev state.Frontier) string {
	return fmt.Sprintf("chain broken: line has seq %d chained to %s, expected seq %d chained to %s",
		seq, chain, prev.Seq+1, prev.Hash)
}

// verifyChunk checks every line of one chunk.
func verifyChunk(c chunk, expect *state.Frontier, ck *Checker, h hash.Hash) chunkResult {
	var res chunkResult
	data, off := c.data, c.off
	var prevHash []byte
	var prevSeq int64
	end := off
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		b := data[:i+1]
		data = data[i+1:]
		ln, err := parseRawLine(b, h)
		if err == nil && res.lines > 0 && (ln.seq != prevSeq+1 || !bytes.Equal(ln.chain, prevHash)) {
			err = errors.New(chainMsg(ln.seq, string(ln.chain), state.Frontier{Seq: prevSeq, Hash: string(prevHash)}))
		}
		if err == nil {
			err = ck.Check(ln.event)
		}
		if err == nil && expect != nil && ln.seq == expect.Seq && (string(ln.hash) != expect.Hash || end+int64(len(b)) != expect.Offset) {
			err = fmt.Errorf("the checkpoint names this line as its frontier with hash %s at byte %d; the line differs", expect.Hash, expect.Offset)
		}
		if res.lines == 0 && ln.seq != 0 {
			res.firstSeq, res.firstChain = ln.seq, string(ln.chain)
		}
		if err != nil {
			res.damageLine, res.damageOff, res.damageMsg = res.lines+1, end, err.Error()
			break
		}
		res.marks = append(res.marks, mark{line: res.lines + 1, off: end, seq: ln.seq, cycle: ck.cycle, kind: ck.kind})
		res.lines++
		prevSeq, prevHash, end = ln.seq, ln.hash, end+int64(len(b))
	}
	res.lastSeq, res.lastHash, res.end = prevSeq, string(prevHash), end
	return res
}
