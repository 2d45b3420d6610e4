package sandbox

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

// TestInterruptedMarkIssue stops Execute after its intent is durable and
// before its effect, then shapes the world into each state a crash (or an
// outsider) can leave behind.
func TestInterruptedMarkIssue(t *testing.T) {
	cases := []struct {
		name string
		// meddle changes the world between the crash and the retry; line is
		// the ISSUES.md line the interrupted execution would have appended.
		meddle     func(t *testing.T, stateDir, line string)
		wantReused bool
		wantErr    error
	}{
		{name: "effect applied", wantReused: true, meddle: func(t *testing.T, stateDir, line string) {
			writeWorld(t, stateDir, world.IssuesFile, line)
		}},
		{name: "effect not applied", wantReused: false, meddle: func(*testing.T, string, string) {}},
		{name: "world changed to something else", wantErr: ErrUncertain, meddle: func(t *testing.T, stateDir, _ string) {
			writeWorld(t, stateDir, world.IssuesFile, "someone else was here\n")
		}},
	}
	ran := 0
	for _, tc := range cases {
		ran++
		t.Run(tc.name, func(t *testing.T) {
			w, stateDir := newTestWorld(t, testSpec())
			key := testKey("interrupted")
			a := markIssue("debug left on")
			line := "- [" + keyDigest(key)[:16] + "] no-debug: debug left on\n"

			crashAt(t, w, StageBeforeActionCommit, key, a)
			require.NoFileExists(t, worldPath(stateDir, world.IssuesFile), "the crash came before the effect")
			keys := osKeys(t, stateDir)
			require.Equal(t, []recKind{kindIntent}, tableKinds(t, keys, key), "the intent is durable")
			tc.meddle(t, stateDir, line)
			worldBefore := snapshot(t, worldPath(stateDir, "."))

			out, reused, err := w.Execute(t.Context(), key, a)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				assert.Equal(t, worldBefore, snapshot(t, worldPath(stateDir, ".")), "an uncertain execution touches nothing")
				_, found, err := w.Lookup(key)
				require.NoError(t, err)
				assert.False(t, found, "nothing is recorded while uncertain")
				assert.Equal(t, []recKind{kindIntent}, tableKinds(t, keys, key), "the intent stays for the person who decides")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantReused, reused)
			assert.Equal(t, world.OutcomeCommitted, out.Status)
			assert.Empty(t, out.BeforeSHA256)
			assert.Equal(t, fp(line), out.AfterSHA256)
			assert.Equal(t, line, readWorld(t, stateDir, world.IssuesFile), "exactly one effect")
			wantKinds := []recKind{kindIntent, kindOutcome}
			if !tc.wantReused {
				wantKinds = []recKind{kindIntent, kindIntent, kindOutcome} // executed afresh: a new intent
			}
			assert.Equal(t, wantKinds, tableKinds(t, keys, key), "the outcome supersedes the intent")

			again, reused, err := w.Execute(t.Context(), key, a)
			require.NoError(t, err)
			assert.True(t, reused)
			assert.Equal(t, out, again)
			assert.Equal(t, 1, issueLines(t, stateDir, key))
		})
	}
	require.Equal(t, len(cases), ran)
}

// TestHandWrittenIntent classifies intent records written directly, in
// the documented formats, for a record_artifact: a line appended to the
// table, and a per-key file of the layout of earlier releases.
func TestHandWrittenIntent(t *testing.T) {
	const content = "ci: green\n"
	cases := []struct {
		name       string
		world      *string // content of the target at retry time; nil = absent
		wantReused bool
		wantErr    error
	}{
		{name: "effect applied", world: ptr(content), wantReused: true},
		{name: "effect not applied", world: nil, wantReused: false},
		{name: "world changed to something else", world: ptr("ci: red\n"), wantErr: ErrUncertain},
	}
	layouts := map[string]func(t *testing.T, stateDir, h string, rec []byte){
		"table line": func(t *testing.T, stateDir, h string, rec []byte) {
			require.NoError(t, os.WriteFile(filepath.Join(stateDir, filepath.FromSlash(TableName)), encodeLine(h, kindIntent, rec), 0o644))
		},
		"earlier per-key file": func(t *testing.T, stateDir, h string, rec []byte) {
			require.NoError(t, os.MkdirAll(filepath.Join(stateDir, filepath.FromSlash(KeysDir), h[:2]), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(stateDir, filepath.FromSlash(legacyName(h, kindIntent))), rec, 0o644))
		},
	}
	ran := 0
	for layout, write := range layouts {
		for _, tc := range cases {
			ran++
			t.Run(layout+"/"+tc.name, func(t *testing.T) {
				w, stateDir := newTestWorld(t, testSpec())
				key := testKey("hand written " + tc.name)
				a := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "reports/ci.txt", Content: content}
				h := keyDigest(key)
				rec, err := codec.Marshal(intentRecord{Schema: IntentSchema, Key: key, Action: a, Target: a.Target, BeforeSHA256: "", AfterSHA256: fp(content)})
				require.NoError(t, err)
				write(t, stateDir, h, rec)
				if tc.world != nil {
					writeWorld(t, stateDir, a.Target, *tc.world)
				}

				out, reused, err := w.Execute(t.Context(), key, a)
				if tc.wantErr != nil {
					require.ErrorIs(t, err, tc.wantErr)
					assert.Equal(t, *tc.world, readWorld(t, stateDir, a.Target))
					return
				}
				require.NoError(t, err)
				assert.Equal(t, tc.wantReused, reused)
				assert.Equal(t, world.OutcomeCommitted, out.Status)
				assert.Equal(t, fp(content), out.AfterSHA256)
				assert.Equal(t, content, readWorld(t, stateDir, a.Target))
			})
		}
	}
	require.Equal(t, len(cases)*len(layouts), ran)
}

