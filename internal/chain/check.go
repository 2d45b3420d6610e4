package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
)

// kindOf returns the event kind named by b without allocating for the
// kinds acr writes (a string conversion in a map lookup does not).
func kindOf(b []byte) event.Kind {
	if k, ok := knownKinds[string(b)]; ok {
		return k
	}
	return event.Kind(b)
}

// knownKinds interns every kind acr writes.
var knownKinds = func() map[string]event.Kind {
	m := map[string]event.Kind{}
	for _, k := range event.Kinds() {
		m[string(k)] = k
	}
	return m
}()

// Checker checks the bytes of one event without decoding them into an
// Event: canonical syntax (codec.WalkCanonical), the envelope's member
// names and JSON types, and that a carried object's ref is the hash of its
// body. It accepts nothing that DecodeEvent would reject (DecodeEvent runs
// it first, and a fuzz test holds the two together), and it allocates
// almost nothing, so verifying a long ledger costs about as much as hashing
// it. One checker is reused for many events; it is not safe for concurrent
// use.
type Checker struct {
	kids []member // depth-2 values seen since the last depth-1 member
	err  error
	// kind and cycle are the last event's type and cycle_seq, for the
	// structure check (Structure) that follows the syntax check.
	kind  event.Kind
	cycle int64
}

type member struct{ key, val []byte }

// Check returns nil when b is a well-formed event.
func (c *Checker) Check(b []byte) error {
	if len(b) == 0 || b[0] != '{' {
		return fmt.Errorf("event is not a JSON object")
	}
	c.kids, c.err, c.kind, c.cycle = c.kids[:0], nil, "", 0
	if err := codec.WalkCanonical(b, 2, c.visit); err != nil {
		if c.err != nil {
			return c.err
		}
		return fmt.Errorf("%w: %w", codec.ErrNotCanonical, err)
	}
	return nil
}

// Kind is the type of the event Check last accepted.
func (c *Checker) Kind() event.Kind { return c.kind }

// Cycle is the cycle_seq of the event Check last accepted.
func (c *Checker) Cycle() int64 { return c.cycle }

// errStop ends a walk early; the reason is kept in Checker.err.
var errStop = fmt.Errorf("stop")

func (c *Checker) fail(format string, args ...any) error {
	c.err = fmt.Errorf(format, args...)
	return errStop
}

func (c *Checker) visit(depth int, key, val []byte) error {
	if depth == 2 {
		c.kids = append(c.kids, member{key, val})
		return nil
	}
	kids := c.kids
	c.kids = c.kids[:0]
	isNull := string(val) == "null"
	switch string(key) {
	case "type", "run_id", "at":
		if val[0] != '"' {
			return c.fail("event field %s: expected a string", key)
		}
		if string(key) == "type" {
			c.kind = kindOf(val[1 : len(val)-1])
		}
	case "cycle_seq":
		if val[0] != '-' && (val[0] < '0' || val[0] > '9') {
			return c.fail("event field cycle_seq: expected an integer")
		}
		n, err := strconv.ParseInt(string(val), 10, 64)
		if err != nil {
			return c.fail("event field cycle_seq: %v", err)
		}
		c.cycle = n
	case "parents", "reason_codes", "refs":
		if isNull {
			return nil
		}
		want := byte('[')
		if string(key) == "refs" {
			want = '{'
		}
		if val[0] != want {
			return c.fail("event field %s: expected an %s", key, map[byte]string{'[': "array", '{': "object"}[want])
		}
		for _, k := range kids {
			if k.val[0] != '"' {
				return c.fail("event field %s: expected strings", key)
			}
		}
	case "object":
		if isNull {
			return nil
		}
		if val[0] != '{' {
			return c.fail("event field object: expected an object")
		}
		return c.object(kids)
	default:
		return c.fail("event: unknown field %q", key)
	}
	return nil
}

// object checks {"body":<canonical value>,"ref":"<kind>:sha256:<hex>"}
// and that the ref is the hash of the body bytes exactly as they stand.
func (c *Checker) object(kids []member) error {
	var body, ref []byte
	for _, k := range kids {
		switch string(k.key) {
		case "body":
			body = k.val
		case "ref":
			ref = k.val
		default:
			return c.fail("event object: unknown field %q", k.key)
		}
	}
	if body == nil || string(body) == "null" {
		return c.fail("event object: no body")
	}
	if len(ref) < 2 || ref[0] != '"' {
		return c.fail("event object: ref is not a string")
	}
	r, err := codec.ParseRef(string(ref[1 : len(ref)-1]))
	if err != nil {
		return c.fail("event object: %v", err)
	}
	sum := sha256.Sum256(body)
	var got [64]byte
	hex.Encode(got[:], sum[:])
	if !bytes.Equal(got[:], []byte(r.Hex())) {
		return c.fail("object %s: body hashes to %s:sha256:%s", r, r.Kind(), got[:])
	}
	return nil
}
