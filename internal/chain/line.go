package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
	"strconv"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
)

// The framing of a line around its event (see the package comment).
const (
	hashPrefix   = "sha256:"
	linePrefix   = `{"chain":"` + hashPrefix                                                 // then 64 hex of the previous hash
	eventMember  = `","event":`                                                              // after the chain hex
	eventStart   = len(linePrefix) + 64 + len(eventMember)                                   // byte offset of E in a line
	hashMember   = `,"hash":"` + hashPrefix                                                  // then 64 hex, then a quote
	hashLen      = len(hashMember) + 64 + 1                                                  // the whole hash member
	seqMember    = `,"seq":`                                                                 // then the decimal seq and '}'
	minLineBytes = eventStart + len("{}") + hashLen + len(seqMember) + len("1}") + len("\n") // shortest possible line
)

// MaxFraming is the most bytes a line adds around its event: the chain,
// the event member's name, the hash, a 19-digit seq, the closing brace and
// the newline.
const MaxFraming = eventStart + hashLen + len(seqMember) + 19 + len("}\n")

// Parsed is a line whose framing and own hash are checked. Event aliases
// the line's bytes.
type Parsed struct {
	Seq   int64
	Chain string // "sha256:<hex>" of the previous line
	Hash  string // "sha256:<hex>" of this line
	Event []byte // canonical event bytes
}

// EncodeLine frames event bytes into a complete line (with newline) that
// follows the line with hash prev, and returns the line and its hash.
func EncodeLine(seq int64, prev string, event []byte) ([]byte, string) {
	return AppendLine(make([]byte, 0, len(event)+MaxFraming), sha256.New(), seq, prev, event)
}

// AppendLine is EncodeLine appending to buf and hashing with h (which it
// resets): a writer frames a whole batch into one buffer with one hasher,
// rather than allocating, hashing and copying each line on its own. The
// line's hash covers it as it reads with its hash member left out:
// chain, event, seq.
func AppendLine(buf []byte, h hash.Hash, seq int64, prev string, event []byte) ([]byte, string) {
	start := len(buf)
	buf = append(buf, `{"chain":"`...)
	buf = append(buf, prev...)
	buf = append(buf, eventMember...)
	buf = append(buf, event...)
	var seqBuf [len(seqMember) + 20 + 1]byte // the seq member, a 64-bit decimal and "}"
	seqPart := append(strconv.AppendInt(append(seqBuf[:0], seqMember...), seq, 10), '}')
	h.Reset()
	h.Write(buf[start:])
	h.Write(seqPart)
	var sum [sha256.Size]byte
	buf = append(buf, `,"hash":"`...)
	ownAt := len(buf)
	buf = append(buf, hashPrefix...)
	buf = hex.AppendEncode(buf, h.Sum(sum[:0]))
	own := string(buf[ownAt:])
	buf = append(buf, '"')
	buf = append(buf, seqPart...)
	return append(buf, '\n'), own
}

// ParseLine checks a line's framing and its own hash without decoding the
// event. b must include the trailing newline.
func ParseLine(b []byte) (Parsed, error) {
	r, err := parseRawLine(b, sha256.New())
	if err != nil {
		return Parsed{}, err
	}
	return Parsed{Seq: r.seq, Chain: string(r.chain), Hash: string(r.hash), Event: r.event}, nil
}

// rawLine is a parsed line whose fields all alias the line's bytes, so
// that checking a line allocates nothing.
type rawLine struct {
	seq         int64
	chain, hash []byte // "sha256:<hex>"
	event       []byte
}

// parseRawLine is ParseLine without copies; h is a SHA-256 hasher the
// caller reuses across lines.
func parseRawLine(b []byte, h hash.Hash) (rawLine, error) {
	var l rawLine
	if len(b) < minLineBytes || b[len(b)-1] != '\n' {
		return l, fmt.Errorf("line too short or not newline-terminated")
	}
	body := b[:len(b)-1]
	if !bytes.HasPrefix(body, []byte(linePrefix)) || !codec.IsHex64(body[len(linePrefix):len(linePrefix)+64]) ||
		!bytes.Equal(body[len(linePrefix)+64:eventStart], []byte(eventMember)) {
		return l, fmt.Errorf("line does not start with the chain member")
	}
	l.chain = body[len(`{"chain":"`) : len(linePrefix)+64]

	// Walk back over "<digits>}" to the seq member.
	end := len(body) - 1
	if body[end] != '}' {
		return l, fmt.Errorf("line does not end with '}'")
	}
	i := end
	for i > 0 && body[i-1] >= '0' && body[i-1] <= '9' {
		i--
	}
	digits := body[i:end]
	if len(digits) == 0 || len(digits) > 18 || (digits[0] == '0') {
		return l, fmt.Errorf("malformed seq")
	}
	var seq int64
	for _, d := range digits { // at most 18 digits: no overflow
		seq = seq*10 + int64(d-'0')
	}
	l.seq = seq
	seqAt := i - len(seqMember)
	if seqAt < eventStart || !bytes.Equal(body[seqAt:i], []byte(seqMember)) {
		return l, fmt.Errorf("malformed seq member")
	}
	hashAt := seqAt - hashLen
	if hashAt < eventStart+2 || !bytes.Equal(body[hashAt:hashAt+len(hashMember)], []byte(hashMember)) ||
		body[seqAt-1] != '"' || !codec.IsHex64(body[hashAt+len(hashMember):seqAt-1]) {
		return l, fmt.Errorf("malformed hash member")
	}
	l.hash = body[hashAt+len(`,"hash":"`) : seqAt-1]
	l.event = body[eventStart:hashAt]

	h.Reset()
	h.Write(body[:hashAt])
	h.Write(body[seqAt:])
	var sum [sha256.Size]byte
	var got [2 * sha256.Size]byte
	hex.Encode(got[:], h.Sum(sum[:0]))
	if !bytes.Equal(got[:], l.hash[len(hashPrefix):]) {
		return l, fmt.Errorf("line hash mismatch: content hashes to %s%s, line says %s", hashPrefix, got[:], l.hash)
	}
	return l, nil
}

// DecodeEvent strictly decodes canonical event bytes. The checker runs
// first, so nothing Verify would reject decodes, and any object an event
// carries has been checked against its ref.
func DecodeEvent(b []byte) (event.Event, error) {
	var c Checker
	if err := c.Check(b); err != nil {
		return event.Event{}, err
	}
	var e event.Event
	if err := codec.UnmarshalCanonical(b, &e); err != nil {
		return event.Event{}, err
	}
	return e, nil
}
