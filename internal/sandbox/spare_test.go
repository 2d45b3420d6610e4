package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/acr-project/acr/internal/world"
)

// holdOpen returns the inode of p and keeps it open for the rest of the
// test, so that a file made after p is removed cannot get its number.
func holdOpen(t *testing.T, p string) uint64 {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	t.Cleanup(func() { _ = f.Close() })
	return inodeOf(t, p)
}

func inodeOf(t *testing.T, p string) uint64 {
	t.Helper()
	var st unix.Stat_t
	require.NoError(t, unix.Lstat(p, &st))
	return st.Ino
}

// TestReplaceSwapsWithASpare: a file in the world's top directory is
// replaced by writing its previous inode (the spare) and swapping the two
// names, so two replaces bring the file's first inode back; the spare is
// never observed, and Close removes it.
func TestReplaceSwapsWithASpare(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	readme, spare := worldPath(stateDir, "README.md"), worldPath(stateDir, spareName)
	first := inodeOf(t, readme)

	require.NoError(t, w.replace("README.md", []byte("# one, a longer content than before\n")))
	assert.Equal(t, "# one, a longer content than before\n", readWorld(t, stateDir, "README.md"))
	assert.Equal(t, first, inodeOf(t, spare), "the replaced inode became the spare")
	b, err := os.ReadFile(spare)
	require.NoError(t, err)
	assert.Equal(t, "# demo\n", string(b), "the spare holds what the file was")

	require.NoError(t, w.replace("README.md", []byte("# 2\n")))
	assert.Equal(t, "# 2\n", readWorld(t, stateDir, "README.md"), "written from the start and cut to length")
	assert.Equal(t, first, inodeOf(t, readme), "the second replace wrote into the spare")

	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	for _, f := range obs.Files {
		assert.NotEqual(t, spareName, f.Path, "the spare is not part of the world")
	}
	require.NoError(t, w.Close())
	assert.NoFileExists(t, spare, "Close removes the spare")
	assert.Equal(t, "# 2\n", readWorld(t, stateDir, "README.md"))
}

// TestReplaceMakesANewSpareForAnotherOwner: a spare that would hand the
// next file another mode than a new file has (or that this World did not
// make) is not written into: a new spare is made, so that the replaced
// file looks as a file replaced by a temporary file would.
func TestReplaceMakesANewSpareForAnotherOwner(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	readme, spare := worldPath(stateDir, "README.md"), worldPath(stateDir, spareName)
	require.NoError(t, w.replace("README.md", []byte("one\n")))
	fresh, err := os.Lstat(readme)
	require.NoError(t, err)
	require.NoError(t, os.Chmod(spare, 0o600))
	old := holdOpen(t, spare)

	require.NoError(t, w.replace("README.md", []byte("two\n")))
	fi, err := os.Lstat(readme)
	require.NoError(t, err)
	assert.NotEqual(t, old, inodeOf(t, readme), "the spare of another mode was not reused")
	assert.Equal(t, fresh.Mode(), fi.Mode())
	assert.Equal(t, "two\n", readWorld(t, stateDir, "README.md"))

	// A spare left by someone else (a World that did not make it) is
	// replaced too, whatever it holds.
	require.NoError(t, w.Close())
	keys := w.keys
	w2, err := Open(stateDir, testSpec(), keys)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w2.Close() })
	writeWorld(t, stateDir, spareName, "not acr's\n")
	planted := holdOpen(t, spare)
	require.NoError(t, w2.replace("README.md", []byte("three\n")))
	assert.NotEqual(t, planted, inodeOf(t, readme))
	assert.Equal(t, "three\n", readWorld(t, stateDir, "README.md"))
}

// TestReplaceLeavesAnExtendedAttributeBehind: a spare with extended
// attributes (the previous file's ACL or label) is not reused, so they do
// not travel to the next file.
func TestReplaceLeavesAnExtendedAttributeBehind(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	readme, spare := worldPath(stateDir, "README.md"), worldPath(stateDir, spareName)
	require.NoError(t, w.replace("README.md", []byte("one\n")))
	if err := unix.Setxattr(spare, "user.acr-test", []byte("x"), 0); errors.Is(err, unix.ENOTSUP) {
		// A file system without user attributes cannot hold the case.
		t.Log("no user extended attributes here:", err)
		return
	} else {
		require.NoError(t, err)
	}
	old := holdOpen(t, spare)
	require.NoError(t, w.replace("README.md", []byte("two\n")))
	assert.NotEqual(t, old, inodeOf(t, readme))
	_, err := unix.Getxattr(readme, "user.acr-test", make([]byte, 8))
	assert.ErrorIs(t, err, unix.ENODATA)
}

// TestCommitBacksOffAFileReplacedDuringIt: a file replaced by someone
// else while the effect waited for its intent (between the look at the
// target and the swap) is swapped back: the effect fails as an answer and
// the other writer's file stays.
func TestCommitBacksOffAFileReplacedDuringIt(t *testing.T) {
	spec := testSpec()
	spec.Files["LICENSE"] = "old\n"
	w, stateDir := newTestWorld(t, spec)
	_, err := w.Observe(t.Context())
	require.NoError(t, err)
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "LICENSE", CheckID: "license",
		ExpectSHA256: fp("old\n"), Content: "MIT License\n"}
	key := testKey("raced")
	in, prior, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	require.Nil(t, prior)
	ready := func() error {
		// The other writer saves the file the way editors do.
		tmp := worldPath(stateDir, "LICENSE.new")
		require.NoError(t, os.WriteFile(tmp, []byte("someone else's\n"), 0o644))
		return os.Rename(tmp, worldPath(stateDir, "LICENSE"))
	}
	out, _, err := w.CommitWhen(t.Context(), key, a, in, ready)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeFailed, out.Status)
	assert.Contains(t, out.Detail, "changed while the effect was being committed")
	assert.Equal(t, "someone else's\n", readWorld(t, stateDir, "LICENSE"))
	_, err = os.Lstat(worldPath(stateDir, spareName))
	assert.ErrorIs(t, err, fs.ErrNotExist, "the spare with the effect's content is gone")
	entries, err := os.ReadDir(filepath.Dir(worldPath(stateDir, "LICENSE")))
	require.NoError(t, err)
	for _, e := range entries {
		assert.NotContains(t, e.Name(), tmpPrefix)
	}
}
