package ledger

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// cycleEvents is one cycle as the ledger's cycle reader expects it:
// started, n bodies with text long enough to make frames, completed.
func cycleEvents(cycle int64, n int) []event.Event {
	evs := []event.Event{{Type: event.CycleStarted, RunID: "run:test", CycleSeq: cycle, At: "2026-01-01T00:00:00Z"}}
	for i := range n {
		obj, _ := event.NewObject("note", map[string]any{"i": i, "text": strings.Repeat(fmt.Sprintf("cycle %d line %d ", cycle, i), 40)})
		evs = append(evs, event.Event{Type: "test.event", RunID: "run:test", CycleSeq: cycle, At: "2026-01-01T00:00:00Z", Object: obj})
	}
	return append(evs, event.Event{Type: event.CycleCompleted, RunID: "run:test", CycleSeq: cycle, At: "2026-01-01T00:00:00Z"})
}

// appendCycles appends cycles first..last, one batch each.
func appendCycles(t *testing.T, l *Ledger, first, last int64) {
	t.Helper()
	for c := first; c <= last; c++ {
		_, err := l.Append(cycleEvents(c, 60))
		require.NoError(t, err)
	}
}

// ledgerView is everything a reader can learn about a ledger, to compare
// before and after a seal.
type ledgerView struct {
	bytes    []byte
	records  []event.Record
	frontier state.Frontier
	cycles   map[int64][]string // cycle -> refs, read through the cycle reader
}

func viewOf(t *testing.T, fsys disk.FS, cycles int64) ledgerView {
	t.Helper()
	b, err := ReadBytes(fsys)
	require.NoError(t, err)
	recs, err := ReadAll(fsys)
	require.NoError(t, err)
	rep, err := Verify(fsys, nil)
	require.NoError(t, err)
	require.True(t, rep.OK, "verify: %v", rep.Damage)
	v := ledgerView{bytes: b, records: recs, frontier: rep.Frontier, cycles: map[int64][]string{}}
	r := NewReader(fsys)
	for c := int64(1); c <= cycles; c++ {
		got, err := r.Cycle(c)
		require.NoError(t, err, "cycle %d", c)
		for _, rec := range got {
			v.cycles[c] = append(v.cycles[c], string(rec.Ref))
		}
		done, err := r.CycleCompleted(c)
		require.NoError(t, err)
		require.Equal(t, got[len(got)-1].Ref, done.Ref)
	}
	for _, rec := range recs[:min(len(recs), 50)] {
		one, err := ReadAt(fsys, rec.Offset)
		require.NoError(t, err)
		require.Equal(t, rec.Ref, one.Ref)
	}
	return v
}

// TestSealKeepsTheLedger: sealing changes where the ledger's bytes are
// kept and nothing a reader sees: the same bytes, records, offsets,
// cycles and frontier, across several seals and appends between them,
// and the ledger goes on from where it was.
func TestSealKeepsTheLedger(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		t.Run(fmt.Sprintf("compress ahead %v", ahead), func(t *testing.T) { testSealKeepsTheLedger(t, ahead) })
	}
}

