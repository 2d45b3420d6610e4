package main

import (
	"bytes"
	"context"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"
)

// The runX tests call a command's runX directly, without a process or a
// command line: an app as configure leaves it, writing to buffers, on a
// state directory of the test's own.

// testClock is the frozen ACR_CLOCK of the runX tests.
const testClock = "2026-01-01T00:00:00Z"

// newTestApp returns an app on stateDir that writes to buffers, with a
// frozen clock, no terminal and an empty environment.
func newTestApp(t *testing.T, stateDir string, json bool) (a *app, stdout, stderr *bytes.Buffer) {
	t.Helper()
	stdout, stderr = &bytes.Buffer{}, &bytes.Buffer{}
	a = newApp(stdout, stderr)
	a.term = func(io.Writer) (bool, int) { return false, 0 }
	a.getenv = func(string) string { return "" }
	a.cfg = config{StateDir: stateDir, Store: "dir:" + stateDir, JSON: json, LogLevel: "warn", CheckpointEvery: 16, Clock: testClock}
	return a, stdout, stderr
}

// quickstartOptions are the inputs of the quickstart scenario, whose run
// works for two cycles and then waits for an approval in cycle 3.
func quickstartOptions() initOptions {
	ex := filepath.Join("..", "..", "scenarios", "quickstart")
	return initOptions{Goal: filepath.Join(ex, "goal.json"), Contract: filepath.Join(ex, "contract.json"),
		Env: filepath.Join(ex, "environment.json"), RunID: "run:test"}
}

// newQuickstart initialises the quickstart run in a fresh state directory
// with runInit, runs up to cycles cycles of it with runRun (none if 0), and
// returns the directory.
func newQuickstart(t *testing.T, cycles int) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	a, _, stderr := newTestApp(t, dir, false)
	require.NoError(t, runInit(t.Context(), quickstartOptions(), a), stderr.String())
	if cycles > 0 {
		require.NoError(t, runRun(t.Context(), runOptions{MaxCycles: cycles}, a), stderr.String())
	}
	return dir
}

// exitCode is the exit code acr would end with after err.
func exitCode(err error) int {
	code, _ := errorKind(err)
	return code
}

// cancelOnWrite is a writer that cancels a context on the first write
// that contains a marker: a way to interrupt a command at a known point
// of its output, the way a signal does, without a process.
type cancelOnWrite struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	marker string
	cancel context.CancelFunc
}

func (w *cancelOnWrite) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.marker != "" && strings.Contains(string(p), w.marker) {
		w.cancel()
	}
	return w.buf.Write(p)
}

func (w *cancelOnWrite) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
