package jsstore

import (
	"bytes"
	"strings"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// TestFormatOneStaysReadable: a ledger an earlier release wrote (format
// 1: one message per record, no Acr-Lines header) is read by this one
// (its frontier, every record, from any of its frontiers, its whole
// history byte for byte as the file ledger's), appended to in the packed
// format, and read across the two.
func TestFormatOneStaysReadable(t *testing.T) {
	batches := [][]event.Event{testEvents("a", 3, 1), testEvents("b", 1, 2), testEvents("c", 4, 3)}
	mem := disk.NewMem()
	fl, err := ledger.Create(mem)
	require.NoError(t, err)
	for _, b := range batches {
		_, err := fl.Append(b)
		require.NoError(t, err)
	}
	file, err := mem.ReadFile(ledger.FileName)
	require.NoError(t, err)

	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:lines")
	require.NoError(t, err)

	// What an earlier release stored: each append one atomic batch of one
	// message per line, without headers of acr's own.
	front := state.GenesisFrontier()
	fronts := []state.Frontier{front}
	var all []event.Record
	for _, b := range batches[:2] {
		lines, recs, err := encodeEvents(front, b)
		require.NoError(t, err)
		c, err := s.blocks.Ledger.CommitBatch(ctx(t), r.ID, jetstream.Frontier{Ledger: uint64(front.Offset)}, jetstream.Batch{Records: lines})
		require.NoError(t, err)
		for i := range recs {
			recs[i].Offset = int64(c.First) + int64(i)
		}
		all = append(all, recs...)
		last := recs[len(recs)-1]
		front = state.Frontier{Seq: last.Seq, Hash: last.Hash, Offset: int64(c.Frontier.Ledger)}
		fronts = append(fronts, front)
	}

	l, err := r.OpenLedger()
	require.NoError(t, err)
	require.Equal(t, front, l.Frontier(), "the frontier of a format 1 ledger")
	for _, f := range fronts {
		require.NoError(t, l.CheckFrontier(f))
	}
	got, err := l.After(state.GenesisFrontier())
	require.NoError(t, err)
	require.Equal(t, all, got)
	got, err = l.After(fronts[1])
	require.NoError(t, err)
	require.Equal(t, all[3:], got)

	recs, err := l.Append(batches[2])
	require.NoError(t, err)
	all = append(all, recs...)
	fronts = append(fronts, l.Frontier())
	for _, f := range fronts {
		require.NoError(t, l.CheckFrontier(f))
	}
	for i, f := range fronts {
		l2, err := r.OpenLedger()
		require.NoError(t, err)
		require.Equal(t, l.Frontier(), l2.Frontier())
		got, err := l2.After(f)
		require.NoError(t, err)
		want := all[f.Seq:]
		require.Len(t, got, len(want), "after frontier %d", i)
		for j := range want {
			require.Equal(t, want[j].Hash, got[j].Hash)
			require.Equal(t, want[j].Offset, got[j].Offset)
		}
	}

	var stored []byte
	var headers []string
	require.NoError(t, s.blocks.Ledger.Read(ctx(t), r.ID, 0, func(rec jetstream.Record) error {
		body, err := s.pack.unpack(rec.Data, rec.Header.Get(hdrEncoding))
		require.NoError(t, err)
		stored = append(stored, body...)
		headers = append(headers, rec.Header.Get(hdrLines)+" "+rec.Header.Get(hdrEncoding))
		return nil
	}))
	require.Equal(t, []string{" ", " ", " ", " ", "4 zstd-d1"}, headers, "four format 1 messages, then one packed and compressed")
	require.True(t, bytes.Equal(file, stored))

	h, err := r.History()
	require.NoError(t, err)
	require.True(t, bytes.Equal(file, h.Bytes()), "the history across both formats is the file ledger's bytes")
	rep, err := h.Verify(nil)
	require.NoError(t, err)
	require.True(t, rep.OK, "%v", rep.Damage)
	require.Equal(t, l.Frontier().Seq, rep.Frontier.Seq)
	require.Equal(t, l.Frontier().Offset, rep.Frontier.Offset, "the verified frontier's Offset is its message's stream sequence")
}

// TestUncompressedCheckpointStaysReadable: a checkpoint an earlier release
// committed (its document as it is, no Acr-Encoding) loads, and the next
// commit over it, compressed, loads to the same kind of snapshot.
func TestUncompressedCheckpointStaysReadable(t *testing.T) {
	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:raw")
	require.NoError(t, err)
	l, err := r.CreateLedger()
	require.NoError(t, err)
	_, err = l.Append(testEvents("r", 2, 1))
	require.NoError(t, err)
	files := runState("SLEEP", "")
	files["big"] = bytes.Repeat([]byte(`{"a":"compressible"}`), 4000)
	cm := storage.Commit{RunID: r.ID, CycleSeq: 1, Frontier: l.Frontier(), Files: files}
	m, doc, err := encodeCheckpoint(cm)
	require.NoError(t, err)
	_, err = s.blocks.Ledger.CommitBatch(ctx(t), r.ID, jetstream.Frontier{Ledger: uint64(l.Frontier().Offset)},
		jetstream.Batch{Checkpoint: doc, Header: nats.Header{hdrGeneration: {"1"}}, Status: []byte("{}")})
	require.NoError(t, err)

	c := r.Checkpoints()
	snap, err := c.Load()
	require.NoError(t, err)
	require.Equal(t, m, snap.Manifest)
	require.Equal(t, files, snap.Files)

	cm.Expect, cm.CycleSeq = 1, 2
	m2, err := c.Commit(cm)
	require.NoError(t, err)
	_, h, _, err := s.blocks.Ledger.CheckpointWithHeader(ctx(t), r.ID)
	require.NoError(t, err)
	require.Equal(t, encZstdDict, h.Get(hdrEncoding), "this release compresses")
	snap, err = r.Checkpoints().Load()
	require.NoError(t, err)
	require.Equal(t, m2, snap.Manifest)
	require.Equal(t, files, snap.Files)
}

// An append whose lines pass one message's room is several messages of
// whole lines in one atomic batch: every record reads back, each with the
// stream sequence of its own message, and the history is the file
// ledger's bytes.
func TestAppendPastOneMessage(t *testing.T) {
	big := testEvents(strings.Repeat("x", 300<<10), 5, 1) // five lines of about 300 KiB
	mem := disk.NewMem()
	fl, err := ledger.Create(mem)
	require.NoError(t, err)
	_, err = fl.Append(big)
	require.NoError(t, err)
	file, err := mem.ReadFile(ledger.FileName)
	require.NoError(t, err)

	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:big")
	require.NoError(t, err)
	l, err := r.CreateLedger()
	require.NoError(t, err)
	recs, err := l.Append(big)
	require.NoError(t, err)

	var counts []string
	var seqs []int64
	require.NoError(t, s.blocks.Ledger.Read(ctx(t), r.ID, 0, func(rec jetstream.Record) error {
		counts = append(counts, rec.Header.Get(hdrLines))
		seqs = append(seqs, int64(rec.Seq))
		return nil
	}))
	require.Greater(t, len(counts), 1, "more than one message")
	require.Equal(t, seqs[len(seqs)-1], l.Frontier().Offset)
	got, err := l.After(state.GenesisFrontier())
	require.NoError(t, err)
	require.Len(t, got, 5)
	for i := range recs {
		require.Equal(t, recs[i].Hash, got[i].Hash)
		require.Equal(t, recs[i].Offset, got[i].Offset, "record %d: its message's stream sequence", i)
		require.Contains(t, seqs, got[i].Offset)
	}
	require.NotEqual(t, got[0].Offset, got[4].Offset)
	for i, rec := range got {
		f := state.Frontier{Seq: rec.Seq, Hash: rec.Hash, Offset: rec.Offset}
		l2, err := r.OpenLedger()
		require.NoError(t, err)
		require.NoError(t, l2.CheckFrontier(f), "record %d", i)
		after, err := l2.After(f)
		require.NoError(t, err)
		require.Len(t, after, 4-i, "after record %d", i)
	}
	h, err := r.History()
	require.NoError(t, err)
	require.True(t, bytes.Equal(file, h.Bytes()))
}

// TestZstdWithoutDictionaryStaysReadable: the release before this one
// compressed ledger messages and checkpoints without a dictionary
// (Acr-Encoding: zstd). Such a ledger message and such a checkpoint are
// read by this one (the records, the frontier, the snapshot), and what
// is appended and committed over them is written with dictionary 1
// (Acr-Encoding: zstd-d1) and read across both.
func TestZstdWithoutDictionaryStaysReadable(t *testing.T) {
	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:zstd")
	require.NoError(t, err)
	plain, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	require.NoError(t, err)

	// The ledger message and the checkpoint as the release before wrote
	// them.
	lines, recs, err := encodeEvents(state.GenesisFrontier(), testEvents("z", 6, 1))
	require.NoError(t, err)
	h := linesHeaders([]int{len(lines)})
	h[0].Set(hdrEncoding, encZstd)
	c, err := s.blocks.Ledger.CommitBatch(ctx(t), r.ID, jetstream.Frontier{},
		jetstream.Batch{Records: [][]byte{plain.EncodeAll(bytes.Join(lines, nil), nil)}, RecordHeaders: h})
	require.NoError(t, err)
	front := state.Frontier{Seq: recs[5].Seq, Hash: recs[5].Hash, Offset: int64(c.Frontier.Ledger)}
	files := runState("SLEEP", "")
	files["big"] = bytes.Repeat([]byte(`{"a":"compressible"}`), 4000)
	cm := storage.Commit{RunID: r.ID, CycleSeq: 1, Frontier: front, Files: files}
	m, doc, err := encodeCheckpoint(cm)
	require.NoError(t, err)
	_, err = s.blocks.Ledger.CommitBatch(ctx(t), r.ID, jetstream.Frontier{Ledger: c.Frontier.Ledger},
		jetstream.Batch{Checkpoint: plain.EncodeAll(doc, nil), Header: nats.Header{hdrGeneration: {"1"}, hdrEncoding: {encZstd}}, Status: []byte("{}")})
	require.NoError(t, err)

	l, err := r.OpenLedger()
	require.NoError(t, err)
	require.Equal(t, front, l.Frontier())
	require.NoError(t, l.CheckFrontier(front))
	cp := r.Checkpoints()
	snap, err := cp.Load()
	require.NoError(t, err)
	require.Equal(t, m, snap.Manifest)
	require.Equal(t, files, snap.Files)

	more, err := l.Append(testEvents("d", 3, 2))
	require.NoError(t, err)
	cm.Expect, cm.CycleSeq, cm.Frontier = 1, 2, l.Frontier()
	m2, err := cp.Commit(cm)
	require.NoError(t, err)
	var encs []string
	require.NoError(t, s.blocks.Ledger.Read(ctx(t), r.ID, 0, func(rec jetstream.Record) error {
		encs = append(encs, rec.Header.Get(hdrEncoding))
		return nil
	}))
	require.Equal(t, []string{encZstd, encZstdDict}, encs, "the old message, then one with the dictionary")
	_, ch, _, err := s.blocks.Ledger.CheckpointWithHeader(ctx(t), r.ID)
	require.NoError(t, err)
	require.Equal(t, encZstdDict, ch.Get(hdrEncoding))

	l2, err := r.OpenLedger()
	require.NoError(t, err)
	all, err := l2.After(state.GenesisFrontier())
	require.NoError(t, err)
	require.Len(t, all, 9)
	require.Equal(t, more[2].Hash, all[8].Hash)
	require.Equal(t, recs[0].Hash, all[0].Hash)
	snap, err = r.Checkpoints().Load()
	require.NoError(t, err)
	require.Equal(t, m2, snap.Manifest)
	require.Equal(t, files, snap.Files)
}
