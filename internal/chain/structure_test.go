package chain

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// rec is one record of a structure test: its kind and cycle.
type rec struct {
	kind  event.Kind
	cycle int64
}

// cycle is the records of one whole quiet cycle n.
func cycle(n int64) []rec {
	return []rec{{event.CycleStarted, n}, {event.Observed, n}, {event.DecisionRecorded, n}, {event.CycleCompleted, n}, {event.LoopIdled, n}}
}

// acting is cycle n with an effect: its intent and its outcome.
func acting(n int64) []rec {
	return []rec{{event.CycleStarted, n}, {event.DecisionRecorded, n}, {event.ActionIntent, n}, {event.ActionCommitted, n}, {event.CycleCompleted, n}}
}

func join(parts ...[]rec) []rec {
	var out []rec
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

var prologue = []rec{{event.GoalPinned, 0}, {event.ContractPinned, 0}, {event.SpecPinned, 0}, {event.RunStarted, 0}, {event.CheckpointCreated, 0}}

func TestStructure(t *testing.T) {
	interrupted := []rec{{event.CycleStarted, 3}, {event.DecisionRecorded, 3}, {event.ActionIntent, 3}}
	tests := []struct {
		name string
		recs []rec
		// bad is the 1-based index of the record that breaks the
		// structure (0: none) and a word its message holds.
		bad  int
		msg  string
		open int64 // the cycle open at the end
	}{
		{name: "whole cycles", recs: join(prologue, cycle(1), acting(2), cycle(3))},
		{name: "a fault between cycles", recs: join(prologue, cycle(1), []rec{{event.ProviderFailed, 1}, {event.RunFaulted, 1}, {event.CheckpointCreated, 1}}, cycle(2))},
		{name: "an interrupted cycle at the end", recs: join(prologue, cycle(1), acting(2), interrupted), open: 3},
		{name: "an interrupted cycle recovered", recs: join(prologue, cycle(1), acting(2), interrupted,
			[]rec{{event.RecoveryStarted, 2}, {event.ActionCommitted, 3}, {event.CycleCompleted, 3}, {event.RecoveryCompleted, 3}}, cycle(4))},
		{name: "an uncertain effect handed to a person", recs: join(prologue, interrupted[:0], []rec{{event.CycleStarted, 1}, {event.ActionIntent, 1},
			{event.ApprovalRequested, 1}, {event.CycleCompleted, 1}})},
		{name: "an abandoned cycle started again", recs: join(prologue, cycle(1), []rec{{event.CycleStarted, 2}, {event.Observed, 2},
			{event.RecoveryStarted, 1}, {event.TailRepaired, 1}, {event.CycleAbandoned, 1}, {event.RecoveryCompleted, 1}}, cycle(2))},
		{name: "a foreign kind anywhere", recs: join(prologue, []rec{{"test.note", 7}}, cycle(1))},

		{name: "the same cycle twice", recs: join(prologue, cycle(1), cycle(1)), bad: 11, msg: "cycle 1 starts after cycle 1 completed"},
		{name: "a cycle skipped", recs: join(prologue, cycle(1), cycle(3)), bad: 11, msg: "cycles must follow each other"},
		{name: "an open intent overtaken", recs: join(prologue, cycle(1), acting(2), interrupted, cycle(3)), bad: 19, msg: "its intent at seq 18 has no outcome"},
		{name: "an open cycle overtaken", recs: join(prologue, []rec{{event.CycleStarted, 1}, {event.Observed, 1}}, cycle(2)), bad: 8, msg: "starts while cycle 1 is open"},
		{name: "a cycle completes without its outcome", recs: join(prologue, []rec{{event.CycleStarted, 1}, {event.ActionIntent, 1}, {event.CycleCompleted, 1}}),
			bad: 8, msg: "without the outcome of its intent"},
		{name: "a completion out of order", recs: join(prologue, []rec{{event.CycleStarted, 1}, {event.CycleCompleted, 2}}), bad: 7, msg: "cycle 2 completes, but cycle 1 is the open one"},
		{name: "a completion with nothing open", recs: join(prologue, cycle(1), []rec{{event.CycleCompleted, 1}}), bad: 11, msg: "no cycle is open"},
		{name: "an event of another cycle inside one", recs: join(prologue, []rec{{event.CycleStarted, 1}, {event.Observed, 2}}), bad: 7, msg: "inside cycle 1"},
		{name: "an event of a cycle not started", recs: join(prologue, []rec{{event.DecisionRecorded, 1}}), bad: 6, msg: "outside any cycle"},
		{name: "an intent outside a cycle", recs: join(prologue, cycle(1), []rec{{event.ActionIntent, 1}}), bad: 11, msg: "outside that cycle"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s Structure
			bad := 0
			for i, r := range tc.recs {
				if err := s.Next(r.kind, r.cycle, int64(i+1)); err != nil {
					bad = i + 1
					assert.Contains(t, err.Error(), tc.msg)
					break
				}
			}
			assert.Equal(t, tc.bad, bad, "the record that breaks the structure")
			if tc.bad == 0 {
				open, ok := s.Open()
				assert.Equal(t, tc.open, open)
				assert.Equal(t, tc.open != 0, ok)
			}
		})
	}
}

