package main

import (
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
)

// fakeClock is a wall clock that moves only when told to.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// testApp returns an app writing to buffers, with a terminal of the given
// kind on stdout and the given environment for NO_COLOR and TERM.
func testApp(isTerm bool, cols int, env map[string]string, clock *fakeClock) (*app, *bytes.Buffer) {
	var out bytes.Buffer
	a := newApp(&out, io.Discard)
	a.term = func(w io.Writer) (bool, int) { return isTerm && w == &out, cols }
	a.getenv = func(k string) string { return env[k] }
	if clock != nil {
		a.wall = clock.now
	}
	return a, &out
}

// screen replays terminal output the way a terminal shows it: a carriage
// return goes back to the start of the line and the clear-line sequence
// erases the rest, so only what was drawn last on each line remains.
func screen(out string) []string {
	var lines []string
	for _, l := range strings.Split(out, "\n") {
		if i := strings.LastIndex(l, "\r"); i >= 0 {
			l = l[i+1:]
		}
		lines = append(lines, strings.ReplaceAll(l, "\x1b[K", ""))
	}
	return lines
}

func TestProgressThrottlesRepeatedCycles(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a, out := testApp(true, 80, map[string]string{"NO_COLOR": "1"}, clock)
	p := a.newProgress(5000)
	require.NotNil(t, p)
	p.begin()
	s := kernel.Summary{Executed: true, LoopDisposition: state.Continue, GovernanceDecision: "EXECUTE",
		Agenda: "check:queue", Action: "apply_local_patch queue.txt", Outcome: "committed"}
	for i := 1; i <= 1000; i++ {
		clock.t = clock.t.Add(time.Millisecond)
		s.CycleSeq = int64(i)
		p.cycle(s, cycleLine(s))
	}
	draws := strings.Count(out.String(), clearLine)
	// One draw before the first cycle, one with the first cycle's line,
	// then at most one per 100 ms of the remaining second.
	assert.LessOrEqual(t, draws, 12, "progress redrawn %d times for 1 s of cycles", draws)
	assert.GreaterOrEqual(t, draws, 10)
	assert.Equal(t, 1, strings.Count(out.String(), "cycle 1 "), "a repeated cycle is counted, not printed")
	assert.Contains(t, out.String(), "acr run  0/5000 cycles")
	assert.NotContains(t, out.String(), "\x1b[3", "NO_COLOR: no colour")

	tail := p.finish()
	assert.Equal(t, " in 1.0s; 999 repeated cycle(s) not listed (acr log lists every cycle)", tail)
	assert.True(t, strings.HasSuffix(out.String(), clearLine), "finish erases the progress line")
}

func TestProgressFitsTheTerminal(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	a, _ := testApp(true, 30, nil, clock)
	p := a.newProgress(100000)
	p.begin()
	for _, d := range state.Dispositions() {
		p.cycle(kernel.Summary{Executed: true, LoopDisposition: d}, "x")
	}
	line := p.render(clock.t)
	assert.LessOrEqual(t, len(line), 29, "a wrapped line cannot be redrawn in place: %q", line)
	assert.NotContains(t, line, "\x1b[", "a cut line carries no half colour sequence")
}

// initQuickstart creates the quickstart run in a fresh state directory.
func initQuickstart(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "state")
	ex := filepath.Join("..", "..", "scenarios", "quickstart")
	a, _ := testApp(false, 0, nil, nil)
	code := a.execute(t.Context(), []string{"--state-dir", dir, "init", "--goal", filepath.Join(ex, "goal.json"),
		"--contract", filepath.Join(ex, "contract.json"), "--env", filepath.Join(ex, "environment.json")})
	require.Equal(t, 0, code)
	return dir
}

func TestRunShowsProgressOnATerminal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    map[string]string
		colour bool
	}{
		{"colour", map[string]string{"TERM": "xterm-256color"}, true},
		{"NO_COLOR", map[string]string{"TERM": "xterm-256color", "NO_COLOR": "1"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := initQuickstart(t)
			clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			a, out := testApp(true, 100, tc.env, clock)
			require.Equal(t, 0, a.execute(t.Context(), []string{"--state-dir", dir, "run", "--max-cycles", "20"}))
			got := out.String()
			assert.Contains(t, got, clearLine+"acr run  0/20 cycles")
			assert.Contains(t, got, clearLine+"cycle 3 ", "each new kind of cycle is printed above the progress line")
			if tc.colour {
				assert.Contains(t, got, "\x1b[32mCONTINUE\x1b[0m 2")
				assert.Contains(t, got, "\x1b[33mWAIT_APPROVAL\x1b[0m 1")
			} else {
				assert.NotContains(t, got, "\x1b[3")
			}
			// What stays on the screen is the plain output, with the
			// elapsed time on the closing line and no progress line left.
			lines := screen(got)
			assert.Regexp(t, `^cycle 1 +CONTINUE +EXECUTE +check:readme-typo`, lines[0])
			assert.Regexp(t, `^cycle 3 +WAIT_APPROVAL`, lines[2])
			assert.Equal(t, "3 cycle(s), final disposition WAIT_APPROVAL in 0.0s", lines[3])
			assert.Regexp(t, `^next: acr approve `, lines[4])
			assert.Equal(t, "", lines[5])
		})
	}
}

func TestRunShowsNoProgressWhenNotATerminal(t *testing.T) {
	dir := initQuickstart(t)
	a, out := testApp(false, 0, map[string]string{"TERM": "xterm"}, nil)
	require.Equal(t, 0, a.execute(t.Context(), []string{"--state-dir", dir, "run", "--max-cycles", "20"}))
	assert.NotContains(t, out.String(), "\r")
	assert.NotContains(t, out.String(), "\x1b")
	assert.Contains(t, out.String(), "\n3 cycle(s), final disposition WAIT_APPROVAL\n")

	// TERM=dumb cannot clear a line: no progress either.
	dir = initQuickstart(t)
	a, out = testApp(true, 80, map[string]string{"TERM": "dumb"}, nil)
	require.Equal(t, 0, a.execute(t.Context(), []string{"--state-dir", dir, "run", "--max-cycles", "20"}))
	assert.NotContains(t, out.String(), "\r")
	assert.NotContains(t, out.String(), "\x1b")
}

func TestRunJSONShowsNoProgressOnATerminal(t *testing.T) {
	dir := initQuickstart(t)
	a, out := testApp(true, 80, map[string]string{"TERM": "xterm"}, nil)
	require.Equal(t, 0, a.execute(t.Context(), []string{"--state-dir", dir, "run", "--max-cycles", "20", "--json"}))
	assert.NotContains(t, out.String(), "\r")
	assert.NotContains(t, out.String(), "\x1b")
	var v struct {
		Cycles []kernel.Summary `json:"cycles"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &v), "stdout is one JSON object")
	assert.Len(t, v.Cycles, 3)
}
