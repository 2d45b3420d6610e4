package gitworld_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/gitworld"
	"github.com/acr-project/acr/internal/gitworld/gittest"
	"github.com/acr-project/acr/internal/world"
)

// testEnv is the environment git gets in tests: the PATH, and a HOME of
// its own so that no user configuration takes part.
func testEnv(t *testing.T) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
}

// sh runs git in dir for a test's own setup and inspection.
func sh(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(gittest.Run(t, dir, args...))
}

// pushAside moves the remote's branch with a commit of someone else's.
func pushAside(t *testing.T, remote, branch, name string) string {
	t.Helper()
	dir := t.TempDir()
	sh(t, dir, "clone", "-q", "--branch", branch, remote, ".")
	require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte("someone else\n"), 0o644))
	sh(t, dir, "add", "-A")
	sh(t, dir, "commit", "-q", "-m", "someone else's change")
	sh(t, dir, "push", "-q", "origin", "HEAD:refs/heads/"+branch)
	return sh(t, dir, "rev-parse", "HEAD")
}

func spec(remote string) world.GitSpec {
	return world.GitSpec{Remote: remote, Base: "main", Branch: "acr/keep-healthy"}
}

func open(t *testing.T, dir, remote string) *gitworld.Repo {
	t.Helper()
	r, err := gitworld.Open(context.Background(), dir, spec(remote), testEnv(t))
	require.NoError(t, err)
	return r
}

func effect(key, head string) gitworld.Effect {
	return gitworld.Effect{Run: "run-1", Cycle: 3, Intent: codec.Ref("intent:sha256:" + strings.Repeat("a", 64)), Key: key, Head: head, Subject: "fix the typo"}
}

// replace is a Change that replaces text in one file.
func replace(name, find, with string) gitworld.Change {
	return func(_ context.Context, dir string) error {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, name), []byte(strings.ReplaceAll(string(b), find, with)), 0o644)
	}
}

