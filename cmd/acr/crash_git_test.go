package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/acr-project/acr/internal/gitworld"
	"github.com/acr-project/acr/internal/gitworld/gittest"
	"github.com/acr-project/acr/internal/scenario"
)

// gitItems is how many command fixes the git crash harness's run makes.
const gitItems = 12

// TestGitCrashHarness kills real acr processes whose world is a branch of
// a bare repository, at every failpoint (the git world's two included)
// and at random instants. Each of 12 items is a command fix that appends
// one line to log.txt and is not declared idempotent. After every kill
// the ledger verifies, the checkpoint loads, and no key is on the branch
// twice; the run ends with 12 effect commits, each line once, with no
// person asked: an interrupted command is carried out again from a clean
// work tree unless the remote already has its commit.
func TestGitCrashHarness(t *testing.T) {
	t.Parallel()
	gittest.Need(t)
	h, kills := newHarness(t, "git crash harness", 0x617)
	h.points = append(scenario.Failpoints(), gitworld.StageAfterCommit, gitworld.StageAfterPush)
	stats := map[string]int{}
	episodes := 0
	for ; episodes == 0 || sum(stats) < kills; episodes++ {
		h.gitEpisode(stats, kills)
	}
	t.Logf("git crash harness: %d kills over %d episodes: %v; each episode %d effect commits, no key twice, no person asked", sum(stats), episodes, stats, gitItems)
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// gitProject makes a bare repository and a run whose world is its branch
// acr/log.
func (h *harness) gitProject() (remote, stateDir string) {
	h.t.Helper()
	base := h.t.TempDir()
	remote, stateDir = filepath.Join(base, "remote.git"), filepath.Join(base, "state")
	gittest.BareRemote(h.t, remote, map[string]string{"log.txt": "# log\n"})
	var checks []string
	for i := 1; i <= gitItems; i++ {
		checks = append(checks, fmt.Sprintf(`{"id": "item-%d", "kind": "command", "priority": %d,
			"argv": ["sh", "-c", "grep -q '^item-%d ' log.txt || exit 1"],
			"fixes": [{"id": "append-%d", "operation": "run_command", "argv": ["sh", "-c", "echo \"item-%d $ACR_IDEMPOTENCY_KEY\" >> log.txt"], "touches": ["log.txt"]}]}`,
			i, 100-i, i, i, i))
	}
	docs := map[string]string{
		"goal.json":        `{"schema": "acr.goal/v0.1", "id": "log", "mission": "log every item once", "success": {"all_checks_pass": true}}`,
		"contract.json":    `{"schema": "acr.contract/v0.1", "id": "log", "authority": {"id": "me", "mode": "project_write"}, "coordinates": {"readiness": "L2", "autonomy": "A2", "cognitive_depth": "D2"}, "rules": [{"operation": "run_command", "paths": ["log.txt"], "effect": "allow"}], "policy": {}}`,
		"environment.json": `{"schema": "acr.environment/v0.1", "git": {"remote": "remote.git", "base": "main", "branch": "acr/log"}, "checks": [` + strings.Join(checks, ",") + `]}`,
	}
	for n, body := range docs {
		if err := os.WriteFile(filepath.Join(base, n), []byte(body), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	h.acr(stateDir, nil, "init", "--goal", filepath.Join(base, "goal.json"), "--contract", filepath.Join(base, "contract.json"),
		"--env", filepath.Join(base, "environment.json"), "--run-id", "run:git-crash")
	return remote, stateDir
}

// git runs git in dir for a test's own setup and inspection.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	return gittest.Run(t, dir, args...)
}

// branchKeys counts the keys on the branch, failing on any there twice.
func (h *harness) branchKeys(remote string) map[string]int {
	h.t.Helper()
	keys := gittest.Keys(h.t, remote, "acr/log")
	for k, n := range keys {
		if n > 1 {
			h.t.Fatalf("key %s is on the branch %d times", k, n)
		}
	}
	return keys
}

// gitLines counts the items in log.txt on the branch, failing on any
// logged twice.
func gitLines(t *testing.T, remote string) int {
	t.Helper()
	seen := map[string]bool{}
	for _, m := range itemLine.FindAllStringSubmatch(git(t, remote, "show", "refs/heads/acr/log:log.txt"), -1) {
		if seen[m[1]] {
			t.Fatalf("%s ran twice", m[1])
		}
		seen[m[1]] = true
	}
	return len(seen)
}

func (h *harness) gitInvariants(dir, remote, after string) {
	h.t.Helper()
	if out, err := h.command(dir, nil, "ledger", "verify", "--json").CombinedOutput(); err != nil {
		h.t.Fatalf("after %s: ledger verify failed: %v\n%s", after, err, out)
	}
	if out, err := h.command(dir, nil, "status", "--json").CombinedOutput(); err != nil {
		h.t.Fatalf("after %s: checkpoint does not load: %v\n%s", after, err, out)
	}
	if n := len(h.branchKeys(remote)); n != gitLines(h.t, remote) {
		h.t.Fatalf("after %s: %d keys on the branch, %d lines in log.txt", after, n, gitLines(h.t, remote))
	}
}

// gitEpisode runs one fresh run to its end: every failpoint once, then
// kills at random until kills are spent or the branch is complete; stats
// counts the kills by how they landed.
func (h *harness) gitEpisode(stats map[string]int, kills int) {
	h.t.Helper()
	remote, dir := h.gitProject()
	// Every failpoint once first (each kill is a cycle or more further
	// on), then kills at random failpoints and instants, interleaved with
	// runs, until the kills are spent or the branch is complete.
	for _, fp := range h.points {
		if mode := h.killAt(dir, "1", fp, 1); mode != "" {
			stats[mode]++
			h.gitInvariants(dir, remote, mode)
		}
	}
	for _, fp := range []string{gitworld.StageAfterCommit, gitworld.StageAfterPush} {
		if stats[fp] == 0 {
			h.t.Fatalf("failpoint %s was never reached (%v)\n%s\n%s", fp, stats, h.acr(dir, nil, "status"), h.acr(dir, nil, "log"))
		}
	}
	for i := 0; len(h.branchKeys(remote)) < gitItems; i++ {
		if i > 400 {
			h.t.Fatalf("the run did not finish:\n%s", h.acr(dir, nil, "status"))
		}
		if sum(stats) < kills && h.rng.IntN(4) != 0 {
			if mode := h.kill(dir, "1"); mode != "" {
				stats[mode]++
				h.gitInvariants(dir, remote, mode)
			}
			continue
		}
		h.runToEnd(dir, nil)
		h.gitInvariants(dir, remote, "run")
	}
	h.runToEnd(dir, nil)
	var st struct {
		Pending []json.RawMessage `json:"pending_approvals"`
	}
	if err := json.Unmarshal([]byte(h.acr(dir, nil, "status", "--json")), &st); err != nil {
		h.t.Fatal(err)
	}
	if len(st.Pending) > 0 {
		h.t.Fatalf("a git world asked a person: %s", st.Pending)
	}
	if n := gitLines(h.t, remote); n != gitItems {
		h.t.Fatalf("log.txt on the branch has %d items, want %d", n, gitItems)
	}
}
