package memory_test

import (
	"fmt"
	"regexp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/memory"
)

func ref(kind string, n int64) codec.Ref {
	return codec.Ref(fmt.Sprintf("%s:sha256:%064x", kind, n))
}

func unit(seq int64, item string) memory.Unit {
	return memory.Unit{CycleSeq: seq, CycleRef: ref("cycle", seq), EventRefs: []codec.Ref{ref("ev", seq*10), ref("ev", seq*10+1)},
		Item: item, Disposition: "CONTINUE"}
}

var protected = []memory.Protected{
	{Kind: "contract", Ref: "contract:sha256:c"},
	{Kind: "commitment", Ref: "cmt-b"},
	{Kind: "commitment", Ref: "cmt-a"},
	{Kind: "strategy_source", Ref: "src:acr-builtin-lenses@1"},
	{Kind: "commitment", Ref: "cmt-a"}, // duplicate
}

func bindingWith(n int64, items ...string) memory.Binding {
	b := memory.NewBinding()
	for i := int64(1); i <= n; i++ {
		item := ""
		if len(items) > 0 {
			item = items[int(i-1)%len(items)]
		}
		b = memory.Record(b, unit(i, item), protected)
	}
	return b
}

func TestNewBinding(t *testing.T) {
	b := memory.NewBinding()
	assert.Equal(t, memory.BindingSchema, b.Schema)
	assert.NotNil(t, b.Units)
	assert.NotNil(t, b.Blocks)
	assert.NotNil(t, b.Protected)
	assert.Equal(t, "ctxbind", b.Ref().Kind())
}

func TestRecord(t *testing.T) {
	b0 := memory.NewBinding()
	b1 := memory.Record(b0, unit(1, "check:a"), protected)
	require.Len(t, b1.Units, 1)
	assert.Equal(t, unit(1, "check:a"), unitsOf(t, b1)[0])
	assert.Empty(t, b0.Units, "Record does not modify its input")
	assert.Equal(t, []memory.Protected{
		{Kind: "commitment", Ref: "cmt-a"},
		{Kind: "commitment", Ref: "cmt-b"},
		{Kind: "contract", Ref: "contract:sha256:c"},
		{Kind: "strategy_source", Ref: "src:acr-builtin-lenses@1"},
	}, b1.Protected, "protected refs are sorted and deduplicated")

	b2 := memory.Record(b1, unit(2, ""), nil)
	require.Len(t, b2.Units, 2)
	assert.Equal(t, int64(2), unitsOf(t, b2)[1].CycleSeq)
	assert.Equal(t, []memory.Protected{}, b2.Protected, "protected refs are replaced, never nil")
	assert.Len(t, b1.Units, 1)
	assert.NotEqual(t, b1.Ref(), b2.Ref())

	// Record on a binding whose slice has spare capacity must not leak
	// into a sibling binding.
	units := make([]codec.Canonical, 1, 4)
	units[0] = codec.Canonical(codec.MustMarshal(unit(1, "first")))
	base := memory.Binding{Schema: memory.BindingSchema, Units: units}
	x := memory.Record(base, unit(10, "x"), nil)
	y := memory.Record(base, unit(20, "y"), nil)
	assert.Equal(t, int64(10), unitsOf(t, x)[1].CycleSeq)
	assert.Equal(t, int64(20), unitsOf(t, y)[1].CycleSeq)
}

func TestDue(t *testing.T) {
	b := bindingWith(5)
	b.LastCompactionCycle = 10
	cases := []struct {
		name     string
		b        memory.Binding
		cycle    int64
		p        memory.Policy
		explicit bool
		due      bool
		reason   string
	}{
		{"explicit always", memory.NewBinding(), 1, memory.Policy{}, true, true, "explicit_request"},
		{"explicit beats everything", b, 11, memory.Policy{MaxUnits: 1}, true, true, "explicit_request"},
		{"over the unit limit", b, 11, memory.Policy{MaxUnits: 4}, false, true, "units_over_limit"},
		{"at the unit limit", b, 11, memory.Policy{MaxUnits: 5}, false, false, ""},
		{"no unit limit", b, 11, memory.Policy{}, false, false, ""},
		{"cadence reached", b, 20, memory.Policy{EveryCycles: 10, KeepUnits: 2}, false, true, "cadence"},
		{"cadence passed", b, 35, memory.Policy{EveryCycles: 10, KeepUnits: 2}, false, true, "cadence"},
		{"cadence not reached", b, 19, memory.Policy{EveryCycles: 10, KeepUnits: 2}, false, false, ""},
		{"cadence with nothing to fold", b, 40, memory.Policy{EveryCycles: 10, KeepUnits: 5}, false, false, ""},
		{"limit beats cadence", b, 40, memory.Policy{MaxUnits: 3, EveryCycles: 10}, false, true, "units_over_limit"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			due, why := memory.Due(tc.b, tc.cycle, tc.p, tc.explicit)
			assert.Equal(t, tc.due, due)
			assert.Equal(t, tc.reason, why)
		})
	}
}