func TestApplyCommitsOneEffectWithTrailers(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"README.md": "This is teh project.\n"})
	base := sh(t, remote, "rev-parse", "refs/heads/main")
	r := open(t, t.TempDir(), remote)
	head, err := r.Sync(ctx)
	require.NoError(t, err)
	assert.Equal(t, base, head.Commit, "the branch is created from base")
	assert.Equal(t, base, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"))
	b, err := os.ReadFile(filepath.Join(r.Dir(), "README.md"))
	require.NoError(t, err)
	assert.Equal(t, "This is teh project.\n", string(b), "the work tree is at the branch head")

	res, err := r.Apply(ctx, effect("idem:k1", head.Commit), replace("README.md", "teh", "the"))
	require.NoError(t, err)
	assert.Equal(t, gitworld.Pushed, res.Status)
	assert.Equal(t, []string{"README.md"}, res.Changed)
	assert.Equal(t, res.Commit.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"))
	assert.Equal(t, res.Commit.Tree, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy^{tree}"))
	assert.Equal(t, head.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy^"), "one commit on top of the recorded head")
	assert.Equal(t, base, sh(t, remote, "rev-parse", "refs/heads/main"), "base is never written")
	assert.Equal(t, "This is the project.", sh(t, remote, "show", "refs/heads/acr/keep-healthy:README.md"))

	trailers := sh(t, remote, "log", "-1", "--format=%(trailers:only,unfold)", "refs/heads/acr/keep-healthy")
	assert.Equal(t, "Acr-Run: run-1\nAcr-Cycle: 3\nAcr-Intent: intent:sha256:"+strings.Repeat("a", 64)+"\nAcr-Idempotency-Key: idem:k1", trailers)
	assert.Equal(t, "fix the typo", sh(t, remote, "log", "-1", "--format=%s", "refs/heads/acr/keep-healthy"))

	// The same key again: found, not pushed twice.
	again, err := r.Apply(ctx, effect("idem:k1", head.Commit), replace("README.md", "the", "THE"))
	require.NoError(t, err)
	assert.Equal(t, gitworld.Found, again.Status)
	assert.Equal(t, res.Commit, again.Commit)
	assert.Equal(t, map[string]int{"idem:k1": 1}, gittest.Keys(t, remote, "acr/keep-healthy"))
}

func TestApplyWithoutChangeCommitsNothing(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"README.md": "fine\n"})
	r := open(t, t.TempDir(), remote)
	head, err := r.Sync(ctx)
	require.NoError(t, err)
	res, err := r.Apply(ctx, effect("idem:k", head.Commit), replace("README.md", "teh", "the"))
	require.NoError(t, err)
	assert.Equal(t, gitworld.Unchanged, res.Status)
	assert.Equal(t, head.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"))
}

func TestChecksLeaveNothingBehind(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"README.md": "teh\n", ".gitignore": "build/\n"})
	r := open(t, t.TempDir(), remote)
	head, err := r.Sync(ctx)
	require.NoError(t, err)
	// What a check leaves: a changed file, an untracked one, an ignored one.
	require.NoError(t, os.WriteFile(filepath.Join(r.Dir(), "README.md"), []byte("changed by a check\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(r.Dir(), "stray.txt"), []byte("x"), 0o644))
	require.NoError(t, os.MkdirAll(filepath.Join(r.Dir(), "build"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(r.Dir(), "build", "out"), []byte("x"), 0o644))
	res, err := r.Apply(ctx, effect("idem:k", head.Commit), replace("README.md", "teh", "the"))
	require.NoError(t, err)
	require.Equal(t, gitworld.Pushed, res.Status)
	assert.Equal(t, []string{"README.md"}, res.Changed, "only the fix's change is committed")
	assert.Equal(t, ".gitignore\nREADME.md", sh(t, remote, "ls-tree", "--name-only", "-r", "refs/heads/acr/keep-healthy"))
}

func TestPushRefusedByAMovedBranchIsStale(t *testing.T) {
	ctx := context.Background()
	t.Run("moved before the effect", func(t *testing.T) {
		remote := gittest.BareRemote(t, "", map[string]string{"README.md": "teh\n"})
		r := open(t, t.TempDir(), remote)
		head, err := r.Sync(ctx)
		require.NoError(t, err)
		moved := pushAside(t, remote, "acr/keep-healthy", "other.txt")
		res, err := r.Apply(ctx, effect("idem:k", head.Commit), replace("README.md", "teh", "the"))
		require.NoError(t, err)
		assert.Equal(t, gitworld.Stale, res.Status)
		assert.Equal(t, moved, res.Commit.Commit, "the new head, for the next observation")
		assert.Equal(t, moved, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"))
		assert.Empty(t, gittest.Keys(t, remote, "acr/keep-healthy"))
	})
	t.Run("moved between the commit and the push", func(t *testing.T) {
		remote := gittest.BareRemote(t, "", map[string]string{"README.md": "teh\n"})
		r := open(t, t.TempDir(), remote)
		head, err := r.Sync(ctx)
		require.NoError(t, err)
		var moved string
		r.OnStage = func(stage string) {
			if stage == gitworld.StageAfterCommit {
				moved = pushAside(t, remote, "acr/keep-healthy", "other.txt")
			}
		}
		res, err := r.Apply(ctx, effect("idem:k", head.Commit), replace("README.md", "teh", "the"))
		require.NoError(t, err)
		assert.Equal(t, gitworld.Stale, res.Status, "the lease refused the push")
		assert.Equal(t, moved, res.Commit.Commit)
		assert.Equal(t, moved, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"))
		assert.Empty(t, gittest.Keys(t, remote, "acr/keep-healthy"))
	})
}

// errKilled stands for a kill -9 at a stage: Apply stops there and
// returns nothing.
var errKilled = errors.New("killed")

// applyKilledAt runs Apply and stops it at stage, as a kill would.
func applyKilledAt(t *testing.T, r *gitworld.Repo, stage string, e gitworld.Effect, c gitworld.Change) (res gitworld.Result, killed bool, err error) {
	t.Helper()
	r.OnStage = func(s string) {
		if s == stage {
			panic(errKilled)
		}
	}
	defer func() {
		r.OnStage = nil
		if p := recover(); p != nil {
			if p != errKilled {
				panic(p)
			}
			killed = true
		}
	}()
	res, err = r.Apply(context.Background(), e, c)
	return res, false, err
}

func TestRecoveryFindsTheEffectByItsKey(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		stage string
		// want is how the second attempt ends.
		want gitworld.Status
	}{
		{gitworld.StageAfterCommit, gitworld.Pushed}, // the push never happened: carried out again
		{gitworld.StageAfterPush, gitworld.Found},    // the push happened: found, not pushed again
	} {
		for _, sameHost := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/same-host=%v", tc.stage, sameHost), func(t *testing.T) {
				remote := gittest.BareRemote(t, "", map[string]string{"README.md": "teh\n"})
				dir := t.TempDir()
				r := open(t, dir, remote)
				head, err := r.Sync(ctx)
				require.NoError(t, err)
				e := effect("idem:k", head.Commit)
				_, killed, err := applyKilledAt(t, r, tc.stage, e, replace("README.md", "teh", "the"))
				require.NoError(t, err)
				require.True(t, killed)

				// The run is recovered on this host's clone, or on another
				// host with a clone of its own.
				if !sameHost {
					dir = t.TempDir()
				}
				r2 := open(t, dir, remote)
				res, err := r2.Apply(ctx, e, replace("README.md", "teh", "the"))
				require.NoError(t, err)
				assert.Equal(t, tc.want, res.Status)
				assert.Equal(t, map[string]int{"idem:k": 1}, gittest.Keys(t, remote, "acr/keep-healthy"), "exactly once")
				assert.Equal(t, res.Commit.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"))
				assert.Equal(t, "the", sh(t, remote, "show", "refs/heads/acr/keep-healthy:README.md"))
			})
		}
	}
}

func TestACommandCutShortIsDiscarded(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"a.txt": "1\n", "b.txt": "1\n"})
	r := open(t, t.TempDir(), remote)
	head, err := r.Sync(ctx)
	require.NoError(t, err)
	e := effect("idem:k", head.Commit)
	// Killed half way: a.txt rewritten, b.txt not yet, a stray file left.
	func() {
		defer func() { require.Equal(t, errKilled, recover()) }()
		_, _ = r.Apply(ctx, e, func(_ context.Context, dir string) error {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("2\n"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(dir, "half.tmp"), []byte("x"), 0o644))
			panic(errKilled)
		})
	}()
	assert.Empty(t, gittest.Keys(t, remote, "acr/keep-healthy"))
	both := func(_ context.Context, dir string) error {
		for _, n := range []string{"a.txt", "b.txt"} {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("2\n"), 0o644); err != nil {
				return err
			}
		}
		return nil
	}
	res, err := r.Apply(ctx, e, both)
	require.NoError(t, err)
	assert.Equal(t, gitworld.Pushed, res.Status)
	assert.Equal(t, []string{"a.txt", "b.txt"}, res.Changed, "the interrupted work tree was discarded")
	assert.Equal(t, map[string]int{"idem:k": 1}, gittest.Keys(t, remote, "acr/keep-healthy"))
}

