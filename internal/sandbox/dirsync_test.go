package sandbox

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

// deferredWorld is a journaled sandbox world with DeferDirSyncs on, and
// what opens it again as the next process would (into the same journal).
func deferredWorld(t *testing.T) (*World, *worldShadow, func() *World) {
	t.Helper()
	stateDir := t.TempDir()
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	shadow := &worldShadow{}
	w, err := CreateJournaled(stateDir, testSpec(), keys, shadow.note)
	require.NoError(t, err)
	w.DeferDirSyncs(true)
	_, err = w.Observe(t.Context())
	require.NoError(t, err)
	reopen := func() *World {
		next, err := OpenJournaled(stateDir, testSpec(), keys, shadow.note)
		require.NoError(t, err)
		t.Cleanup(func() { _ = next.Close() })
		return next
	}
	return w, shadow, reopen
}

// commitArtifact commits an effect that writes name with content.
func commitArtifact(t *testing.T, w *World, name, content string) error {
	t.Helper()
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: name, CheckID: "license", Content: content}
	key := testKey(name + content)
	in, prior, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	require.Nil(t, prior)
	_, _, err = w.Commit(t.Context(), key, a, in)
	return err
}

// TestDeferredDirSyncComesFirst: while an effect's directory fsync runs,
// the World changes nothing else. The next effect, and Close, wait for it,
// so the journal shows its "syncdir" before any later change: no later
// change can be durable ahead of the effect.
func TestDeferredDirSyncComesFirst(t *testing.T) {
	w, shadow, _ := deferredWorld(t)
	require.NoError(t, commitArtifact(t, w, "one.txt", "1\n"))
	require.NoError(t, commitArtifact(t, w, "two.txt", "2\n"))
	require.NoError(t, w.Close())

	var order []string
	for _, op := range shadow.ops {
		switch {
		case op.Op == "rename":
			order = append(order, "rename "+op.To)
		case op.Op == "syncdir" && op.Path == ".":
			order = append(order, "syncdir")
		case op.Op == "create":
			order = append(order, "create")
		}
	}
	i := slices.Index(order, "rename one.txt")
	require.GreaterOrEqual(t, i, 0, "%v", order)
	assert.Equal(t, []string{"rename one.txt", "syncdir", "create", "rename two.txt", "syncdir"}, order[i:],
		"each effect's directory fsync completes before the next change, the last one before Close returns")
}

// TestDeferredDirSyncFailure: a directory fsync that failed in the
// background is reported by Durable, and again by every later call and
// change: after a failed fsync the directory's durability is unknown, and
// a retried fsync could succeed without making anything durable.
func TestDeferredDirSyncFailure(t *testing.T) {
	w, shadow, _ := deferredWorld(t)
	t.Cleanup(func() { _ = w.Close() })
	failed := errors.New("EIO")
	w.syncDirFile = func(*os.File) error { return failed }
	require.NoError(t, commitArtifact(t, w, "one.txt", "1\n"))
	w.syncDirFile = nil

	err := w.Durable()
	require.ErrorIs(t, err, failed)
	assert.Contains(t, err.Error(), "fsync world dir .")
	require.ErrorIs(t, w.Durable(), failed, "asked again")
	require.ErrorIs(t, commitArtifact(t, w, "two.txt", "2\n"), failed, "the next effect")
	assert.NoFileExists(t, filepath.Join(w.Dir(), "two.txt"), "nothing more is written")
	renamed := false
	for _, op := range shadow.ops {
		renamed = renamed || op.Op == "rename" && op.To == "one.txt"
		assert.False(t, renamed && op.Op == "syncdir", "a failed fsync is never journaled as done")
	}
	assert.True(t, renamed)
}

// TestPowerLossAfterAFoundEffectIsReused: a process killed after an
// effect's rename, its directory fsync still running, leaves a target
// that already holds the after-hash. The next process's Commit of the same
// intent reuses the effect, and must make the rename durable before its
// outcome can be recorded: a power cut after that Commit leaves the new
// file.
func TestPowerLossAfterAFoundEffectIsReused(t *testing.T) {
	first, shadow, reopen := deferredWorld(t)
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "one.txt", CheckID: "license", Content: "1\n"}
	key := testKey("found")
	in, _, err := first.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	_, _, err = first.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	// first is killed here: its fsync is never seen to finish.
	got, ok := shadow.durable(t)
	require.True(t, ok)
	require.NotContains(t, got, "one.txt", "the model must not count the rename durable yet")

	out, reused, err := reopen().Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	assert.True(t, reused)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	got, ok = shadow.durable(t)
	require.True(t, ok)
	assert.Equal(t, "1\n", got["one.txt"], "a power cut after the reused Commit keeps the effect")
}