func testSealKeepsTheLedger(t *testing.T, ahead bool) {
	backends(t, func(t *testing.T, fsys disk.FS) {
		l, err := Create(fsys)
		require.NoError(t, err)
		l.CompressAhead = ahead
		ix, err := OpenIndex(fsys)
		require.NoError(t, err)
		l.Index = ix
		appendCycles(t, l, 1, 12)
		before := viewOf(t, fsys, 12)
		require.Greater(t, len(before.bytes), 2*frameSize, "the test needs segments of several frames")

		require.NoError(t, l.Seal(1<<40), "below the threshold nothing happens")
		_, err = fsys.ReadDir(SealedDir)
		require.True(t, errors.Is(err, fs.ErrNotExist), "no segment below the threshold")

		require.NoError(t, l.Seal(1))
		after := viewOf(t, fsys, 12)
		assert.Equal(t, before, after)
		hot, err := fsys.ReadFile(FileName)
		require.NoError(t, err)
		assert.Empty(t, hot, "events.jsonl is empty after a seal")

		appendCycles(t, l, 13, 15)
		require.NoError(t, l.Seal(1))
		appendCycles(t, l, 16, 16)
		front := l.Frontier()
		require.NoError(t, l.Close())
		require.NoError(t, ix.Close())

		entries, err := fsys.ReadDir(SealedDir)
		require.NoError(t, err)
		require.Len(t, entries, 2)
		all := viewOf(t, fsys, 16)
		assert.Equal(t, before.bytes, all.bytes[:len(before.bytes)])
		assert.Equal(t, front, all.frontier)
		sealed := 0
		for _, e := range entries {
			info, err := e.Info()
			require.NoError(t, err)
			sealed += int(info.Size())
		}
		assert.Less(t, sealed*4, len(all.bytes), "the segments are compressed")

		back, err := Open(fsys)
		require.NoError(t, err)
		back.CompressAhead = ahead
		assert.Equal(t, front, back.Frontier())
		require.NoError(t, back.CheckFrontier(before.frontier), "a frontier in sealed history is found")
		after16, err := back.After(before.frontier)
		require.NoError(t, err)
		assert.Len(t, after16, len(all.records)-len(before.records))
		_, err = back.Append(cycleEvents(17, 2))
		require.NoError(t, err)
		require.NoError(t, back.Seal(1), "a seal of lines an earlier handle appended and this one's")
		_, err = back.Append(cycleEvents(18, 2))
		require.NoError(t, err)
		require.NoError(t, back.Close())
		last := viewOf(t, fsys, 18)
		assert.Equal(t, all.bytes, last.bytes[:len(all.bytes)])
	})
}

// TestSealReaderKeepsItsView: a reader that opened the ledger before a
// seal reads it to the end through its own handle.
func TestSealReaderKeepsItsView(t *testing.T) {
	backends(t, func(t *testing.T, fsys disk.FS) {
		l, err := Create(fsys)
		require.NoError(t, err)
		appendCycles(t, l, 1, 3)
		want, err := ReadBytes(fsys)
		require.NoError(t, err)
		r, err := openLog(fsys, false)
		require.NoError(t, err)
		defer r.Close()
		require.NoError(t, l.Seal(1))
		size, err := r.Size()
		require.NoError(t, err)
		got := make([]byte, size)
		_, err = r.ReadAt(got, 0)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	})
}

// TestSealPowerLoss cuts the power before every operation a seal makes
// (and after its last): the ledger that comes back is whole and goes on.
// The seal's fsyncs are each needed: without one, some power loss loses
// history.
func TestSealPowerLoss(t *testing.T) {
	for _, tc := range []struct {
		ahead  bool
		segMax int64
	}{{false, 0}, {true, 0}, {false, 60_000}} {
		t.Run(fmt.Sprintf("compress ahead %v, segments of at most %d", tc.ahead, tc.segMax), func(t *testing.T) { testSealPowerLoss(t, tc.ahead, tc.segMax) })
	}
}

func testSealPowerLoss(t *testing.T, ahead bool, segMax int64) {
	type outcome struct {
		ops   int
		lost  bool
		whole bool
	}
	trial := func(t *testing.T, cutAt int, skip disk.SyncOp) outcome {
		mem := disk.NewMem()
		l, err := Create(mem)
		require.NoError(t, err)
		l.CompressAhead = ahead
		l.f.segmentMax = segMax
		appendCycles(t, l, 1, 3)
		require.NoError(t, l.Seal(1)) // a sealed segment before, so the new one follows it
		appendCycles(t, l, 4, 5)
		want, err := ReadBytes(mem)
		require.NoError(t, err)

		ops := 0
		mem.SkipSync(func(op disk.SyncOp) bool { return op == skip })
		mem.OnOp(func(disk.MemOp) {
			if ops == cutAt {
				panic(errPowerCut)
			}
			ops++
		})
		func() {
			defer func() {
				if r := recover(); r != nil && r != errPowerCut {
					panic(r)
				}
			}()
			require.NoError(t, l.Seal(1))
			if cutAt == -1 {
				return
			}
			panic(errPowerCut)
		}()
		mem.OnOp(nil)
		mem.SkipSync(nil)
		mem.Crash()

		got, err := ReadBytes(mem)
		if err != nil || string(got) != string(want) {
			return outcome{ops: ops, lost: true}
		}
		back, err := Open(mem)
		require.NoError(t, err)
		_, err = back.Append(cycleEvents(6, 2))
		require.NoError(t, err, "cut at op %d", cutAt)
		require.NoError(t, back.Close())
		mem.Crash()
		rep, err := Verify(mem, nil)
		require.NoError(t, err)
		got, err = ReadBytes(mem)
		require.NoError(t, err)
		return outcome{ops: ops, whole: rep.OK && string(got[:len(want)]) == string(want)}
	}

	// Every cut point with every fsync made.
	all := trial(t, 1<<30, disk.SyncOp{})
	require.Greater(t, all.ops, 5)
	for cut := 0; cut <= all.ops; cut++ {
		o := trial(t, cut, disk.SyncOp{})
		assert.False(t, o.lost, "cut before op %d of %d lost history", cut, all.ops)
		assert.True(t, o.whole, "cut before op %d of %d: the ledger does not go on whole", cut, all.ops)
	}

	// Each fsync the seal makes is needed: skipped, a cut after the seal
	// loses history.
	for _, skip := range []disk.SyncOp{
		{Dir: true, Name: SealedDir},
		{Dir: true, Name: "ledger"},
	} {
		lost := false
		for cut := 0; cut <= all.ops && !lost; cut++ {
			lost = trial(t, cut, skip).lost
		}
		assert.True(t, lost, "without the fsync of %+v no power loss loses history: it is not needed", skip)
	}
}

