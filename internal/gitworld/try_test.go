package gitworld_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/gitworld"
	"github.com/acr-project/acr/internal/gitworld/gittest"
)

// TestTryShowsTheDiffAndWritesNothing: a change tried on a clone (given
// by a relative path, as a state directory's is) shows its diff on the
// branch head as last fetched, and leaves the clone's work tree, its
// refs, the branch and the remote as they were; a change that fails is
// returned as an error, and no throwaway clone remains either way.
func TestTryShowsTheDiffAndWritesNothing(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"README.md": "teh project\nsecond line\n"})
	base := t.TempDir()
	cloneDir := filepath.Join(base, "clone")
	head, err := open(t, cloneDir, remote).Sync(ctx)
	require.NoError(t, err)
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	t.Chdir(base)
	r, err := gitworld.Attach("clone", spec(remote), testEnv(t))
	require.NoError(t, err)
	snapshot := func() []string {
		return []string{sh(t, remote, "show-ref"), sh(t, cloneDir, "show-ref"), sh(t, cloneDir, "rev-parse", "HEAD"),
			sh(t, cloneDir, "status", "--porcelain", "--ignored"), sh(t, cloneDir, "worktree", "list", "--porcelain")}
	}
	before := snapshot()

	tr, err := r.Try(ctx, replace("README.md", "teh", "the"))
	require.NoError(t, err)
	assert.Equal(t, head, tr.Head)
	assert.Equal(t, []string{"README.md"}, tr.Changed)
	assert.Contains(t, tr.Diff, "--- a/README.md\n+++ b/README.md\n")
	assert.Contains(t, tr.Diff, "\n-teh project\n+the project\n second line\n")
	assert.Equal(t, before, snapshot())
	left, err := filepath.Glob(filepath.Join(tmp, "acr-try-*"))
	require.NoError(t, err)
	assert.Empty(t, left)

	boom := errors.New("boom")
	_, err = r.Try(ctx, func(context.Context, string) error { return boom })
	require.ErrorIs(t, err, boom)
	assert.Equal(t, before, snapshot())
	left, err = filepath.Glob(filepath.Join(tmp, "acr-try-*"))
	require.NoError(t, err)
	assert.Empty(t, left)

	_, err = gitworld.Attach(filepath.Join(base, "none"), spec(remote), testEnv(t))
	require.ErrorIs(t, err, os.ErrNotExist, "attach makes no clone")
}
