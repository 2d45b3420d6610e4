package sandbox

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"io"

	"github.com/acr-project/acr/internal/codec"
)

// This file is the table's format, and nothing else: how a record becomes
// a line, how a line is checked, and how the lines of a whole table are
// read into an index. It does no I/O of its own (scanTable reads through
// the io.ReaderAt it is given), so all of it is tested on byte slices.

// recKind is the kind of a table record. The zero value is not a kind, so
// a record whose kind was never set cannot be written.
type recKind uint8

const (
	kindIntent  recKind = iota + 1 // an Execute intent (intentRecord)
	kindOutcome                    // an outcome (outcomeRecord)
	kindStarted                    // a run_command started marker (startedRecord)
	numKinds    = 3
)

// kindNames are the kinds as the table spells them; strings exist only in
// the line, where an unknown one is refused.
var kindNames = [numKinds + 1]string{kindIntent: "intent", kindOutcome: "outcome", kindStarted: "started"}

func (k recKind) String() string {
	if k < kindIntent || k > kindStarted {
		return fmt.Sprintf("recKind(%d)", uint8(k))
	}
	return kindNames[k]
}

func parseKind(b []byte) (recKind, bool) {
	for k := kindIntent; k <= kindStarted; k++ {
		if string(b) == kindNames[k] {
			return k, true
		}
	}
	return 0, false
}

// The members of a line, in the order canonical JSON puts them.
const (
	lineKeyPrefix    = `{"key":"` + keyPrefix // then the key's 64 hex digits
	lineKindMember   = `","kind":"`           // then the kind
	lineRecordMember = `","record":`          // then the record object
	lineSumMember    = `,"sha256":"`          // then 64 hex digits, `"}` and the newline
	lineSumLen       = len(lineSumMember) + 64 + len(`"}`)
	lineKindAt       = len(lineKeyPrefix) + 64 + len(lineKindMember)
	// minLineBytes is the shortest line: the shortest kind and "{}".
	minLineBytes = lineKindAt + len("intent") + len(lineRecordMember) + len("{}") + lineSumLen + len("\n")
)

// keyID is a key's digest as bytes: the index's map key, half the size of
// the hex form.
type keyID [32]byte

// tableLine is a parsed line. record aliases the line's bytes.
type tableLine struct {
	key    keyID
	kind   recKind
	record []byte
}

// encodeLine frames a record's canonical bytes as one line of the table,
// newline included. h is the key's 64 hex digits, checked by the caller.
func encodeLine(h string, kind recKind, record []byte) []byte {
	n := lineKindAt + len(kindNames[kind]) + len(lineRecordMember) + len(record)
	buf := make([]byte, 0, n+lineSumLen+1)
	buf = append(buf, lineKeyPrefix...)
	buf = append(buf, h...)
	buf = append(buf, lineKindMember...)
	buf = append(buf, kindNames[kind]...)
	buf = append(buf, lineRecordMember...)
	buf = append(buf, record...)
	// The checksum covers every byte before its own member, exactly as
	// written.
	sum := codec.Digest(buf)
	buf = append(buf, lineSumMember...)
	buf = append(buf, sum...)
	buf = append(buf, `"}`+"\n"...)
	return buf
}

// errTornLine marks a line that is not a complete, intact record. At the
// end of the table that is what a crash during an append leaves.
var errTornLine = errors.New("not an intact table line")

// parseLine checks one line (newline included) exactly: the framing, the
// key, the kind and the checksum. It accepts precisely the bytes
// encodeLine writes (for some record), so that what was checked is what is
// decoded. Every error wraps errTornLine.
func parseLine(b []byte) (tableLine, error) {
	var l tableLine
	torn := func(format string, args ...any) (tableLine, error) {
		return tableLine{}, fmt.Errorf("%w: %s", errTornLine, fmt.Sprintf(format, args...))
	}
	if len(b) < minLineBytes || b[len(b)-1] != '\n' {
		return torn("too short or not newline-terminated")
	}
	body := b[:len(b)-1]
	if !bytes.HasPrefix(body, []byte(lineKeyPrefix)) || !codec.IsHex64(body[len(lineKeyPrefix):len(lineKeyPrefix)+64]) ||
		!bytes.Equal(body[len(lineKeyPrefix)+64:lineKindAt], []byte(lineKindMember)) {
		return torn("does not start with a key")
	}
	if _, err := hex.Decode(l.key[:], body[len(lineKeyPrefix):len(lineKeyPrefix)+64]); err != nil {
		return torn("key: %v", err)
	}
	end := bytes.IndexByte(body[lineKindAt:], '"')
	if end < 0 {
		return torn("no kind")
	}
	kind, ok := parseKind(body[lineKindAt : lineKindAt+end])
	if !ok {
		return torn("unknown kind %.16q", body[lineKindAt:lineKindAt+end])
	}
	l.kind = kind
	recAt := lineKindAt + end + len(lineRecordMember)
	if recAt > len(body) || !bytes.Equal(body[lineKindAt+end:recAt], []byte(lineRecordMember)) {
		return torn("no record member")
	}
	sumAt := len(body) - lineSumLen
	if sumAt < recAt+len("{}") || !bytes.Equal(body[sumAt:sumAt+len(lineSumMember)], []byte(lineSumMember)) ||
		!codec.IsHex64(body[sumAt+len(lineSumMember):len(body)-2]) || string(body[len(body)-2:]) != `"}` {
		return torn("does not end with a checksum")
	}
	l.record = body[recAt:sumAt]
	if l.record[0] != '{' || l.record[len(l.record)-1] != '}' {
		return torn("the record is not an object")
	}
	want := body[sumAt+len(lineSumMember) : len(body)-2]
	if got := codec.Digest(body[:sumAt]); got != string(want) {
		return torn("checksum mismatch: the line hashes to %s, it says %s", got, want)
	}
	// The record's own form is checked when it is decoded (strictly, and
	// only then: a table is read whole once per invocation, and walking
	// every record would double what that costs).
	return l, nil
}

