package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/scenario"
)

var (
	crashKills = flag.Int("crash.kills", 40, "SIGKILLs the crash harness delivers (make crash uses 1000)")
	crashSeed  = flag.Uint64("crash.seed", 0, "random seed for the crash harness (0: derived from the time, printed)")
)

// TestCrashHarness kills real acr processes with SIGKILL, at every named
// failpoint and at random instants, on a world with many sandbox actions,
// then lets later invocations recover and continue to the end, many times
// over. After every kill it checks that the ledger verifies, the checkpoint
// loads, and no effect was applied twice (counted in the world itself: each
// reported finding carries its idempotency key). At the end of each episode
// the world and history fingerprints must equal those of an uninterrupted
// run.
func TestCrashHarness(t *testing.T) {
	t.Parallel()
	h, kills := newHarness(t, "crash harness", 0x5eed)
	world, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "crash-harness"))
	if err != nil {
		t.Fatal(err)
	}
	h.world = world
	rng := h.rng

	ref := h.fresh("reference")
	h.runToEnd(ref, nil)
	want := h.fingerprints(ref)
	t.Logf("uninterrupted: world %s history %s", want.World, want.History)

	// Kills land inside ledger seals too: an episode seals never, at the
	// default size, or at 4 KiB (then at nearly every checkpoint).
	h.points = append(scenario.Failpoints(), ledger.StageSealPending, ledger.StageSealHot)
	stats := map[string]int{}
	episodes := 0
	for total := 0; total < kills; episodes++ {
		h.env = nil
		dir := h.fresh(fmt.Sprintf("episode-%d", episodes))
		every := []string{"1", "4", "16"}[rng.IntN(3)]
		h.env = []string{"ACR_LEDGER_SEAL_BYTES=" + []string{"0", "262144", "4096", "4096"}[rng.IntN(4)]}
		for i := 0; ; i++ {
			if i > 400 {
				t.Fatalf("episode %d did not finish", episodes)
			}
			if total < kills && rng.IntN(5) != 0 {
				mode := h.kill(dir, every)
				if mode != "" {
					total++
					stats[mode]++
					h.invariants(dir, mode)
				}
				continue
			}
			if h.runToEnd(dir, []string{"--checkpoint-every", every}) {
				break
			}
		}
		got := h.fingerprints(dir)
		if got != want {
			t.Fatalf("episode %d: fingerprints differ from the uninterrupted run:\n got %+v\nwant %+v", episodes, got, want)
		}
		h.invariants(dir, "end")
	}
	t.Logf("crash harness: %d kills over %d episodes: %v; 0 duplicate effects, 0 unloadable states, 0 fingerprint mismatches", kills, episodes, stats)
}

// newHarness builds acr, seeds the random source (from -crash.seed, or
// the time, printed so that a failure can be replayed) and says how many
// kills to deliver.
func newHarness(t *testing.T, name string, salt uint64) (*harness, int) {
	kills := *crashKills
	if testing.Short() {
		kills = min(kills, 10)
	}
	seed := *crashSeed
	if seed == 0 {
		seed = uint64(time.Now().UnixNano())
	}
	t.Logf("%s: %d kills, seed %d (rerun with -crash.seed=%d)", name, kills, seed, seed)
	bin := filepath.Join(t.TempDir(), "acr")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build acr: %v\n%s", err, out)
	}
	return &harness{t: t, bin: bin, rng: rand.New(rand.NewPCG(seed, salt))}, kills
}

type harness struct {
	t     *testing.T
	bin   string
	world string
	rng   *rand.Rand
	n     int
	// env is added to every invocation's environment (ACR_STORE and
	// ACR_RUN_ID for a run in a JetStream store).
	env []string
	// worlds, when set, is where the run's world is (a run in a
	// JetStream store keeps it under the state directory's runs/).
	worlds string
	// points are the failpoints kill picks from (nil: the six of every
	// run, scenario.Failpoints).
	points []string
}

func (h *harness) fresh(name string) string {
	h.n++
	dir := filepath.Join(h.t.TempDir(), name)
	h.acr(dir, nil, "init", "--goal", filepath.Join(h.world, "goal.json"), "--contract", filepath.Join(h.world, "contract.json"),
		"--env", filepath.Join(h.world, "environment.json"), "--run-id", "run:crash-harness")
	return dir
}

func (h *harness) command(dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.Command(h.bin, append([]string{"--state-dir", dir}, args...)...)
	cmd.Env = append(append(append(os.Environ(), "ACR_CLOCK=2026-01-01T00:00:00Z", "ACR_FAILPOINT="), h.env...), env...)
	return cmd
}

// acr runs a command that must succeed and returns its stdout.
func (h *harness) acr(dir string, env []string, args ...string) string {
	h.t.Helper()
	out, err := h.command(dir, env, args...).Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			h.t.Fatalf("acr %v: %v\n%s", args, err, ee.Stderr)
		}
		h.t.Fatalf("acr %v: %v", args, err)
	}
	return string(out)
}

