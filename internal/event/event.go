package event

import (
	"fmt"

	"github.com/acr-project/acr/internal/codec"
)

// Event is one entry of the causal history. It records orchestration
// outcomes and links, never hidden reasoning: the objects a subsystem
// produced are carried once, in the event that creates them (Object), and
// every other event links to them by ref.
type Event struct {
	// Type names what happened (see the catalog in kinds.go).
	Type Kind `json:"type"`
	// RunID is the run the event belongs to.
	RunID string `json:"run_id"`
	// CycleSeq is the cycle the event belongs to (0 for run-level events
	// before the first cycle).
	CycleSeq int64 `json:"cycle_seq"`
	// At is the clock reading the event was produced under (RFC 3339, UTC).
	At string `json:"at,omitempty"`
	// Parents are the refs of the events this one causally follows.
	Parents []codec.Ref `json:"parents,omitempty"`
	// Refs name the objects this event is about ("decision", "action", ...).
	Refs map[string]codec.Ref `json:"refs,omitempty"`
	// Reasons are machine-readable reason codes.
	Reasons []string `json:"reason_codes,omitempty"`
	// Object is the one object this event records, if it records one.
	Object *Object `json:"object,omitempty"`

	// sealed holds the canonical bytes and ref Seal computed, nil until
	// then. It is not part of the event's JSON (unexported fields are not
	// encoded) and copies of the event share it.
	sealed *sealed
}

// sealed is an event's canonical encoding, computed once.
type sealed struct {
	b   []byte
	ref codec.Ref
}

// Object is a content-addressed object carried by the event that creates
// it. Ref is the ref of Body's canonical bytes.
type Object struct {
	Ref  codec.Ref       `json:"ref"`
	Body codec.Canonical `json:"body"`
}

// NewObject encodes v canonically and wraps it with its ref.
func NewObject(kind string, v any) (*Object, error) {
	ref, b, err := codec.RefOf(kind, v)
	if err != nil {
		return nil, err
	}
	return &Object{Ref: ref, Body: b}, nil
}

// Check verifies that Ref really is the ref of Body.
func (o *Object) Check() error {
	val, err := codec.ParseCanonical(o.Body)
	if err != nil {
		return fmt.Errorf("object %s: body: %w", o.Ref, err)
	}
	if want := codec.NewRef(o.Ref.Kind(), val.Encode()); want != o.Ref {
		return fmt.Errorf("object %s: body hashes to %s", o.Ref, want)
	}
	return nil
}

// Decode decodes the object's body into v strictly.
func (o *Object) Decode(v any) error {
	if err := codec.UnmarshalCanonical(o.Body, v); err != nil {
		return fmt.Errorf("object %s: %w", o.Ref, err)
	}
	return nil
}

// Encode returns the canonical bytes of the event and its ref. For a
// sealed event they are the bytes Seal computed; the caller must not
// modify them.
func (e *Event) Encode() ([]byte, codec.Ref, error) {
	if e.sealed != nil {
		return e.sealed.b, e.sealed.ref, nil
	}
	b, err := codec.Marshal(e)
	if err != nil {
		return nil, "", fmt.Errorf("encode event %s: %w", e.Type, err)
	}
	return b, codec.NewRef("evt", b), nil
}

// Ref returns the event's own content ref, independent of its position in
// the ledger.
func (e *Event) Ref() (codec.Ref, error) {
	_, r, err := e.Encode()
	return r, err
}

// Seal encodes the event once and keeps the bytes: its ref now, and the
// same bytes later when the ledger writes it (Encode and Ref of the event
// and of its copies return them without encoding again). A sealed event
// must not be changed afterwards, its maps and slices included: what the
// ledger writes would no longer be the event. Build a new Event instead.
// Sealing a sealed event changes nothing.
func (e *Event) Seal() (codec.Ref, error) {
	if e.sealed != nil {
		return e.sealed.ref, nil
	}
	b, ref, err := e.Encode()
	if err != nil {
		return "", err
	}
	e.sealed = &sealed{b: b, ref: ref}
	return ref, nil
}

// Record is an event as the ledger holds it: its place in the hash chain
// and its own content ref. Offset and Length locate its line in a ledger
// file; a backend that is not a file leaves them as positions of its own.
type Record struct {
	Seq    int64
	Chain  string    // hash of the previous line
	Hash   string    // hash of this line
	Offset int64     // byte offset of the line's first byte
	Length int64     // bytes including the newline
	Ref    codec.Ref // the event's own content ref
	Event  Event
}
