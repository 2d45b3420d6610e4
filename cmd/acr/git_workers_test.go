package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/gitworld"
	"github.com/acr-project/acr/internal/gitworld/gittest"
	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// TestGitWorkersOnThreeHosts: four git-world runs in one nats:// store
// are drained by real acr worker processes (--once) on three hosts, each
// with a state directory of its own; one worker is killed (SIGKILL, by
// the git-after-push failpoint) with the effect on the branch and not in
// the ledger. Every branch ends with one commit per effect (eleven
// patches and a command: the twelve), no key twice, and every
// ledger verifies.
func TestGitWorkersOnThreeHosts(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"git", "sh", "sed"} {
		_, err := exec.LookPath(p)
		require.NoError(t, err, "this test runs %s", p)
	}
	bin := filepath.Join(t.TempDir(), "acr")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build acr: %v\n%s", err, out)
	}
	srv := natstest.Start(t)
	const prefix = "gitw"
	store := srv.ClientURL() + "/" + prefix
	base := t.TempDir()
	remote := filepath.Join(base, "remote.git")
	const patches, effects = 11, 12
	gittest.BareRemote(t, remote, map[string]string{"queue.txt": strings.Repeat("p\n", patches), "lower.txt": "aXb\n"})
	mainHead := git(t, remote, "rev-parse", "refs/heads/main")
	docs := map[string]string{
		"goal.json": `{"schema": "acr.goal/v0.1", "id": "queue", "mission": "drain the queue", "success": {"all_checks_pass": true}}`,
		"contract.json": `{"schema": "acr.contract/v0.1", "id": "queue", "authority": {"id": "op", "mode": "project_write"},
 "coordinates": {"readiness": "L2", "autonomy": "A2", "cognitive_depth": "D2"},
 "rules": [{"operation": "apply_local_patch", "paths": ["queue.txt"], "effect": "allow"}, {"operation": "run_command", "paths": ["lower.txt"], "effect": "allow"}], "policy": {}}`,
	}
	for n, body := range docs {
		require.NoError(t, os.WriteFile(filepath.Join(base, n), []byte(body), 0o644))
	}
	acr := func(dir string, env []string, args ...string) *exec.Cmd {
		cmd := exec.Command(bin, append([]string{"--state-dir", dir, "--store", store}, args...)...)
		cmd.Env = append(append(os.Environ(), "ACR_FAILPOINT=", "ACR_CLOCK=", "ACR_STORE=", "ACR_RUN_ID="), env...)
		return cmd
	}
	must := func(dir string, args ...string) string {
		t.Helper()
		out, err := acr(dir, nil, args...).CombinedOutput()
		require.NoError(t, err, "acr %v: %s", args, out)
		return string(out)
	}
	const runs = 4
	initDir := filepath.Join(base, "init")
	for i := range runs {
		env := fmt.Sprintf(`{"schema": "acr.environment/v0.1", "git": {"remote": "remote.git", "base": "main", "branch": "acr/run-%d"},
 "checks": [{"id": "queue", "summary": "items pending", "kind": "absent_text", "path": "queue.txt", "text": "p", "priority": 10,
   "fixes": [{"operation": "apply_local_patch", "find": "p", "replace": "d", "occurrences": 1}]},
  {"id": "lower", "summary": "no capitals", "kind": "command", "priority": 20, "argv": ["sh", "-c", "! grep -q X lower.txt"],
   "fixes": [{"id": "lower", "operation": "run_command", "argv": ["sed", "-i", "s/X/x/g", "lower.txt"], "touches": ["lower.txt"]}]}]}`, i)
		envFile := filepath.Join(base, fmt.Sprintf("env-%d.json", i))
		require.NoError(t, os.WriteFile(envFile, []byte(env), 0o644))
		must(initDir, "--run-id", fmt.Sprintf("run:g%d", i), "init", "--goal", filepath.Join(base, "goal.json"),
			"--contract", filepath.Join(base, "contract.json"), "--env", envFile)
	}
	js, err := natsjs.New(natstest.Connect(t, srv.ClientURL()))
	require.NoError(t, err)
	leases, err := js.KeyValue(t.Context(), prefix+"-lease")
	require.NoError(t, err)
	// purge frees every lease, as an operator who waited for a killed
	// worker's TTL would (no other worker runs meanwhile).
	purge := func() {
		keys, err := leases.ListKeys(t.Context())
		require.NoError(t, err)
		for k := range keys.Keys() {
			require.NoError(t, leases.Purge(t.Context(), k))
		}
	}
	done := func() bool {
		for i := range runs {
			if len(strings.Fields(git(t, remote, "log", "--format=%(trailers:key=Acr-Idempotency-Key,valueonly)", fmt.Sprintf("refs/heads/acr/run-%d", i)))) < effects {
				return false
			}
		}
		return true
	}
	hosts := []string{filepath.Join(base, "host-0"), filepath.Join(base, "host-1"), filepath.Join(base, "host-2")}
	killed := 0
	for pass := 0; !done(); pass++ {
		require.Less(t, pass, 60, "the runs did not settle")
		host := hosts[pass%len(hosts)]
		if pass == 1 {
			out, err := acr(host, []string{"ACR_FAILPOINT=" + gitworld.StageAfterPush}, "worker", "--once", "--max-cycles", "4").CombinedOutput()
			require.True(t, killedBySIGKILL(err), "the worker was to be killed after a push: %v\n%s", err, out)
			killed++
			purge()
			continue
		}
		must(host, "worker", "--once", "--max-cycles", "4")
	}
	require.Equal(t, 1, killed)
	for i := range runs {
		branch := fmt.Sprintf("refs/heads/acr/run-%d", i)
		keys := strings.Fields(git(t, remote, "log", "--format=%(trailers:key=Acr-Idempotency-Key,valueonly)", branch))
		seen := map[string]bool{}
		for _, k := range keys {
			assert.False(t, seen[k], "run %d: key %s twice", i, k)
			seen[k] = true
		}
		assert.Len(t, keys, effects, "run %d: one commit per effect", i)
		assert.Equal(t, strings.Repeat("d\n", patches), git(t, remote, "show", branch+":queue.txt"))
		assert.Equal(t, "axb\n", git(t, remote, "show", branch+":lower.txt"))
		out := must(hosts[i%len(hosts)], "--run-id", fmt.Sprintf("run:g%d", i), "ledger", "verify")
		assert.Contains(t, out, "ledger ok")
	}
	assert.Equal(t, mainHead, git(t, remote, "rev-parse", "refs/heads/main"), "base is never written")
}
