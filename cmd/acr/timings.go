package main

import (
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"time"
)

// stepTimings adds up the wall time drivers spend in each step of a cycle
// (kernel.Driver.Phase) for ACR_TIMINGS: where a run's time goes, without
// a special build or a profiler. Time between a driver's steps (the run
// loop's own work, sleeping while idle) is not counted. Each run opened
// gets a tracker of its own (a worker runs several at once); the totals
// are shared.
type stepTimings struct {
	now   func() time.Time
	mu    sync.Mutex
	steps map[string]*stepTotal
	order []string // steps in the order they were first entered
}

type stepTotal struct {
	count int
	total time.Duration
}

func newStepTimings(now func() time.Time) *stepTimings {
	return &stepTimings{now: now, steps: map[string]*stepTotal{}}
}

// tracker returns the Phase hook of one driver: each call ends the step in
// progress, if any, and starts name ("" for none).
func (t *stepTimings) tracker() func(name string) {
	var (
		cur   string
		since time.Time
	)
	return func(name string) {
		at := t.now()
		t.mu.Lock()
		defer t.mu.Unlock()
		if cur != "" {
			t.steps[cur].total += at.Sub(since)
		}
		cur, since = name, at
		if name == "" {
			return
		}
		s, ok := t.steps[name]
		if !ok {
			s = &stepTotal{}
			t.steps[name] = s
			t.order = append(t.order, name)
		}
		s.count++
	}
}

// timingsReport is the JSON ACR_TIMINGS names the file of.
type timingsReport struct {
	Schema  string       `json:"schema"`
	TotalMS float64      `json:"total_ms"`
	Steps   []timingStep `json:"steps"`
}

type timingStep struct {
	Step    string  `json:"step"`
	Count   int     `json:"count"`
	TotalMS float64 `json:"total_ms"`
	MeanMS  float64 `json:"mean_ms"`
}

const timingsSchema = "acr.timings.v1"

func (t *stepTimings) report() timingsReport {
	t.mu.Lock()
	defer t.mu.Unlock()
	r := timingsReport{Schema: timingsSchema, Steps: []timingStep{}}
	var total time.Duration
	for _, name := range t.order {
		s := t.steps[name]
		r.Steps = append(r.Steps, timingStep{Step: name, Count: s.count, TotalMS: millis(s.total), MeanMS: millis(s.total / time.Duration(s.count))})
		total += s.total
	}
	r.TotalMS = millis(total)
	return r
}

// millis is d in milliseconds to the microsecond.
func millis(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

// write saves the report to path. A command that ran is not failed by
// its diagnostics: the caller only warns when this fails.
func (t *stepTimings) write(path string) error {
	b, err := json.MarshalIndent(t.report(), "", "  ")
	if err != nil {
		return fmt.Errorf("ACR_TIMINGS: encode: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("ACR_TIMINGS: %w", err)
	}
	return nil
}
