// Package memory is the run's working memory: the active context binding
// that a cycle starts from, and its compaction. Each cycle adds one unit
// (the cycle's ref and the refs of its events). When the binding grows past
// a limit, or enough cycles have passed, older units are folded into a
// summary block that names the ledger events it covers, and a
// ContextCompression record says exactly what left working memory.
//
// Compaction forgets working detail, never history (WorkingMemory !=
// HistoricalLedger, DiscardedFromContext != DeletedFromLedger): it never
// touches the ledger, and protected refs (live commitments, strategy source
// versions, contract and authority, pending approvals, deferred evidence)
// are carried through every compaction. A summary block is a pointer into
// evidence, not evidence (SummaryBlock != Evidence).
package memory

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
)

// Schema names.
const (
	BindingSchema     = "acr.context-binding/v0.1"
	CompressionSchema = "acr.context-compression/v0.1"
)

// Unit is one cycle's entry in working memory.
type Unit struct {
	CycleSeq    int64       `json:"cycle_seq"`
	CycleRef    codec.Ref   `json:"cycle_ref"`
	EventRefs   []codec.Ref `json:"event_refs"`
	Item        string      `json:"item,omitempty"`
	Verdict     string      `json:"verdict,omitempty"`
	Disposition string      `json:"disposition"`
}

// Protected is a ref that must survive every compaction.
type Protected struct {
	Kind string `json:"kind"` // commitment | strategy_source | contract | authority | goal | pending_approval | deferred_evidence
	Ref  string `json:"ref"`
}

// Block summarises a run of compacted units.
type Block struct {
	ID        string `json:"id"`
	FromCycle int64  `json:"from_cycle"`
	ToCycle   int64  `json:"to_cycle"`
	Units     int    `json:"units"`
	// EventsDigest is the SHA-256 over the summarised event refs, in
	// order; the compression record lists the refs themselves.
	EventsDigest codec.Fingerprint `json:"events_digest"`
	Items        []string          `json:"items"`
	// CompressionCycle is the cycle whose compaction made the block; its
	// compression record is in that cycle's events.
	CompressionCycle int64 `json:"compression_cycle"`
}

// Binding is the active context binding.
//
// Units are kept as their canonical bytes: the binding is re-hashed every
// cycle, and a unit, once recorded, never changes, so it is encoded once.
// The bytes are exactly what encoding the Unit would give, so the
// binding's JSON is the same as if it held Unit values.
type Binding struct {
	Schema              string            `json:"schema"`
	Units               []codec.Canonical `json:"units"`
	Blocks              []Block           `json:"blocks"`
	Protected           []Protected       `json:"protected"`
	LastCompactionCycle int64             `json:"last_compaction_cycle"`
}

// NewBinding returns an empty binding.
func NewBinding() Binding {
	return Binding{Schema: BindingSchema, Units: []codec.Canonical{}, Blocks: []Block{}, Protected: []Protected{}}
}

// Ref returns the binding's ref.
func (b Binding) Ref() codec.Ref { return codec.MustRefOf(bindingKind, b) }

// Record adds a cycle's unit and refreshes the protected refs.
func Record(b Binding, u Unit, protected []Protected) Binding {
	out := b
	out.Units = append(slices.Clone(b.Units), codec.Canonical(codec.MustMarshal(u)))
	out.Protected = normalise(protected)
	return out
}

// UnitsOf decodes the binding's units.
func (b Binding) UnitsOf() ([]Unit, error) {
	out := make([]Unit, 0, len(b.Units))
	for i, raw := range b.Units {
		var u Unit
		if err := codec.UnmarshalCanonical(raw, &u); err != nil {
			return nil, fmt.Errorf("working memory unit %d: %w", i, err)
		}
		out = append(out, u)
	}
	return out, nil
}

func normalise(ps []Protected) []Protected {
	out := slices.Clone(ps)
	if out == nil {
		out = []Protected{}
	}
	slices.SortFunc(out, func(a, b Protected) int {
		if c := strings.Compare(a.Kind, b.Kind); c != 0 {
			return c
		}
		return strings.Compare(a.Ref, b.Ref)
	})
	return slices.Compact(out)
}

// Policy says when and how much to compact.
type Policy struct {
	MaxUnits    int // compact when more units than this are held
	EveryCycles int // compact at least this often
	KeepUnits   int // most recent units kept raw
	KeepBlocks  int // summary blocks kept in the binding
}

