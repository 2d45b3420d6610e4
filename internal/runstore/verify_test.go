package runstore

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// setClock is a clock a test moves by hand.
type setClock struct{ t time.Time }

func (c *setClock) Now() time.Time { return c.t }

// flipLine flips one bit in the middle of line n of the ledger.
func flipLine(t *testing.T, dir string, n int) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(ledger.FileName))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	lines := bytes.SplitAfter(b, []byte("\n"))
	require.Greater(t, len(lines), n)
	l := lines[n-1]
	l[len(l)/2] ^= 1
	require.NoError(t, os.WriteFile(p, bytes.Join(lines, nil), 0o644))
}

// nudge queues a wake signal, so that the next invocation has work to do.
func nudge(t *testing.T, dir string, at time.Time) {
	t.Helper()
	_, err := dirstore.Inbox{FS: mustFS(t, dir)}.Write(&state.WakeSignal{Schema: state.WakeSignalSchema, Source: "manual_resume",
		DedupKey: at.String(), CreatedAt: state.FormatTime(at), ExpiresAt: state.FormatTime(at.Add(time.Hour)), By: "t"})
	require.NoError(t, err)
}

// step opens the run, runs one step and closes it.
func step(dir string, opt Options) error {
	r, err := Open(context.Background(), dir, opt)
	if err != nil {
		return err
	}
	_, err = r.Driver.Step(context.Background())
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	return err
}

// TestWriterRefusesADamagedLedger: damage anywhere in the ledger (here in
// the run's first lines, long verified) stops the next invocation that
// would write, before it writes anything, and every one after it.
func TestWriterRefusesADamagedLedger(t *testing.T) {
	clock := &setClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opt := Options{Clock: clock, Revision: "test"}
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, opt)
	require.NoError(t, err)
	require.NoError(t, step(dir, opt))
	_, err = os.Stat(filepath.Join(dir, filepath.FromSlash(VerifiedFile)))
	require.NoError(t, err, "a writing invocation leaves its record")

	flipLine(t, dir, 3)
	nudge(t, dir, clock.t)
	before := treeOf(t, dir)
	for range 2 {
		err = step(dir, opt)
		var de *ledger.DamageError
		require.ErrorAs(t, err, &de)
		assert.EqualValues(t, 3, de.Line)
		assert.Contains(t, err.Error(), "nothing is written until the ledger is restored")
		assert.Equal(t, before, treeOf(t, dir), "nothing was written")
	}
}

// TestWriterWalksTheWholeChainDaily: damage that leaves the file's size
// and modification time as they were (bit rot) is found by the daily walk.
func TestWriterWalksTheWholeChainDaily(t *testing.T) {
	clock := &setClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opt := Options{Clock: clock, Revision: "test"}
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, opt)
	require.NoError(t, err)
	require.NoError(t, step(dir, opt))

	p := filepath.Join(dir, filepath.FromSlash(ledger.FileName))
	fi, err := os.Stat(p)
	require.NoError(t, err)
	flipLine(t, dir, 3)
	require.NoError(t, os.Chtimes(p, fi.ModTime(), fi.ModTime()))

	clock.t = clock.t.Add(time.Hour)
	nudge(t, dir, clock.t)
	require.NoError(t, step(dir, opt), "within the day, an untouched-looking file is not walked again")

	clock.t = clock.t.Add(FullVerifyEvery)
	nudge(t, dir, clock.t)
	var de *ledger.DamageError
	require.ErrorAs(t, step(dir, opt), &de)
	assert.EqualValues(t, 3, de.Line)
}

// TestIdleInvocationChecksNothing: an invocation with nothing to do does
// not walk the ledger (it writes nothing, so it adds to nothing).
func TestIdleInvocationChecksNothing(t *testing.T) {
	dir := quickRun(t, 20)
	flipLine(t, dir, 3)
	before := treeOf(t, dir)
	r, err := Open(t.Context(), dir, testOptions())
	require.NoError(t, err)
	rep, err := r.Driver.Run(context.Background(), 5, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Zero(t, rep.CyclesExecuted)
	assert.Equal(t, before, treeOf(t, dir))
}

// TestWriterRebuildsAStaleIndex: the cycle index is the writer's to keep;
// readers only build one in memory. A deleted index is rebuilt by the next
// invocation that writes.
func TestWriterRebuildsAStaleIndex(t *testing.T) {
	clock := &setClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opt := Options{Clock: clock, Revision: "test"}
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, opt)
	require.NoError(t, err)
	require.NoError(t, step(dir, opt))
	require.NoError(t, step(dir, opt))
	ix := filepath.Join(dir, filepath.FromSlash(ledger.IndexFileName))
	want, err := os.ReadFile(ix)
	require.NoError(t, err)
	require.NoError(t, os.Remove(ix))

	nudge(t, dir, clock.t)
	require.NoError(t, step(dir, opt))
	got, err := os.ReadFile(ix)
	require.NoError(t, err)
	require.True(t, bytes.HasPrefix(got, want), "the rebuilt index covers the earlier cycles")
	assert.Greater(t, len(got), len(want), "and goes on with the new one")
	st, _, err := ReadState(dir)
	require.NoError(t, err)
	_, err = ledger.Cycle(mustFS(t, dir), st.Run.CycleSeq)
	require.NoError(t, err)
}

// TestWriterRefusesDamagedSealedHistory: a sealed segment changed by hand
// (here: one frame's byte flipped, the file's size kept) is noticed by the
// next invocation that would write, which walks the chain through the
// segments and stops before it writes. A segment removed is refused the
// same way.
func TestWriterRefusesDamagedSealedHistory(t *testing.T) {
	for _, damage := range []string{"flip", "remove"} {
		t.Run(damage, func(t *testing.T) {
			clock := &setClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			opt := Options{Clock: clock, Revision: "test", SealBytes: 1}
			dir := t.TempDir()
			_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, opt)
			require.NoError(t, err)
			require.NoError(t, step(dir, opt))
			nudge(t, dir, clock.t)
			require.NoError(t, step(dir, opt))
			segs, err := filepath.Glob(filepath.Join(dir, "ledger", "sealed", "*.zst"))
			require.NoError(t, err)
			require.NotEmpty(t, segs, "a step with SealBytes 1 seals")
			hot, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(ledger.FileName)))
			require.NoError(t, err)
			require.Empty(t, hot)

			switch damage {
			case "flip":
				b, err := os.ReadFile(segs[0])
				require.NoError(t, err)
				b[len(b)/3] ^= 1
				require.NoError(t, os.WriteFile(segs[0], b, 0o644))
			case "remove":
				require.NoError(t, os.Remove(segs[0]))
			}
			nudge(t, dir, clock.t)
			before := treeOf(t, dir)
			var de *ledger.DamageError
			require.ErrorAs(t, step(dir, opt), &de)
			assert.Contains(t, de.Error(), "ledger/sealed")
			assert.Equal(t, before, treeOf(t, dir), "nothing was written")
		})
	}
}