// runToEnd runs until the loop rests with nothing to do; it reports
// whether no cycle was left to run.
func (h *harness) runToEnd(dir string, extra []string) bool {
	h.t.Helper()
	for range 20 {
		out := h.acr(dir, nil, append([]string{"run", "--max-cycles", "200", "--json"}, extra...)...)
		var rep struct {
			Cycles int    `json:"cycles_executed"`
			Final  string `json:"final_disposition"`
		}
		if err := json.Unmarshal([]byte(out), &rep); err != nil {
			h.t.Fatalf("run output: %v: %s", err, out)
		}
		if rep.Cycles == 0 {
			return true
		}
	}
	return false
}

// kill starts one invocation and kills it, at a failpoint or after a
// random delay. It returns how it was killed ("" if the process finished
// before the kill landed).
func (h *harness) kill(dir, every string) string {
	h.t.Helper()
	points := h.points
	if points == nil {
		points = scenario.Failpoints()
	}
	if h.rng.IntN(3) == 0 {
		delay := time.Duration(h.rng.IntN(40_000)) * time.Microsecond
		cmd := h.command(dir, nil, "run", "--max-cycles", "200", "--checkpoint-every", every)
		if err := cmd.Start(); err != nil {
			h.t.Fatal(err)
		}
		time.Sleep(delay)
		_ = cmd.Process.Signal(syscall.SIGKILL)
		err := cmd.Wait()
		if killedBySIGKILL(err) {
			return "random-instant"
		}
		if err != nil {
			h.t.Fatalf("acr run (not killed) failed: %v", err)
		}
		return ""
	}
	return h.killAt(dir, every, points[h.rng.IntN(len(points))], 1+h.rng.IntN(4))
}

// killAt starts one invocation that kills itself the nth time it reaches
// failpoint fp. It returns fp, or "" if the process finished without
// reaching it that many times.
func (h *harness) killAt(dir, every, fp string, nth int) string {
	h.t.Helper()
	cmd := h.command(dir, []string{fmt.Sprintf("ACR_FAILPOINT=%s:%d", fp, nth)}, "run", "--max-cycles", "200", "--checkpoint-every", every)
	out, err := cmd.CombinedOutput()
	if killedBySIGKILL(err) {
		return fp
	}
	if err != nil {
		h.t.Fatalf("acr run with failpoint %s:%d: %v\n%s", fp, nth, err, out)
	}
	return "" // the failpoint was not reached that many times
}

func killedBySIGKILL(err error) bool {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		return false
	}
	ws, ok := ee.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL
}

var findingTag = regexp.MustCompile(`(?m)^- \[([0-9a-f]{16})\] (finding-\d+)`)

// invariants checks what must hold after any kill.
func (h *harness) invariants(dir, after string) {
	h.t.Helper()
	if out, err := h.command(dir, nil, "ledger", "verify", "--json").CombinedOutput(); err != nil {
		h.t.Fatalf("after %s: ledger verify failed: %v\n%s", after, err, out)
	}
	if out, err := h.command(dir, nil, "status", "--json").CombinedOutput(); err != nil {
		h.t.Fatalf("after %s: checkpoint does not load: %v\n%s", after, err, out)
	}
	b, err := os.ReadFile(h.issues(dir))
	if err != nil && !os.IsNotExist(err) {
		h.t.Fatal(err)
	}
	seenKey := map[string]int{}
	seenFinding := map[string]int{}
	for _, m := range findingTag.FindAllStringSubmatch(string(b), -1) {
		seenKey[m[1]]++
		seenFinding[m[2]]++
	}
	for k, n := range seenKey {
		if n > 1 {
			h.t.Fatalf("after %s: effect with key %s applied %d times:\n%s", after, k, n, b)
		}
	}
	for f, n := range seenFinding {
		if n > 1 {
			h.t.Fatalf("after %s: %s reported %d times:\n%s", after, f, n, b)
		}
	}
}

// issues is the world file in which the crash-harness world reports its
// findings.
func (h *harness) issues(dir string) string {
	if h.worlds != "" {
		return filepath.Join(h.worlds, "sandbox", "world", "ISSUES.md")
	}
	return filepath.Join(dir, "sandbox", "world", "ISSUES.md")
}

type prints struct{ World, History string }

func (h *harness) fingerprints(dir string) prints {
	h.t.Helper()
	an, err := scenario.Analyse(dir)
	if err != nil {
		h.t.Fatal(err)
	}
	if an.DuplicateEffects != 0 {
		h.t.Fatalf("%d duplicate effects recorded in the ledger", an.DuplicateEffects)
	}
	if strings.TrimSpace(an.World) == "" {
		h.t.Fatal("empty world fingerprint")
	}
	return prints{World: an.World, History: an.History}
}
