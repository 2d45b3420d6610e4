package sandbox

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// prepareCommit runs an action through Prepare and Commit.
func prepareCommit(t *testing.T, w *World, key string, a world.Action) (world.Intent, world.Outcome) {
	t.Helper()
	in, prior, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	require.Nil(t, prior)
	out, _, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	return in, out
}

func TestRollbackBundleRestoresAPatchedFile(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
		ExpectSHA256: codec.FingerprintOf([]byte(appSource)), Find: "debug = true", Replace: "debug = false"}
	in, out := prepareCommit(t, w, testKey("patch"), patch)
	require.Equal(t, world.OutcomeCommitted, out.Status)
	require.NotNil(t, in.Rollback, "a change carries its pre-image")
	assert.Equal(t, "tru", in.Rollback.Content, "only the replaced bytes are carried")
	after, err := os.ReadFile(worldPath(dir, "src/app.go"))
	require.NoError(t, err)
	restored, ok := in.Rollback.Restore(after)
	require.True(t, ok)
	assert.Equal(t, appSource, string(restored))
	assert.True(t, in.Rollback.Existed)
	assert.Equal(t, out.AfterSHA256, in.Rollback.After)

	rb, err := w.Readback(t.Context(), world.Action{Operation: world.OpApplyPatch}, world.Outcome{Target: "src/app.go"})
	require.NoError(t, err)
	assert.Equal(t, out.AfterSHA256, rb.SHA256)
	assert.Equal(t, []string{"no-debug"}, rb.Passing)

	restore := in.Rollback.RestoreAction("no-debug", "")
	rin, rout := prepareCommit(t, w, testKey("restore"), restore)
	assert.Equal(t, world.OutcomeCommitted, rout.Status)
	assert.Equal(t, in.Rollback.Before, rout.AfterSHA256)
	got, err := os.ReadFile(worldPath(dir, "src/app.go"))
	require.NoError(t, err)
	assert.Equal(t, appSource, string(got))
	require.NotNil(t, rin.Rollback, "the restore can itself be undone")

	// Restoring again changes nothing: the target already is the snapshot.
	_, again := prepareCommit(t, w, testKey("restore-again"), restore)
	assert.Equal(t, world.OutcomeNoChange, again.Status)
}

func TestRollbackOfACreatedFileRemovesIt(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	create := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "LICENSE", CheckID: "license", Content: "MIT License\n"}
	in, out := prepareCommit(t, w, testKey("create"), create)
	require.Equal(t, world.OutcomeCommitted, out.Status)
	require.NotNil(t, in.Rollback)
	assert.False(t, in.Rollback.Existed)

	_, rout := prepareCommit(t, w, testKey("undo-create"), in.Rollback.RestoreAction("license", ""))
	assert.Equal(t, world.OutcomeCommitted, rout.Status)
	_, err := os.Stat(worldPath(dir, "LICENSE"))
	assert.True(t, os.IsNotExist(err), "the created file is gone")
}

func TestRestoreRefusesATargetChangedSinceTheEffect(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
		ExpectSHA256: codec.FingerprintOf([]byte(appSource)), Find: "debug = true", Replace: "debug = false"}
	in, _ := prepareCommit(t, w, testKey("patch"), patch)
	require.NoError(t, os.WriteFile(worldPath(dir, "src/app.go"), []byte("someone else's edit\n"), 0o644))
	_, rout := prepareCommit(t, w, testKey("restore"), in.Rollback.RestoreAction("no-debug", ""))
	assert.Equal(t, world.OutcomeStale, rout.Status, "never overwrite a change the run did not make")
	got, err := os.ReadFile(worldPath(dir, "src/app.go"))
	require.NoError(t, err)
	assert.Equal(t, "someone else's edit\n", string(got))
}

func TestNoBundleForBinaryTargets(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	binary := "\xff\xfe not text"
	require.NoError(t, os.WriteFile(worldPath(dir, "LICENSE"), []byte(binary), 0o644))
	replace := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "LICENSE", CheckID: "license",
		ExpectSHA256: codec.FingerprintOf([]byte(binary)), Content: "MIT License\n"}
	in, prior, err := w.Prepare(t.Context(), testKey("bin"), replace)
	require.NoError(t, err)
	require.Nil(t, prior)
	assert.True(t, in.Changes)
	assert.Nil(t, in.Rollback, "replaced bytes that are not text cannot be carried in the ledger: no bundle")
}

