package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeWall is a clock that moves only when told to.
type fakeWall struct{ t time.Time }

func (c *fakeWall) now() time.Time { return c.t }

func (c *fakeWall) pass(ms int) { c.t = c.t.Add(time.Duration(ms) * time.Millisecond) }

func TestStepTimingsAddsUpSteps(t *testing.T) {
	clock := &fakeWall{t: time.Unix(0, 0)}
	st := newStepTimings(clock.now)
	a, b := st.tracker(), st.tracker() // two runs of one worker, interleaved
	a("gather")
	clock.pass(2)
	b("gather")
	clock.pass(1)
	a("begin") // a: gather 3 ms
	clock.pass(4)
	b("") // b: gather 5 ms; the time after "" is not counted
	clock.pass(100)
	a("") // a: begin 104 ms
	clock.pass(50)
	a("gather")
	clock.pass(1)
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
