package command_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/command"
	"github.com/acr-project/acr/internal/world"
)

func run(t *testing.T, s command.Spec) command.Result {
	t.Helper()
	if s.Dir == "" {
		s.Dir = t.TempDir()
	}
	if s.Env == nil {
		s.Env = command.Environment(os.LookupEnv, nil, nil)
	}
	r, err := command.Run(context.Background(), s)
	require.NoError(t, err)
	return r
}

func TestExitCodesAndOutput(t *testing.T) {
	cases := []struct {
		script string
		code   int
		out    string
	}{
		{"echo ok", 0, "ok\n"},
		{"echo warn; exit 1", 1, "warn\n"},
		{"echo crit; exit 2", 2, "crit\n"},
		{"exit 3", 3, ""},
		{"exit 126", 126, ""},
	}
	for _, tc := range cases {
		r := run(t, command.Spec{Argv: []string{"sh", "-c", tc.script}, Timeout: 10 * time.Second})
		assert.Equal(t, tc.code, r.ExitCode, tc.script)
		assert.Equal(t, tc.out, r.Stdout, tc.script)
		assert.Equal(t, codec.FingerprintOf([]byte(tc.out)), r.StdoutSHA256)
		assert.True(t, r.Ended())
	}
}

func TestTimeoutKillsTheWholeGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "child.pid")
	// The shell starts a child that would outlive it and records its pid.
	script := "sleep 300 & echo $! > child.pid; wait"
	start := time.Now()
	r := run(t, command.Spec{Argv: []string{"sh", "-c", script}, Dir: dir, Timeout: 300 * time.Millisecond})
	assert.Less(t, time.Since(start), 30*time.Second)
	assert.True(t, r.TimedOut)
	assert.Equal(t, "killed", r.Signal)
	assert.False(t, r.Ended())
	b, err := os.ReadFile(pidFile)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	requireGone(t, pid)
}

// A program that exits at once but leaves a child behind: the child goes
// with the group, so no check leaves processes running after the cycle.
func TestNoOrphanAfterExit(t *testing.T) {
	dir := t.TempDir()
	script := "sleep 300 >/dev/null 2>&1 & echo $! > child.pid; exit 0"
	r := run(t, command.Spec{Argv: []string{"sh", "-c", script}, Dir: dir, Timeout: 10 * time.Second})
	assert.Equal(t, 0, r.ExitCode)
	b, err := os.ReadFile(filepath.Join(dir, "child.pid"))
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	requireGone(t, pid)
}

func requireGone(t *testing.T, pid int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		// A killed child is a zombie until its reaper (init) collects it.
		if st, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(st), ") Z ") {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("process %d is still running", pid)
}

func TestOutputIsBoundedButHashedWhole(t *testing.T) {
	r := run(t, command.Spec{Argv: []string{"sh", "-c", "head -c 200000 /dev/zero | tr '\\0' a; echo err >&2"}, Timeout: 10 * time.Second, MaxOutput: 1000})
	assert.Len(t, r.Stdout, 1000)
	assert.Equal(t, int64(200000), r.StdoutBytes)
	assert.Equal(t, codec.FingerprintOf([]byte(strings.Repeat("a", 200000))), r.StdoutSHA256)
	assert.Equal(t, "err\n", r.Stderr)
	assert.Equal(t, int64(4), r.StderrBytes)
	def := run(t, command.Spec{Argv: []string{"sh", "-c", "head -c 100000 /dev/zero"}, Timeout: 10 * time.Second})
	assert.Len(t, def.Stdout, world.MaxOutputBytes)
}

func TestEnvironmentIsScrubbed(t *testing.T) {
	t.Setenv("ACR_TEST_SECRET", "s3cret")
	t.Setenv("ACR_TEST_PASSED", "yes")
	env := command.Environment(os.LookupEnv, []string{"ACR_TEST_PASSED"}, map[string]string{"ACR_CYCLE": "7"})
	r := run(t, command.Spec{Argv: []string{"env"}, Env: env, Timeout: 10 * time.Second})
	assert.NotContains(t, r.Stdout, "s3cret")
	assert.Contains(t, r.Stdout, "ACR_TEST_PASSED=yes\n")
	assert.Contains(t, r.Stdout, "ACR_CYCLE=7\n")
	assert.Contains(t, r.Stdout, "PATH=")
	for _, line := range strings.Split(strings.TrimSpace(r.Stdout), "\n") {
		name, _, _ := strings.Cut(line, "=")
		assert.Contains(t, []string{"PATH", "HOME", "LANG", "ACR_TEST_PASSED", "ACR_CYCLE", "PWD"}, name)
	}
}

