package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/perf"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/scenario"
	"github.com/acr-project/acr/internal/storage"
)

// TestWorkerProcesses runs a pool of real acr worker processes on one
// JetStream store (an embedded server): 3 workers at --concurrency 2,
// each on a host of its own (a state directory of its own, none of them
// the one the runs were created in, so every run's world comes from the
// store),
// runs of the quickstart kind (which waits for an approval) and of a queue
// kind (5 items drained one effect per cycle). While the workers run,
// other acr processes send the approvals and wake signals, and workers are
// killed with SIGKILL (by the test at a random instant, or by a failpoint
// in the middle of a cycle) and restarted. At the end every run has
// settled, every run's ledger verifies (acr ledger verify), every run's
// world in the store is byte for byte the world of an uninterrupted acr
// run on a state directory, and no effect was committed twice.
//
// 30 runs and 6 kills (about 10 s on an idle 2-core machine); with -short
// 12 runs and 3 kills.
func TestWorkerProcesses(t *testing.T) {
	t.Parallel()
	start := time.Now()
	runs, kills := 30, 6
	if testing.Short() {
		runs, kills = 12, 3
	}
	bin := filepath.Join(t.TempDir(), "acr")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build acr: %v\n%s", err, out)
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("%d runs, %d kills, seed %d", runs, kills, seed)
	rng := rand.New(rand.NewPCG(seed, 0x3a7))
	var rngMu sync.Mutex
	intN := func(n int) int { rngMu.Lock(); defer rngMu.Unlock(); return rng.IntN(n) }

	acr := func(ctx context.Context, dir string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, bin, append([]string{"--state-dir", dir}, args...)...)
		cmd.Env = append(os.Environ(), "ACR_FAILPOINT=", "ACR_CLOCK=", "ACR_STORE=", "ACR_RUN_ID=")
		return cmd
	}
	try := func(dir string, args ...string) (string, error) {
		var out, errOut bytes.Buffer
		cmd := acr(t.Context(), dir, args...)
		cmd.Stdout, cmd.Stderr = &out, &errOut
		if err := cmd.Run(); err != nil {
			return "", fmt.Errorf("acr %v: %w: %s%s", args, err, out.String(), errOut.String())
		}
		return out.String(), nil
	}
	must := func(dir string, args ...string) string {
		t.Helper()
		out, err := try(dir, args...)
		require.NoError(t, err)
		return out
	}

	// The two kinds and their uninterrupted runs on a state directory.
	qs, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "quickstart"))
	require.NoError(t, err)
	type kind struct {
		name, goal, contract, env string
		approve                   bool
		world                     map[string]string // path: sha256
		effects                   int
	}
	queue := writeQueue(t, 5)
	kinds := []*kind{
		{name: "quickstart", goal: filepath.Join(qs, "goal.json"), contract: filepath.Join(qs, "contract.json"), env: filepath.Join(qs, "environment.json"), approve: true},
		{name: "queue", goal: filepath.Join(queue, "goal.json"), contract: filepath.Join(queue, "contract.json"), env: filepath.Join(queue, "env.json")},
	}
	for _, k := range kinds {
		ref := filepath.Join(t.TempDir(), k.name)
		must(ref, "init", "--goal", k.goal, "--contract", k.contract, "--env", k.env)
		must(ref, "run", "--max-cycles", "100")
		if k.approve {
			var st statusView
			require.NoError(t, json.Unmarshal([]byte(must(ref, "--json", "status")), &st))
			require.Len(t, st.Pending, 1)
			must(ref, "approve", st.Pending[0].Ref, "--by", "test")
			must(ref, "run", "--max-cycles", "100")
		}
		k.world = worldHashes(t, filepath.Join(ref, "sandbox", "world"))
		out := must(ref, "--json", "log", "--type", string(event.ActionCommitted))
		var lg struct{ Cycles []json.RawMessage }
		require.NoError(t, json.Unmarshal([]byte(out), &lg), out)
		k.effects = len(lg.Cycles)
		require.NotZero(t, k.effects, k.name)
	}

	srv := natstest.Start(t)
	const prefix = "procs"
	store := srv.ClientURL() + "/" + prefix
	dir := filepath.Join(t.TempDir(), "state")
	ids := make([]string, runs)
	kindOf := map[string]*kind{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 4)
	for i := range runs {
		ids[i] = fmt.Sprintf("run:p%02d", i)
		k := kinds[i%2]
		kindOf[ids[i]] = k
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			_, err := try(dir, "--store", store, "--run-id", ids[i], "init", "--goal", k.goal, "--contract", k.contract, "--env", k.env)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}
	t.Logf("set up (build, references, %d inits): %v", runs, time.Since(start).Round(time.Millisecond))

	s, err := runstore.DialStore(t.Context(), store, runstore.Connection{})
	require.NoError(t, err)
	defer s.Close()
	js, err := natsjs.New(natstest.Connect(t, srv.ClientURL()))
	require.NoError(t, err)
	leases, err := js.KeyValue(t.Context(), prefix+"-lease")
	require.NoError(t, err)
	host, _ := os.Hostname()
	// release frees the leases a killed worker held, as an operator who
	// waited for their TTL would.
	release := func(pid int) {
		keys, err := leases.ListKeys(t.Context())
		if !assert.NoError(t, err) {
			return
		}
		for key := range keys.Keys() {
			e, err := leases.Get(t.Context(), key)
			var h storage.Holder
			if err == nil && json.Unmarshal(e.Value(), &h) == nil && h.Name == fmt.Sprintf("%s:%d", host, pid) {
				assert.NoError(t, leases.Purge(t.Context(), key))
			}
		}
	}

	// Three supervised workers: a killed one is restarted at once.
	ctx, cancel := context.WithCancel(t.Context())
	var mu sync.Mutex
	killed := map[string]int{}
	total := 0
	procs := make([]*exec.Cmd, 3)
	var logs [3]syncBuffer
	// stop ends the workers: SIGTERM (each finishes its cycles), and
	// waits for them; also on a failure, so that none outlives the test.
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			mu.Lock()
			for _, p := range procs {
				if p != nil {
					_ = p.Process.Signal(syscall.SIGTERM)
				}
			}
			mu.Unlock()
			wg.Wait()
		})
	}
	t.Cleanup(stop)
	for w := range 3 {
		host := filepath.Join(t.TempDir(), fmt.Sprintf("host-%d", w))
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				cmd := acr(context.Background(), host, "--store", store, "worker", "--poll", "200ms", "--concurrency", "2")
				mu.Lock()
				if ctx.Err() != nil {
					mu.Unlock()
					return
				}
				fp := ""
				if total < kills && intN(2) == 0 {
					points := append(scenario.Failpoints(), runstore.StageAfterWorldPut)
					fp = fmt.Sprintf("%s:%d", points[intN(len(points))], 1+intN(6))
					cmd.Env = append(cmd.Env, "ACR_FAILPOINT="+fp)
				}
				cmd.Stdout, cmd.Stderr = &logs[w], &logs[w]
				if !assert.NoError(t, cmd.Start()) {
					mu.Unlock()
					return
				}
				procs[w] = cmd
				mu.Unlock()
				err := cmd.Wait()
				mu.Lock()
				procs[w] = nil
				switch {
				case killedBySIGKILL(err):
					how := "test"
					if fp != "" {
						how = strings.SplitN(fp, ":", 2)[0]
					}
					killed[how]++
					total++
					mu.Unlock()
					release(cmd.Process.Pid)
					continue
				case err != nil && !(ctx.Err() != nil && strings.Contains(err.Error(), "terminated")):
					mu.Unlock()
					t.Errorf("worker %d: %v\n%s", w, err, logs[w].String())
					return
				}
				mu.Unlock()
			}
		}()
	}
	// The killer: a random worker at a random instant, until the budget
	// is spent (failpoint kills count towards it).
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Duration(100+intN(400)) * time.Millisecond):
			}
			mu.Lock()
			if p := procs[intN(3)]; p != nil && total < kills {
				_ = p.Process.Signal(syscall.SIGKILL)
			}
			mu.Unlock()
		}
	}()

	// Other processes: approvals for the quickstart runs when they ask,
	// wake signals to random runs, until every run has settled.
	approved := map[string]bool{}
	wakes := 0
	deadline := time.Now().Add(90 * time.Second)
	for {
		all, err := s.Runs(t.Context())
		require.NoError(t, err)
		require.Len(t, all, runs)
		settled := 0
		for _, st := range all {
			k := kindOf[st.RunID]
			switch {
			case k.approve && !approved[st.RunID] && st.Disposition == "WAIT_APPROVAL":
				var v statusView
				require.NoError(t, json.Unmarshal([]byte(must(dir, "--store", store, "--run-id", st.RunID, "--json", "status")), &v))
				if len(v.Pending) == 1 {
					must(dir, "--store", store, "--run-id", st.RunID, "approve", v.Pending[0].Ref, "--by", "test")
					approved[st.RunID] = true
				}
			case st.Disposition == "IDLE" && st.Inbox == 0 && (approved[st.RunID] || !k.approve):
				settled++
			}
		}
		mu.Lock()
		done := total >= kills
		mu.Unlock()
		if settled == runs && done {
			break
		}
		if intN(3) == 0 {
			id := ids[intN(runs)]
			cmd := acr(t.Context(), dir, "--store", store, "--run-id", id, "wake", "--signal", "external_event", "--dedup-key", fmt.Sprintf("w%d", wakes))
			out, err := cmd.CombinedOutput()
			require.NoError(t, err, "wake %s: %s", id, out)
			wakes++
		}
		if time.Now().After(deadline) {
			mu.Lock()
			n := total
			mu.Unlock()
			t.Fatalf("runs did not settle (kills %d of %d): %+v\nworker logs:\n%s\n---\n%s\n---\n%s", n, kills, all, logs[0].String(), logs[1].String(), logs[2].String())
		}
		time.Sleep(50 * time.Millisecond)
	}
	stop()
	t.Logf("settled after %d kills %v, %d approvals, %d wakes: %v", total, killed, len(approved), wakes, time.Since(start).Round(time.Millisecond))

	for _, id := range ids {
		k := kindOf[id]
		must(dir, "--store", store, "--run-id", id, "ledger", "verify")
		m, err := runstore.OpenRemote(t.Context(), s, store, id, dir)
		require.NoError(t, err)
		files, err := m.Run.World().Load()
		require.NoError(t, err)
		got := map[string]string{}
		for p, b := range files {
			sum := sha256.Sum256(b)
			got[p] = hex.EncodeToString(sum[:])
		}
		assert.Equal(t, k.world, got, "%s (%s): the world in the store differs from an uninterrupted run's", id, k.name)
		h, err := m.History()
		require.NoError(t, err)
		recs, err := h.ReadAll()
		require.NoError(t, err)
		effects := map[string]int{}
		for _, rec := range recs {
			if rec.Event.Type == event.ActionCommitted {
				key := field(rec.Event, "idempotency_key")
				effects[key]++
				assert.Equal(t, 1, effects[key], "%s: effect %s committed twice", id, key)
			}
		}
		assert.Len(t, effects, k.effects, "%s (%s): effects committed", id, k.name)
	}
	t.Logf("%d runs, %d kills: every ledger verifies, every world equals an uninterrupted run's, no effect twice; %v", runs, total, time.Since(start).Round(time.Millisecond))
}

// syncBuffer is a bytes.Buffer a process writes while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// statusView is the part of acr status --json these tests read.
type statusView struct {
	Pending []struct {
		Ref string `json:"ref"`
	} `json:"pending_approvals"`
}

// writeQueue writes the inputs of a queue run of n items (as
// ../shared/peers/acr/queue.sh does): one sandbox effect per cycle.
func writeQueue(t *testing.T, n int) string {
	t.Helper()
	dir := t.TempDir()
	_, err := perf.WriteQueueFiles(dir, n, int64(n)+100)
	require.NoError(t, err)
	return dir
}

// worldHashes maps every file under root to its SHA-256.
func worldHashes(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		sum := sha256.Sum256(b)
		out[filepath.ToSlash(rel)] = hex.EncodeToString(sum[:])
		return nil
	}))
	require.NotEmpty(t, out, root)
	return out
}
