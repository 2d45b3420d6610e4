package main

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/runstore"
)

// pendingRef returns the ref of the run's open approval request.
func pendingRef(t *testing.T, dir string) string {
	t.Helper()
	s, _, err := runstore.ReadState(dir)
	require.NoError(t, err)
	for _, p := range s.Run.PendingApprovals {
		if p.Resolution == nil {
			return string(p.Ref)
		}
	}
	t.Fatal("no open approval request")
	return ""
}

func TestRunApprove(t *testing.T) {
	t.Parallel()
	const unknown = "areq:sha256:0000000000000000000000000000000000000000000000000000000000000000"
	type step struct {
		opts     approveOptions // Ref "PENDING" stands for the pending request's ref
		json     bool
		code     int
		contains string
	}
	for _, tc := range []struct {
		name   string
		cycles int // of the quickstart run before the steps; 20 leaves it waiting
		steps  []step
	}{
		{name: "approve", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: "PENDING", By: "test"}, contains: "queued approve of apply_local_patch config/app.ini"},
		}},
		{name: "deny replaces approve", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: "PENDING", By: "test"}},
			{opts: approveOptions{Verdict: "deny", Ref: "PENDING", By: "test", Reason: "not now"}, contains: "replaced the queued approve (approval-"},
		}},
		{name: "same answer twice", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "deny", Ref: "PENDING", By: "test"}},
			{opts: approveOptions{Verdict: "deny", Ref: "PENDING", By: "test"}, code: exitNoEffect, contains: "is already queued"},
		}},
		{name: "json", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: "PENDING", By: "test"}, json: true, contains: `"verdict":"approve"`},
		}},
		{name: "ref not pending", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: unknown}, code: exitNoEffect, contains: "; pending: areq:sha256:"},
		}},
		{name: "nothing pending", cycles: 0, steps: []step{
			{opts: approveOptions{Verdict: "deny", Ref: unknown}, code: exitNoEffect, contains: "the run is not waiting for any approval"},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := newQuickstart(t, tc.cycles)
			ref := ""
			if tc.cycles > 0 {
				ref = pendingRef(t, dir)
			}
			for i, s := range tc.steps {
				a, stdout, _ := newTestApp(t, dir, s.json)
				if s.opts.Ref == "PENDING" {
					s.opts.Ref = ref
				}
				err := runApprove(t.Context(), s.opts, a)
				require.Equal(t, s.code, exitCode(err), "step %d: %v", i, err)
				if s.code != 0 {
					assert.Empty(t, stdout.String(), "a failed command prints nothing on stdout")
					assert.Contains(t, err.Error(), s.contains)
					continue
				}
				assert.Contains(t, stdout.String(), s.contains, "step %d", i)
				if s.json {
					assert.True(t, json.Valid(stdout.Bytes()), "one JSON object: %s", stdout)
				}
			}
		})
	}
}

// TestRunApproveThenRun: the answer runApprove queues is what the next
// cycle acts on.
func TestRunApproveThenRun(t *testing.T) {
	t.Parallel()
	dir := newQuickstart(t, 20)
	a, stdout, _ := newTestApp(t, dir, false)
	require.NoError(t, runApprove(t.Context(), approveOptions{Verdict: "approve", Ref: pendingRef(t, dir), By: "test"}, a))
	stdout.Reset()
	require.NoError(t, runRun(t.Context(), runOptions{MaxCycles: 20}, a))
	assert.Regexp(t, `(?m)^cycle 4 .*EXECUTE .*apply_local_patch config/app.ini \[committed\]`, stdout.String())
}
