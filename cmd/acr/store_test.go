package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// acrIn runs one acr command line in process, in dir, with a frozen
// clock and an environment of its own, and returns its exit code and
// output.
func acrIn(t *testing.T, dir string, args ...string) (int, string, string) {
	t.Helper()
	return acrCtx(t.Context(), dir, args...)
}

// acrCtx is acrIn under ctx: cancelling it is what SIGINT or SIGTERM does.
func acrCtx(ctx context.Context, dir string, args ...string) (int, string, string) {
	var stdout, stderr bytes.Buffer
	a := newApp(&stdout, &stderr)
	a.term = func(io.Writer) (bool, int) { return false, 0 }
	a.getenv = func(k string) string {
		if k == "ACR_CLOCK" {
			return testClock
		}
		return ""
	}
	args = append([]string{"--state-dir", filepath.Join(dir, "state")}, args...)
	code := a.execute(ctx, args)
	return code, stdout.String(), stderr.String()
}

// TestNATSStore runs a quickstart run from init to the approval it waits
// for against a JetStream store, with every command that reads or writes
// it, and the errors of a store that is not given right.
func TestNATSStore(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/acrtest"
	dir := t.TempDir()
	q := quickstartOptions()
	nats := []string{"--store", store, "--run-id", "run:q"}
	ok := func(args ...string) string {
		t.Helper()
		code, out, errOut := acrIn(t, dir, append(append([]string{}, nats...), args...)...)
		require.Equal(t, 0, code, "acr %v: %s%s", args, out, errOut)
		return out
	}
	out := ok("init", "--goal", q.Goal, "--contract", q.Contract, "--env", q.Env)
	assert.Contains(t, out, "initialised run run:q in "+store)
	code, _, errOut := acrIn(t, dir, append(nats, "init", "--goal", q.Goal, "--contract", q.Contract, "--env", q.Env)...)
	assert.Equal(t, exitData, code, "a second init of the same run: %s", errOut)

	out = ok("run", "--max-cycles", "5")
	assert.Contains(t, out, "WAIT_APPROVAL")
	out = ok("--json", "status")
	var st map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &st), out)
	pend, _ := st["pending_approvals"].([]any)
	require.Len(t, pend, 1, "the quickstart waits for one approval: %s", out)
	ref, _ := pend[0].(map[string]any)["ref"].(string)
	require.NotEmpty(t, ref)
	// Another host, without a copy of the world, shows the change from
	// the store's world.
	code, out, errOut = acrIn(t, t.TempDir(), append(append([]string{}, nats...), "status")...)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "+debug = false", "the pending change, previewed on the store's world")
	out = ok("approve", ref, "--by", "test", "--reason", "fine")
	assert.Contains(t, out, "queued")
	out = ok("step")
	assert.NotEmpty(t, out)
	out = ok("wake", "--signal", "manual_resume", "--by", "test")
	assert.Contains(t, out, "queued wake signal")
	out = ok("status")
	assert.Contains(t, out, "run:q")
	out = ok("log")
	assert.Contains(t, out, "WAIT_APPROVAL")
	out = ok("audit", "1")
	assert.NotEmpty(t, out)
	out = ok("replay", "--verify")
	assert.Contains(t, out, "replay ok")
	out = ok("ledger", "verify")
	assert.Contains(t, out, "ledger ok")
	out = ok("recover")
	assert.Contains(t, out, "recovered:")
	out = ok("stop", "--by", "test", "--reason", "done")
	assert.Contains(t, out, "queued stop request")
	ok("run")
	out = ok("status")
	assert.Contains(t, out, "STOPPED")
	page := filepath.Join(t.TempDir(), "report.html")
	out = ok("report", "--out", page)
	assert.Contains(t, out, "wrote "+page)

	quick := newQuickstart(t, 0)
	code, out, errOut = acrIn(t, dir, "--store", "dir:"+quick, "--state-dir", quick, "--run-id", "run:test", "status")
	assert.Equal(t, 0, code, "--run-id that is the directory's run: %s%s", out, errOut)
	for _, tc := range []struct {
		name  string
		args  []string
		code  int
		names string
	}{
		{"no run id", []string{"--store", store, "status"}, exitUsage, "--run-id"},
		{"bad scheme", []string{"--store", "http://localhost:4222", "--run-id", "x", "status"}, exitUsage, "--store"},
		{"no host", []string{"--store", "nats://", "--run-id", "x", "status"}, exitUsage, "--store"},
		{"unreachable", []string{"--store", "nats://127.0.0.1:1", "--store-wait", "500ms", "--run-id", "x", "status"}, exitIO, "--store"},
		{"no such run", []string{"--store", store, "--run-id", "run:none", "status"}, exitNoInput, "run:none"},
		{"dir and state dir differ", []string{"--store", "dir:" + filepath.Join(dir, "other"), "status"}, exitUsage, "--store"},
		{"dir run id differs", []string{"--store", "dir:" + quick, "--state-dir", quick, "--run-id", "run:other", "status"}, exitUsage, "--run-id"},
		{"dir run id differs, log", []string{"--store", "dir:" + quick, "--state-dir", quick, "--run-id", "run:other", "log"}, exitUsage, "--run-id"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errOut := acrIn(t, dir, tc.args...)
			assert.Equal(t, tc.code, code, "%s%s", out, errOut)
			assert.Contains(t, errOut, tc.names)
			assert.Empty(t, out)
		})
	}

	// The server goes away: every command exits 74 naming --store and
	// writes nothing; once it is back the run is as it was.
	srv.Shutdown()
	for _, args := range [][]string{{"status"}, {"run"}, {"wake", "--signal", "manual_resume"}} {
		code, out, errOut := acrIn(t, dir, append(append([]string{"--store-wait", "500ms"}, nats...), args...)...)
		assert.Equal(t, exitIO, code, "%v: %s%s", args, out, errOut)
		assert.Contains(t, errOut, "--store")
	}
	srv.Restart()
	out = ok("status")
	assert.Contains(t, out, "STOPPED")
	ok("ledger", "verify")
}