var errPowerCut = errors.New("power cut")

// TestSealedDamage: damage in sealed history is reported with the
// segment's name, never read past.
func TestSealedDamage(t *testing.T) {
	seal := func(t *testing.T) (*disk.Mem, []string) {
		mem := disk.NewMem()
		l, err := Create(mem)
		require.NoError(t, err)
		appendCycles(t, l, 1, 3)
		require.NoError(t, l.Seal(1))
		appendCycles(t, l, 4, 6)
		require.NoError(t, l.Seal(1))
		require.NoError(t, l.Close())
		entries, err := mem.ReadDir(SealedDir)
		require.NoError(t, err)
		var names []string
		for _, e := range entries {
			names = append(names, SealedDir+"/"+e.Name())
		}
		return mem, names
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, mem *disk.Mem, segs []string)
		want   string
	}{
		{"a flipped byte in a frame", func(t *testing.T, mem *disk.Mem, segs []string) {
			b, err := mem.ReadFile(segs[0])
			require.NoError(t, err)
			b[len(segmentMagic)+40] ^= 0xff
			require.NoError(t, mem.WriteFile(segs[0], b))
		}, "sealed segment " + SealedDir},
		{"a segment missing", func(t *testing.T, mem *disk.Mem, segs []string) {
			require.NoError(t, mem.Remove(segs[0]))
		}, "does not start where the history before it ends"},
		{"a cut trailer", func(t *testing.T, mem *disk.Mem, segs []string) {
			b, err := mem.ReadFile(segs[1])
			require.NoError(t, err)
			require.NoError(t, mem.WriteFile(segs[1], b[:len(b)-3]))
		}, "trailer"},
		{"a segment renamed to another range", func(t *testing.T, mem *disk.Mem, segs []string) {
			s, e, _, _ := parseSegmentName(strings.TrimPrefix(segs[1], SealedDir+"/"))
			require.NoError(t, mem.Rename(segs[1], SealedDir+"/"+segmentName(s, e+10)))
		}, "its name"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem, segs := seal(t)
			tc.damage(t, mem, segs)
			rep, err := Verify(mem, nil)
			if err == nil {
				require.False(t, rep.OK)
				err = rep.Damage
			}
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
			var de *DamageError
			assert.True(t, errors.As(err, &de), "damage is a DamageError: %v", err)
		})
	}
}

// TestSegmentRoundTrip: what encodeSegment writes, parseSegmentTable
// reads back, frame by frame, each frame whole lines.
func TestSegmentRoundTrip(t *testing.T) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(2))
	require.NoError(t, err)
	defer enc.Close()
	long := strings.Repeat("x", frameSize+100) + "\n"
	for _, lines := range []string{"a\n", strings.Repeat("some line\n", 60000), "short\n" + long + "tail\n"} {
		seg := encodeSegment(enc, 1000, []byte(lines))
		tbl, err := parseSegmentTable(seg, int64(len(seg)))
		require.NoError(t, err)
		assert.Equal(t, int64(1000), tbl.start)
		assert.Equal(t, int64(1000+len(lines)), tbl.end)
		var got []byte
		for _, fr := range tbl.frames {
			dec, err := zstd.NewReader(nil)
			require.NoError(t, err)
			data, err := dec.DecodeAll(seg[fr.at:fr.at+fr.length], nil)
			dec.Close()
			require.NoError(t, err)
			require.Equal(t, byte('\n'), data[len(data)-1], "a frame ends at a line's end")
			got = append(got, data...)
		}
		assert.Equal(t, lines, string(got))
	}
}

