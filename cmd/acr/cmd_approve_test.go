package main

import (
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
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
			{opts: approveOptions{Verdict: "deny", Ref: "PENDING", By: "test"}, contains: "nothing queued: the same answer (deny by test)"},
		}},
		{name: "same answer twice, json", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "deny", Ref: "PENDING", By: "test"}},
			{opts: approveOptions{Verdict: "deny", Ref: "PENDING", By: "test"}, json: true, contains: `"effect":"none"`},
		}},
		{name: "json", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: "PENDING", By: "test"}, json: true, contains: `"verdict":"approve"`},
		}},
		{name: "ref not pending", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: unknown}, code: exitData, contains: "names no pending request; pending:\n  areq:sha256:"},
		}},
		{name: "garbage", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: "please"}, code: exitData, contains: "please names no pending request; pending:"},
		}},
		{name: "upper-cased ref", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: "UPPER"}, code: exitData, contains: "names no pending request"},
		}},
		{name: "bare digest prefix", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: "DIGEST6", By: "test"}, contains: "queued approve of apply_local_patch config/app.ini"},
		}},
		{name: "too short a prefix", cycles: 20, steps: []step{
			{opts: approveOptions{Verdict: "approve", Ref: "DIGEST3", By: "test"}, code: exitData, contains: "names no pending request"},
		}},
		{name: "nothing pending", cycles: 0, steps: []step{
			{opts: approveOptions{Verdict: "deny", Ref: unknown}, code: exitData, contains: "the run has no pending request"},
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
				switch s.opts.Ref {
				case "PENDING":
					s.opts.Ref = ref
				case "UPPER":
					s.opts.Ref = strings.ToUpper(ref)
				case "DIGEST6":
					s.opts.Ref = codec.Ref(ref).Hex()[:6]
				case "DIGEST3":
					s.opts.Ref = codec.Ref(ref).Hex()[:3]
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

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// ttyIn is stdin that claims to be a terminal, with a person's typed
// answer.
type ttyIn struct{ *strings.Reader }

func (ttyIn) Write(p []byte) (int, error) { return len(p), nil }

// TestApproveShowsTheChange: approve shows the diff of the pending action
// before it records anything; at a terminal it asks, and only a yes (or
// --yes) queues the answer; status shows the change too.
func TestApproveShowsTheChange(t *testing.T) {
	t.Parallel()
	const diff = "  --- a/config/app.ini\n  +++ b/config/app.ini\n"
	for _, tc := range []struct {
		name     string
		terminal bool
		tty      string // what the person types at the terminal
		yes      bool
		code     int
		asked    bool
		contains string
	}{
		{name: "no terminal", contains: "queued approve of apply_local_patch config/app.ini"},
		{name: "terminal, yes", terminal: true, tty: "y\n", asked: true, contains: "queued approve"},
		{name: "terminal, no", terminal: true, tty: "n\n", asked: true, contains: "nothing queued: not approved"},
		{name: "terminal, end of input", terminal: true, tty: "", asked: true, contains: "nothing queued: not approved"},
		{name: "terminal, --yes", terminal: true, tty: "n\n", yes: true, contains: "queued approve"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := newQuickstart(t, 20)
			a, stdout, _ := newTestApp(t, dir, false)
			if tc.terminal {
				in := ttyIn{strings.NewReader(tc.tty)}
				a.stdin = in
				a.term = func(w io.Writer) (bool, int) { return w == io.Writer(in), 0 }
			}
			err := runApprove(t.Context(), approveOptions{Verdict: "approve", Ref: pendingRef(t, dir), By: "test", Yes: tc.yes}, a)
			out := stdout.String() + errText(err)
			assert.Equal(t, tc.code, exitCode(err), out)
			assert.Contains(t, out, "change:\n"+diff, "the change comes first")
			assert.Contains(t, out, "  -debug = true\n  +debug = false\n")
			assert.Equal(t, tc.asked, strings.Contains(out, "approve this change? [y/N]"), out)
			assert.Contains(t, out, tc.contains)
			q, err := runstore.OpenQueue(dir)
			require.NoError(t, err)
			items, _, err := q.List()
			require.NoError(t, err)
			assert.Equal(t, !strings.Contains(out, "nothing queued"), len(items) == 1, "queued only when approved: %v", items)
		})
	}

	dir := newQuickstart(t, 20)
	a, stdout, _ := newTestApp(t, dir, false)
	require.NoError(t, runStatus(t.Context(), statusOptions{}, a))
	assert.Contains(t, stdout.String(), "    change:\n      --- a/config/app.ini\n")
}
