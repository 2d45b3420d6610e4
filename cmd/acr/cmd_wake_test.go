package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunWake(t *testing.T) {
	t.Parallel()
	payload := filepath.Join(t.TempDir(), "payload.json")
	require.NoError(t, os.WriteFile(payload, []byte(`{"note": "disk replaced"}`), 0o644))
	authority := filepath.Join(t.TempDir(), "authority.json")
	require.NoError(t, os.WriteFile(authority, []byte(`{"contract": {"rules": []}}`), 0o644))
	for _, tc := range []struct {
		name     string
		opts     wakeOptions
		json     bool
		code     int
		contains string
		queued   int
	}{
		{name: "queued", opts: wakeOptions{Source: "manual_resume", By: "test"}, contains: "queued wake signal wake-", queued: 1},
		{name: "json", opts: wakeOptions{Source: "external_event", Ref: "disk", DedupKey: "disk-1", Payload: payload}, json: true,
			contains: `"dedup_key":"disk-1"`, queued: 1},
		{name: "no source", opts: wakeOptions{}, code: exitUsage},
		{name: "unknown source", opts: wakeOptions{Source: "because"}, code: exitData},
		{name: "expired", opts: wakeOptions{Source: "manual_resume", Expires: "2025-01-01T00:00:00Z"}, code: exitData},
		{name: "payload carries authority", opts: wakeOptions{Source: "external_event", Payload: authority}, code: exitData},
		{name: "no run", opts: wakeOptions{Source: "manual_resume"}, code: exitNoInput},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(t.TempDir(), "none")
			if tc.name != "no run" {
				dir = newQuickstart(t, 0)
			}
			a, stdout, _ := newTestApp(t, dir, tc.json)
			err := runWake(t.Context(), tc.opts, a)
			require.Equal(t, tc.code, exitCode(err), "%v", err)
			inbox, _ := filepath.Glob(filepath.Join(dir, "inbox", "*.json"))
			assert.Len(t, inbox, tc.queued)
			if tc.code != 0 {
				assert.Empty(t, stdout.String(), "a failed command prints nothing on stdout")
				return
			}
			assert.Contains(t, stdout.String(), tc.contains)
			if tc.json {
				assert.True(t, json.Valid(stdout.Bytes()), "one JSON object: %s", stdout)
			} else {
				assert.Contains(t, stdout.String(), "\nnext: acr run ")
			}
		})
	}
}

// TestRunWakeCoalesces: a second signal with the same dedup key is not
// queued, and neither is any signal for a stopped run; both are success
// (exit 0, "nothing queued"), so that a sender repeating itself does not
// fail.
func TestRunWakeCoalesces(t *testing.T) {
	t.Parallel()
	dir := newQuickstart(t, 0)
	a, stdout, _ := newTestApp(t, dir, false)
	opts := wakeOptions{Source: "external_event", DedupKey: "same"}
	require.NoError(t, runWake(t.Context(), opts, a))
	stdout.Reset()
	require.NoError(t, runWake(t.Context(), opts, a))
	assert.Contains(t, stdout.String(), `nothing queued: coalesced with wake-`)
	assert.Contains(t, stdout.String(), `same dedup key "same"`)

	require.NoError(t, runStop(t.Context(), stopOptions{By: "test"}, a))
	require.NoError(t, runRun(t.Context(), runOptions{MaxCycles: 1}, a))
	stdout.Reset()
	require.NoError(t, runWake(t.Context(), wakeOptions{Source: "manual_resume"}, a))
	assert.Contains(t, stdout.String(), "nothing queued: the run is stopped")
}
