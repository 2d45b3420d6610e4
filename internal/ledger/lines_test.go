package ledger

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
)

// mixedEvents has several types, objects that themselves contain a "type"
// member, and a type with characters the line scanner must not interpret.
func mixedEvents() []event.Event {
	decoy, _ := event.NewObject("note", map[string]any{"type": "wanted.event", "zz": `"type":"wanted.event"`})
	return []event.Event{
		{Type: "wanted.event", RunID: "run:test", CycleSeq: 1, Reasons: []string{"a"}},
		{Type: "other.event", RunID: "run:test", CycleSeq: 1, Object: decoy},
		{Type: "wanted.event", RunID: "run:test", CycleSeq: 1, Object: decoy},
		{Type: `odd"type\with.escapes`, RunID: "run:test", CycleSeq: 2},
		{Type: "other.event", RunID: "run:test", CycleSeq: 2},
		{Type: "wanted.event", RunID: "run:test", CycleSeq: 2},
	}
}

// TestScanLinesMatchesScan: every line comes with the type Scan decodes,
// and Line.Record gives exactly the record Scan gives.
func TestScanLinesMatchesScan(t *testing.T) {
	backends(t, func(t *testing.T, fsys disk.FS) {
		l, err := Create(fsys)
		require.NoError(t, err)
		_, err = l.Append(mixedEvents())
		require.NoError(t, err)
		_, err = l.Append(testEvents(3, 3))
		require.NoError(t, err)

		want, err := ReadAll(fsys)
		require.NoError(t, err)
		var got []event.Record
		require.NoError(t, ScanLines(fsys, func(ln Line) error {
			r, err := ln.Record()
			require.NoError(t, err)
			assert.Equal(t, r.Event.Type, ln.Type)
			got = append(got, r)
			return nil
		}))
		assert.Equal(t, want, got)
	})
}

// TestScanLinesFindsDamageInAnyLine: a line is hashed and chained even
// when its event is never decoded, so a flipped byte anywhere stops the
// scan and names the line.
func TestScanLinesFindsDamageInAnyLine(t *testing.T) {
	fsys := disk.NewMem()
	l, err := Create(fsys)
	require.NoError(t, err)
	recs, err := l.Append(mixedEvents())
	require.NoError(t, err)
	full, err := fsys.ReadFile(FileName)
	require.NoError(t, err)
	mid := recs[1]
	n := 0
	for i := mid.Offset; i < mid.Offset+mid.Length-1; i++ { // the newline itself merges two lines
		damaged := bytes.Clone(full)
		damaged[i] ^= 0x01
		f2 := disk.NewMem()
		require.NoError(t, f2.MkdirAll("ledger"))
		require.NoError(t, f2.WriteFile(FileName, damaged))
		err := ScanLines(f2, func(Line) error { return nil })
		var de *DamageError
		require.ErrorAs(t, err, &de, "flip at byte %d not detected", i)
		assert.Equal(t, int64(2), de.Line, "flip at byte %d", i)
		assert.ErrorIs(t, err, ErrCorrupt)
		n++
	}
	require.Greater(t, n, 100)
}

// TestScanLinesIgnoresTornTail: an uncommitted last line is not read.
func TestScanLinesIgnoresTornTail(t *testing.T) {
	fsys := disk.NewMem()
	l, err := Create(fsys)
	require.NoError(t, err)
	_, err = l.Append(mixedEvents())
	require.NoError(t, err)
	full, err := fsys.ReadFile(FileName)
	require.NoError(t, err)
	require.NoError(t, fsys.WriteFile(FileName, append(full, `{"chain":"sha256:`...)))
	n := 0
	require.NoError(t, ScanLines(fsys, func(Line) error { n++; return nil }))
	assert.Equal(t, 6, n)
}
