package main

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
)

// progressEvery bounds how often the progress line is redrawn for cycles
// that print nothing else: ten times a second reads as live without making
// the terminal the bottleneck of a fast run.
const progressEvery = 100 * time.Millisecond

// clearLine returns the cursor to the start of the line and erases it.
const clearLine = "\r\x1b[K"

// progress is the live line at the bottom of acr run on a terminal: cycles
// done out of the most allowed, how many ended in each disposition, and the
// time elapsed. A cycle is printed above it as an ordinary line unless it
// repeats one of the last few kinds of cycle printed (same disposition,
// decision, agenda item, action, outcome and reasons): a long run that
// drains a queue, compacting every so often, or idles on repeated wakes
// then shows each new kind of step once and counts the repeats, instead
// of scrolling away.
type progress struct {
	w     io.Writer
	max   int
	cols  int
	color bool
	now   func() time.Time

	start   time.Time
	drawn   time.Time // when the line was last drawn
	shown   bool      // the line is on screen
	done    int
	repeats int // cycles counted but not printed
	counts  map[state.Disposition]int
	recent  []string // the kinds of cycle printed last, newest first
}

// recentKinds is how many kinds of cycle count as "seen just now": enough
// for a pattern like work, work, compaction to fold, few enough that
// something that happened long ago shows again.
const recentKinds = 8

// newProgress returns the progress display for a run of at most max
// cycles, or nil when stdout is not a live terminal (a pipe, a file, cron,
// --json): then nothing of it is ever written.
func (a *app) newProgress(max int) *progress {
	ok, cols := a.liveTerminal()
	if !ok {
		return nil
	}
	return &progress{w: a.stdout, max: max, cols: cols, color: a.colour(), now: a.wall, counts: map[state.Disposition]int{}}
}

// begin draws the line before the first cycle, so that a slow first cycle
// (recovery, a slow observation) is not a silent terminal.
func (p *progress) begin() {
	p.start = p.now()
	p.draw(p.start, "")
}

// cycle accounts for one finished cycle; line is its ordinary output line.
func (p *progress) cycle(s kernel.Summary, line string) {
	p.done++
	p.counts[s.LoopDisposition]++
	key := fmt.Sprint(s.LoopDisposition, s.GovernanceDecision, s.Agenda, s.Action, s.Outcome, s.StrategicReview, s.Compacted, s.Recovered, s.ReasonCodes)
	repeat := slices.Contains(p.recent, key)
	if !repeat {
		p.recent = append([]string{key}, p.recent[:min(len(p.recent), recentKinds-1)]...)
	}
	t := p.now()
	if !repeat {
		// The line and the redrawn progress line go out in one write: a
		// printed cycle never costs an extra write, so only quiet cycles
		// need the throttle.
		p.draw(t, line+"\n")
		return
	}
	p.repeats++
	if t.Sub(p.drawn) >= progressEvery {
		p.draw(t, "")
	}
}

// finish erases the progress line, leaving the terminal as if only the
// ordinary lines had been printed, and returns what the closing summary
// line should add: the elapsed time, and how many cycles were counted but
// not listed.
func (p *progress) finish() string {
	if p.shown {
		fmt.Fprint(p.w, clearLine)
		p.shown = false
	}
	tail := " in " + elapsed(p.now().Sub(p.start))
	if p.repeats > 0 {
		tail += fmt.Sprintf("; %d repeated cycle(s) not listed (acr log lists every cycle)", p.repeats)
	}
	return tail
}

func (p *progress) draw(t time.Time, above string) {
	fmt.Fprint(p.w, clearLine+above+p.render(t))
	p.drawn, p.shown = t, true
}

// render builds the progress line. It is cut to the terminal's width,
// because a line that wraps can no longer be redrawn in place.
func (p *progress) render(t time.Time) string {
	plain := []string{fmt.Sprintf("acr run  %d/%d cycles", p.done, p.max)}
	fancy := []string{plain[0]}
	for _, d := range state.Dispositions() {
		if n := p.counts[d]; n > 0 {
			plain = append(plain, fmt.Sprintf("%s %d", d, n))
			fancy = append(fancy, fmt.Sprintf("%s%s\x1b[0m %d", dispositionColour(d), d, n))
		}
	}
	tail := "elapsed " + elapsed(t.Sub(p.start))
	plain, fancy = append(plain, tail), append(fancy, tail)
	line := strings.Join(plain, "  ")
	width := p.cols - 1
	if width <= 0 {
		width = 79
	}
	if len(line) > width {
		return line[:width]
	}
	if p.color {
		return strings.Join(fancy, "  ")
	}
	return line
}

// dispositionColour is the ANSI colour of a disposition on the progress
// line: green for work going on, yellow for waiting on a person or
// evidence, red for a fault, the default colour for resting.
func dispositionColour(d state.Disposition) string {
	switch d {
	case state.Continue:
		return "\x1b[32m"
	case state.WaitApproval, state.Deferred:
		return "\x1b[33m"
	case state.Faulted:
		return "\x1b[31m"
	case state.Stopped:
		return "\x1b[35m"
	}
	return "\x1b[36m"
}

// elapsed shows tenths of a second for short runs and whole units after.
func elapsed(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return humanDuration(d)
}
