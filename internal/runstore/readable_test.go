package runstore_test

import (
	"context"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/audit"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/perf"
	"github.com/acr-project/acr/internal/runstore"
)

// TestVerifiedHistoriesAreReadable: whatever a ledger's records are, in
// whatever order, if acr ledger verify accepts it, the readers follow it:
// every completed cycle is found (acr log), explained (acr audit), and
// replay walks the history without a structural error. The records come
// from a real run with an interrupted effect recovered, then are moved,
// dropped and copied at random and chained again (a valid chain of the
// wrong history: what an outage once left, a cycle run twice or an
// intent without its outcome). Before verify checked the structure, it
// accepted such ledgers while log, audit and replay failed on them
// ("cycle 31 completes out of order").
func TestVerifiedHistoriesAreReadable(t *testing.T) {
	dir := t.TempDir()
	_, err := runstore.Init(t.Context(), dir, perf.QueueInputs(5), "run:shape", false, realOptions())
	require.NoError(t, err)
	opt := realOptions()
	opt.WrapWorld = func(x kernel.World) kernel.World { return &landsThenFails{World: x, n: 2} }
	r, err := runstore.Open(t.Context(), dir, opt)
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 20, nil)
	require.ErrorIs(t, err, errUnknown)
	require.NoError(t, r.Close())
	r, err = runstore.Open(t.Context(), dir, realOptions())
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 20, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	recs, err := ledger.ReadAll(osFS(t, dir))
	require.NoError(t, err)
	require.True(t, slices.ContainsFunc(recs, func(r event.Record) bool { return r.Event.Type == event.RecoveryStarted }))
	first := slices.IndexFunc(recs, func(r event.Record) bool { return r.Event.Type == event.CycleStarted })
	evs := make([]event.Event, len(recs))
	for i, r := range recs {
		evs[i] = r.Event
	}

	rng := rand.New(rand.NewPCG(32, 7))
	accepted, refused := 0, 0
	for trial := range 400 {
		mut := slices.Clone(evs)
		for range 1 + rng.IntN(3) {
			i := first + rng.IntN(len(mut)-first)
			switch rng.IntN(3) {
			case 0: // drop a record
				mut = slices.Delete(mut, i, i+1)
			case 1: // copy a record after itself or elsewhere
				j := first + rng.IntN(len(mut)-first)
				mut = slices.Insert(mut, j, mut[i])
			case 2: // move a record
				e := mut[i]
				mut = slices.Delete(mut, i, i+1)
				j := first + rng.IntN(len(mut)-first+1)
				mut = slices.Insert(mut, j, e)
			}
		}
		mem := disk.NewMem()
		l, err := ledger.Create(mem)
		require.NoError(t, err)
		_, err = l.Append(mut)
		require.NoError(t, err)
		rep, err := ledger.Verify(mem, nil)
		require.NoError(t, err)
		if !rep.OK {
			refused++
			continue
		}
		accepted++
		all, err := ledger.ReadAll(mem)
		require.NoError(t, err)
		rd := ledger.NewReader(mem)
		for _, rec := range all {
			if rec.Event.Type != event.CycleCompleted {
				continue
			}
			c := rec.Event.CycleSeq
			_, err := rd.Cycle(c)
			require.NoError(t, err, "trial %d: log of cycle %d on a ledger verify accepts", trial, c)
			_, err = audit.Explain(rd, c)
			require.NoError(t, err, "trial %d: audit of cycle %d on a ledger verify accepts", trial, c)
		}
		_, err = kernel.Replay(all, 1)
		require.NoError(t, err, "trial %d: replay on a ledger verify accepts", trial)
	}
	t.Logf("%d mutated ledgers: verify accepted %d (log, audit and replay read each), refused %d", accepted+refused, accepted, refused)
	require.Positive(t, accepted)
	require.Positive(t, refused)
}
