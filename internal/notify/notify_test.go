package notify_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/notify"
	"github.com/acr-project/acr/internal/state"
)

func script(t *testing.T, body string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "notify.sh")
	require.NoError(t, os.WriteFile(p, []byte("#!/bin/sh\n"+body), 0o755))
	return p
}

// TestBuild: each kind of condition says what it is and what answers it.
func TestBuild(t *testing.T) {
	pending := state.PendingApproval{Ref: codec.MustRefOf("areq", "x"), CycleSeq: 3, Operation: "apply_local_patch", Target: "a.txt", Reason: "contract_requires_approval"}
	describe := func(p state.PendingApproval) string { return p.Operation + " " + p.Target }
	change := func(state.PendingApproval) string { return "--- a/a.txt\n" }
	for _, c := range []struct {
		alert   kernel.Alert
		summary string
		next    string
	}{
		{kernel.Alert{Kind: kernel.AlertApproval, RunID: "run:r", Pending: []state.PendingApproval{pending}},
			"acr run run:r waits for approval of 1 action(s): apply_local_patch a.txt (areq:sha256:", "acr approve REF"},
		{kernel.Alert{Kind: kernel.AlertFaulted, RunID: "run:r", Cause: "proposer down"}, "acr run run:r is FAULTED: proposer down", "acr wake --signal manual_resume"},
		{kernel.Alert{Kind: kernel.AlertStopped, RunID: "run:r", Reasons: []string{"budget_limit", "budget_cycles"}}, "acr run run:r has STOPPED (budget_limit, budget_cycles)", "acr amend --contract"},
		{kernel.Alert{Kind: kernel.AlertStopped, RunID: "run:r", Reasons: []string{"goal_satisfied"}}, "acr run run:r has STOPPED (goal_satisfied)", "acr log"},
	} {
		d := notify.Build(&c.alert, "dir:s", "2026-01-01T00:00:00Z", describe, change)
		assert.Equal(t, notify.Schema, d.Schema)
		assert.Contains(t, d.Summary, c.summary)
		assert.True(t, strings.HasPrefix(d.Next, c.next), d.Next)
		assert.NotNil(t, d.Pending)
		assert.NotNil(t, d.Reasons)
		if len(c.alert.Pending) > 0 {
			assert.Equal(t, "--- a/a.txt\n", d.Pending[0].Change)
		}
	}
}

// TestSend: the program reads the document on stdin, in an environment of
// only what it is given; a failure, a timeout or a program that cannot
// start is an error that says how it ended.
func TestSend(t *testing.T) {
	t.Parallel()
	out := filepath.Join(t.TempDir(), "doc.json")
	doc := notify.Build(&kernel.Alert{Key: codec.MustRefOf("ntf", "x"), Kind: kernel.AlertFaulted, RunID: "run:r", Cause: "c"}, "dir:s", "t",
		nil, nil)
	ok := script(t, `cat > "$OUT"; env > "$OUT.env"`)
	require.NoError(t, notify.Send(t.Context(), notify.Program{Argv: []string{ok}, Env: []string{"OUT=" + out, "PATH=" + os.Getenv("PATH")}}, doc))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	var back notify.Document
	require.NoError(t, json.Unmarshal(b, &back))
	assert.Equal(t, doc.ID, back.ID)
	envb, err := os.ReadFile(out + ".env")
	require.NoError(t, err)
	assert.NotContains(t, string(envb), "HOME=", "only the environment it is given")

	err = notify.Send(t.Context(), notify.Program{Argv: []string{script(t, "cat >/dev/null; echo no route >&2; exit 4")}}, doc)
	require.Error(t, err)
	assert.Equal(t, "exit 4: no route", err.Error())

	err = notify.Send(t.Context(), notify.Program{Argv: []string{script(t, "sleep 5")}, Timeout: 100 * time.Millisecond}, doc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "timed out")

	err = notify.Send(t.Context(), notify.Program{Argv: []string{filepath.Join(t.TempDir(), "missing")}}, doc)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "could not be started")
}
