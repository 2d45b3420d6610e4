package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/notify"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/storage"
)

// TestWorkers: two workers on one store with several runs, one of them
// running up to 3 runs at once (--concurrency). Each run is
// initialised, run by whichever worker gets its lease until it waits for
// its approval, approved by another process, and run again to its next
// rest. Every run advances; its ledger verifies and replays; no cycle is
// recorded twice (two workers never ran it at once) and no effect is
// committed twice.
func TestWorkers(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/workers"
	dir := t.TempDir()
	q := quickstartOptions()
	const runs = 5
	id := func(i int) string { return fmt.Sprintf("run:w%d", i) }
	for i := range runs {
		code, out, errOut := acrIn(t, dir, "--store", store, "--run-id", id(i), "init", "--goal", q.Goal, "--contract", q.Contract, "--env", q.Env)
		require.Equal(t, 0, code, "%s%s", out, errOut)
	}
	list := func() []runRow {
		t.Helper()
		code, out, errOut := acrIn(t, dir, "--store", store, "--json", "runs")
		require.Equal(t, 0, code, "%s%s", out, errOut)
		var v struct{ Runs []runRow }
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		require.Len(t, v.Runs, runs)
		return v.Runs
	}

	// --once: two workers at the same time, one pass each.
	var wg sync.WaitGroup
	outs := make([]string, 2)
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, errOut := acrCtx(t.Context(), dir, "--store", store, "worker", "--once", "--concurrency", fmt.Sprint(1+3*w))
			assert.Equal(t, 0, code, "%s%s", out, errOut)
			outs[w] = out
		}()
	}
	wg.Wait()
	t.Logf("worker --once passes:\n%s---\n%s", outs[0], outs[1])
	for _, r := range list() {
		assert.Equal(t, "WAIT_APPROVAL", r.Disposition, "%+v (workers said %q)", r, outs)
	}

	// Two looping workers; approvals arrive while they run.
	ctx, cancel := context.WithCancel(t.Context())
	for w := range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, errOut := acrCtx(ctx, dir, "--store", store, "worker", "--poll", "200ms", "--concurrency", fmt.Sprint(1+2*w))
			assert.Equal(t, 0, code, "%s%s", out, errOut)
		}()
	}
	before := map[string]int64{}
	for i := range runs {
		code, out, errOut := acrIn(t, dir, "--store", store, "--run-id", id(i), "--json", "status")
		require.Equal(t, 0, code, "%s%s", out, errOut)
		var st struct {
			Cycle   int64 `json:"cycle_seq"`
			Pending []struct {
				Ref string `json:"ref"`
			} `json:"pending_approvals"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &st), out)
		require.Len(t, st.Pending, 1, out)
		before[id(i)] = st.Cycle
		code, out, errOut = acrIn(t, dir, "--store", store, "--run-id", id(i), "approve", st.Pending[0].Ref, "--by", "test")
		require.Equal(t, 0, code, "%s%s", out, errOut)
	}
	deadline := time.Now().Add(60 * time.Second)
	for {
		done := 0
		for _, r := range list() {
			if r.Inbox == 0 && r.Cycle > before[r.RunID] {
				done++
			}
		}
		if done == runs {
			break
		}
		require.True(t, time.Now().Before(deadline), "runs did not advance: %+v", list())
		time.Sleep(100 * time.Millisecond)
	}
	cancel()
	wg.Wait()

	s, err := runstore.DialStore(t.Context(), store, runstore.Connection{})
	require.NoError(t, err)
	defer s.Close()
	for i := range runs {
		m, err := runstore.OpenRemote(t.Context(), s, store, id(i), dir)
		require.NoError(t, err)
		h, err := m.History()
		require.NoError(t, err)
		expect, err := h.Expect()
		require.NoError(t, err)
		rep, err := h.Verify(expect)
		require.NoError(t, err)
		require.True(t, rep.OK, "%s: %v", id(i), rep.Damage)
		recs, err := h.ReadAll()
		require.NoError(t, err)
		completed := map[int64]int{}
		effects := map[string]int{}
		for _, rec := range recs {
			switch rec.Event.Type {
			case event.CycleCompleted:
				completed[rec.Event.CycleSeq]++
				assert.Equal(t, 1, completed[rec.Event.CycleSeq], "%s: cycle %d completed twice", id(i), rec.Event.CycleSeq)
			case event.ActionCommitted:
				key := field(rec.Event, "idempotency_key")
				require.NotEmpty(t, key)
				effects[key]++
				assert.Equal(t, 1, effects[key], "%s: effect %s committed twice", id(i), key)
			}
		}
		assert.NotEmpty(t, effects, "%s: the quickstart changes its world", id(i))
		code, out, errOut := acrIn(t, dir, "--store", store, "--run-id", id(i), "replay", "--verify")
		assert.Equal(t, 0, code, "%s%s", out, errOut)
	}
}

// TestWorkerUsage: acr worker's flags are checked before it connects.
func TestWorkerUsage(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/usage"
	dir := t.TempDir()
	for _, args := range [][]string{{"--concurrency", "0"}, {"--max-cycles", "0"}, {"--poll", "-1s"}} {
		code, out, errOut := acrIn(t, dir, append([]string{"--store", store, "worker", "--once"}, args...)...)
		assert.Equal(t, 64, code, "%v: %s%s", args, out, errOut)
	}
	code, out, errOut := acrIn(t, dir, "worker", "--once")
	assert.Equal(t, 64, code, "a state directory: %s%s", out, errOut)
}

// TestWorkerLabels: a run created with --label is run only by a worker
// with that label; a run without one by any worker.
func TestWorkerLabels(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/labels"
	dir := t.TempDir()
	q := quickstartOptions()
	for id, label := range map[string]string{"run:east": "east", "run:west": "west", "run:any": ""} {
		args := []string{"--store", store, "--run-id", id, "init", "--goal", q.Goal, "--contract", q.Contract, "--env", q.Env}
		if label != "" {
			args = append(args, "--label", label)
		}
		code, out, errOut := acrIn(t, dir, args...)
		require.Equal(t, 0, code, "%s%s", out, errOut)
	}
	code, out, errOut := acrIn(t, dir, "--store", store, "--run-id", "run:bad", "init", "--goal", q.Goal, "--contract", q.Contract, "--env", q.Env, "--label", "no spaces")
	require.Equal(t, 64, code, "%s%s", out, errOut)
	code, out, errOut = acrIn(t, dir, "--store", store, "worker", "--once", "--label", "east,")
	require.Equal(t, 64, code, "%s%s", out, errOut)
	cycles := func() map[string]int64 {
		t.Helper()
		code, out, errOut := acrIn(t, dir, "--store", store, "--json", "runs")
		require.Equal(t, 0, code, "%s%s", out, errOut)
		var v struct{ Runs []runRow }
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		got := map[string]int64{}
		for _, r := range v.Runs {
			got[r.RunID+"/"+r.Label] = r.Cycle
		}
		return got
	}
	worker := func(args ...string) {
		t.Helper()
		code, out, errOut := acrIn(t, dir, append([]string{"--store", store, "worker", "--once"}, args...)...)
		require.Equal(t, 0, code, "%s%s", out, errOut)
	}
	require.Equal(t, map[string]int64{"run:east/east": 0, "run:west/west": 0, "run:any/": 0}, cycles())
	worker("--label", "north")
	got := cycles()
	assert.Zero(t, got["run:east/east"], "a worker without the label ran it")
	assert.Zero(t, got["run:west/west"], "a worker without the label ran it")
	assert.NotZero(t, got["run:any/"], "a run without a label goes to any worker")
	worker() // no labels: labelled runs are not its
	assert.Equal(t, got, cycles())
	worker("--label", "north,east")
	got = cycles()
	assert.NotZero(t, got["run:east/east"])
	assert.Zero(t, got["run:west/west"])
	worker("--label", "west")
	assert.NotZero(t, cycles()["run:west/west"])
	code, out, errOut = acrIn(t, dir, "--store", store, "runs")
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "LABEL")
}

// TestConsumedInboxDropped: a process killed after the checkpoint that
// consumed an inbox item and before it deleted the item's message leaves
// the message in the stream; the next open of the run deletes it, so the
// run is not due (inbox not empty) at every worker poll forever.
func TestConsumedInboxDropped(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/dropped"
	dir := t.TempDir()
	q := quickstartOptions()
	const id = "run:dropped"
	for _, args := range [][]string{
		{"init", "--goal", q.Goal, "--contract", q.Contract, "--env", q.Env},
		{"run", "--max-cycles", "20"},
		{"wake", "--signal", "external_event"},
	} {
		code, out, errOut := acrIn(t, dir, append([]string{"--store", store, "--run-id", id}, args...)...)
		require.Equal(t, 0, code, "%v: %s%s", args, out, errOut)
	}
	s, err := runstore.DialStore(t.Context(), store, runstore.Connection{})
	require.NoError(t, err)
	defer s.Close()
	inbox := func() uint64 {
		t.Helper()
		all, err := s.Runs(t.Context())
		require.NoError(t, err)
		require.Len(t, all, 1)
		return all[0].Inbox
	}
	require.EqualValues(t, 1, inbox())

	type killed struct{}
	m, err := runstore.OpenRemote(t.Context(), s, store, id, filepath.Join(dir, "state"))
	require.NoError(t, err)
	r, err := m.Open(t.Context(), storage.Holder{Name: "test"}, runstore.Options{Failpoint: func(stage string) {
		if stage == "after-checkpoint" {
			panic(killed{})
		}
	}})
	require.NoError(t, err)
	func() {
		defer func() { require.IsType(t, killed{}, recover()) }()
		_, _ = r.Driver.Run(t.Context(), 10, nil)
	}()
	require.NoError(t, r.Close()) // releases the lease; deletes nothing
	require.EqualValues(t, 1, inbox(), "the consumed wake is still in the stream")

	m, err = runstore.OpenRemote(t.Context(), s, store, id, filepath.Join(dir, "state"))
	require.NoError(t, err)
	r, err = m.Open(t.Context(), storage.Holder{Name: "test"}, runstore.Options{})
	require.NoError(t, err)
	require.NoError(t, r.Close())
	require.Zero(t, inbox(), "reopening the run deletes what its checkpoint consumed")
	due, err := s.Due(t.Context(), time.Now())
	require.NoError(t, err)
	require.Empty(t, due)
}

// TestWorkerNotifies: a worker given --notify tells a person when a run
// it ran comes to need one, once per condition however many passes (or
// workers) run it again, with the change the pending approval would make,
// shown through the run's own handle.
func TestWorkerNotifies(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/notify"
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.jsonl")
	prog := filepath.Join(dir, "notify.sh")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\ncat >> "+notes+"\necho >> "+notes+"\n"), 0o755))
	q := quickstartOptions()
	ids := []string{"run:n1", "run:n2"}
	for _, id := range ids {
		code, out, errOut := acrIn(t, dir, "--store", store, "--run-id", id, "init", "--goal", q.Goal, "--contract", q.Contract, "--env", q.Env)
		require.Equal(t, 0, code, "%s%s", out, errOut)
	}
	read := func() []notify.Document {
		t.Helper()
		b, err := os.ReadFile(notes)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		require.NoError(t, err)
		var docs []notify.Document
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if l == "" {
				continue
			}
			var d notify.Document
			require.NoError(t, json.Unmarshal([]byte(l), &d), l)
			docs = append(docs, d)
		}
		return docs
	}

	code, out, errOut := acrIn(t, dir, "--store", store, "worker", "--once", "--notify", prog)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	docs := read()
	require.Len(t, docs, 2, "one notification per run waiting for approval")
	seen := map[string]bool{}
	for _, d := range docs {
		seen[d.RunID] = true
		assert.Equal(t, "approval", d.Kind)
		require.Len(t, d.Pending, 1)
		assert.Contains(t, d.Pending[0].Change, "config/app.ini", "the change is shown through the run's handle")
	}
	assert.Len(t, seen, 2)

	// The runs are woken and run again, still waiting for the same
	// approval: nothing new to tell.
	for _, id := range ids {
		code, out, errOut := acrIn(t, dir, "--store", store, "--run-id", id, "wake", "--signal", "external_event")
		require.Equal(t, 0, code, "%s%s", out, errOut)
	}
	code, out, errOut = acrIn(t, dir, "--store", store, "worker", "--once", "--notify", prog)
	require.Equal(t, 0, code, "%s%s", out, errOut)
	assert.Contains(t, out, "cycle(s)", "the woken runs ran")
	assert.Len(t, read(), 2, "the same condition is not notified again")
}
