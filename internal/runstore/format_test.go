package runstore_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/audit"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	. "github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// untar unpacks a .tar.gz from testdata into dir.
func untar(t *testing.T, name, dir string) {
	t.Helper()
	f, err := os.Open(filepath.Join("testdata", name))
	require.NoError(t, err)
	defer f.Close()
	zr, err := gzip.NewReader(f)
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return
		}
		require.NoError(t, err)
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		switch h.Typeflag {
		case tar.TypeDir:
			require.NoError(t, os.MkdirAll(p, 0o755))
		case tar.TypeReg:
			b, err := io.ReadAll(tr)
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(p, b, os.FileMode(h.Mode)&0o777))
		}
	}
}

type fixedClock struct{ t time.Time }

func (c fixedClock) Now() time.Time { return c.t }

// kindsOfCycle lists the kinds a cycle recorded.
func kindsOfCycle(recs []event.Record, cycle int64) []event.Kind {
	var out []event.Kind
	for _, r := range recs {
		if r.Event.CycleSeq == cycle {
			out = append(out, r.Event.Type)
		}
	}
	return out
}

// TestLedgerFormat1RunKeepsWorking: a run written by acr before ledger
// format 2 (testdata/ledger-v1-run.tar.gz: ten cycles of a queue, one
// compaction, made by the release before the change) still verifies,
// replays byte for byte, audits (a compacted cycle included), and goes on
// running in its own format.
func TestLedgerFormat1RunKeepsWorking(t *testing.T) {
	dir := t.TempDir()
	untar(t, "ledger-v1-run.tar.gz", dir)
	fsys := osFS(t, dir)

	_, err := ledger.Verify(fsys, nil)
	require.NoError(t, err)
	recs, err := ledger.ReadAll(fsys)
	require.NoError(t, err)
	rep, err := kernel.Replay(recs, 1)
	require.NoError(t, err)
	require.True(t, rep.OK, "replay of the format-1 run: %+v", rep.Divergence)
	require.EqualValues(t, 10, rep.CyclesVerified)
	require.Contains(t, kindsOfCycle(recs, 3), event.Transition)

	a, err := audit.Explain(ledger.NewReader(fsys), 1)
	require.NoError(t, err)
	require.NotNil(t, a.Compaction, "cycle 1 was summarised by the run's compaction")
	require.NotEmpty(t, a.Controller.Transitions)

	r, err := Open(dir, Options{Clock: fixedClock{time.Date(2026, 6, 1, 0, 10, 0, 0, time.UTC)}})
	require.NoError(t, err)
	st := r.Driver.State()
	require.Equal(t, state.LedgerFormat1, st.Run.Format())
	run, err := r.Driver.Run(context.Background(), 2, nil)
	require.NoError(t, err)
	require.Equal(t, 2, run.CyclesExecuted)
	require.NoError(t, r.Close())

	recs, err = ledger.ReadAll(fsys)
	require.NoError(t, err)
	for _, c := range []int64{11, 12} {
		kinds := kindsOfCycle(recs, c)
		require.Contains(t, kinds, event.Transition, "cycle %d keeps the run's format", c)
		require.False(t, slices.Contains(kinds, event.Transitions), "cycle %d keeps the run's format", c)
	}
	rep, err = kernel.Replay(recs, 1)
	require.NoError(t, err)
	require.True(t, rep.OK, "replay after two more cycles: %+v", rep.Divergence)
	require.EqualValues(t, 12, rep.CyclesVerified)
}

// TestNewRunsRecordFormat2: a new run starts in the current format, says
// so when it starts, and records one transition log per durable batch.
func TestNewRunsRecordFormat2(t *testing.T) {
	dir := t.TempDir()
	untar(t, "ledger-v1-run.tar.gz", dir)
	fsys := osFS(t, dir)
	recs, err := ledger.ReadAll(fsys)
	require.NoError(t, err)
	goal, contract, err := event.PinnedDocuments(recs)
	require.NoError(t, err)
	// The format-2 path runs end to end in every scenario (their
	// fingerprints are frozen in it); here the start record is checked.
	st, evs, err := kernel.Init(kernel.Bootstrap{RunID: "run:test", Now: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), Goal: goal, Contract: contract})
	require.NoError(t, err)
	require.Equal(t, state.CurrentLedgerFormat, st.Run.Format())
	i := slices.IndexFunc(evs, func(e event.Event) bool { return e.Type == event.RunStarted })
	require.GreaterOrEqual(t, i, 0)
	require.Contains(t, evs[i].Reasons, fmt.Sprintf("ledger_format_%d", state.CurrentLedgerFormat))
}