func TestRestoreRefusesABundleThatDoesNotRebuildTheBefore(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
		ExpectSHA256: codec.FingerprintOf([]byte(appSource)), Find: "debug = true", Replace: "debug = false"}
	in, _ := prepareCommit(t, w, testKey("patch"), patch)
	bad := in.Rollback.RestoreAction("no-debug", "")
	bad.Content = "maybe"
	_, out := prepareCommit(t, w, testKey("restore"), bad)
	assert.Equal(t, world.OutcomeFailed, out.Status)
	got, err := os.ReadFile(worldPath(dir, "src/app.go"))
	require.NoError(t, err)
	assert.Contains(t, string(got), "debug = false", "left as the effect left it")
}

func TestCommonPrefixAndSuffix(t *testing.T) {
	for _, tc := range []struct {
		a, b         string
		prefix, suff int
	}{
		{"", "", 0, 0},
		{"abc", "abc", 3, 3},
		{"abc", "", 0, 0},
		{"debug = true\n", "debug = false\n", 8, 2},
		{"xbc", "ybc", 0, 2},
		{"ab", "abab", 2, 2},
	} {
		assert.Equal(t, tc.prefix, commonPrefix([]byte(tc.a), []byte(tc.b)), "prefix of %q and %q", tc.a, tc.b)
		assert.Equal(t, tc.suff, commonSuffix([]byte(tc.a), []byte(tc.b)), "suffix of %q and %q", tc.a, tc.b)
	}
}

// The Commit after a Prepare reuses its plan only while the plan still
// describes the world: a target changed in between makes the commit
// uncertain, and a commit of another key plans afresh.
func TestCommitReusesThePreparedPlanOnlyForTheSameBytes(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
		ExpectSHA256: codec.FingerprintOf([]byte(appSource)), Find: "debug = true", Replace: "debug = false"}
	in, prior, err := w.Prepare(t.Context(), testKey("a"), patch)
	require.NoError(t, err)
	require.Nil(t, prior)
	require.NotNil(t, w.prepared)

	// Another key's prepare replaces the remembered plan; committing the
	// first intent then plans again and still makes the same change.
	_, _, err = w.Prepare(t.Context(), testKey("b"), patch)
	require.NoError(t, err)
	out, reused, err := w.Commit(t.Context(), testKey("a"), patch, in)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Nil(t, w.prepared, "a commit forgets the plan")
	got, err := os.ReadFile(worldPath(dir, "src/app.go"))
	require.NoError(t, err)
	assert.Equal(t, out.AfterSHA256, codec.FingerprintOf(got))

	// Prepared, then rewritten with the same bytes: the plan still holds.
	w3, dir3 := newTestWorld(t, testSpec())
	in3, _, err := w3.Prepare(t.Context(), testKey("d"), patch)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(worldPath(dir3, "src/app.go"), []byte(appSource), 0o644))
	out3, _, err := w3.Commit(t.Context(), testKey("d"), patch, in3)
	require.NoError(t, err)
	assert.Equal(t, in3.Planned.AfterSHA256, out3.AfterSHA256)
	got, err = os.ReadFile(worldPath(dir3, "src/app.go"))
	require.NoError(t, err)
	assert.Equal(t, out3.AfterSHA256, codec.FingerprintOf(got))

	// Prepared, then changed by someone else: not committed from the
	// plan, and stale, since this World knows it never applied it.
	w2, dir2 := newTestWorld(t, testSpec())
	in2, _, err := w2.Prepare(t.Context(), testKey("c"), patch)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(worldPath(dir2, "src/app.go"), []byte("package app\n"), 0o644))
	out2, _, err := w2.Commit(t.Context(), testKey("c"), patch, in2)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeStale, out2.Status)
	got, err = os.ReadFile(worldPath(dir2, "src/app.go"))
	require.NoError(t, err)
	assert.Equal(t, "package app\n", string(got))
}
