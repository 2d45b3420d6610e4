package memory

import (
	"bytes"
	"crypto/sha256"
	"encoding"
	"slices"

	"github.com/acr-project/acr/internal/codec"
)

// bindingKind is the kind of a Binding's ref.
const bindingKind = "ctxbind"

// RefMemo is what hashing a Binding leaves for hashing the next one. A run
// hashes its working memory at the end of every cycle, tens of kilobytes
// of units of which only the last is new; the units come last in the
// binding's canonical encoding, so the hash of everything before the new
// units can be resumed instead of redone. A memo is never changed once
// made, so a state and its copies may share one.
type RefMemo struct {
	// head is the binding's encoding up to the value of "units".
	head []byte
	// units are the units hashed, in order.
	units []codec.Canonical
	// state is the SHA-256 state after head, "[" and the units with their
	// commas, before the closing "]}".
	state []byte
}

// RefWith returns b.Ref() and the memo for the next call. m is the memo of
// an earlier binding, or nil; it is used only when b has the same head
// (blocks, protection, schema, last compaction) and begins with the same
// units, compared byte for byte, and then only b's further units are
// hashed. The result is b.Ref() whatever m is.
func (b Binding) RefWith(m *RefMemo) (codec.Ref, *RefMemo) {
	if b.Units == nil {
		return b.Ref(), nil
	}
	headless := b
	headless.Units = nil
	enc := codec.MustMarshal(headless)
	const none = `"units":null}`
	if !bytes.HasSuffix(enc, []byte(none)) {
		return b.Ref(), nil // not the layout this relies on: hash it whole
	}
	head := enc[:len(enc)-len(`null}`)]
	h := sha256.New()
	from := 0
	if m != nil && m.resumes(head, b.Units) {
		if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(m.state); err == nil {
			from = len(m.units)
		} else {
			h.Reset()
		}
	}
	if from == 0 {
		h.Write(head)
		h.Write([]byte{'['})
	}
	for i := from; i < len(b.Units); i++ {
		if i > 0 {
			h.Write([]byte{','})
		}
		if b.Units[i] == nil {
			h.Write([]byte("null"))
		} else {
			h.Write(b.Units[i])
		}
	}
	var next *RefMemo
	if st, err := h.(encoding.BinaryMarshaler).MarshalBinary(); err == nil {
		// The units' bytes are never written in place (codec.Canonical),
		// but a slice of them could have an element replaced: the memo
		// keeps its own.
		next = &RefMemo{head: head, units: slices.Clone(b.Units), state: st}
	}
	h.Write([]byte("]}"))
	return codec.NewRefOfSum(bindingKind, [sha256.Size]byte(h.Sum(nil))), next
}

// resumes reports whether the memo's hash is a beginning of the hash of a
// binding with this head and these units.
func (m *RefMemo) resumes(head []byte, units []codec.Canonical) bool {
	if len(m.units) == 0 || len(m.units) > len(units) || !bytes.Equal(m.head, head) {
		return false
	}
	for i, u := range m.units {
		if !bytes.Equal(u, units[i]) || (u == nil) != (units[i] == nil) {
			return false
		}
	}
	return true
}
