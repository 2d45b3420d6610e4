package gittest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/gitworld/gittest"
)

// TestBareRemoteAndKeys: the bare remote's main branch holds the files
// (nested ones too), and Keys counts each key trailer on a branch, a
// key committed twice included.
func TestBareRemoteAndKeys(t *testing.T) {
	remote := gittest.BareRemote(t, "", map[string]string{"a.txt": "a\n", "dir/b.txt": "b\n"})
	assert.Equal(t, "b\n", gittest.Run(t, remote, "show", "refs/heads/main:dir/b.txt"))
	assert.Empty(t, gittest.Keys(t, remote, "main"), "the seed commit carries no key")

	work := t.TempDir()
	gittest.Run(t, work, "clone", "-q", remote, ".")
	for i, key := range []string{"idem:one", "idem:two", "idem:one"} {
		require.NoError(t, os.WriteFile(filepath.Join(work, "a.txt"), []byte{byte('0' + i)}, 0o644))
		gittest.Run(t, work, "commit", "-q", "-a", "-m", "change\n\nAcr-Idempotency-Key: "+key)
	}
	gittest.Run(t, work, "push", "-q", "origin", "HEAD:refs/heads/acr/x")
	assert.Equal(t, map[string]int{"idem:one": 2, "idem:two": 1}, gittest.Keys(t, remote, "acr/x"))
}
