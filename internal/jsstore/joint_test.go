package jsstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// A held batch and the checkpoint after it in one atomic batch
// (Acr-Frontier: batch): the manifest returned and loaded is the one a
// separate append and commit give (its frontier's stream sequence filled
// in from the batch), the records read, and a plain commit (the layout
// without the header, which earlier releases wrote and this one still
// writes when there is nothing held) goes on over it and loads. A writer
// whose ledger or generation is stale stores nothing of either. A
// checkpoint whose Acr-Frontier is unknown, or claims the batch without
// records in it, is damage.
func TestJointAppendAndCommit(t *testing.T) {
	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, l, c, m1 := initRun(t, s, "run:joint", "CONTINUE", "")
	j := Joint{Ledger: l, Checkpoints: c}

	m2, err := j.AppendAndCommit(testEvents("held", 4, 2), storage.Commit{Expect: m1.Generation, RunID: r.ID, CycleSeq: 2, Files: runState("SLEEP", "")})
	require.NoError(t, err)
	require.Equal(t, l.Frontier(), m2.LedgerFrontier, "the checkpoint is at the ledger's end after the records")
	require.NotZero(t, m2.LedgerFrontier.Offset)
	require.Equal(t, m2.Sum(), m2.Checksum)
	_, h, _, err := s.blocks.Ledger.CheckpointWithHeader(ctx(t), r.ID)
	require.NoError(t, err)
	require.Equal(t, frontierInBatch, h.Get(hdrFrontier))

	// The manifest a separate append and commit write.
	want, _, err := encodeCheckpoint(storage.Commit{Expect: m1.Generation, RunID: r.ID, CycleSeq: 2, Frontier: l.Frontier(), Files: runState("SLEEP", "")})
	require.NoError(t, err)
	require.Equal(t, want, m2)

	r2, err := s.Run(ctx(t), r.ID)
	require.NoError(t, err)
	snap, err := r2.Checkpoints().Load()
	require.NoError(t, err)
	require.Equal(t, m2, snap.Manifest, "loaded as committed")
	l2, err := r2.OpenLedger()
	require.NoError(t, err)
	require.Equal(t, m2.LedgerFrontier, l2.Frontier())
	require.NoError(t, l2.CheckFrontier(snap.Manifest.LedgerFrontier))
	recs, err := l2.After(state.GenesisFrontier())
	require.NoError(t, err)
	require.Len(t, recs, 7)

	// A plain commit over it, then another joint one.
	m3, err := c.Commit(storage.Commit{Expect: m2.Generation, RunID: r.ID, CycleSeq: 3, Frontier: l.Frontier(), Files: runState("IDLE", "")})
	require.NoError(t, err)
	snap, err = r.Checkpoints().Load()
	require.NoError(t, err)
	require.Equal(t, m3, snap.Manifest)
	m4, err := j.AppendAndCommit(testEvents("more", 2, 4), storage.Commit{Expect: m3.Generation, RunID: r.ID, CycleSeq: 4, Files: runState("SLEEP", "")})
	require.NoError(t, err)
	snap, err = r.Checkpoints().Load()
	require.NoError(t, err)
	require.Equal(t, m4, snap.Manifest)

	// A stale writer: another appended since; nothing of either stored.
	other, err := r.OpenLedger()
	require.NoError(t, err)
	_, err = other.Append(testEvents("other", 1, 5))
	require.NoError(t, err)
	end := other.Frontier()
	_, err = j.AppendAndCommit(testEvents("stale", 2, 5), storage.Commit{Expect: m4.Generation, RunID: r.ID, CycleSeq: 5, Files: runState("IDLE", "")})
	require.ErrorIs(t, err, storage.ErrConflict)
	again, err := r.OpenLedger()
	require.NoError(t, err)
	require.Equal(t, end, again.Frontier(), "no record stored")
	snap, err = r.Checkpoints().Load()
	require.NoError(t, err)
	require.Equal(t, m4, snap.Manifest, "no checkpoint stored")

	// Damage: a frontier header this release does not write, or the
	// batch claimed for a commit without records.
	for name, hdr := range map[string]string{"unknown": "elsewhere", "claimed": frontierInBatch} {
		bad, err := s.Run(ctx(t), "run:bad-"+name)
		require.NoError(t, err)
		bl, err := bad.CreateLedger()
		require.NoError(t, err)
		_, err = bl.Append(testEvents("b", 1, 1))
		require.NoError(t, err)
		_, doc, err := encodeCheckpoint(storage.Commit{RunID: bad.ID, CycleSeq: 1, Frontier: bl.Frontier(), Files: runState("IDLE", "")})
		require.NoError(t, err)
		h := map[string][]string{hdrGeneration: {"1"}, hdrFrontier: {hdr}}
		_, err = s.blocks.Ledger.CommitBatch(ctx(t), bad.ID, jetstream.Frontier{Ledger: uint64(bl.Frontier().Offset)},
			jetstream.Batch{Checkpoint: doc, Header: h, Status: []byte("{}")})
		require.NoError(t, err)
		_, err = bad.Checkpoints().Load()
		var ie *state.IntegrityError
		require.ErrorAs(t, err, &ie, name)
	}
}
