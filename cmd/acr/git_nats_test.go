package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/gitworld/gittest"
	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// TestNATSStoreGitWorld: acr init --store nats:// accepts a git world;
// hosts with state directories of their own run it in turn (the typo fix
// on one, the approved gofmt -w on another), the store keeps nothing of
// the world, and the run's branch ends with one commit per effect while
// base has not moved. An export carries no world files.
func TestNATSStoreGitWorld(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"git", "gofmt", "sh"} {
		_, err := exec.LookPath(p)
		require.NoError(t, err, "this test runs %s", p)
	}
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/acrgit"
	base := t.TempDir()
	remote := filepath.Join(base, "remote.git")
	gitIn := func(dir string, args ...string) string {
		t.Helper()
		return strings.TrimSpace(gittest.Run(t, dir, args...))
	}
	gittest.BareRemote(t, remote, map[string]string{"README.md": "This is teh project.\n", "main.go": "package main\nfunc main(){\n}\n"})
	mainHead := gitIn(remote, "rev-parse", "refs/heads/main")
	docs := map[string]string{
		"goal.json": `{"schema": "acr.goal/v0.1", "id": "tidy", "mission": "keep the project tidy", "success": {"all_checks_pass": true}}`,
		"contract.json": `{"schema": "acr.contract/v0.1", "id": "tidy", "authority": {"id": "me", "mode": "project_write"},
 "coordinates": {"readiness": "L2", "autonomy": "A2", "cognitive_depth": "D2"},
 "rules": [{"operation": "apply_local_patch", "paths": ["*.md"], "effect": "allow"}, {"operation": "run_command", "paths": ["**/*.go"], "effect": "approve"}], "policy": {}}`,
		"env.json": `{"schema": "acr.environment/v0.1", "git": {"remote": "remote.git", "base": "main", "branch": "acr/tidy"},
 "checks": [{"id": "typo", "summary": "typo", "kind": "absent_text", "path": "README.md", "text": "teh ", "priority": 20, "fixes": [{"operation": "apply_local_patch", "find": "teh ", "replace": "the "}]},
  {"id": "gofmt", "summary": "gofmt-clean", "kind": "command", "priority": 10, "argv": ["sh", "-c", "test -z \"$(gofmt -l .)\""],
   "fixes": [{"id": "gofmt-w", "operation": "run_command", "argv": ["gofmt", "-w", "."], "touches": ["**/*.go"]}]}]}`,
	}
	for n, body := range docs {
		require.NoError(t, os.WriteFile(filepath.Join(base, n), []byte(body), 0o644))
	}
	nats := []string{"--store", store, "--run-id", "run:git"}
	on := func(host string, args ...string) string {
		t.Helper()
		code, out, errOut := acrIn(t, host, append(append([]string{}, nats...), args...)...)
		require.Equal(t, 0, code, "acr %v: %s%s", args, out, errOut)
		return out
	}
	hostA, hostB, hostC := t.TempDir(), t.TempDir(), t.TempDir()
	out := on(hostA, "init", "--goal", filepath.Join(base, "goal.json"), "--contract", filepath.Join(base, "contract.json"), "--env", filepath.Join(base, "env.json"))
	assert.Contains(t, out, "the branch acr/tidy of "+remote)

	out = on(hostB, "run", "--max-cycles", "10")
	assert.Contains(t, out, "apply_local_patch README.md [committed]")
	assert.Contains(t, out, "WAIT_APPROVAL")
	var st struct {
		Pending []struct {
			Ref string `json:"ref"`
		} `json:"pending_approvals"`
	}
	require.NoError(t, json.Unmarshal([]byte(on(hostC, "--json", "status")), &st))
	require.Len(t, st.Pending, 1)
	on(hostC, "approve", st.Pending[0].Ref, "--by", "test", "--reason", "fine")
	out = on(hostC, "run", "--max-cycles", "10")
	assert.Contains(t, out, "run_command gofmt-w (gofmt -w .) [committed]")

	assert.Equal(t, "acr: run_command gofmt-w (gofmt -w .)\nacr: apply_local_patch README.md\nseed", gitIn(remote, "log", "--format=%s", "refs/heads/acr/tidy"))
	keys := strings.Fields(gitIn(remote, "log", "--format=%(trailers:key=Acr-Idempotency-Key,valueonly)", "refs/heads/acr/tidy"))
	require.Len(t, keys, 2)
	assert.NotEqual(t, keys[0], keys[1])
	assert.Equal(t, "package main\n\nfunc main() {\n}", gitIn(remote, "show", "refs/heads/acr/tidy:main.go"))
	assert.Equal(t, mainHead, gitIn(remote, "rev-parse", "refs/heads/main"), "base is never written")

	out = on(hostA, "ledger", "verify")
	assert.Contains(t, out, "ledger ok")
	out = on(hostA, "export", "-o", filepath.Join(base, "run.acr"))
	assert.Contains(t, out, "world        0 files")
}