// span locates one line in the table file.
type span struct {
	off int64
	n   int64
}

// slots are the lines of one key, the latest of each kind (slot k-1 for
// kind k). n == 0 means none.
type slots [numKinds]span

// of returns the slot of kind k.
func (s *slots) of(k recKind) *span { return &s[k-1] }

// tableIndex maps a key to its latest record of each kind: a later record
// of the same key and kind supersedes an earlier one, the way a file
// rewritten in place used to.
type tableIndex map[keyID]slots

func (ix tableIndex) add(l tableLine, at span) {
	s := ix[l.key]
	*s.of(l.kind) = at
	ix[l.key] = s
}

// DamageError is damage in the table that is not a torn tail: a line that
// is not intact followed by one that is. A crash cannot leave that (it
// only ever tears the end of the file), so nothing is repaired and every
// look-up fails until a person restores the table.
type DamageError struct {
	File   string // the table's name
	Offset int64  // where the damaged line starts
	Err    error  // what is wrong with it
	Next   int64  // where the intact line after it starts
}

func (e *DamageError) Error() string {
	return fmt.Sprintf("idempotency table %s: the line at byte %d is damaged (%v) but the line at byte %d after it is intact: "+
		"not a torn tail from a crash, so it is not repaired; restore the state directory from a backup", e.File, e.Offset, e.Err, e.Next)
}

func (e *DamageError) Unwrap() error { return e.Err }

// scanResult is what one read of the table finds.
type scanResult struct {
	index tableIndex
	// end is the length of the valid prefix: the offset after the last
	// intact line. Bytes after it are a torn tail, cut off before the
	// next append.
	end int64
}

// scanBlock is how much of the table one read takes; a longer line is
// read whole by growing the buffer.
const scanBlock = 1 << 20

// scanTable reads size bytes of a table through r, in order and in large
// blocks, and indexes every intact line. The first line that is not
// intact ends the valid prefix; if an intact line follows it, the table is
// damaged in the middle and a *DamageError is returned (name names the
// file in it).
func scanTable(r io.ReaderAt, size int64, name string) (scanResult, error) {
	res := scanResult{index: tableIndex{}}
	buf := make([]byte, min(size, scanBlock))
	bad, badAt := error(nil), int64(-1)
	var off int64 // file offset of buf[0]
	have := 0     // bytes of buf that hold data
	for off+int64(have) < size || have > 0 {
		if off+int64(have) < size && have < len(buf) {
			want := min(int64(len(buf)-have), size-off-int64(have))
			n, err := r.ReadAt(buf[have:have+int(want)], off+int64(have))
			have += n
			if err != nil && !(errors.Is(err, io.EOF) && n == int(want)) {
				return scanResult{}, fmt.Errorf("read %s at byte %d: %w", name, off+int64(have), err)
			}
		}
		i := 0
		for {
			nl := bytes.IndexByte(buf[i:have], '\n')
			if nl < 0 {
				break
			}
			b := buf[i : i+nl+1]
			at := off + int64(i)
			l, err := parseLine(b)
			switch {
			case err == nil && bad != nil:
				return scanResult{}, &DamageError{File: name, Offset: badAt, Err: bad, Next: at}
			case err == nil:
				res.index.add(l, span{off: at, n: int64(len(b))})
			case bad == nil:
				bad, badAt = err, at
			}
			i += nl + 1
		}
		// Keep the partial line: move it to the front, growing the buffer
		// if the line alone fills it.
		copy(buf, buf[i:have])
		off += int64(i)
		have -= i
		if off+int64(have) >= size {
			// No more bytes: what is left is a last line without its
			// newline, which was never committed.
			if have > 0 && bad == nil {
				bad, badAt = errTornLine, off
			}
			break
		}
		if have == len(buf) {
			buf = append(buf, make([]byte, len(buf))...)
		}
	}
	res.end = size
	if bad != nil {
		res.end = badAt
	}
	return res, nil
}