func TestCompactFoldsOldUnits(t *testing.T) {
	b := bindingWith(10, "check:b", "check:a", "", "check:b")
	beforeRef := b.Ref()
	beforeUnits := slices.Clone(b.Units)

	out, c, err := memory.Compact(b, nil, 11, "units_over_limit", memory.Policy{KeepUnits: 3, KeepBlocks: 4})
	require.NoError(t, err)

	// The newest KeepUnits units stay raw.
	require.Len(t, out.Units, 3)
	assert.Equal(t, []int64{8, 9, 10}, seqs(unitsOf(t, out)))
	assert.Equal(t, beforeUnits, b.Units, "Compact does not modify its input")

	// One block covers exactly the folded cycles.
	require.Len(t, out.Blocks, 1)
	blk := out.Blocks[0]
	assert.Equal(t, int64(1), blk.FromCycle)
	assert.Equal(t, int64(7), blk.ToCycle)
	assert.Equal(t, 7, blk.Units)
	assert.Equal(t, []string{"check:a", "check:b"}, blk.Items)
	assert.Equal(t, int64(11), blk.CompressionCycle)
	assert.Regexp(t, regexp.MustCompile(`^blk-[0-9a-f]{16}$`), blk.ID)
	var refs []byte
	for _, u := range decodeUnits(t, beforeUnits[:7]) {
		refs = append(refs, u.CycleRef...)
		for _, r := range u.EventRefs {
			refs = append(refs, r...)
		}
	}
	assert.Equal(t, codec.FingerprintOf(refs), blk.EventsDigest)

	// The compression record says exactly what left working memory.
	assert.Equal(t, memory.CompressionSchema, c.Schema)
	assert.Equal(t, int64(11), c.CycleSeq)
	assert.Equal(t, "units_over_limit", c.Trigger)
	assert.Equal(t, decodeUnits(t, beforeUnits[:7]), c.Summarised)
	assert.Equal(t, blk, c.Block)
	assert.Equal(t, []memory.Block{}, c.Dropped)
	assert.Equal(t, beforeRef, c.Before)
	assert.Equal(t, out.Ref(), c.After)
	assert.NotEqual(t, c.Before, c.After)

	// Every protected ref is carried over.
	for _, p := range protected {
		assert.Contains(t, out.Protected, p)
		assert.Contains(t, c.Protected, p)
	}
	assert.Equal(t, b.Protected, out.Protected)
	assert.Equal(t, int64(11), out.LastCompactionCycle)

	// Compaction is deterministic.
	out2, c2, err := memory.Compact(b, nil, 11, "units_over_limit", memory.Policy{KeepUnits: 3, KeepBlocks: 4})
	require.NoError(t, err)
	assert.Equal(t, out, out2)
	assert.Equal(t, c, c2)

	// A later compaction no longer reports the cycle as due by cadence.
	due, _ := memory.Due(out, 12, memory.Policy{EveryCycles: 5, KeepUnits: 3}, false)
	assert.False(t, due)
}

func seqs(us []memory.Unit) []int64 {
	out := []int64{}
	for _, u := range us {
		out = append(out, u.CycleSeq)
	}
	return out
}

func TestCompactWithNothingToFold(t *testing.T) {
	cases := []struct {
		name string
		b    memory.Binding
		keep int
	}{
		{"empty binding", memory.NewBinding(), 3},
		{"fewer units than kept", bindingWith(2), 3},
		{"exactly the kept units", bindingWith(3), 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, c, err := memory.Compact(tc.b, nil, 50, "cadence", memory.Policy{KeepUnits: tc.keep})
			require.NoError(t, err)
			assert.Equal(t, tc.b.Units, out.Units)
			assert.Empty(t, out.Blocks)
			assert.Equal(t, memory.Block{}, c.Block)
			assert.Empty(t, c.Summarised)
			assert.Equal(t, int64(50), out.LastCompactionCycle)
		})
	}

	// A negative KeepUnits folds everything.
	out, c, err := memory.Compact(bindingWith(4), nil, 5, "explicit_request", memory.Policy{KeepUnits: -2})
	require.NoError(t, err)
	assert.Empty(t, out.Units)
	assert.Equal(t, 4, c.Block.Units)
}

