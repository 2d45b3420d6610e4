package ledger

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// backends runs a test against every disk.FS implementation.
func backends(t *testing.T, fn func(t *testing.T, fsys disk.FS)) {
	t.Helper()
	t.Run("os", func(t *testing.T) {
		d, err := disk.CreateOSDir(t.TempDir())
		require.NoError(t, err)
		fn(t, d)
	})
	t.Run("mem", func(t *testing.T) { fn(t, disk.NewMem()) })
}

func testEvents(n int, cycle int64) []event.Event {
	var evs []event.Event
	for i := range n {
		obj, _ := event.NewObject("note", map[string]any{"i": i, "text": fmt.Sprintf("event <%d> ü", i)})
		evs = append(evs, event.Event{Type: "test.event", RunID: "run:test", CycleSeq: cycle, At: "2026-01-01T00:00:00Z", Object: obj,
			Reasons: []string{"because"}})
	}
	return evs
}

func TestAppendOpenRoundTrip(t *testing.T) {
	backends(t, func(t *testing.T, fsys disk.FS) {
		l, err := Create(fsys)
		require.NoError(t, err)
		_, err = Create(fsys)
		require.ErrorIs(t, err, ErrExists)

		recs, err := l.Append(testEvents(3, 1))
		require.NoError(t, err)
		require.Len(t, recs, 3)
		more, err := l.Append(testEvents(2, 2))
		require.NoError(t, err)
		front := l.Frontier()
		assert.Equal(t, int64(5), front.Seq)
		assert.Equal(t, more[1].Hash, front.Hash)
		require.NoError(t, l.Close())

		l2, err := Open(fsys)
		require.NoError(t, err)
		defer l2.Close()
		assert.Equal(t, front, l2.Frontier())
		assert.Nil(t, l2.Torn())

		all, err := l2.ReadRange(state.GenesisFrontier(), front.Offset)
		require.NoError(t, err)
		require.Len(t, all, 5)
		for i, r := range all {
			assert.Equal(t, int64(i+1), r.Seq)
			ref, err := r.Event.Ref()
			require.NoError(t, err)
			assert.Equal(t, ref, r.Ref)
		}
		assert.Equal(t, recs[0].Ref, all[0].Ref)

		one, err := ReadAt(fsys, all[3].Offset)
		require.NoError(t, err)
		assert.Equal(t, all[3].Hash, one.Hash)

		rep, err := Verify(fsys, nil)
		require.NoError(t, err)
		assert.True(t, rep.OK)
		assert.Equal(t, int64(5), rep.Events)
		assert.Equal(t, front, rep.Frontier)
		require.NoError(t, l2.CheckFrontier(frontierOf(all[2])))
	})
}

func frontierOf(r event.Record) state.Frontier {
	return state.Frontier{Seq: r.Seq, Hash: r.Hash, Offset: r.Offset + r.Length}
}

func TestLinesAreCanonicalJSON(t *testing.T) {
	fsys := disk.NewMem()
	l, err := Create(fsys)
	require.NoError(t, err)
	_, err = l.Append(testEvents(2, 1))
	require.NoError(t, err)
	data, err := fsys.ReadFile(FileName)
	require.NoError(t, err)
	for _, ln := range bytes.SplitAfter(data, []byte("\n")) {
		if len(ln) == 0 {
			continue
		}
		_, err := codec.ParseCanonical(ln[:len(ln)-1])
		assert.NoError(t, err, "line %q", ln)
	}
}