func TestAChangeThatFailsCommitsNothing(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"a.txt": "1\n"})
	r := open(t, t.TempDir(), remote)
	head, err := r.Sync(ctx)
	require.NoError(t, err)
	boom := errors.New("boom")
	_, err = r.Apply(ctx, effect("idem:k", head.Commit), func(context.Context, string) error { return boom })
	require.ErrorIs(t, err, boom)
	assert.Equal(t, head.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"))
}

// TestEffectsExactlyOnceUnderKills carries out a queue of effects, each
// on the head the previous one left, killing attempts at random stages
// (seeded), each retried by a fresh Repo on one of three clones until it
// settles: every effect ends on the branch exactly once.
func TestEffectsExactlyOnceUnderKills(t *testing.T) {
	ctx := context.Background()
	files := map[string]string{}
	const n = 12
	for i := range n {
		files[fmt.Sprintf("item%02d.txt", i)] = "todo\n"
	}
	remote := gittest.BareRemote(t, "", files)
	hosts := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	rng := rand.New(rand.NewPCG(35, 1))
	stages := []string{gitworld.StageAfterCommit, gitworld.StageAfterPush, ""}
	kills := 0
	for i := range n {
		r := open(t, hosts[rng.IntN(len(hosts))], remote)
		head, err := r.Sync(ctx)
		require.NoError(t, err)
		e := effect(fmt.Sprintf("idem:%02d", i), head.Commit)
		change := replace(fmt.Sprintf("item%02d.txt", i), "todo", "done")
		for attempt := 0; ; attempt++ {
			require.Less(t, attempt, 20)
			r := open(t, hosts[rng.IntN(len(hosts))], remote)
			res, killed, err := applyKilledAt(t, r, stages[rng.IntN(len(stages))], e, change)
			require.NoError(t, err)
			if killed {
				kills++
				continue
			}
			require.Contains(t, []gitworld.Status{gitworld.Pushed, gitworld.Found}, res.Status)
			break
		}
	}
	require.Positive(t, kills, "the seed must kill some attempts")
	keys := gittest.Keys(t, remote, "acr/keep-healthy")
	require.Len(t, keys, n)
	for k, c := range keys {
		assert.Equal(t, 1, c, "key %s", k)
	}
	for i := range n {
		assert.Equal(t, "done", sh(t, remote, "show", fmt.Sprintf("refs/heads/acr/keep-healthy:item%02d.txt", i)))
	}
	t.Logf("%d effects, %d attempts killed", n, kills)
}