func TestIntentForAnotherAction(t *testing.T) {
	w, _ := newTestWorld(t, testSpec())
	key := testKey("intent conflict")
	crashAt(t, w, StageBeforeActionCommit, key, markIssue("x"))
	_, _, err := w.Execute(t.Context(), key, world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "x.txt", Content: "x"})
	require.ErrorIs(t, err, ErrKeyConflict)
}

func ptr(s string) *string { return &s }

// newMemWorld creates a sandbox whose idempotency table lives on disk.Mem,
// so that Crash can throw away every table write that was not fsynced.
func newMemWorld(t *testing.T) (*World, *disk.Mem, string) {
	t.Helper()
	stateDir := t.TempDir()
	mem := disk.NewMem()
	w, err := Create(stateDir, testSpec(), mem)
	require.NoError(t, err)
	return w, mem, stateDir
}

func reopen(t *testing.T, w *World, stateDir string, keys disk.FS) *World {
	t.Helper()
	require.NoError(t, w.Close())
	w2, err := Open(stateDir, testSpec(), keys)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w2.Close() })
	return w2
}

func TestPowerLossAfterActionCommit(t *testing.T) {
	w, mem, stateDir := newMemWorld(t)
	key := testKey("power loss after")
	a := markIssue("x")

	crashAt(t, w, StageAfterActionCommit, key, a)
	mem.Crash()
	w = reopen(t, w, stateDir, mem)

	out, found, err := w.Lookup(key)
	require.NoError(t, err)
	require.True(t, found, "the outcome record was durable before the hook ran")
	assert.Equal(t, world.OutcomeCommitted, out.Status)

	again, reused, err := w.Execute(t.Context(), key, a)
	require.NoError(t, err)
	assert.True(t, reused)
	assert.Equal(t, out, again)
	assert.Equal(t, 1, issueLines(t, stateDir, key))
}

func TestPowerLossBeforeActionCommit(t *testing.T) {
	w, mem, stateDir := newMemWorld(t)
	key := testKey("power loss before")
	a := markIssue("x")

	crashAt(t, w, StageBeforeActionCommit, key, a)
	mem.Crash()
	w = reopen(t, w, stateDir, mem)

	require.Equal(t, []recKind{kindIntent}, tableKinds(t, mem, key), "the intent was durable before the hook ran")
	_, found, err := w.Lookup(key)
	require.NoError(t, err)
	require.False(t, found)

	out, reused, err := w.Execute(t.Context(), key, a)
	require.NoError(t, err)
	assert.False(t, reused, "the effect had not happened, so it happens now")
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Equal(t, 1, issueLines(t, stateDir, key))

	mem.Crash()
	w = reopen(t, w, stateDir, mem)
	again, reused, err := w.Execute(t.Context(), key, a)
	require.NoError(t, err)
	assert.True(t, reused)
	assert.Equal(t, out, again)
	assert.Equal(t, 1, issueLines(t, stateDir, key), "applied exactly once")
}

// TestPowerLossNeedsTheTableFsyncs is the control for the two tests
// above: with the table file's fsync, or its directory's, switched off,
// the same crash loses the outcome and the retry duplicates the effect. It
// shows that the Mem-based tests can see a missing fsync.
func TestPowerLossNeedsTheTableFsyncs(t *testing.T) {
	skips := map[string]func(disk.SyncOp) bool{
		"file":      func(op disk.SyncOp) bool { return !op.Dir && op.Name == TableName },
		"directory": func(op disk.SyncOp) bool { return op.Dir && op.Name == KeysDir },
	}
	ran := 0
	for name, skip := range skips {
		ran++
		t.Run(name, func(t *testing.T) {
			w, mem, stateDir := newMemWorld(t)
			mem.SkipSync(skip)
			key := testKey("no fsync")
			a := markIssue("x")

			crashAt(t, w, StageAfterActionCommit, key, a)
			mem.Crash()
			mem.SkipSync(nil)
			w = reopen(t, w, stateDir, mem)

			_, found, err := w.Lookup(key)
			require.NoError(t, err)
			assert.False(t, found, "without the fsync the outcome is lost")
			_, reused, err := w.Execute(t.Context(), key, a)
			require.NoError(t, err)
			assert.False(t, reused)
			assert.Equal(t, 2, issueLines(t, stateDir, key), "and the effect is duplicated")
		})
	}
	require.Equal(t, len(skips), ran)
}

