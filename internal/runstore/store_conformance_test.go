package runstore

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// storeKind opens a fresh, empty store of one kind, as OpenStore does
// for the commands, and names the run the commands would ask it for.
type storeKind struct {
	name  string
	open  func(t *testing.T) Store
	runID string
	// leases says whether the store has leases (a JetStream store) or a
	// lock of the operating system's (a state directory).
	leases bool
}

func storeKinds() []storeKind {
	return []storeKind{
		{name: "directory", runID: "", open: func(t *testing.T) Store {
			dir := t.TempDir()
			s, err := OpenStore(t.Context(), "dir:"+dir, Connection{}, dir)
			require.NoError(t, err)
			return s
		}},
		{name: "jetstream", runID: "run:conformance", leases: true, open: func(t *testing.T) Store {
			rs := startStore(t)
			s, err := OpenStore(t.Context(), rs.url, Connection{}, t.TempDir())
			require.NoError(t, err)
			t.Cleanup(func() { _ = s.Close() })
			return s
		}},
	}
}

// TestStoreConformance: the commands speak to a store only through
// Store and RunStore, so every store must keep the same promises: a run
// created once, read without its lock, taken and given back, its queue
// deduplicated, its history whole and verifiable, exported and imported
// byte for byte, previewed without a write, and recovered clean at rest.
func TestStoreConformance(t *testing.T) {
	for _, k := range storeKinds() {
		t.Run(k.name, func(t *testing.T) {
			ctx := t.Context()
			in := queueInputs(t, 4, nil)
			s := k.open(t)
			rs, err := s.Run(ctx, k.runID)
			require.NoError(t, err)

			// Created once.
			c, err := rs.Init(ctx, in, false, testOptions())
			require.NoError(t, err)
			assert.Equal(t, int64(0), c.State.Run.CycleSeq)
			runID := c.State.Run.RunID
			_, err = rs.Init(ctx, in, false, testOptions())
			require.Error(t, err, "a second init without force is refused")

			// Read without the lock, listed with its queue.
			st, m, err := rs.ReadState(ctx)
			require.NoError(t, err)
			assert.Equal(t, runID, st.Run.RunID)
			all, err := s.Runs(ctx)
			require.NoError(t, err)
			require.Len(t, all, 1)
			assert.Equal(t, runID, all[0].RunID)
			since, err := rs.ReadSince(ctx, m)
			require.NoError(t, err)
			assert.Empty(t, since, "nothing beyond the checkpoint at rest")

			// The queue: an item put twice is one item.
			q, err := rs.Queue(ctx)
			require.NoError(t, err)
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			w := &state.WakeSignal{Schema: state.WakeSignalSchema, Source: "external_event", DedupKey: "conformance",
				CausalParent: "conformance", CreatedAt: state.FormatTime(now), ExpiresAt: state.FormatTime(now.Add(24 * time.Hour)), By: "operator"}
			id1, err := q.Put(w)
			require.NoError(t, err)
			id2, err := q.Put(w)
			require.NoError(t, err)
			assert.Equal(t, id1, id2)
			items, bad, err := q.List()
			require.NoError(t, err)
			assert.Len(t, items, 1)
			assert.Empty(t, bad)

			// Preview writes nothing and shows the change.
			act := world.Action{Schema: world.ActionSchema, Operation: world.Operation("apply_local_patch"), Target: "queue.txt",
				ExpectSHA256: codec.FingerprintOf([]byte(strings.Repeat("p\n", 4))), Find: "p", Replace: "d", Occurrences: 1}
			diff, _, err := rs.Preview(ctx, st.Spec, act, nil)
			require.NoError(t, err)
			assert.Contains(t, diff, "queue.txt")
			assert.Contains(t, diff, "+d")

			// Taken (lock or lease), run, given back.
			holder := storage.Holder{Name: "conformance:1", Command: "test"}
			r, err := rs.Open(ctx, holder, testOptions())
			require.NoError(t, err)
			l, held, err := rs.Lease(ctx)
			if k.leases {
				require.NoError(t, err)
				assert.True(t, held, "the run is leased while it is open")
				assert.Equal(t, holder.Name, l.Holder.Name)
			} else {
				require.ErrorIs(t, err, ErrNoLeases)
			}
			rep, err := r.Driver.Run(ctx, 20, nil)
			require.NoError(t, err)
			assert.Positive(t, rep.CyclesExecuted)
			require.NoError(t, r.Close())
			if k.leases {
				_, held, err = rs.Lease(ctx)
				require.NoError(t, err)
				assert.False(t, held, "the lease is released at close")
			}

			// The history is whole and verifies against the checkpoint.
			st, m, err = rs.ReadState(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(rep.CyclesExecuted), st.Run.CycleSeq)
			since, err = rs.ReadSince(ctx, m)
			require.NoError(t, err)
			assert.Empty(t, since)
			h, err := rs.History(ctx)
			require.NoError(t, err)
			expect, err := h.Expect()
			require.NoError(t, err)
			require.NotNil(t, expect)
			report, err := h.Verify(expect)
			require.NoError(t, err)
			assert.True(t, report.OK, "ledger verifies: %+v", report)
			recs, err := h.ReadAll()
			require.NoError(t, err)
			last, err := h.CycleCompleted(st.Run.CycleSeq)
			require.NoError(t, err)
			assert.Equal(t, recs[len(recs)-1].Event.CycleSeq, last.Event.CycleSeq)

			// Recovered at rest: nothing to do.
			rec, _, _, err := rs.Recover(ctx, holder, testOptions())
			require.NoError(t, err)
			assert.Equal(t, "clean", rec.Classification)

			// Exported, imported into another store of the kind, exported
			// again: the same bytes.
			ex, err := rs.Export(ctx, holder)
			require.NoError(t, err)
			b, err := archive.Encode(ex.Run)
			require.NoError(t, err)
			ar, ast, err := CheckArchive(b)
			require.NoError(t, err)
			other := k.open(t)
			ors, err := other.Run(ctx, k.runID)
			require.NoError(t, err)
			im, err := ors.Import(ctx, ar, ast, holder, testOptions())
			require.NoError(t, err)
			assert.Equal(t, st.Run.CycleSeq, im.State.Run.CycleSeq)
			assert.Equal(t, int64(len(recs)), im.Records)
			ex2, err := ors.Export(ctx, holder)
			require.NoError(t, err)
			b2, err := archive.Encode(ex2.Run)
			require.NoError(t, err)
			assert.True(t, bytes.Equal(b, b2), "an imported run exports the same bytes")
			_, err = ors.Import(ctx, ar, ast, holder, testOptions())
			require.Error(t, err, "an import where the run is refused")
		})
	}
}
