package jsstore

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// The events are of a kind acr does not write, so that ledger verify
// holds them to no place in a cycle's frame.
func testEvents(tag string, n int, cycle int64) []event.Event {
	evs := make([]event.Event, n)
	for i := range evs {
		obj, err := event.NewObject("note", map[string]any{"tag": tag, "i": i, "text": "<ü> \u2028 \"quoted\""})
		if err != nil {
			panic(err)
		}
		evs[i] = event.Event{Type: "test.note", RunID: "run:lines", CycleSeq: cycle, At: "2026-01-01T00:00:00Z", Object: obj,
			Reasons: []string{"test"}, Refs: map[string]codec.Ref{"self": obj.Ref}}
	}
	return evs
}

// TestLinesMatchLedger: the local copy of the ledger's line encoding
// writes, on the same events, exactly the bytes the file ledger writes;
// and the JetStream ledger's messages are those lines, one per message,
// with the same records (seq, chain, hash, ref, length).
func TestLinesMatchLedger(t *testing.T) {
	batches := [][]event.Event{testEvents("a", 1, 1), testEvents("b", 10, 2), testEvents("c", 3, 3)}

	mem := disk.NewMem()
	fl, err := ledger.Create(mem)
	require.NoError(t, err)
	var fileRecs []event.Record
	for _, b := range batches {
		recs, err := fl.Append(b)
		require.NoError(t, err)
		fileRecs = append(fileRecs, recs...)
	}
	file, err := mem.ReadFile(ledger.FileName)
	require.NoError(t, err)

	var local []byte
	front := state.GenesisFrontier()
	for _, b := range batches {
		lines, recs, err := encodeEvents(front, b)
		require.NoError(t, err)
		for _, l := range lines {
			local = append(local, l...)
		}
		last := recs[len(recs)-1]
		front = state.Frontier{Seq: last.Seq, Hash: last.Hash}
	}
	require.True(t, bytes.Equal(file, local), "encodeLine differs from the ledger's")

	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:lines")
	require.NoError(t, err)
	jl, err := r.CreateLedger()
	require.NoError(t, err)
	var jsRecs []event.Record
	for _, b := range batches {
		recs, err := jl.Append(b)
		require.NoError(t, err)
		jsRecs = append(jsRecs, recs...)
	}
	var stored []byte
	var n int
	require.NoError(t, s.blocks.Ledger.Read(ctx(t), r.ID, 0, func(rec jetstream.Record) error {
		n++
		stored = append(stored, rec.Data...)
		return nil
	}))
	require.Equal(t, len(fileRecs), n, "one message per record")
	require.True(t, bytes.Equal(file, stored), "the messages are the file's lines")

	read, err := jl.After(state.GenesisFrontier())
	require.NoError(t, err)
	for i := range fileRecs {
		for _, got := range []event.Record{jsRecs[i], read[i]} {
			require.Equal(t, fileRecs[i].Seq, got.Seq)
			require.Equal(t, fileRecs[i].Chain, got.Chain)
			require.Equal(t, fileRecs[i].Hash, got.Hash)
			require.Equal(t, fileRecs[i].Ref, got.Ref)
			require.Equal(t, fileRecs[i].Length, got.Length)
		}
	}
	require.Equal(t, fl.Frontier().Seq, jl.Frontier().Seq)
	require.Equal(t, fl.Frontier().Hash, jl.Frontier().Hash)

	_, err = r.CreateLedger()
	require.ErrorIs(t, err, ledger.ErrExists)
}

// A message that is not exactly one valid line is corruption, found by
// the ledger's own checks.
func TestDecodeRefusesDamage(t *testing.T) {
	lines, _, err := encodeEvents(state.GenesisFrontier(), testEvents("d", 2, 1))
	require.NoError(t, err)
	_, err = decodeLines(state.GenesisFrontier(), lines)
	require.NoError(t, err)

	flipped := bytes.Clone(lines[1])
	flipped[len(flipped)/2] ^= 1
	for name, bodies := range map[string][][]byte{
		"flipped byte":      {lines[0], flipped},
		"two lines":         {append(bytes.Clone(lines[0]), lines[1]...)},
		"no newline":        {lines[0][:len(lines[0])-1]},
		"broken chain":      {lines[1]},
		"skipped seq":       {lines[0], lines[0]},
		"empty":             {{}},
		"not a ledger line": {[]byte("{}\n")},
	} {
		_, err := decodeLines(state.GenesisFrontier(), bodies)
		require.ErrorIs(t, err, ledger.ErrCorrupt, name)
	}
}