func TestOpenRefusesAMissingRemote(t *testing.T) {
	gittest.Need(t)
	r := open(t, t.TempDir(), filepath.Join(t.TempDir(), "nothing.git"))
	_, err := r.Sync(context.Background())
	require.ErrorIs(t, err, gitworld.ErrGit)
}

// A git program killed with acr leaves its lock file behind, and git never
// removes another program's lock: the clone's next open removes them, so
// the run goes on instead of failing on "could not lock config file" (the
// git crash harness met one, a kill during the open's git config).
func TestOpenRemovesStaleLocks(t *testing.T) {
	gittest.Need(t)
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"README.md": "hi\n"})
	dir := t.TempDir()
	r := open(t, dir, remote)
	_, err := r.Sync(ctx)
	require.NoError(t, err)
	locks := []string{"config.lock", "index.lock", "HEAD.lock", "packed-refs.lock", "refs/heads/acr/keep-healthy.lock", "objects/info/commit-graph.lock"}
	for _, l := range locks {
		p := filepath.Join(dir, ".git", filepath.FromSlash(l))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte("left by a killed git\n"), 0o644))
	}
	r = open(t, dir, remote)
	for _, l := range locks {
		assert.NoFileExists(t, filepath.Join(dir, ".git", filepath.FromSlash(l)))
	}
	head, err := r.Sync(ctx)
	require.NoError(t, err)
	res, err := r.Apply(ctx, effect("idem:k1", head.Commit), replace("README.md", "hi", "hello"))
	require.NoError(t, err)
	assert.Equal(t, gitworld.Pushed, res.Status)
}

func TestHooksDoNotRun(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"a.txt": "1\n"})
	dir := t.TempDir()
	r := open(t, dir, remote)
	head, err := r.Sync(ctx)
	require.NoError(t, err)
	marker := filepath.Join(t.TempDir(), "hook-ran")
	hook := "#!/bin/sh\ntouch " + marker + "\nexit 1\n"
	for _, h := range []string{"pre-commit", "commit-msg", "pre-push"} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "hooks", h), []byte(hook), 0o755))
	}
	res, err := r.Apply(ctx, effect("idem:k", head.Commit), replace("a.txt", "1", "2"))
	require.NoError(t, err)
	assert.Equal(t, gitworld.Pushed, res.Status)
	assert.NoFileExists(t, marker)
}

func TestAChangeOutsideItsTouchesIsRefused(t *testing.T) {
	ctx := context.Background()
	remote := gittest.BareRemote(t, "", map[string]string{"main.go": "package main\n", "README.md": "x\n"})
	r := open(t, t.TempDir(), remote)
	head, err := r.Sync(ctx)
	require.NoError(t, err)
	e := effect("idem:k", head.Commit)
	e.Touches = []string{"**/*.go"}
	res, err := r.Apply(ctx, e, func(_ context.Context, dir string) error {
		for _, n := range []string{"main.go", "README.md"} {
			if err := os.WriteFile(filepath.Join(dir, n), []byte("changed\n"), 0o644); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, gitworld.Refused, res.Status)
	assert.Equal(t, []string{"README.md", "main.go"}, res.Changed)
	assert.Equal(t, []string{"README.md"}, res.Outside)
	assert.Equal(t, head.Commit, sh(t, remote, "rev-parse", "refs/heads/acr/keep-healthy"), "nothing pushed")
	b, err := os.ReadFile(filepath.Join(r.Dir(), "README.md"))
	require.NoError(t, err)
	assert.Equal(t, "x\n", string(b), "the refused change is discarded")
}