// killChildEnv names the state directory to TestKillNineChild, the process
// TestKillNineDuringExecute starts and kills.
const killChildEnv = "ACR_SANDBOX_KILL_CHILD_STATE"

const killKeys = 300

func killKey(i int) string { return testKey(fmt.Sprintf("kill-%d", i)) }

// killAction alternates a mark_issue (a duplicate would show as a second
// line) with a record_artifact on a file of its own.
func killAction(i int) world.Action {
	if i%2 == 0 {
		return markIssue(fmt.Sprintf("kill %d", i))
	}
	return world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: fmt.Sprintf("reports/%d.txt", i), Content: fmt.Sprintf("artifact %d\n", i)}
}

// TestKillNineChild is the process TestKillNineDuringExecute kills: it
// executes every key in turn, after saying it is ready.
func TestKillNineChild(t *testing.T) {
	stateDir := os.Getenv(killChildEnv)
	if stateDir == "" {
		t.Skip("run by TestKillNineDuringExecute, as the process it kills")
	}
	w, err := Open(stateDir, testSpec(), osKeys(t, stateDir))
	require.NoError(t, err)
	fmt.Println("ready")
	for i := range killKeys {
		_, _, err := w.Execute(t.Context(), killKey(i), killAction(i))
		require.NoError(t, err, "key %d", i)
	}
	require.NoError(t, w.Close())
}

// TestKillNineDuringExecute kills real processes with SIGKILL while they
// execute actions, at random instants, and between some kills tears the
// table's last line the way a power loss during an append would: either a
// line cut short after the last one (a record whose append never
// finished), or the last line itself when it is an outcome (the intent
// and the world then decide). Afterwards every action must have happened
// exactly once, every outcome be found, and the table read without
// damage.
func TestKillNineDuringExecute(t *testing.T) {
	if os.Getenv(killChildEnv) != "" {
		t.Skip("in the child")
	}
	kills := 12
	if testing.Short() {
		kills = 4
	}
	w, stateDir := newTestWorld(t, testSpec())
	require.NoError(t, w.Close())
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0x6b696c6c))
	landed, tears := 0, map[string]int{}
	for range kills {
		cmd := exec.Command(os.Args[0], "-test.run=^TestKillNineChild$", "-test.count=1")
		cmd.Env = append(os.Environ(), killChildEnv+"="+stateDir)
		out, err := cmd.StdoutPipe()
		require.NoError(t, err)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		require.NoError(t, cmd.Start())
		ready, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || ready != "ready\n" {
			_ = cmd.Wait() // stderr is complete only after Wait
			t.Fatalf("the child did not get ready: %q %v\n%s", ready, err, stderr.String())
		}
		time.Sleep(time.Duration(rng.IntN(30_000)) * time.Microsecond)
		_ = cmd.Process.Kill()
		go func() { _, _ = io.Copy(io.Discard, out) }()
		err = cmd.Wait()
		var ee *exec.ExitError
		if errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
			landed++
		} else {
			require.NoError(t, err, "the child failed: %s", stderr.String())
		}
		switch rng.IntN(3) {
		case 0:
			tears["cut line appended"]++
			line := lineOf(t, fmt.Sprintf("never-%d", rng.IntN(1000)), kindIntent, "never finished")
			appendBytes(t, tablePath(stateDir), line[:1+rng.IntN(len(line)-1)])
		case 1:
			data, err := os.ReadFile(tablePath(stateDir))
			if err != nil || len(data) == 0 || data[len(data)-1] != '\n' {
				break
			}
			last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
			if l, err := parseLine(data[last:]); err == nil && l.kind == kindOutcome {
				tears["outcome line cut"]++
				require.NoError(t, os.WriteFile(tablePath(stateDir), data[:last+rng.IntN(len(data)-last)], 0o644))
			}
		}
	}
	t.Logf("%d kills landed mid-run of %d; tears: %v", landed, kills, tears)
	require.NotZero(t, landed, "no kill landed while the child was working")

	w, err := Open(stateDir, testSpec(), osKeys(t, stateDir))
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	for i := range killKeys {
		out, _, err := w.Execute(t.Context(), killKey(i), killAction(i))
		require.NoError(t, err, "key %d", i)
		require.Equal(t, world.OutcomeCommitted, out.Status, "key %d", i)
	}
	for i := range killKeys {
		_, found, err := w.Lookup(killKey(i))
		require.NoError(t, err)
		require.True(t, found, "key %d", i)
		if i%2 == 0 {
			require.Equal(t, 1, issueLines(t, stateDir, killKey(i)), "key %d applied exactly once", i)
		} else {
			require.Equal(t, fmt.Sprintf("artifact %d\n", i), readWorld(t, stateDir, fmt.Sprintf("reports/%d.txt", i)))
		}
	}
	_, _, err = w.Execute(t.Context(), testKey("after the kills"), inspectAction())
	require.NoError(t, err)
	requireCleanTable(t, stateDir)
}

func appendBytes(t *testing.T, name string, b []byte) {
	t.Helper()
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	require.NoError(t, err)
	_, err = f.Write(b)
	require.NoError(t, err)
	require.NoError(t, f.Close())
}
