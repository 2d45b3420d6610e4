package gitworld_test

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/gitworld"
	"github.com/acr-project/acr/internal/gitworld/gittest"
)

// TestFetchTalksToTheRemoteOnce: an observation of a run whose branch
// exists makes one conversation with the remote (a fetch), not an
// ls-remote and then a fetch: on a real remote each is an ssh
// connection. The run's first observation, which creates the branch
// from base, and a branch deleted on the remote still ask where the
// branches are. git's own trace (GIT_TRACE) counts what ran.
func TestFetchTalksToTheRemoteOnce(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"README.md": "hello\n"})
	trace := filepath.Join(t.TempDir(), "trace")
	r, err := gitworld.Open(ctx, t.TempDir(), spec(remote), append(testEnv(t), "GIT_TRACE="+trace))
	require.NoError(t, err)
	lsRemote := regexp.MustCompile(`built-in: git ls-remote`)
	fetches := regexp.MustCompile(`built-in: git fetch`)
	count := func() (ls, fetch int) {
		b, err := os.ReadFile(trace)
		require.NoError(t, err)
		require.NoError(t, os.Remove(trace))
		return len(lsRemote.FindAll(b, -1)), len(fetches.FindAll(b, -1))
	}

	first, err := r.Fetch(ctx)
	require.NoError(t, err)
	ls, _ := count()
	assert.Equal(t, 1, ls, "the first observation asks where the branches are, to create the run's branch")
	assert.Equal(t, sh(t, remote, "rev-parse", "refs/heads/main"), first.Commit)

	for range 3 {
		h, err := r.Fetch(ctx)
		require.NoError(t, err)
		assert.Equal(t, first, h)
		ls, fetch := count()
		assert.Equal(t, 0, ls, "an existing branch is fetched straight away")
		assert.Equal(t, 1, fetch)
	}

	moved := pushAside(t, remote, "acr/keep-healthy", "other.txt")
	h, err := r.Fetch(ctx)
	require.NoError(t, err)
	assert.Equal(t, moved, h.Commit, "a branch moved by someone else is seen at once")
	count()

	sh(t, remote, "branch", "-D", "acr/keep-healthy")
	h, err = r.Fetch(ctx)
	require.NoError(t, err)
	assert.Equal(t, first.Commit, h.Commit, "a branch deleted on the remote is made again from base")
	ls, _ = count()
	assert.Equal(t, 1, ls)
}
