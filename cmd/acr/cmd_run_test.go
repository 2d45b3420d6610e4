package main

import (
	"context"
	"encoding/json"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/runstore"
)

func TestRunRun(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts runOptions
		json bool
		// cancelAt cancels the context at the first write to stdout that
		// contains it: "" never, "*" before the run begins.
		cancelAt string
		code     int
		want     []string // lines of stdout, in order, as regular expressions
		cycle    int64    // the checkpoint's cycle afterwards
	}{
		{name: "one cycle", opts: runOptions{MaxCycles: 1}, cycle: 1, want: []string{
			`^cycle 1 +CONTINUE +EXECUTE +check:readme-typo`,
			`^1 cycle\(s\), final disposition CONTINUE$`}},
		{name: "until it rests", opts: runOptions{MaxCycles: 20}, cycle: 3, want: []string{
			`^cycle 1 `, `^cycle 2 `, `^cycle 3 +WAIT_APPROVAL`,
			`^3 cycle\(s\), final disposition WAIT_APPROVAL$`,
			`^next: acr approve areq:sha256:`}},
		{name: "zero cycles", opts: runOptions{MaxCycles: 0}, code: exitUsage},
		{name: "interrupted before the first cycle", opts: runOptions{MaxCycles: 20}, cancelAt: "*", cycle: 0, want: []string{
			`^interrupted before the first cycle: nothing run$`}},
		{name: "interrupted in cycle 1", opts: runOptions{MaxCycles: 20}, cancelAt: "cycle 1 ", cycle: 1, want: []string{
			`^cycle 1 +CONTINUE`,
			`^1 cycle\(s\), final disposition CONTINUE$`,
			`^interrupted after cycle 1, which finished and is checkpointed$`,
			`^next: acr run `}},
		{name: "json", opts: runOptions{MaxCycles: 20}, json: true, cycle: 3, want: []string{
			`^\{"cycles":\[\{"executed":true,"cycle_seq":1,.*\],"cycles_executed":3,.*"reason_codes":\["nothing_eligible","WAIT_APPROVAL"\]\}$`}},
		{name: "json interrupted", opts: runOptions{MaxCycles: 20}, json: true, cancelAt: `"cycle_seq":2`, cycle: 2, want: []string{
			`^\{"cycles":\[\{.*"cycle_seq":1,.*\},\{.*"cycle_seq":2,.*\}\],"cycles_executed":2,.*"reason_codes":\["interrupted"\]\}$`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := newQuickstart(t, 0)
			a, _, stderr := newTestApp(t, dir, tc.json)
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			out := &cancelOnWrite{marker: tc.cancelAt, cancel: cancel}
			a.stdout = out
			if tc.cancelAt == "*" {
				cancel()
			}
			err := runRun(ctx, tc.opts, a)
			require.Equal(t, tc.code, exitCode(err), "%v\n%s", err, stderr)
			if tc.code != 0 {
				assert.Empty(t, out.String(), "a failed command prints nothing on stdout")
				return
			}
			assertLines(t, out.String(), tc.want)
			assert.NotContains(t, out.String(), "interrupted_by", "no signal, no signal named")
			if tc.json {
				assert.True(t, json.Valid([]byte(out.String())), "one JSON object: %s", out)
			}
			s, _, err := runstore.ReadState(dir)
			require.NoError(t, err)
			assert.Equal(t, tc.cycle, s.Run.CycleSeq, "the checkpoint holds every cycle that ran")
		})
	}
}

func TestRunStep(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name        string
		interrupted bool
		json        bool
		want        []string
		cycle       int64
	}{
		{name: "one cycle", cycle: 1, want: []string{`^cycle 1 +CONTINUE +EXECUTE +check:readme-typo`}},
		{name: "json", json: true, cycle: 1, want: []string{`^\{"executed":true,"cycle_seq":1,.*\}$`}},
		{name: "interrupted before the cycle", interrupted: true, cycle: 0, want: []string{
			`^interrupted before the cycle was recorded: nothing run \(cycle 0, CONTINUE\)$`}},
		{name: "interrupted json", interrupted: true, json: true, cycle: 0, want: []string{
			`^\{"executed":false,"cycle_seq":0,.*"reason_codes":\["interrupted"\].*\}$`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := newQuickstart(t, 0)
			a, stdout, stderr := newTestApp(t, dir, tc.json)
			ctx, cancel := context.WithCancel(t.Context())
			if tc.interrupted {
				cancel()
			}
			defer cancel()
			require.NoError(t, runStep(ctx, stepOptions{}, a), stderr.String())
			assertLines(t, stdout.String(), tc.want)
			s, _, err := runstore.ReadState(dir)
			require.NoError(t, err)
			assert.Equal(t, tc.cycle, s.Run.CycleSeq)
		})
	}
}

// assertLines checks that out has a line matching each pattern, in order.
func assertLines(t *testing.T, out string, patterns []string) {
	t.Helper()
	require.NotEmpty(t, patterns, "a case with nothing to check")
	rest := out
	for _, p := range patterns {
		loc := regexp.MustCompile("(?m)" + p).FindStringIndex(rest)
		if !assert.NotNil(t, loc, "no line matching %q after the earlier ones in:\n%s", p, out) {
			return
		}
		rest = rest[loc[1]:]
	}
}