// FuzzSegmentTable: a segment's table is accepted only when it describes
// the whole file: frames that are not empty, laid end to end from the
// magic to the table, holding exactly the segment's range.
func FuzzSegmentTable(f *testing.F) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(encodeSegment(enc, 0, []byte("a\nb\n")))
	f.Add(encodeSegment(enc, 77, []byte(strings.Repeat("line of text\n", 30000))))
	enc.Close()
	f.Fuzz(func(t *testing.T, b []byte) {
		tbl, err := parseSegmentTable(b, int64(len(b)))
		if err != nil {
			return
		}
		at, off := int64(len(segmentMagic)), tbl.start
		for _, fr := range tbl.frames {
			if fr.at != at || fr.start != off || fr.raw <= 0 || fr.length <= 0 {
				t.Fatalf("frame %+v does not follow at %d, %d", fr, at, off)
			}
			at, off = at+fr.length, off+fr.raw
		}
		if off != tbl.end || at+int64(len(tbl.frames))*frameEntryLen+int64(trailerLen) != int64(len(b)) {
			t.Fatalf("table %+v does not describe the %d bytes", tbl, len(b))
		}
	})
}

// FuzzSegmentName: only names acr writes are read as segments.
func FuzzSegmentName(f *testing.F) {
	f.Add(segmentName(0, 10))
	f.Add(segmentName(10, 20) + pendingSuffix)
	f.Add("00000000000000000000-00000000000000000000.zst")
	f.Fuzz(func(t *testing.T, name string) {
		s, e, pending, ok := parseSegmentName(name)
		if !ok {
			return
		}
		want := segmentName(s, e)
		if pending {
			want += pendingSuffix
		}
		if name != want || e <= s || s < 0 {
			t.Fatalf("accepted %q (%d-%d, pending %v)", name, s, e, pending)
		}
	})
}

// TestSealMakesPendingWritesDurable: a batch Write left pending goes into
// the segment, so once Seal returns a power loss keeps it.
func TestSealMakesPendingWritesDurable(t *testing.T) {
	for _, ahead := range []bool{false, true} {
		mem := disk.NewMem()
		l, err := Create(mem)
		require.NoError(t, err)
		l.CompressAhead = ahead
		appendCycles(t, l, 1, 2)
		_, err = l.Write(cycleEvents(3, 5))
		require.NoError(t, err)
		want := l.Frontier()
		require.NoError(t, l.Seal(1))
		require.NoError(t, l.Sync(), "nothing is left to sync")
		mem.Crash()
		back, err := Open(mem)
		require.NoError(t, err)
		assert.Equal(t, want, back.Frontier(), "compress ahead %v", ahead)
	}
}

// TestSealLongFileInSegments: a seal of a long events.jsonl (a run that
// did not seal before) writes segments of bounded size, one after the
// other, and the ledger reads as before.
func TestSealLongFileInSegments(t *testing.T) {
	mem := disk.NewMem()
	l, err := Create(mem)
	require.NoError(t, err)
	appendCycles(t, l, 1, 10)
	before := viewOf(t, mem, 10)
	l.f.segmentMax = 100_000
	require.NoError(t, l.Seal(1))
	entries, err := mem.ReadDir(SealedDir)
	require.NoError(t, err)
	require.Greater(t, len(entries), 3, "several segments")
	for _, e := range entries {
		s, end, pending, ok := parseSegmentName(e.Name())
		require.True(t, ok && !pending, e.Name())
		assert.LessOrEqual(t, end-s, int64(100_000))
	}
	assert.Equal(t, before, viewOf(t, mem, 10))
	_, err = l.Append(cycleEvents(11, 3))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	viewOf(t, mem, 11)
}
