package memory

import (
	"fmt"

	"github.com/acr-project/acr/internal/codec"
)

// PointedSchema names a compaction record whose summarised units are
// pointers (ledger format 2).
const PointedSchema = "acr.context-compression/v0.2"

// UnitPointer stands for a summarised unit in a compaction record: the
// cycle it was, and what it decided. The unit's event refs are not copied:
// they are the refs of that cycle's events in the ledger (all but its
// controller transitions), which is where an audit reads them, and the
// block's EventsDigest still pins them.
type UnitPointer struct {
	CycleSeq    int64  `json:"cycle_seq"`
	Events      int    `json:"events"`
	Item        string `json:"item,omitempty"`
	Verdict     string `json:"verdict,omitempty"`
	Disposition string `json:"disposition"`
}

// PointedCompression is a Compression whose summarised units are
// pointers into the ledger rather than copies. A compaction of fifty
// cycles copied some 90 KB of refs the ledger already held.
type PointedCompression struct {
	Schema     string        `json:"schema"`
	CycleSeq   int64         `json:"cycle_seq"`
	Trigger    string        `json:"trigger"`
	Summarised []UnitPointer `json:"summarised"`
	Block      Block         `json:"block"`
	Dropped    []Block       `json:"dropped_blocks"`
	Protected  []Protected   `json:"protected"`
	Before     codec.Ref     `json:"binding_before"`
	After      codec.Ref     `json:"binding_after"`
}

// Pointed returns the compaction with its units as pointers.
func (c Compression) Pointed() PointedCompression {
	p := PointedCompression{Schema: PointedSchema, CycleSeq: c.CycleSeq, Trigger: c.Trigger, Summarised: make([]UnitPointer, 0, len(c.Summarised)),
		Block: c.Block, Dropped: c.Dropped, Protected: c.Protected, Before: c.Before, After: c.After}
	for _, u := range c.Summarised {
		p.Summarised = append(p.Summarised, UnitPointer{CycleSeq: u.CycleSeq, Events: len(u.EventRefs), Item: u.Item, Verdict: u.Verdict, Disposition: u.Disposition})
	}
	return p
}

// CompactionView is what readers need of a compaction record in either
// form.
type CompactionView struct {
	CycleSeq int64
	Trigger  string
	Block    Block
	// Cycles are the summarised cycles, oldest first.
	Cycles []int64
}

// Covers reports whether the compaction summarised cycle.
func (v CompactionView) Covers(cycle int64) bool {
	for _, c := range v.Cycles {
		if c == cycle {
			return true
		}
	}
	return false
}

// ViewCompaction decodes a compaction record's body, in the form its
// schema names.
func ViewCompaction(body []byte) (CompactionView, error) {
	val, err := codec.ParseCanonical(body)
	if err != nil {
		return CompactionView{}, fmt.Errorf("compaction record: %w", err)
	}
	schema := ""
	for _, m := range val.Obj {
		if m.Key == "schema" && m.Val.Kind == codec.KindString {
			schema = m.Val.Str
		}
	}
	switch schema {
	case CompressionSchema:
		var c Compression
		if err := codec.UnmarshalCanonical(body, &c); err != nil {
			return CompactionView{}, fmt.Errorf("compaction record: %w", err)
		}
		v := CompactionView{CycleSeq: c.CycleSeq, Trigger: c.Trigger, Block: c.Block}
		for _, u := range c.Summarised {
			v.Cycles = append(v.Cycles, u.CycleSeq)
		}
		return v, nil
	case PointedSchema:
		var c PointedCompression
		if err := codec.UnmarshalCanonical(body, &c); err != nil {
			return CompactionView{}, fmt.Errorf("compaction record: %w", err)
		}
		v := CompactionView{CycleSeq: c.CycleSeq, Trigger: c.Trigger, Block: c.Block}
		for _, u := range c.Summarised {
			v.Cycles = append(v.Cycles, u.CycleSeq)
		}
		return v, nil
	}
	return CompactionView{}, fmt.Errorf("compaction record: schema %q is neither %s nor %s", schema, CompressionSchema, PointedSchema)
}
