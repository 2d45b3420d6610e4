package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/runstore"
)

// TestCrashHarnessNATS is the crash harness on a run in a JetStream
// store: real acr processes killed with SIGKILL at every named failpoint
// and at random instants, later invocations recovering and going on to the
// end. After every kill the ledger verifies, the checkpoint loads and no
// effect was applied twice; at the end the world is byte for byte the
// world of an uninterrupted run on a state directory.
var untagged = regexp.MustCompile(`\[[0-9a-f]{16}\] `)

func TestCrashHarnessNATS(t *testing.T) {
	t.Parallel()
	h, kills := newHarness(t, "crash harness on nats://", 0x4a5)
	kills = min(kills, 16)
	world, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "crash-harness"))
	if err != nil {
		t.Fatal(err)
	}
	h.world = world
	ref := h.fresh("reference")
	h.runToEnd(ref, nil)
	want, err := os.ReadFile(h.issues(ref))
	if err != nil {
		t.Fatal(err)
	}

	srv := natstest.Start(t)
	dir := filepath.Join(t.TempDir(), "state")
	// A killed worker's lease lasts until its TTL (30 s) runs out; the
	// harness lets it run out at once, as an operator waiting would.
	nc := natstest.Connect(t, srv.ClientURL())
	js, err := natsjs.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	stats := map[string]int{}
	total, episodes := 0, 0
	for ; total < kills; episodes++ {
		run := fmt.Sprintf("run:crash-%d", episodes)
		h.env = []string{"ACR_STORE=" + srv.ClientURL() + "/crash", "ACR_RUN_ID=" + run}
		h.worlds = filepath.Join(dir, runstore.RemoteWorlds, jetstream.Token(run))
		h.acr(dir, nil, "init", "--goal", filepath.Join(world, "goal.json"), "--contract", filepath.Join(world, "contract.json"),
			"--env", filepath.Join(world, "environment.json"))
		kv, err := js.KeyValue(t.Context(), "crash-lease")
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; ; i++ {
			if i > 400 {
				t.Fatalf("episode %d did not finish", episodes)
			}
			if total < kills && h.rng.IntN(5) != 0 {
				if mode := h.kill(dir, "1"); mode != "" {
					if err := kv.Purge(t.Context(), jetstream.Token(run)); err != nil {
						t.Fatal(err)
					}
					total++
					stats[mode]++
					h.invariants(dir, mode)
				}
				continue
			}
			if h.runToEnd(dir, nil) {
				break
			}
		}
		h.invariants(dir, "end")
		got, err := os.ReadFile(h.issues(dir))
		if err != nil {
			t.Fatal(err)
		}
		// Each episode is a run of its own id, which the effects'
		// idempotency keys (the tags) include: the findings and their
		// order must be the same.
		if !bytes.Equal(untagged.ReplaceAll(got, nil), untagged.ReplaceAll(want, nil)) {
			t.Fatalf("episode %d: the world differs from an uninterrupted run's:\n got %s\nwant %s", episodes, got, want)
		}
	}
	t.Logf("crash harness on nats://: %d kills over %d episodes: %v; 0 duplicate effects, every world equal to an uninterrupted run's", total, episodes, stats)
}
