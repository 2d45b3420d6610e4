// Package gittest makes and reads the local git repositories the tests of
// a git world run against (a bare repository stands for the remote). It
// runs the git program as the tests' own hand, outside acr: with an
// identity and an empty HOME of its own, so that no user configuration
// takes part and a machine without one runs the tests the same way.
package gittest

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// Need fails the test when the git program is missing: a git world runs
// git itself, so without it there is nothing to test.
func Need(t testing.TB) {
	t.Helper()
	_, err := exec.LookPath("git")
	require.NoError(t, err, "the git world's tests need the git program (docs/providers.md: git 2.25 or newer)")
}

// Run runs git in dir and returns what it printed.
func Run(t testing.TB, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.name=t", "-c", "user.email=t@t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// BareRemote makes a bare repository at path (a new directory when path
// is "") whose main branch holds files, and returns its path.
func BareRemote(t testing.TB, path string, files map[string]string) string {
	t.Helper()
	Need(t)
	if path == "" {
		path = filepath.Join(t.TempDir(), "remote.git")
	}
	Run(t, t.TempDir(), "init", "-q", "--bare", path)
	seed := t.TempDir()
	Run(t, seed, "init", "-q")
	for name, text := range files {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(seed, name)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(seed, name), []byte(text), 0o644))
	}
	Run(t, seed, "add", "-A")
	Run(t, seed, "commit", "-q", "-m", "seed")
	Run(t, seed, "push", "-q", path, "HEAD:refs/heads/main")
	return path
}

// Keys counts the Acr-Idempotency-Key trailers of the commits on the
// remote's branch, by key: an effect carried out once has a count of 1.
func Keys(t testing.TB, remote, branch string) map[string]int {
	t.Helper()
	n := map[string]int{}
	for _, k := range strings.Fields(Run(t, remote, "log", "--format=%(trailers:key=Acr-Idempotency-Key,valueonly)", "refs/heads/"+branch)) {
		n[k]++
	}
	return n
}
