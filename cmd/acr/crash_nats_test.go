package main

import (
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/scenario"
	"github.com/acr-project/acr/internal/world"
)

// untagged removes the idempotency-key tags the crash-harness world
// writes in its findings: they include the run id, which differs between
// the episodes and the uninterrupted run.
var untagged = regexp.MustCompile(`\[[0-9a-f]{16}\] `)

// TestCrashHarnessNATS is the crash harness on a run in a JetStream store
// run from two hosts: two state directories (two hosts' copies of the
// world) on one store. Each run is created on host A; every invocation
// then runs on A or B at random, and real acr processes are killed with
// SIGKILL at every named failpoint (and right after an effect's file is
// put in the store, before the ledger records it: each of them first,
// then at random) and at random instants; the invocation after a kill is
// always on the other host, which recovers the run and goes on.
// After every kill the ledger verifies, the checkpoint loads and no
// effect is in the store's world, or in a host's copy, twice; at the end
// the world in the store and each host's copy are byte for byte the world
// of an uninterrupted run on a state directory (but for the run id in the
// findings' tags), and no idempotency key was committed twice.
func TestCrashHarnessNATS(t *testing.T) {
	t.Parallel()
	h, kills := newHarness(t, "crash harness on nats://, two hosts", 0x4a5)
	kills = min(kills, 16)
	root, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "crash-harness"))
	if err != nil {
		t.Fatal(err)
	}
	h.world = root
	// The store's checkpoint is one atomic batch: there is no
	// mid-checkpoint to stop at.
	h.points = []string{runstore.StageAfterWorldPut}
	for _, fp := range scenario.Failpoints() {
		if fp != "mid-checkpoint" {
			h.points = append(h.points, fp)
		}
	}
	ref := h.fresh("reference")
	h.runToEnd(ref, nil)
	want := untag(readTree(t, filepath.Join(ref, "sandbox", "world")))
	refHistory, err := runstore.OpenHistory(ref)
	if err != nil {
		t.Fatal(err)
	}
	wantEffects := len(committedKeys(t, refHistory))

	srv := natstest.Start(t)
	store := srv.ClientURL() + "/crash"
	hosts := []string{filepath.Join(t.TempDir(), "host-a"), filepath.Join(t.TempDir(), "host-b")}
	s, err := runstore.DialStore(t.Context(), store, runstore.Connection{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	// A killed process's lease lasts until its TTL (30 s) runs out; the
	// harness lets it run out at once, as an operator waiting would.
	js, err := natsjs.New(natstest.Connect(t, srv.ClientURL()))
	if err != nil {
		t.Fatal(err)
	}
	leases, err := js.KeyValue(t.Context(), "crash-lease")
	if err != nil {
		t.Fatal(err)
	}
	stats, where := map[string]int{}, map[string]int{}
	total, episodes := 0, 0
	for ; total < kills; episodes++ {
		if episodes > 100 {
			t.Fatalf("%d kills of %d after %d episodes: %v", total, kills, episodes, stats)
		}
		run := fmt.Sprintf("run:crash-%d", episodes)
		h.env = []string{"ACR_STORE=" + store, "ACR_RUN_ID=" + run}
		h.acr(hosts[0], nil, "init", "--goal", filepath.Join(root, "goal.json"), "--contract", filepath.Join(root, "contract.json"),
			"--env", filepath.Join(root, "environment.json"))
		m, err := runstore.OpenRemote(t.Context(), s, store, run, hosts[0])
		if err != nil {
			t.Fatal(err)
		}
		check := func(after string) {
			t.Helper()
			h.invariantsNATS(m, hosts, after)
		}
		// After a kill, the next invocation is on the other host: every
		// interrupted cycle is recovered on a host other than the one
		// that ran it.
		next := -1
		for i := 0; ; i++ {
			if i > 400 {
				t.Fatalf("episode %d did not finish", episodes)
			}
			host := h.rng.IntN(len(hosts))
			if next >= 0 {
				host, next = next, -1
			}
			if total < kills && h.rng.IntN(5) != 0 {
				// Every failpoint once (the first time it is reached),
				// then at random.
				var mode string
				if total < len(h.points) {
					mode = h.killAt(hosts[host], "1", h.points[total], 1)
				} else {
					mode = h.kill(hosts[host], "1")
				}
				if mode != "" {
					if err := leases.Purge(t.Context(), jetstream.Token(run)); err != nil {
						t.Fatal(err)
					}
					total++
					stats[mode]++
					where[filepath.Base(hosts[host])]++
					next = 1 - host
					check(mode)
				}
				continue
			}
			if h.runToEnd(hosts[host], nil) {
				break
			}
		}
		// An invocation with nothing to run still brings a host's copy
		// to the store's world.
		for _, dir := range hosts {
			if !h.runToEnd(dir, nil) {
				t.Fatalf("episode %d: a settled run ran cycles on %s", episodes, dir)
			}
		}
		check("end")
		stored := storedWorld(t, m)
		if got := untag(stored); !maps.Equal(got, want) {
			t.Fatalf("episode %d: the world in the store differs from an uninterrupted run's:\n got %q\nwant %q", episodes, got, want)
		}
		for _, dir := range hosts {
			if got := readTree(t, hostWorld(dir, run)); !maps.Equal(got, stored) {
				t.Fatalf("episode %d: %s's copy differs from the store's world:\n got %q\nwant %q", episodes, dir, got, stored)
			}
		}
		h2, err := m.History()
		if err != nil {
			t.Fatal(err)
		}
		if n := len(committedKeys(t, h2)); n != wantEffects {
			t.Fatalf("episode %d: %d effects committed, the uninterrupted run committed %d", episodes, n, wantEffects)
		}
	}
	t.Logf("crash harness on nats://, two hosts: %d kills over %d episodes: %v, on %v; 0 duplicate effects, every world (the store's, each host's copy) equal to an uninterrupted run's",
		total, episodes, stats, where)
}

// invariantsNATS checks what must hold after any kill of a process
// running a run kept in the store: the ledger verifies and the checkpoint
// loads (from either host: they read the store), and no effect is in the
// store's world, or in any host's copy of it, twice, nor committed twice
// in the ledger.
func (h *harness) invariantsNATS(m *runstore.Remote, hosts []string, after string) {
	h.t.Helper()
	for _, dir := range hosts {
		if out, err := h.command(dir, nil, "ledger", "verify", "--json").CombinedOutput(); err != nil {
			h.t.Fatalf("after %s: ledger verify on %s failed: %v\n%s", after, dir, err, out)
		}
		if out, err := h.command(dir, nil, "status", "--json").CombinedOutput(); err != nil {
			h.t.Fatalf("after %s: checkpoint does not load on %s: %v\n%s", after, dir, err, out)
		}
	}
	worlds := map[string]map[string]string{"the store": storedWorld(h.t, m)}
	for _, dir := range hosts {
		if _, err := os.Stat(hostWorld(dir, m.Run.ID)); err == nil {
			worlds[dir] = readTree(h.t, hostWorld(dir, m.Run.ID))
		}
	}
	for name, w := range worlds {
		seenKey, seenFinding := map[string]int{}, map[string]int{}
		for _, f := range findingTag.FindAllStringSubmatch(w[world.IssuesFile], -1) {
			seenKey[f[1]]++
			seenFinding[f[2]]++
		}
		for k, n := range seenKey {
			if n > 1 {
				h.t.Fatalf("after %s: in %s's world the effect with key %s was applied %d times:\n%s", after, name, k, n, w[world.IssuesFile])
			}
		}
		for f, n := range seenFinding {
			if n > 1 {
				h.t.Fatalf("after %s: in %s's world %s is reported %d times:\n%s", after, name, f, n, w[world.IssuesFile])
			}
		}
	}
	hist, err := m.History()
	if err != nil {
		h.t.Fatal(err)
	}
	for k, n := range committedKeys(h.t, hist) {
		if n > 1 {
			h.t.Fatalf("after %s: effect %s committed %d times in the ledger", after, k, n)
		}
	}
}

// committedKeys counts the sandbox.action.committed events of a history
// per idempotency key.
func committedKeys(t testing.TB, h runstore.History) map[string]int {
	t.Helper()
	recs, err := h.ReadAll()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]int{}
	for _, rec := range recs {
		if rec.Event.Type != event.ActionCommitted {
			continue
		}
		key := field(rec.Event, "idempotency_key")
		if key == "" {
			t.Fatalf("seq %d: a committed effect without its key", rec.Seq)
		}
		out[key]++
	}
	return out
}

// storedWorld is the world of m's run in the store.
func storedWorld(t testing.TB, m *runstore.Remote) map[string]string {
	t.Helper()
	files, err := m.Run.World().Load()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]string, len(files))
	for p, b := range files {
		out[p] = string(b)
	}
	return out
}

// hostWorld is where the host whose state directory is dir keeps its
// copy of run's world.
func hostWorld(dir, run string) string {
	return filepath.Join(dir, runstore.RemoteWorlds, jetstream.Token(run), "sandbox", "world")
}

// readTree reads every file under root, by slash path.
func readTree(t testing.TB, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// untag is a world with the findings' tags taken out.
func untag(w map[string]string) map[string]string {
	out := make(map[string]string, len(w))
	for p, c := range w {
		out[p] = untagged.ReplaceAllString(c, "")
	}
	return out
}
