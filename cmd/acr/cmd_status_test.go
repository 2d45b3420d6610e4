package main

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRunStatus(t *testing.T) {
	t.Parallel()
	fresh, waiting := newQuickstart(t, 0), newQuickstart(t, 20)
	for _, tc := range []struct {
		name     string
		dir      string
		json     bool
		noLoad   bool
		code     int
		contains []string
	}{
		{name: "fresh run", dir: fresh, contains: []string{
			"run          run:test (RUNNING), started 2026-01-01T00:00:00Z (now)\n",
			"disposition  CONTINUE: more work is due; the next acr run goes on\n",
			"world        3 of 3 checks failing, in a sandbox copy of the environment's files\n",
			"next: acr run --max-cycles 20\n"}},
		{name: "waiting for an approval", dir: waiting, contains: []string{
			"cycle        3, last change",
			"disposition  WAIT_APPROVAL: an action waits for a person to approve or deny it\n",
			"approvals    1 pending\n",
			"    approve: acr approve areq:sha256:",
			"history      acr log lists every cycle; acr audit 3 explains the last one\n",
			"next: acr approve areq:sha256:"}},
		{name: "json", dir: waiting, json: true, contains: []string{`"run_id":"run:test"`, `"cycle_seq":3,`, `"loop_disposition":"WAIT_APPROVAL"`}},
		{name: "no run", dir: filepath.Join(t.TempDir(), "none"), code: exitNoInput},
		{name: "clean slate", dir: fresh, noLoad: true, contains: []string{"clean slate (--no-load-state): no engine state loaded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, stdout, _ := newTestApp(t, tc.dir, tc.json)
			a.cfg.NoLoadState = tc.noLoad
			err := runStatus(t.Context(), statusOptions{}, a)
			require.Equal(t, tc.code, exitCode(err), "%v", err)
			if tc.code != 0 {
				assert.Empty(t, stdout.String(), "a failed command prints nothing on stdout")
				return
			}
			for _, s := range tc.contains {
				assert.Contains(t, stdout.String(), s)
			}
			if tc.json {
				assert.True(t, json.Valid(stdout.Bytes()), "one JSON object: %s", stdout)
			}
		})
	}
}
