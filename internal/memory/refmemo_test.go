package memory_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/memory"
)

// TestRefWithIsRef: over a run's life (units recorded, protection changed,
// compactions, a copy taken back to an earlier binding), the ref RefWith
// gives with the memo of the call before equals the binding's ref; and
// the memo is used where it can be.
func TestRefWithIsRef(t *testing.T) {
	p := memory.Policy{MaxUnits: 12, EveryCycles: 0, KeepUnits: 4, KeepBlocks: 2}
	protectedFor := func(seq int64) []memory.Protected {
		ps := []memory.Protected{{Kind: "goal", Ref: string(ref("goal", 1))}}
		if seq%7 == 0 {
			ps = append(ps, memory.Protected{Kind: "pending_approval", Ref: string(ref("apr", seq))})
		}
		return ps
	}
	b := memory.NewBinding()
	var m *memory.RefMemo
	var history []memory.Binding
	for seq := int64(1); seq <= 60; seq++ {
		b = memory.Record(b, unit(seq, "item"), protectedFor(seq))
		if due, trigger := memory.Due(b, seq, p, false); due {
			nb, _, err := memory.Compact(b, protectedFor(seq), seq, trigger, p)
			require.NoError(t, err)
			b = nb
		}
		got, next := b.RefWith(m)
		require.Equal(t, b.Ref(), got, "cycle %d", seq)
		require.NotNil(t, next)
		m = next
		history = append(history, b)
	}
	// A memo of a later binding does not fit an earlier one, and one of
	// an earlier binding fits a later one only as far as they agree.
	for i, old := range history {
		got, _ := old.RefWith(m)
		assert.Equal(t, old.Ref(), got, "binding %d with the last memo", i)
		_, oldMemo := old.RefWith(nil)
		got, _ = b.RefWith(oldMemo)
		assert.Equal(t, b.Ref(), got, "last binding with memo %d", i)
	}
}

// TestRefWithChecksEveryUnit: a unit changed in place (same count, same
// head) is hashed again, not taken from the memo.
func TestRefWithChecksEveryUnit(t *testing.T) {
	b := memory.NewBinding()
	for seq := int64(1); seq <= 5; seq++ {
		b = memory.Record(b, unit(seq, "item"), nil)
	}
	_, m := b.RefWith(nil)
	changed := b
	changed.Units = append([]codec.Canonical(nil), b.Units...)
	changed.Units[2] = codec.Canonical(codec.MustMarshal(unit(99, "other")))
	got, _ := changed.RefWith(m)
	assert.Equal(t, changed.Ref(), got)
	assert.NotEqual(t, b.Ref(), got)

	// Replaced in place, in the very slice the memo was made from.
	b.Units[2] = codec.Canonical(codec.MustMarshal(unit(98, "other")))
	got, _ = b.RefWith(m)
	assert.Equal(t, b.Ref(), got, "a unit replaced in place")

	grown := memory.Record(changed, unit(6, "item"), nil)
	got, _ = grown.RefWith(m)
	assert.Equal(t, grown.Ref(), got)
}

// TestRefWithOddBindings: no units (nil or empty), a nil unit, an empty
// head.
func TestRefWithOddBindings(t *testing.T) {
	for name, b := range map[string]memory.Binding{
		"nil units":   {Schema: memory.BindingSchema},
		"empty units": memory.NewBinding(),
		"nil unit":    {Schema: memory.BindingSchema, Units: []codec.Canonical{nil, codec.Canonical(`{"a":1}`)}},
		"zero":        {},
	} {
		got, m := b.RefWith(nil)
		assert.Equal(t, b.Ref(), got, name)
		again, _ := b.RefWith(m)
		assert.Equal(t, b.Ref(), again, name)
	}
}

// FuzzRefWith: any two bindings made of the fuzzer's units and
// protections, the second hashed with the first's memo, give their refs.
func FuzzRefWith(f *testing.F) {
	f.Add([]byte("abcde"), uint8(3), "x", "y")
	f.Add([]byte{}, uint8(0), "", "")
	f.Fuzz(func(t *testing.T, items []byte, keep uint8, p1, p2 string) {
		if len(items) > 40 {
			items = items[:40]
		}
		a := memory.NewBinding()
		for i, c := range items {
			a = memory.Record(a, unit(int64(i), string(rune('a'+c%26))), []memory.Protected{{Kind: "k", Ref: p1}})
		}
		_, m := a.RefWith(nil)
		b := a
		if int(keep) < len(a.Units) {
			b.Units = a.Units[:keep]
		}
		b = memory.Record(b, unit(1000, "z"), []memory.Protected{{Kind: "k", Ref: p2}})
		got, _ := b.RefWith(m)
		if want := b.Ref(); got != want {
			t.Fatalf("RefWith gives %s, Ref %s", got, want)
		}
	})
}

// BenchmarkBindingRef and BenchmarkBindingRefWith: a working memory of 48
// units hashed whole, and with the memo of the binding one unit shorter
// (what a cycle does).
func BenchmarkBindingRef(b *testing.B) {
	bd := bindingWith(48, "a", "b")
	for b.Loop() {
		_ = bd.Ref()
	}
}

func BenchmarkBindingRefWith(b *testing.B) {
	prev := bindingWith(47, "a", "b")
	_, m := prev.RefWith(nil)
	bd := memory.Record(prev, unit(48, "b"), protected)
	for b.Loop() {
		_, _ = bd.RefWith(m)
	}
}
