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
	"github.com/acr-project/acr/internal/world"
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

// TestApplyCommitsOnlyTheApprovedTree: a trial's tree is the tree the
// same change commits on the same head; an effect bound to a tree
// commits it, and one whose change produces another tree (a command that
// does not give the same files twice) commits and pushes nothing.
func TestApplyCommitsOnlyTheApprovedTree(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"README.md": "teh project\n"})
	r := open(t, t.TempDir(), remote)
	head, err := r.Sync(ctx)
	require.NoError(t, err)

	tr, err := r.Try(ctx, replace("README.md", "teh", "the"))
	require.NoError(t, err)
	require.NotEqual(t, head.Tree, tr.Tree, "the trial's tree is the changed one")
	approved := tr.Approved()
	assert.True(t, approved.Valid())
	assert.Equal(t, world.GitTrial{Head: head.Commit, Tree: tr.Tree, Changed: []string{"README.md"}}, approved)

	// Another change than the one tried: nothing committed or pushed.
	e := effect("idem:other", head.Commit)
	e.Tree = tr.Tree
	res, err := r.Apply(ctx, e, replace("README.md", "teh", "THE"))
	require.NoError(t, err)
	assert.Equal(t, gitworld.Differs, res.Status)
	assert.NotEqual(t, tr.Tree, res.Tree)
	assert.Equal(t, head.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"), "nothing pushed")
	assert.Empty(t, sh(t, r.Dir(), "status", "--porcelain"), "the work tree is put back at the head")
	assert.Empty(t, gittest.Keys(t, remote, "acr/keep-healthy"))

	// A change that leaves the tree as it was is not the approved tree
	// either.
	e = effect("idem:none", head.Commit)
	e.Tree = tr.Tree
	res, err = r.Apply(ctx, e, func(context.Context, string) error { return nil })
	require.NoError(t, err)
	assert.Equal(t, gitworld.Differs, res.Status)
	assert.Equal(t, head.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"))

	// The tree tried, with other paths than those it changes (what an
	// answer made by hand could name, for governance to rule on): not
	// committed either.
	e = effect("idem:paths", head.Commit)
	e.Tree, e.Changed = tr.Tree, []string{"elsewhere.txt"}
	res, err = r.Apply(ctx, e, replace("README.md", "teh", "the"))
	require.NoError(t, err)
	assert.Equal(t, gitworld.Differs, res.Status)
	assert.Equal(t, tr.Tree, res.Tree)
	assert.Equal(t, head.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"), "nothing pushed")

	// The change tried: its tree, exactly, is committed on the head.
	e = effect("idem:same", head.Commit)
	e.Tree, e.Changed = tr.Tree, tr.Changed
	res, err = r.Apply(ctx, e, replace("README.md", "teh", "the"))
	require.NoError(t, err)
	assert.Equal(t, gitworld.Pushed, res.Status)
	assert.Equal(t, tr.Tree, res.Commit.Tree)
	assert.Equal(t, tr.Tree, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy^{tree}"))
	assert.Equal(t, head.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy^"))
}