// Due decides whether the cycle should compact, and why. It is the
// kernel's cadence decision (ContextCompactionCadence); Compact is the
// semantics.
func Due(b Binding, cycleSeq int64, p Policy, explicit bool) (bool, string) {
	switch {
	case explicit:
		return true, "explicit_request"
	case p.MaxUnits > 0 && len(b.Units) > p.MaxUnits:
		return true, "units_over_limit"
	case p.EveryCycles > 0 && cycleSeq-b.LastCompactionCycle >= int64(p.EveryCycles) && len(b.Units) > p.KeepUnits:
		return true, "cadence"
	}
	return false, ""
}

// Compression records one compaction.
type Compression struct {
	Schema     string      `json:"schema"`
	CycleSeq   int64       `json:"cycle_seq"`
	Trigger    string      `json:"trigger"`
	Summarised []Unit      `json:"summarised"`
	Block      Block       `json:"block"`
	Dropped    []Block     `json:"dropped_blocks"`
	Protected  []Protected `json:"protected"`
	Before     codec.Ref   `json:"binding_before"`
	After      codec.Ref   `json:"binding_after"`
}

// ErrProtectedLost means a compaction would have dropped a protected ref;
// the kernel treats it as a fault, never as a silent overflow.
var ErrProtectedLost = errors.New("compaction would drop a protected ref")

// Compact folds all but the newest KeepUnits units into one summary block,
// keeps at most KeepBlocks blocks, and carries every protected ref over.
// must is the set of refs the caller requires to survive, computed by the
// caller from its own state rather than read from b: the compacted binding
// must hold every one of them, or Compact fails with ErrProtectedLost and
// b is kept as it was.
func Compact(b Binding, must []Protected, cycleSeq int64, trigger string, p Policy) (Binding, Compression, error) {
	keep := min(max(p.KeepUnits, 0), len(b.Units))
	units, err := b.UnitsOf()
	if err != nil {
		return b, Compression{}, err
	}
	fold := units[:len(units)-keep]
	c := Compression{Schema: CompressionSchema, CycleSeq: cycleSeq, Trigger: trigger, Summarised: slices.Clone(fold),
		Dropped: []Block{}, Before: b.Ref()}
	out := Binding{Schema: BindingSchema, Units: slices.Clone(b.Units[len(b.Units)-keep:]), Blocks: slices.Clone(b.Blocks),
		Protected: normalise(b.Protected), LastCompactionCycle: cycleSeq}
	if len(fold) > 0 {
		// The digest covers every folded cycle's ref and event refs, one
		// after the other; hashed as they come rather than gathered into
		// one growing buffer first (growing it was a third of Compact's CPU).
		refs := sha256.New()
		var ref []byte // one ref at a time, reused
		items := []string{}
		for _, u := range fold {
			ref = append(ref[:0], u.CycleRef...)
			refs.Write(ref)
			for _, r := range u.EventRefs {
				ref = append(ref[:0], r...)
				refs.Write(ref)
			}
			if u.Item != "" && !slices.Contains(items, u.Item) {
				items = append(items, u.Item)
			}
		}
		slices.Sort(items)
		blk := Block{FromCycle: fold[0].CycleSeq, ToCycle: fold[len(fold)-1].CycleSeq, Units: len(fold),
			EventsDigest: codec.FingerprintSum(refs.Sum(nil)), Items: items, CompressionCycle: cycleSeq}
		blk.ID = "blk-" + codec.Digest(codec.MustMarshal(blk))[:16]
		c.Block = blk
		out.Blocks = append(out.Blocks, blk)
	}
	if p.KeepBlocks > 0 && len(out.Blocks) > p.KeepBlocks {
		n := len(out.Blocks) - p.KeepBlocks
		c.Dropped = slices.Clone(out.Blocks[:n])
		out.Blocks = slices.Clone(out.Blocks[n:])
	}
	for _, pr := range must {
		if !slices.Contains(out.Protected, pr) {
			return b, Compression{}, fmt.Errorf("%w: %s %s", ErrProtectedLost, pr.Kind, pr.Ref)
		}
	}
	c.Protected = out.Protected
	c.After = out.Ref()
	return out, c, nil
}

// BlockFor returns the summary block that covers a cycle, if the cycle has
// been compacted and the block is still in working memory.
func (b Binding) BlockFor(cycleSeq int64) (Block, bool) {
	for _, blk := range b.Blocks {
		if cycleSeq >= blk.FromCycle && cycleSeq <= blk.ToCycle {
			return blk, true
		}
	}
	return Block{}, false
}
