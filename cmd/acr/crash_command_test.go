package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// commandItems is how many command fixes one episode runs.
const commandItems = 4

// TestCommandCrashHarness kills real acr processes that run real commands
// on a real directory, at every failpoint and at random instants. Each fix
// appends one line to log.txt and is not declared idempotent, so a command
// run twice shows as a duplicate line. After every kill: the ledger
// verifies, the checkpoint loads, and no line is there twice. An episode
// ends when every item's line is there; an interrupted command whose check
// still fails waits for a person (uncertain_effect), whom the harness
// plays: it approves, and the command runs again, once.
func TestCommandCrashHarness(t *testing.T) {
	t.Parallel()
	h, kills := newHarness(t, "command crash harness", 0xc0de)
	rng := h.rng
	stats := map[string]int{}
	approvals, episodes := 0, 0
	for total := 0; total < kills; episodes++ {
		proj, dir := h.commandProject(fmt.Sprintf("episode-%d", episodes))
		for i := 0; ; i++ {
			if i > 400 {
				log, _ := os.ReadFile(filepath.Join(proj, "log.txt"))
				t.Fatalf("episode %d did not finish:\n%s\nlog.txt:\n%s", episodes, h.acr(dir, nil, "status"), log)
			}
			if total < kills && rng.IntN(4) != 0 {
				if mode := h.kill(dir, "1"); mode != "" {
					total++
					stats[mode]++
					h.commandInvariants(dir, proj, mode)
				}
				continue
			}
			h.runToEnd(dir, nil)
			h.commandInvariants(dir, proj, "run")
			if n := h.approveUncertain(dir); n > 0 {
				approvals += n
				continue
			}
			if h.commandLines(proj) == commandItems {
				break
			}
		}
	}
	t.Logf("command crash harness: %d kills over %d episodes: %v; %d uncertain effects approved by a person; 0 commands run twice", kills, episodes, stats, approvals)
}

// commandProject makes a fresh project directory and a run that looks
// after it.
func (h *harness) commandProject(name string) (proj, stateDir string) {
	h.t.Helper()
	base := filepath.Join(h.t.TempDir(), name)
	proj, stateDir = filepath.Join(base, "project"), filepath.Join(base, "state")
	if err := os.MkdirAll(proj, 0o755); err != nil {
		h.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(proj, "log.txt"), nil, 0o644); err != nil {
		h.t.Fatal(err)
	}
	var checks []string
	for i := 1; i <= commandItems; i++ {
		checks = append(checks, fmt.Sprintf(`{"id": "item-%d", "kind": "command", "priority": %d,
			"argv": ["sh", "-c", "grep -q '^item-%d ' log.txt || exit 1"],
			"fixes": [{"id": "append-%d", "operation": "run_command", "argv": ["sh", "-c", "echo \"item-%d $ACR_IDEMPOTENCY_KEY\" >> log.txt"], "touches": ["log.txt"]}]}`,
			i, 100-i, i, i, i))
	}
	docs := map[string]string{
		"goal.json":        `{"schema": "acr.goal/v0.1", "id": "log", "mission": "log every item once", "success": {"all_checks_pass": true}}`,
		"contract.json":    `{"schema": "acr.contract/v0.1", "id": "log", "authority": {"id": "me", "mode": "project_write"}, "coordinates": {"readiness": "L2", "autonomy": "A2", "cognitive_depth": "D2"}, "rules": [{"operation": "run_command", "paths": ["log.txt"], "effect": "allow"}], "policy": {}}`,
		"environment.json": `{"schema": "acr.environment/v0.1", "root": "project", "checks": [` + strings.Join(checks, ",") + `]}`,
	}
	for n, body := range docs {
		if err := os.WriteFile(filepath.Join(base, n), []byte(body), 0o644); err != nil {
			h.t.Fatal(err)
		}
	}
	h.acr(stateDir, nil, "init", "--goal", filepath.Join(base, "goal.json"), "--contract", filepath.Join(base, "contract.json"),
		"--env", filepath.Join(base, "environment.json"), "--run-id", "run:command-crash")
	return proj, stateDir
}

var itemLine = regexp.MustCompile(`(?m)^(item-\d+) `)

// commandLines counts the items logged, failing on any logged twice.
func (h *harness) commandLines(proj string) int {
	h.t.Helper()
	b, err := os.ReadFile(filepath.Join(proj, "log.txt"))
	if err != nil {
		h.t.Fatal(err)
	}
	seen := map[string]bool{}
	for _, m := range itemLine.FindAllStringSubmatch(string(b), -1) {
		if seen[m[1]] {
			h.t.Fatalf("%s ran twice:\n%s", m[1], b)
		}
		seen[m[1]] = true
	}
	return len(seen)
}

func (h *harness) commandInvariants(dir, proj, after string) {
	h.t.Helper()
	if out, err := h.command(dir, nil, "ledger", "verify", "--json").CombinedOutput(); err != nil {
		h.t.Fatalf("after %s: ledger verify failed: %v\n%s", after, err, out)
	}
	if out, err := h.command(dir, nil, "status", "--json").CombinedOutput(); err != nil {
		h.t.Fatalf("after %s: checkpoint does not load: %v\n%s", after, err, out)
	}
	h.commandLines(proj)
}

// approveUncertain answers every pending uncertain_effect approval with
// approve, as the person the run waits for would, and says how many.
func (h *harness) approveUncertain(dir string) int {
	h.t.Helper()
	var st struct {
		Pending []struct {
			Ref    string `json:"ref"`
			Reason string `json:"reason"`
		} `json:"pending_approvals"`
	}
	out := h.acr(dir, nil, "status", "--json")
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		h.t.Fatalf("status: %v: %s", err, out)
	}
	n := 0
	for _, p := range st.Pending {
		if p.Reason != "uncertain_effect" {
			h.t.Fatalf("unexpected pending approval %s (%s)", p.Ref, p.Reason)
		}
		// The harness's clock is frozen: a reason tells two answers to
		// two requests for the same action apart.
		h.n++
		h.acr(dir, nil, "approve", p.Ref, "--by", "harness", "--reason", fmt.Sprintf("answer %d", h.n))
		n++
	}
	return n
}