func TestCompactKeepBlocksDropsOldest(t *testing.T) {
	b := memory.NewBinding()
	var made []memory.Block
	seq := int64(0)
	for round := 0; round < 4; round++ {
		for i := 0; i < 3; i++ {
			seq++
			b = memory.Record(b, unit(seq, fmt.Sprintf("check:%d", round)), protected)
		}
		var c memory.Compression
		var err error
		seq++
		b, c, err = memory.Compact(b, nil, seq, "cadence", memory.Policy{KeepUnits: 0, KeepBlocks: 2})
		require.NoError(t, err)
		made = append(made, c.Block)
		switch round {
		case 0, 1:
			assert.Empty(t, c.Dropped, "round %d", round)
		default:
			assert.Equal(t, []memory.Block{made[round-2]}, c.Dropped, "round %d drops the oldest block", round)
		}
		assert.LessOrEqual(t, len(b.Blocks), 2)
		for _, p := range protected {
			assert.Contains(t, b.Protected, p, "round %d", round)
		}
	}
	assert.Equal(t, []memory.Block{made[2], made[3]}, b.Blocks)

	// BlockFor finds cycles in kept blocks only.
	for _, blk := range made[2:] {
		for cyc := blk.FromCycle; cyc <= blk.ToCycle; cyc++ {
			got, ok := b.BlockFor(cyc)
			require.True(t, ok, "cycle %d", cyc)
			assert.Equal(t, blk, got)
		}
	}
	for _, blk := range made[:2] {
		_, ok := b.BlockFor(blk.FromCycle)
		assert.False(t, ok, "cycle %d was in a dropped block", blk.FromCycle)
	}
	// The cycles that ran the compactions themselves were never units.
	_, ok := b.BlockFor(1000)
	assert.False(t, ok)
}

func TestCompactWithoutKeepBlocksKeepsEveryBlock(t *testing.T) {
	b := memory.NewBinding()
	for i := int64(1); i <= 5; i++ {
		b = memory.Record(b, unit(i, ""), nil)
		var err error
		b, _, err = memory.Compact(b, nil, i, "explicit_request", memory.Policy{})
		require.NoError(t, err)
	}
	assert.Len(t, b.Blocks, 5)
}

func TestBlockFor(t *testing.T) {
	b := memory.NewBinding()
	b.Blocks = []memory.Block{{ID: "blk-1", FromCycle: 1, ToCycle: 5}, {ID: "blk-2", FromCycle: 6, ToCycle: 6}, {ID: "blk-3", FromCycle: 10, ToCycle: 12}}
	cases := []struct {
		cycle int64
		id    string
	}{
		{1, "blk-1"}, {3, "blk-1"}, {5, "blk-1"}, {6, "blk-2"}, {10, "blk-3"}, {12, "blk-3"},
		{0, ""}, {7, ""}, {9, ""}, {13, ""},
	}
	for _, tc := range cases {
		got, ok := b.BlockFor(tc.cycle)
		assert.Equal(t, tc.id != "", ok, "cycle %d", tc.cycle)
		assert.Equal(t, tc.id, got.ID, "cycle %d", tc.cycle)
	}
}

func unitsOf(t *testing.T, b memory.Binding) []memory.Unit {
	t.Helper()
	us, err := b.UnitsOf()
	require.NoError(t, err)
	return us
}

func decodeUnits(t *testing.T, raw []codec.Canonical) []memory.Unit {
	t.Helper()
	return unitsOf(t, memory.Binding{Units: raw})
}

// TestCompactKeepsWhatTheCallerRequires: the refs the caller requires are
// checked against the compacted binding; one the binding does not carry
// fails the compaction and leaves the binding as it was.
func TestCompactKeepsWhatTheCallerRequires(t *testing.T) {
	b := bindingWith(12)
	kept := memory.Protected{Kind: "commitment", Ref: "c1@v1"}
	b = memory.Record(b, memory.Unit{CycleSeq: 13}, []memory.Protected{kept})
	_, _, err := memory.Compact(b, []memory.Protected{kept}, 13, "cadence", memory.Policy{KeepUnits: 2})
	require.NoError(t, err)
	lost := memory.Protected{Kind: "pending_approval", Ref: "areq:x"}
	out, _, err := memory.Compact(b, []memory.Protected{kept, lost}, 13, "cadence", memory.Policy{KeepUnits: 2})
	require.ErrorIs(t, err, memory.ErrProtectedLost)
	assert.Equal(t, b.Ref(), out.Ref(), "a failed compaction keeps the binding")
}
