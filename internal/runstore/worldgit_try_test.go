package runstore

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/gitworld/gittest"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/world"
)

// TestGitWorldTriesBeforeGovernance: the git world a run's driver holds
// is a kernel.Trier. It tries a command fix in a throwaway clone at the
// head its last observation fetched and reports the paths the command
// really changed, or how it failed (a failure is the trial's, not an
// error); the remote, the clone's refs and work tree are as they were,
// and no throwaway clone is left.
func TestGitWorldTriesBeforeGovernance(t *testing.T) {
	remote := gittest.BareRemote(t, "", map[string]string{"queue.txt": "d\n", "lower.txt": "aXb\nkeep\n"})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	in := gitInputs(t, remote, "acr/try")
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, in, "run:try", false, gitOptions(t))
	require.NoError(t, err)
	cases := []struct {
		name    string
		argv    []string
		changed []string
		failure string
	}{
		{"inside touches", []string{"sed", "-i", "s/X/x/g", "lower.txt"}, []string{"lower.txt"}, ""},
		{"outside touches", []string{"sh", "-c", "sed -i s/X/x/g lower.txt && echo new > other.txt"}, []string{"lower.txt", "other.txt"}, ""},
		{"fails", []string{"sh", "-c", "echo half > lower.txt; exit 3"}, []string{"lower.txt"}, "exit 3"},
		{"changes nothing", []string{"true"}, nil, ""},
		{"cannot start", []string{"no-such-program-acr"}, nil, "could not be started: "},
	}
	// The world declares each case's command as a fix of the check lower.
	spec := in.Spec
	spec.Checks = append([]world.Check(nil), in.Spec.Checks...)
	var fixes []world.Fix
	for i := range spec.Checks {
		if spec.Checks[i].ID == "lower" {
			for j, tc := range cases {
				f := spec.Checks[i].Fixes[0]
				f.ID, f.Argv = "try-"+string(rune('a'+j)), tc.argv
				fixes = append(fixes, f)
			}
			spec.Checks[i].Fixes = fixes
		}
	}
	require.Len(t, fixes, len(cases))
	fsys, err := disk.OpenOSDir(dir)
	require.NoError(t, err)
	w, err := sandbox.Open(dir, spec, fsys)
	require.NoError(t, err)
	defer w.Close()
	w.Environ = gitOptions(t).Environ
	gw, err := openGitWorld(t.Context(), w, spec, gitOptions(t).Environ, nil)
	require.NoError(t, err)
	var trier kernel.Trier = gw
	obs, err := gw.Observe(t.Context())
	require.NoError(t, err)
	require.NotNil(t, obs.Git)
	head := gitSh(t, remote, "rev-parse", "refs/heads/acr/try")
	require.Equal(t, head, obs.Git.Commit)
	clone := filepath.Join(dir, filepath.FromSlash(sandbox.WorldDir))
	snapshot := func() []string {
		return []string{gitSh(t, remote, "show-ref"), gitSh(t, clone, "show-ref"), gitSh(t, clone, "rev-parse", "HEAD"),
			gitSh(t, clone, "status", "--porcelain")}
	}
	before := snapshot()

	for j, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tried, err := trier.Try(t.Context(), world.CommandAction("lower", fixes[j]))
			require.NoError(t, err)
			assert.Equal(t, head, tried.Head)
			assert.True(t, tried.Trial().Valid())
			assert.Equal(t, tc.changed, tried.Changed)
			if tc.failure == "" {
				assert.Empty(t, tried.Failure)
			} else {
				assert.True(t, strings.HasPrefix(tried.Failure, tc.failure), tried.Failure)
			}
			assert.Empty(t, tried.Outside, "the kernel, not the world, reads the paths against touches")
			assert.Equal(t, before, snapshot(), "the trial wrote nothing")
			left, err := filepath.Glob(filepath.Join(tmp, "acr-try-*"))
			require.NoError(t, err)
			assert.Empty(t, left, "the throwaway clone is removed")
		})
	}
}
