package world_test

import (
	"os/exec"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/world"
)

// branchSamples are names on both sides of ValidBranch's line.
var branchSamples = []string{
	"main", "acr/keep-healthy", "release/1.x", "a", "A_b.c-d", "0", "feature/a/b/c",
	"", "-f", "--force", ".hidden", "a/.b", "a..b", "a.", "a/", "/a", "a//b", "a.lock", "a.lock/b", "a b", "a~1", "a^", "a:b",
	"a?", "a*", "a[", "a\\b", "@", "a@{1}", "HEAD@{0}", "a\x00", "é", "a\tb",
}

// TestValidBranchWithinGit holds ValidBranch to git itself: every name
// it accepts, git check-ref-format --branch accepts too (acr's rule is
// narrower, never wider).
func TestValidBranchWithinGit(t *testing.T) {
	git, err := exec.LookPath("git")
	if err != nil {
		t.Skip("git is not installed")
	}
	accepted := 0
	for _, name := range branchSamples {
		if world.ValidBranch(name) != nil {
			continue
		}
		accepted++
		out, err := exec.Command(git, "check-ref-format", "--branch", name).CombinedOutput()
		assert.NoError(t, err, "acr accepts %q, git refuses it: %s", name, out)
	}
	require.Positive(t, accepted)
}

// FuzzValidBranch: a name acr accepts is safe on a command line and in a
// ref: no leading '-', no control or space characters, none of git's
// forbidden sequences.
func FuzzValidBranch(f *testing.F) {
	for _, s := range branchSamples {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		if world.ValidBranch(name) != nil {
			return
		}
		if name == "" || strings.HasPrefix(name, "-") || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") ||
			strings.HasSuffix(name, ".") || strings.Contains(name, "//") || strings.Contains(name, "..") || strings.Contains(name, "@{") {
			t.Fatalf("accepted %q", name)
		}
		for _, r := range name {
			if unicode.IsSpace(r) || unicode.IsControl(r) || strings.ContainsRune("~^:?*[\\\\", r) || r > unicode.MaxASCII {
				t.Fatalf("accepted %q with %q", name, r)
			}
		}
		for _, part := range strings.Split(name, "/") {
			if strings.HasPrefix(part, ".") || strings.HasSuffix(part, ".lock") {
				t.Fatalf("accepted %q", name)
			}
		}
	})
}

// FuzzValidRemote: a remote acr accepts never starts with '-' and holds
// no control character.
func FuzzValidRemote(f *testing.F) {
	for _, s := range []string{"git@host:team/service.git", "/srv/r.git", "file:///srv/r.git", "https://h/r", "-oProxyCommand=x", "a\nb", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, remote string) {
		if world.ValidRemote(remote) != nil {
			return
		}
		if remote == "" || strings.HasPrefix(remote, "-") || strings.ContainsFunc(remote, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
			t.Fatalf("accepted %q", remote)
		}
	})
}

func TestGitBacking(t *testing.T) {
	s := world.Spec{Git: &world.GitSpec{Remote: "/r.git", Base: "main", Branch: "acr"}}
	assert.Equal(t, world.Backing{Kind: world.BackingGit, FilesMayAppear: true}, s.Backing())
}