// TestTornTailEveryOffset cuts the last line at every byte offset and checks
// that the tear is detected, repaired once with a .broken copy, and that the
// ledger continues cleanly afterwards.
func TestTornTailEveryOffset(t *testing.T) {
	base := disk.NewMem()
	l, err := Create(base)
	require.NoError(t, err)
	_, err = l.Append(testEvents(3, 1))
	require.NoError(t, err)
	good := l.Frontier()
	last, err := l.Append(testEvents(1, 2))
	require.NoError(t, err)
	full, err := base.ReadFile(FileName)
	require.NoError(t, err)

	cases := 0
	for cut := last[0].Offset + 1; cut < int64(len(full)); cut++ {
		cases++
		fsys := disk.NewMem()
		require.NoError(t, fsys.MkdirAll("ledger"))
		require.NoError(t, fsys.WriteFile(FileName, full[:cut]))

		lt, err := Open(fsys)
		require.NoError(t, err, "cut at %d", cut)
		require.NotNil(t, lt.Torn(), "cut at %d not detected", cut)
		assert.Equal(t, good, lt.Frontier())
		_, err = lt.Append(testEvents(1, 3))
		require.ErrorIs(t, err, ErrTornTail)

		rep, err := Verify(fsys, nil)
		require.NoError(t, err)
		assert.True(t, rep.OK)
		require.NotNil(t, rep.Torn)

		tr, torn, err := lt.RepairTail()
		require.NoError(t, err)
		assert.Equal(t, good.Offset, tr.Offset)
		assert.Equal(t, full[good.Offset:cut], torn)
		broken, err := fsys.ReadFile(FileName + ".broken")
		require.NoError(t, err)
		assert.Contains(t, string(broken), string(torn))

		_, err = lt.Append(testEvents(1, 3))
		require.NoError(t, err)
		rep, err = Verify(fsys, nil)
		require.NoError(t, err)
		assert.True(t, rep.OK)
		assert.Nil(t, rep.Torn)
		assert.Equal(t, int64(4), rep.Events)
	}
	require.Greater(t, cases, 100, "the last line should be long enough to cut in many places")
}

// TestFlippedByteIsNamed flips each byte of a middle line in turn; Verify
// must report that line (or, when the flip lands on the newline, the line
// it merges with) and never accept the file.
func TestFlippedByteIsNamed(t *testing.T) {
	fsys := disk.NewMem()
	l, err := Create(fsys)
	require.NoError(t, err)
	recs, err := l.Append(testEvents(5, 1))
	require.NoError(t, err)
	full, err := fsys.ReadFile(FileName)
	require.NoError(t, err)

	mid := recs[2]
	for i := mid.Offset; i < mid.Offset+mid.Length; i++ {
		damaged := bytes.Clone(full)
		damaged[i] ^= 0x01
		f2 := disk.NewMem()
		require.NoError(t, f2.MkdirAll("ledger"))
		require.NoError(t, f2.WriteFile(FileName, damaged))
		rep, err := Verify(f2, nil)
		require.NoError(t, err)
		require.False(t, rep.OK, "flip at byte %d not detected", i)
		assert.Equal(t, int64(3), rep.Damage.Line, "flip at byte %d", i)
		assert.ErrorIs(t, rep.Damage, ErrCorrupt)
	}
}

func TestCheckFrontier(t *testing.T) {
	fsys := disk.NewMem()
	l, err := Create(fsys)
	require.NoError(t, err)
	recs, err := l.Append(testEvents(3, 1))
	require.NoError(t, err)
	require.NoError(t, l.CheckFrontier(frontierOf(recs[1])))
	require.NoError(t, l.CheckFrontier(state.GenesisFrontier()))

	ahead := frontierOf(recs[2])
	ahead.Seq, ahead.Offset = 9, ahead.Offset+500
	assert.ErrorIs(t, l.CheckFrontier(ahead), ErrBehind)

	wrong := frontierOf(recs[1])
	wrong.Hash = recs[0].Hash
	assert.ErrorIs(t, l.CheckFrontier(wrong), ErrCorrupt)
}

func TestAppendSurvivesPowerLoss(t *testing.T) {
	fsys := disk.NewMem()
	l, err := Create(fsys)
	require.NoError(t, err)
	_, err = l.Append(testEvents(2, 1))
	require.NoError(t, err)
	front := l.Frontier()
	fsys.Crash()
	l2, err := Open(fsys)
	require.NoError(t, err)
	assert.Equal(t, front, l2.Frontier())
}

func TestAppendWithoutFsyncIsLost(t *testing.T) {
	// The sharpness check for the ledger's own fsync: with it switched off,
	// a power loss loses the batch.
	fsys := disk.NewMem()
	l, err := Create(fsys)
	require.NoError(t, err)
	fsys.SkipSync(func(op disk.SyncOp) bool { return op.Name == FileName })
	_, err = l.Append(testEvents(2, 1))
	require.NoError(t, err)
	fsys.Crash()
	l2, err := Open(fsys)
	require.NoError(t, err)
	assert.Equal(t, int64(0), l2.Frontier().Seq)
}

