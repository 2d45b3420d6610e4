package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestStepTimingsAddsUpSteps(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)} // progress_test.go
	pass := func(ms int) { clock.t = clock.t.Add(time.Duration(ms) * time.Millisecond) }
	st := newStepTimings(clock.now)
	a, b := st.tracker(), st.tracker() // two runs of one worker, interleaved
	a("gather")
	pass(2)
	b("gather")
	pass(1)
	a("begin") // a: gather 3 ms
	pass(4)
	b("") // b: gather 5 ms; the time after "" is not counted
	pass(100)
	a("") // a: begin 104 ms
	pass(50)
	a("gather")
	pass(1)
	a("") // a: gather 1 ms

	got := st.report()
	assert.Equal(t, timingsSchema, got.Schema)
	assert.Equal(t, []timingStep{
		{Step: "gather", Count: 3, TotalMS: 9, MeanMS: 3},
		{Step: "begin", Count: 1, TotalMS: 104, MeanMS: 104},
	}, got.Steps)
	assert.Equal(t, 113.0, got.TotalMS)
}

func TestStepTimingsWrite(t *testing.T) {
	st := newStepTimings(time.Now)
	path := filepath.Join(t.TempDir(), "timings.json")
	require.NoError(t, st.write(path))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	var r timingsReport
	require.NoError(t, json.Unmarshal(b, &r))
	assert.Equal(t, timingsReport{Schema: timingsSchema, Steps: []timingStep{}}, r)

	err = st.write(filepath.Join(t.TempDir(), "missing", "timings.json"))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "ACR_TIMINGS")
}

// TestStepTimingsConcurrentRuns: a worker's runs report from goroutines
// of their own (run with -race).
func TestStepTimingsConcurrentRuns(t *testing.T) {
	st := newStepTimings(time.Now)
	const runs, cycles = 4, 200
	var wg sync.WaitGroup
	for range runs {
		phase := st.tracker()
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range cycles {
				phase("gather")
				phase("begin")
				phase("")
			}
		}()
	}
	wg.Wait()
	got := st.report()
	require.Len(t, got.Steps, 2)
	for _, s := range got.Steps {
		assert.Equal(t, runs*cycles, s.Count, s.Step)
	}
}
