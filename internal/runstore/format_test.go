package runstore_test

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/audit"
	"github.com/acr-project/acr/internal/disk"
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

// olderRun unpacks a run an older release wrote, and checks that its
// ledger verifies and replays byte for byte, every one of its cycles.
func olderRun(t *testing.T, archive string, cycles int64) (string, *disk.OSDir, []event.Record) {
	t.Helper()
	dir := t.TempDir()
	untar(t, archive, dir)
	fsys := osFS(t, dir)
	_, err := ledger.Verify(fsys, nil)
	require.NoError(t, err)
	recs, err := ledger.ReadAll(fsys)
	require.NoError(t, err)
	rep, err := kernel.Replay(recs, 1)
	require.NoError(t, err)
	require.True(t, rep.OK, "replay of %s: %+v", archive, rep.Divergence)
	require.EqualValues(t, cycles, rep.CyclesVerified)
	return dir, fsys, recs
}

// TestLedgerFormat1RunKeepsWorking: a run written by acr before ledger
// format 2 (testdata/ledger-v1-run.tar.gz: ten cycles of a queue, one
// compaction, made by the release before the change) still verifies,
// replays byte for byte, audits (a compacted cycle included), and goes on
// running in its own format.
func TestLedgerFormat1RunKeepsWorking(t *testing.T) {
	dir, fsys, recs := olderRun(t, "ledger-v1-run.tar.gz", 10)
	require.Contains(t, kindsOfCycle(recs, 3), event.Transition)

	a, err := audit.Explain(ledger.NewReader(fsys), 1)
	require.NoError(t, err)
	require.NotNil(t, a.Compaction, "cycle 1 was summarised by the run's compaction")
	require.NotEmpty(t, a.Controller.Transitions)

	r, err := Open(t.Context(), dir, Options{Clock: fixedClock{time.Date(2026, 6, 1, 0, 10, 0, 0, time.UTC)}})
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
	rep, err := kernel.Replay(recs, 1)
	require.NoError(t, err)
	require.True(t, rep.OK, "replay after two more cycles: %+v", rep.Divergence)
	require.EqualValues(t, 12, rep.CyclesVerified)
}

// TestNewRunsRecordFormat3: a new run starts in the current format, says
// so when it starts, names the adapter its loop events are recorded
// through, records one transition log per durable batch and each cycle's
// checkpoint record under the name of what it is.
func TestNewRunsRecordFormat3(t *testing.T) {
	dir := t.TempDir()
	q := filepath.Join("..", "..", "scenarios", "quickstart")
	in, err := ReadInputs(filepath.Join(q, "goal.json"), filepath.Join(q, "contract.json"), filepath.Join(q, "environment.json"))
	require.NoError(t, err)
	opt := Options{Clock: fixedClock{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}}
	_, err = Init(t.Context(), dir, in, "run:test", false, opt)
	require.NoError(t, err)
	r, err := Open(t.Context(), dir, opt)
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 2, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	st, _, err := ReadState(dir)
	require.NoError(t, err)
	require.Equal(t, state.CurrentLedgerFormat, st.Run.Format())
	require.Equal(t, state.LedgerFormat3, st.Run.Format())

	recs, err := ledger.ReadAll(osFS(t, dir))
	require.NoError(t, err)
	i := slices.IndexFunc(recs, func(r event.Record) bool { return r.Event.Type == event.RunStarted })
	require.GreaterOrEqual(t, i, 0)
	require.Contains(t, recs[i].Event.Reasons, "ledger_format_3")
	var start event.RunStart
	require.NoError(t, recs[i].Event.Object.Decode(&start))
	assert.Equal(t, event.RunStart{Schema: event.RunStartSchema, Adapter: "acr.persistent-loop-temporal/v0.1", LedgerFormat: 3}, start)
	for _, c := range []int64{0, 1, 2} {
		kinds := kindsOfCycle(recs, c)
		assert.Contains(t, kinds, event.CheckpointRecorded, "cycle %d", c)
		assert.NotContains(t, kinds, event.CheckpointCreated, "cycle %d", c)
		if c > 0 {
			assert.Contains(t, kinds, event.Transitions, "cycle %d", c)
		}
	}
	rep, err := kernel.Replay(recs, 1)
	require.NoError(t, err)
	require.True(t, rep.OK, "%+v", rep.Divergence)
}

// TestLedgerFormat2RunKeepsWorking: a run written by the release before
// ledger format 3 (testdata/ledger-v2-run.tar.gz: scenario
// p05-approval-escalation as acr at 9f88515 left it: an escalation, the
// approval, the effect, an idle cycle) still verifies, replays byte for
// byte, audits, and goes on running in its own format when woken.
func TestLedgerFormat2RunKeepsWorking(t *testing.T) {
	dir, fsys, _ := olderRun(t, "ledger-v2-run.tar.gz", 3)

	for c := int64(1); c <= 3; c++ {
		a, err := audit.Explain(ledger.NewReader(fsys), c)
		require.NoError(t, err, "audit cycle %d", c)
		require.NotEmpty(t, a.Controller.Transitions)
	}

	q, err := OpenQueue(dir)
	require.NoError(t, err)
	_, err = q.Put(&state.WakeSignal{Schema: state.WakeSignalSchema, Source: "external_event", Ref: "look", DedupKey: "look",
		CausalParent: "test", CreatedAt: "2026-01-01T00:05:00Z", ExpiresAt: "2026-01-02T00:00:00Z"})
	require.NoError(t, err)
	r, err := Open(t.Context(), dir, Options{Clock: fixedClock{time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)}})
	require.NoError(t, err)
	st := r.Driver.State()
	require.Equal(t, state.LedgerFormat2, st.Run.Format())
	run, err := r.Driver.Run(context.Background(), 2, nil)
	require.NoError(t, err)
	require.GreaterOrEqual(t, run.CyclesExecuted, 1)
	require.NoError(t, r.Close())

	recs, err := ledger.ReadAll(fsys)
	require.NoError(t, err)
	kinds := kindsOfCycle(recs, 4)
	require.Contains(t, kinds, event.Transitions, "cycle 4 keeps the run's format")
	require.Contains(t, kinds, event.CheckpointCreated, "cycle 4 keeps the run's format")
	rep, err := kernel.Replay(recs, 1)
	require.NoError(t, err)
	require.True(t, rep.OK, "replay after another cycle: %+v", rep.Divergence)
}
