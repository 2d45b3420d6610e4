package runstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
)

// stepClock advances one minute every time it is read.
type stepClock struct{ t time.Time }

func (c *stepClock) Now() time.Time { c.t = c.t.Add(time.Minute); return c.t }

func quickstart(t testing.TB) Inputs {
	t.Helper()
	root := filepath.Join("..", "..", "scenarios", "quickstart")
	in, err := ReadInputs(filepath.Join(root, "goal.json"), filepath.Join(root, "contract.json"), filepath.Join(root, "environment.json"))
	require.NoError(t, err)
	return in
}

func logCycle(t *testing.T) func(kernel.Summary) {
	return func(c kernel.Summary) {
		t.Logf("cycle %d %s %v %s %s %s", c.CycleSeq, c.LoopDisposition, c.ReasonCodes, c.GovernanceDecision, c.Action, c.Outcome)
	}
}

func TestQuickstartFlow(t *testing.T) {
	dir := t.TempDir()
	clock := &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opt := Options{Clock: clock, Revision: "test"}
	_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, opt)
	require.NoError(t, err)

	r, err := Open(t.Context(), dir, opt)
	require.NoError(t, err)
	rep, err := r.Driver.Run(context.Background(), 20, logCycle(t))
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Equal(t, "WAIT_APPROVAL", rep.FinalDisposition)

	st, _, err := ReadState(dir)
	require.NoError(t, err)
	require.Len(t, st.Run.PendingApprovals, 1)
	fsys := mustFS(t, dir)
	_, err = dirstore.Inbox{FS: fsys}.Write(&state.Approval{Schema: state.ApprovalSchema, ActionRef: st.Run.PendingApprovals[0].Ref,
		RequestCycle: st.Run.PendingApprovals[0].CycleSeq, Verdict: "approve", By: "tester", CreatedAt: "2026-01-01T01:00:00Z"})
	require.NoError(t, err)

	r, err = Open(t.Context(), dir, opt)
	require.NoError(t, err)
	rep, err = r.Driver.Run(context.Background(), 20, logCycle(t))
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Equal(t, "IDLE", rep.FinalDisposition)

	cfg, err := os.ReadFile(filepath.Join(dir, "sandbox", "world", "config", "app.ini"))
	require.NoError(t, err)
	assert.Contains(t, string(cfg), "debug = false")

	// An idle run writes nothing.
	before := snapshotDir(t, dir)
	r, err = Open(t.Context(), dir, opt)
	require.NoError(t, err)
	rep, err = r.Driver.Run(context.Background(), 20, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Equal(t, 0, rep.CyclesExecuted)
	assert.Equal(t, before, snapshotDir(t, dir))
}

func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		out[p] = string(b)
		return err
	}))
	return out
}

func mustFS(t *testing.T, dir string) *disk.OSDir {
	t.Helper()
	f, err := disk.OpenOSDir(dir)
	require.NoError(t, err)
	return f
}

// TestDeterministicLedgerBytes runs the same inputs twice in two state
// directories and compares every ledger byte and every checkpoint file.
func TestDeterministicLedgerBytes(t *testing.T) {
	runOnce := func(dir string) {
		clock := &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
		opt := Options{Clock: clock, Revision: "test"}
		_, err := Init(t.Context(), dir, quickstart(t), "run:det", false, opt)
		require.NoError(t, err)
		r, err := Open(t.Context(), dir, opt)
		require.NoError(t, err)
		_, err = r.Driver.Run(context.Background(), 20, nil)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		st, _, err := ReadState(dir)
		require.NoError(t, err)
		_, err = dirstore.Inbox{FS: mustFS(t, dir)}.Write(&state.Approval{Schema: state.ApprovalSchema, ActionRef: st.Run.PendingApprovals[0].Ref,
			RequestCycle: st.Run.PendingApprovals[0].CycleSeq, Verdict: "approve", By: "tester", CreatedAt: "2026-01-01T01:00:00Z"})
		require.NoError(t, err)
		r, err = Open(t.Context(), dir, opt)
		require.NoError(t, err)
		_, err = r.Driver.Run(context.Background(), 20, nil)
		require.NoError(t, err)
		require.NoError(t, r.Close())
	}
	a, b := t.TempDir(), t.TempDir()
	runOnce(a)
	runOnce(b)
	la, err := os.ReadFile(filepath.Join(a, "ledger", "events.jsonl"))
	require.NoError(t, err)
	lb, err := os.ReadFile(filepath.Join(b, "ledger", "events.jsonl"))
	require.NoError(t, err)
	require.NotEmpty(t, la)
	assert.Equal(t, la, lb, "same inputs must give byte-identical ledgers")
	ma, err := os.ReadFile(filepath.Join(a, "manifest.json"))
	require.NoError(t, err)
	mb, err := os.ReadFile(filepath.Join(b, "manifest.json"))
	require.NoError(t, err)
	assert.Equal(t, ma, mb)
}
