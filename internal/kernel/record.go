package kernel

import (
	"cmp"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// recorder is the record and emit part of a cycle's builder: the cycle's
// number and clock reading, the events it emits (each linked to the one
// before as its causal parent), and the cycle record and summary it
// fills in. It knows nothing of what the events mean.
type recorder struct {
	runID string
	cycle int64
	now   time.Time
	at    string
	// clock is the reading events and controller transitions are made
	// at: at, until the cycle goes on from a later input (a proposer's
	// reply, an effect's outcome; tick, ledger format 3). State keeps
	// the cycle's own reading, at.
	clock string
	// envRef is the ref of s.Environment, the cycle's observation, which
	// does not change within the cycle; startCheckpointRef is the ref of
	// the checkpoint the cycle starts from (ledger format 2 on). Each is
	// computed once: several records of the cycle name them.
	envRef             codec.Ref
	startCheckpointRef codec.Ref
	events             []event.Event
	refs               []codec.Ref // refs of all events of the cycle, in order
	// isTransition marks which of refs are controller transitions.
	isTransition []bool
	last         codec.Ref
	nEvents      int64 // events emitted by the cycle, both batches
	err          error
	rec          state.CycleRecord
	reasons      []string
	sum          Summary
}

// fail keeps the cycle's first error: the cycle fails with it.
func (b *recorder) fail(err error) {
	if b.err == nil {
		b.err = err
	}
}

// memoryRefs are the refs of the cycle's events working memory keeps.
func (b *recorder) memoryRefs() []codec.Ref {
	out := make([]codec.Ref, 0, len(b.refs))
	for i, r := range b.refs {
		if !b.isTransition[i] {
			out = append(out, r)
		}
	}
	return out
}

// emit appends an event, sealed: its canonical bytes are computed once,
// for its ref here and for its line in the ledger. obj may be nil.
func (b *recorder) emit(typ event.Kind, obj *event.Object, refs map[string]codec.Ref, reasons ...string) codec.Ref {
	ev := event.Event{Type: typ, RunID: b.runID, CycleSeq: b.cycle, At: cmp.Or(b.clock, b.at), Refs: refs, Reasons: reasons, Object: obj}
	if b.last != "" {
		ev.Parents = []codec.Ref{b.last}
	}
	ref, err := ev.Seal()
	if err != nil {
		b.fail(err)
		return ""
	}
	b.events = append(b.events, ev)
	b.refs = append(b.refs, ref)
	b.isTransition = append(b.isTransition, typ == event.Transition || typ == event.Transitions)
	b.last = ref
	b.nEvents++
	return ref
}

// object wraps v as a content-addressed object.
func (b *recorder) object(kind string, v any) (*event.Object, codec.Ref) {
	obj, err := event.NewObject(kind, v)
	if err != nil {
		b.fail(err)
		return nil, ""
	}
	return obj, obj.Ref
}

// record emits an event that carries v and returns v's ref.
func (b *recorder) record(typ event.Kind, kind string, v any, refs map[string]codec.Ref, reasons ...string) codec.Ref {
	obj, ref := b.object(kind, v)
	b.emit(typ, obj, refs, reasons...)
	return ref
}