func TestStdinIsClosedOrGiven(t *testing.T) {
	r := run(t, command.Spec{Argv: []string{"cat"}, Timeout: 10 * time.Second})
	assert.Equal(t, 0, r.ExitCode)
	assert.Equal(t, "", r.Stdout)
	r = run(t, command.Spec{Argv: []string{"cat"}, Stdin: []byte("{}\n"), Timeout: 10 * time.Second})
	assert.Equal(t, "{}\n", r.Stdout)
}

func TestBytesThatAreNotText(t *testing.T) {
	r := run(t, command.Spec{Argv: []string{"printf", "a\\377b"}, Timeout: 10 * time.Second})
	assert.Equal(t, "a\uFFFDb", r.Stdout)
	assert.Equal(t, []byte("a\xffb"), r.StdoutRaw)
	assert.Equal(t, codec.FingerprintOf([]byte("a\xffb")), r.StdoutSHA256)
}

func TestStartFailure(t *testing.T) {
	_, err := command.Run(context.Background(), command.Spec{Argv: []string{"acr-no-such-program"}, Dir: t.TempDir(), Timeout: time.Second})
	require.ErrorIs(t, err, command.ErrStart)
	_, err = command.Run(context.Background(), command.Spec{Argv: []string{"true"}, Dir: "/nonexistent/dir", Timeout: time.Second})
	require.ErrorIs(t, err, command.ErrStart)
}

// When acr itself is killed, the program it runs goes with it: a program
// must not go on changing the world while a later acr recovers the run.
func TestProgramDiesWithAcr(t *testing.T) {
	if os.Getenv("ACR_COMMAND_CHILD") == "1" {
		dir := os.Getenv("ACR_COMMAND_DIR")
		_, _ = command.Run(context.Background(), command.Spec{Argv: []string{"sh", "-c", "echo $$ > pid; sleep 300"}, Dir: dir, Timeout: time.Minute})
		return
	}
	dir := t.TempDir()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := exec.Command(self, "-test.run", "^TestProgramDiesWithAcr$")
	cmd.Env = append(os.Environ(), "ACR_COMMAND_CHILD=1", "ACR_COMMAND_DIR="+dir)
	require.NoError(t, cmd.Start())
	var pid int
	deadline := time.Now().Add(20 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		if b, err := os.ReadFile(filepath.Join(dir, "pid")); err == nil {
			pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		}
		time.Sleep(10 * time.Millisecond)
	}
	require.NotZero(t, pid, "the program did not start")
	require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
	_ = cmd.Wait()
	requireGone(t, pid)
}

// A cancelled context (acr is stopping: SIGTERM) kills the program and its
// children at once and is an error, not a result: the program was stopped
// for nothing it did, so its exit says nothing about the world. A context
// already ended starts nothing.
func TestCancelKillsTheGroup(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(t.Context())
	// The program renames the child's pid into place, so that "child"
	// exists only once it holds the whole number.
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "child")); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	r, err := command.Run(ctx, command.Spec{Argv: []string{"sh", "-c", "sleep 300 & echo $! > child.tmp; mv child.tmp child; wait"}, Dir: dir, Timeout: time.Minute})
	require.ErrorIs(t, err, context.Canceled)
	assert.NotErrorIs(t, err, command.ErrStart)
	assert.False(t, r.TimedOut, "a cancel is not the program's own timeout")
	b, err := os.ReadFile(filepath.Join(dir, "child"))
	require.NoError(t, err)
	child, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	requireGone(t, child)

	require.NoError(t, os.Remove(filepath.Join(dir, "child")))
	_, err = command.Run(ctx, command.Spec{Argv: []string{"sh", "-c", "echo > child"}, Dir: dir, Timeout: time.Minute})
	require.ErrorIs(t, err, context.Canceled)
	assert.NoFileExists(t, filepath.Join(dir, "child"), "a program was started on an ended context")
}