func TestOpenMissing(t *testing.T) {
	_, err := Open(disk.NewMem())
	require.Error(t, err)
	assert.True(t, IsNotExist(err))
}

func TestVerifyLongLine(t *testing.T) {
	dir := t.TempDir()
	fsys, err := disk.CreateOSDir(dir)
	require.NoError(t, err)
	l, err := Create(fsys)
	require.NoError(t, err)
	big, err := event.NewObject("blob", map[string]string{"data": string(bytes.Repeat([]byte("x"), 3<<20))})
	require.NoError(t, err)
	_, err = l.Append([]event.Event{{Type: "big", RunID: "r", Object: big}})
	require.NoError(t, err)
	_, err = l.Append(testEvents(1, 1))
	require.NoError(t, err)
	rep, err := Verify(fsys, nil)
	require.NoError(t, err)
	assert.True(t, rep.OK)
	assert.Equal(t, int64(2), rep.Events)
	info, err := os.Stat(filepath.Join(dir, FileName))
	require.NoError(t, err)
	assert.Equal(t, info.Size(), rep.Frontier.Offset)
}

// FuzzVerify: Verify never panics, and whatever it accepts as a complete
// ledger can be opened with the same frontier.
func FuzzVerify(f *testing.F) {
	fsys := disk.NewMem()
	l, _ := Create(fsys)
	_, _ = l.Append(testEvents(3, 1))
	data, _ := fsys.ReadFile(FileName)
	f.Add(data)
	f.Add(data[:len(data)-7])
	f.Fuzz(func(t *testing.T, data []byte) {
		rep, err := chain.Verify(bytes.NewReader(data), int64(len(data)), nil, nil)
		if err != nil || !rep.OK {
			return
		}
		m := disk.NewMem()
		_ = m.MkdirAll("ledger")
		_ = m.WriteFile(FileName, data)
		opened, err := Open(m)
		if err != nil {
			t.Fatalf("verified ledger does not open: %v", err)
		}
		if opened.Frontier() != rep.Frontier {
			t.Fatalf("frontier %+v from tail, %+v from verify", opened.Frontier(), rep.Frontier)
		}
	})
}

// TestReadAfter reads what follows a checkpoint's frontier without a
// writer's handle: every record after it, a torn last line left out, and
// a frontier beyond the file refused as behind.
func TestReadAfter(t *testing.T) {
	backends(t, func(t *testing.T, fsys disk.FS) {
		l, err := Create(fsys)
		require.NoError(t, err)
		first, err := l.Append(testEvents(2, 1))
		require.NoError(t, err)
		more, err := l.Append(testEvents(3, 2))
		require.NoError(t, err)
		require.NoError(t, l.Close())
		at := frontierOf(first[1])

		got, err := ReadAfter(fsys, at)
		require.NoError(t, err)
		require.Len(t, got, 3)
		for i, r := range got {
			assert.Equal(t, more[i].Hash, r.Hash)
			assert.Equal(t, more[i].Offset, r.Offset)
		}
		got, err = ReadAfter(fsys, frontierOf(more[2]))
		require.NoError(t, err)
		assert.Empty(t, got)

		f, err := fsys.OpenAppend(FileName)
		require.NoError(t, err)
		_, err = f.Write([]byte(`{"seq":6,"torn`))
		require.NoError(t, err)
		require.NoError(t, f.Close())
		got, err = ReadAfter(fsys, at)
		require.NoError(t, err)
		assert.Len(t, got, 3, "a torn last line is not a record")

		_, err = ReadAfter(fsys, state.Frontier{Seq: 99, Hash: more[2].Hash, Offset: 1 << 20})
		assert.ErrorIs(t, err, ErrBehind)
		_, err = ReadAfter(fsys, state.Frontier{Seq: at.Seq, Hash: state.GenesisHash, Offset: at.Offset})
		var de *DamageError
		assert.ErrorAs(t, err, &de, "a frontier whose hash is not the ledger's does not chain")
	})
}
