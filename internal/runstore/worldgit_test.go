package runstore

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/gitworld"
	"github.com/acr-project/acr/internal/gitworld/gittest"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// gitSh runs git for a test's own setup and inspection.
func gitSh(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return strings.TrimSpace(gittest.Run(t, dir, args...))
}

// gitInputs is a run on branch of remote that drains queue.txt (n items,
// one patch per cycle) and lowers lower.txt with a command fix; every
// effect is allowed.
func gitInputs(t *testing.T, remote, branch string) Inputs {
	t.Helper()
	dir := t.TempDir()
	docs := map[string]any{
		"goal.json": map[string]any{"schema": "acr.goal/v0.1", "id": "queue", "mission": "drain the queue",
			"success": map[string]any{"all_checks_pass": true}},
		"contract.json": map[string]any{"schema": "acr.contract/v0.1", "id": "queue", "authority": map[string]any{"id": "op", "mode": "project_write"},
			"coordinates": map[string]any{"readiness": "L2", "autonomy": "A2", "cognitive_depth": "D2"},
			"rules": []any{map[string]any{"operation": "*", "paths": []string{"**"}, "effect": "allow"},
				map[string]any{"operation": "run_command", "paths": []string{"lower.txt"}, "effect": "allow"}},
			"budgets": map[string]any{"cycles": map[string]any{"hard": 200}}, "policy": map[string]any{}},
		"env.json": map[string]any{"schema": "acr.environment/v0.1",
			"git": map[string]any{"remote": remote, "base": "main", "branch": branch},
			"checks": []any{
				map[string]any{"id": "queue", "summary": "items pending", "kind": "absent_text", "path": "queue.txt", "text": "p", "priority": 10,
					"fixes": []any{map[string]any{"operation": "apply_local_patch", "find": "p", "replace": "d", "occurrences": 1}}},
				map[string]any{"id": "lower", "summary": "no capitals", "kind": "command", "priority": 20,
					"argv": []string{"sh", "-c", "! grep -q X lower.txt"},
					"fixes": []any{map[string]any{"id": "lower", "operation": "run_command", "argv": []string{"sed", "-i", "s/X/x/g", "lower.txt"},
						"touches": []string{"lower.txt"}}}}}},
	}
	for name, doc := range docs {
		b, err := json.Marshal(doc)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	in, err := ReadInputs(filepath.Join(dir, "goal.json"), filepath.Join(dir, "contract.json"), filepath.Join(dir, "env.json"))
	require.NoError(t, err)
	return in
}

// gitOptions are testOptions with the environment git needs.
func gitOptions(t *testing.T) Options {
	opt := testOptions()
	home := t.TempDir()
	opt.Environ = func(k string) (string, bool) {
		switch k {
		case "PATH":
			return os.LookupEnv("PATH")
		case "HOME":
			return home, true
		}
		return "", false
	}
	return opt
}

// errGitKill stands for a kill -9 at a failpoint.
var errGitKill = errors.New("killed")

// TestRemoteGitWorlds: four git-world runs in one nats:// store, drained
// by three hosts (state directories) in turn, one of them killed after a
// push and another after a commit; the store holds nothing of the worlds,
// every effect is one commit on its run's branch, no key twice, and every
// ledger verifies.
func TestRemoteGitWorlds(t *testing.T) {
	rs := startStore(t)
	const items = 3
	remote := gittest.BareRemote(t, "", map[string]string{"queue.txt": strings.Repeat("p\n", items), "lower.txt": "aXb\n"})
	base := gitSh(t, remote, "rev-parse", "refs/heads/main")
	hosts := []string{t.TempDir(), t.TempDir(), t.TempDir()}
	const runs = 4
	kills := map[int]string{1: gitworld.StageAfterPush, 2: gitworld.StageAfterCommit}
	for i := range runs {
		id, branch := fmt.Sprintf("run:git-%d", i), fmt.Sprintf("acr/run-%d", i)
		in := gitInputs(t, remote, branch)
		_, err := rs.on(t, hosts[i%len(hosts)], id).Init(t.Context(), in, gitOptions(t))
		require.NoError(t, err)
		_, err = rs.s.Run(t.Context(), id)
		require.NoError(t, err)
	}
	killed := 0
	for round := 0; round < 20; round++ {
		for i := range runs {
			id := fmt.Sprintf("run:git-%d", i)
			m := rs.on(t, hosts[(i+round)%len(hosts)], id)
			opt := gitOptions(t)
			stage, kill := kills[i]
			if kill && round == 1 {
				opt.Failpoint = func(s string) {
					if s == stage {
						panic(errGitKill)
					}
				}
			}
			r, err := m.Open(t.Context(), storage.Holder{Name: fmt.Sprintf("host-%d", (i+round)%len(hosts))}, opt)
			require.NoError(t, err)
			func() {
				defer func() {
					if p := recover(); p != nil {
						require.Equal(t, errGitKill, p)
						killed++
						r.Abandon()
						rs.freeLease(t, id)
						r = nil
					}
				}()
				_, err = r.Driver.Run(r.Held, 2, nil)
				require.NoError(t, err)
			}()
			if r != nil {
				require.NoError(t, r.Close())
			}
		}
	}
	require.Equal(t, 2, killed, "both kills happened")
	for i := range runs {
		id, branch := fmt.Sprintf("run:git-%d", i), fmt.Sprintf("acr/run-%d", i)
		keys := gittest.Keys(t, remote, branch)
		assert.Len(t, keys, items+1, "run %d: one commit per effect", i)
		for k, n := range keys {
			assert.Equal(t, 1, n, "run %d: key %s", i, k)
		}
		assert.Equal(t, strings.Repeat("d\n", items), gitSh(t, remote, "show", "refs/heads/"+branch+":queue.txt")+"\n")
		assert.Equal(t, "axb", gitSh(t, remote, "show", "refs/heads/"+branch+":lower.txt"))
		m := rs.on(t, hosts[0], id)
		h, err := m.History()
		require.NoError(t, err)
		expect, err := h.Expect()
		require.NoError(t, err)
		rep, err := h.Verify(expect)
		require.NoError(t, err)
		require.True(t, rep.OK, "%v", rep.Damage)
		for k, n := range committed(t, h) {
			assert.Equal(t, 1, n, "run %d: effect %s recorded %d times", i, k, n)
			assert.Equal(t, 1, keys[k], "run %d: the recorded effect %s is on the branch once", i, k)
		}
		r, err := rs.s.Run(t.Context(), id)
		require.NoError(t, err)
		_, err = r.World().Load()
		assert.Error(t, err, "run %d: the store holds nothing of a git world", i)
	}
	assert.Equal(t, base, gitSh(t, remote, "rev-parse", "refs/heads/main"), "base is never written")
}

// TestGitWorldMovedBranchIsObservedAgain: someone pushes to the run's
// branch after the decision and before the effect. The effect's push is
// refused (stale, nothing written to the branch), the next cycle observes
// the new head and carries the fix out on top of it, once.
func TestGitWorldMovedBranchIsObservedAgain(t *testing.T) {
	remote := gittest.BareRemote(t, "", map[string]string{"queue.txt": "p\n", "lower.txt": "ab\n"})
	in := gitInputs(t, remote, "acr/moved")
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, in, "run:moved", false, gitOptions(t))
	require.NoError(t, err)
	opt := gitOptions(t)
	moved := false
	opt.Failpoint = func(stage string) {
		if stage != "after-decision" || moved {
			return
		}
		moved = true
		other := t.TempDir()
		gitSh(t, other, "clone", "-q", "--branch", "acr/moved", remote, ".")
		require.NoError(t, os.WriteFile(filepath.Join(other, "other.txt"), []byte("someone else\n"), 0o644))
		gitSh(t, other, "add", "-A")
		gitSh(t, other, "commit", "-q", "-m", "someone else")
		gitSh(t, other, "push", "-q", "origin", "HEAD:refs/heads/acr/moved")
	}
	r, err := Open(t.Context(), dir, opt)
	require.NoError(t, err)
	_, err = r.Driver.Run(t.Context(), 10, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.True(t, moved)

	h, err := OpenHistory(dir)
	require.NoError(t, err)
	recs, err := h.ReadAll()
	require.NoError(t, err)
	var statuses []string
	for _, rec := range recs {
		if rec.Event.Object == nil {
			continue
		}
		var o world.Outcome
		if rec.Event.Object.Decode(&o) == nil && o.Key != "" && o.Git != nil {
			statuses = append(statuses, string(o.Status))
		}
	}
	assert.Contains(t, statuses, "stale", "the refused push is recorded as stale")
	assert.Equal(t, "d", gitSh(t, remote, "show", "refs/heads/acr/moved:queue.txt"))
	assert.Equal(t, []string{"acr: apply_local_patch queue.txt", "someone else", "seed"},
		strings.Split(gitSh(t, remote, "log", "--format=%s", "refs/heads/acr/moved"), "\n"), "the fix on top of the other commit, once")
	assert.Len(t, gittest.Keys(t, remote, "acr/moved"), 1)
}

// TestGitWorldUnreachableRemoteIsAProviderFailure: a remote that cannot
// be reached gives no observation: the cycle does not happen, the failure
// is counted, and nothing is written to the branch.
func TestGitWorldUnreachableRemoteIsAProviderFailure(t *testing.T) {
	remote := gittest.BareRemote(t, "", map[string]string{"queue.txt": "p\n", "lower.txt": "ab\n"})
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, gitInputs(t, remote, "acr/gone"), "run:gone", false, gitOptions(t))
	require.NoError(t, err)
	require.NoError(t, os.Rename(remote, remote+".moved"))
	r, err := Open(t.Context(), dir, gitOptions(t))
	require.NoError(t, err)
	rep, err := r.Driver.Run(t.Context(), 5, nil)
	require.ErrorIs(t, err, kernel.ErrProvider)
	assert.Zero(t, rep.CyclesExecuted)
	require.NoError(t, r.Close())
	require.NoError(t, os.Rename(remote+".moved", remote))
	r, err = Open(t.Context(), dir, gitOptions(t))
	require.NoError(t, err)
	rep, err = r.Driver.Run(t.Context(), 10, nil)
	require.NoError(t, err)
	assert.Positive(t, rep.CyclesExecuted, "back once the remote answers")
	require.NoError(t, r.Close())
	assert.Len(t, gittest.Keys(t, remote, "acr/gone"), 1)
}
