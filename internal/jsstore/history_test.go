package jsstore

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/storage"
)

// TestHistoryMatchesLedger: a run's History reads the same records as the
// file ledger's Reader on the same events, although another run's records
// are interleaved in the stream; Verify against the checkpoint's frontier
// is ok and reports the frontier's stream sequence; a run without records
// has an empty history.
func TestHistoryMatchesLedger(t *testing.T) {
	batches := [][]event.Event{testEvents("a", 1, 1), testEvents("b", 10, 2), testEvents("c", 3, 3)}
	mem := disk.NewMem()
	fl, err := ledger.Create(mem)
	require.NoError(t, err)
	for _, b := range batches {
		_, err := fl.Append(b)
		require.NoError(t, err)
	}
	want, err := ledger.ReadAll(mem)
	require.NoError(t, err)

	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:lines")
	require.NoError(t, err)
	jl, err := r.CreateLedger()
	require.NoError(t, err)
	other, err := s.Run(ctx(t), "run:other")
	require.NoError(t, err)
	ol, err := other.CreateLedger()
	require.NoError(t, err)
	for _, b := range batches {
		_, err := jl.Append(b)
		require.NoError(t, err)
		_, err = ol.Append(testEvents("other", 2, 1))
		require.NoError(t, err)
	}
	_, err = r.Checkpoints().Commit(storage.Commit{RunID: r.ID, CycleSeq: 3, Frontier: jl.Frontier(), Files: runState("SLEEP", "")})
	require.NoError(t, err)

	h, err := r.History()
	require.NoError(t, err)
	got, err := h.ReadAll()
	require.NoError(t, err)
	require.Len(t, got, len(want))
	for i := range want {
		require.Equal(t, want[i].Seq, got[i].Seq)
		require.Equal(t, want[i].Hash, got[i].Hash)
		require.Equal(t, want[i].Ref, got[i].Ref)
		require.Equal(t, want[i].Event.Type, got[i].Event.Type)
	}
	expect, err := h.Expect()
	require.NoError(t, err)
	require.NotNil(t, expect)
	rep, err := h.Verify(expect)
	require.NoError(t, err)
	require.True(t, rep.OK, "%v", rep.Damage)
	require.Equal(t, int64(len(want)), rep.Events)
	require.Equal(t, jl.Frontier(), rep.Frontier)

	empty, err := s.Run(ctx(t), "run:empty")
	require.NoError(t, err)
	eh, err := empty.History()
	require.NoError(t, err)
	recs, err := eh.ReadAll()
	require.NoError(t, err)
	require.Empty(t, recs)
	expect, err = eh.Expect()
	require.NoError(t, err)
	require.Nil(t, expect)
}
