package ledger

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/acr-project/acr/internal/state"
)

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

// line is a parsed ledger line. Its slices alias the line bytes.
type line struct {
	seq   int64
	chain string // "sha256:<hex>" of the previous line
	hash  string // "sha256:<hex>" of this line
	event []byte // canonical event bytes
}

// encodeLine frames event bytes into a complete line (with newline) that
// follows the line with hash prev, and returns the line and its hash.
func encodeLine(seq int64, prev string, event []byte) ([]byte, string) {
	seqPart := seqMember + strconv.FormatInt(seq, 10) + "}"
	h := sha256.New()
	h.Write([]byte(`{"chain":"`))
	h.Write([]byte(prev))
	h.Write([]byte(eventMember))
	h.Write(event)
	h.Write([]byte(seqPart))
	own := hashPrefix + hex.EncodeToString(h.Sum(nil))

	buf := make([]byte, 0, eventStart+len(event)+hashLen+len(seqPart)+1)
	buf = append(buf, `{"chain":"`...)
	buf = append(buf, prev...)
	buf = append(buf, eventMember...)
	buf = append(buf, event...)
	buf = append(buf, `,"hash":"`...)
	buf = append(buf, own...)
	buf = append(buf, '"')
	buf = append(buf, seqPart...)
	buf = append(buf, '\n')
	return buf, own
}

// parseLine checks a line's framing and its own hash without decoding the
// event. b must include the trailing newline.
func parseLine(b []byte) (line, error) {
	var l line
	if len(b) < minLineBytes || b[len(b)-1] != '\n' {
		return l, fmt.Errorf("line too short or not newline-terminated")
	}
	body := b[:len(b)-1]
	if !bytes.HasPrefix(body, []byte(linePrefix)) || !isHex(body[len(linePrefix):len(linePrefix)+64]) ||
		!bytes.Equal(body[len(linePrefix)+64:eventStart], []byte(eventMember)) {
		return l, fmt.Errorf("line does not start with the chain member")
	}
	l.chain = string(body[len(`{"chain":"`) : len(linePrefix)+64])

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
	seq, err := strconv.ParseInt(string(digits), 10, 64)
	if err != nil {
		return l, fmt.Errorf("malformed seq: %w", err)
	}
	l.seq = seq
	seqAt := i - len(seqMember)
	if seqAt < eventStart || !bytes.Equal(body[seqAt:i], []byte(seqMember)) {
		return l, fmt.Errorf("malformed seq member")
	}
	hashAt := seqAt - hashLen
	if hashAt < eventStart+2 || !bytes.Equal(body[hashAt:hashAt+len(hashMember)], []byte(hashMember)) ||
		body[seqAt-1] != '"' || !isHex(body[hashAt+len(hashMember):seqAt-1]) {
		return l, fmt.Errorf("malformed hash member")
	}
	l.hash = string(body[hashAt+len(`,"hash":"`) : seqAt-1])
	l.event = body[eventStart:hashAt]

	h := sha256.New()
	h.Write(body[:hashAt])
	h.Write(body[seqAt:])
	if got := hashPrefix + hex.EncodeToString(h.Sum(nil)); got != l.hash {
		return l, fmt.Errorf("line hash mismatch: content hashes to %s, line says %s", got, l.hash)
	}
	return l, nil
}

func isHex(b []byte) bool {
	if len(b) != 64 {
		return false
	}
	for _, c := range b {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// decodeEvent strictly decodes canonical event bytes and checks any object
// it carries.
func decodeEvent(b []byte) (Event, error) {
	var e Event
	if err := state.UnmarshalCanonical(b, &e); err != nil {
		return e, err
	}
	if e.Object != nil {
		if err := e.Object.Check(); err != nil {
			return e, err
		}
	}
	return e, nil
}