// structureEvents are events of the given kinds and cycles.
func structureEvents(recs []rec) []event.Event {
	evs := make([]event.Event, len(recs))
	for i, r := range recs {
		evs[i] = event.Event{Type: r.kind, RunID: "run:shape", CycleSeq: r.cycle, At: "2026-01-01T00:00:00Z"}
	}
	return evs
}

// TestVerifyChecksStructure: Verify finds a broken cycle structure in a
// ledger whose chain is whole, names its line, and refuses a checkpoint
// frontier inside an open cycle; a cycle left open at the end is not
// damage. The structure is checked across the chunks Verify cuts the file
// into.
func TestVerifyChecksStructure(t *testing.T) {
	write := func(t *testing.T, recs []rec) ([]byte, []event.Record) {
		return history(t, structureEvents(recs))
	}
	verify := func(b []byte, expect *state.Frontier) (Report, error) {
		return Verify(bytes.NewReader(b), int64(len(b)), expect, nil)
	}
	var whole []rec
	whole = append(whole, prologue...)
	for n := int64(1); n <= 200; n++ {
		whole = append(whole, acting(n)...)
	}
	mem, all := write(t, whole)
	require.Len(t, all, len(whole))
	for _, chunk := range []int{256, 4096, verifyChunkSize} {
		rep, err := verifyChunks(bytes.NewReader(mem), int64(len(mem)), nil, nil, 3, chunk)
		require.NoError(t, err)
		require.True(t, rep.OK, "chunks of %d: %v", chunk, rep.Damage)
		require.Equal(t, int64(len(whole)), rep.Events)
	}

	// The bug of issue 32: a checkpoint over an open cycle, then the
	// cycle run again.
	open := append(append([]rec{}, prologue...), acting(1)...)
	open = append(open, rec{event.CycleStarted, 2}, rec{event.DecisionRecorded, 2}, rec{event.ActionIntent, 2})
	mem, all = write(t, open)
	rep, err := verify(mem, nil)
	require.NoError(t, err)
	require.True(t, rep.OK, "an interrupted last cycle is what a crash leaves: %v", rep.Damage)
	last := all[len(all)-1]
	rep, err = verify(mem, &state.Frontier{Seq: last.Seq, Hash: last.Hash, Offset: last.Offset + last.Length})
	require.NoError(t, err)
	require.False(t, rep.OK)
	assert.Contains(t, rep.Damage.Error(), "the checkpoint's frontier is inside cycle 2")
	assert.Equal(t, int64(len(open)), rep.Damage.Line)

	again := append(append([]rec{}, open...), acting(2)...)
	mem, _ = write(t, again)
	rep, err = verify(mem, nil)
	require.NoError(t, err)
	require.False(t, rep.OK)
	assert.Equal(t, int64(len(open)+1), rep.Damage.Line)
	assert.True(t, strings.Contains(rep.Damage.Error(), "cycle 2 starts while cycle 2 is open"), rep.Damage.Error())
}
