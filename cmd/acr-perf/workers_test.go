package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/jetstream"
)

func TestSplitSubject(t *testing.T) {
	kind, run, ok := splitSubject("t0-nats1x1", "t0-nats1x1.ledger."+jetstream.Token("run:b001"))
	require.True(t, ok)
	assert.Equal(t, "ledger", kind)
	assert.Equal(t, "run:b001", run)
	kind, run, ok = splitSubject("t0-nats1x1", "t0-nats1x1.world."+jetstream.Token("run:b001")+".head")
	require.True(t, ok, "a world's subjects are the run's too")
	assert.Equal(t, "world", kind)
	assert.Equal(t, "run:b001", run)
	for _, s := range []string{"other.ledger.x", "t0-nats1x1.ledger", "t0-nats1x1x.status.a"} {
		_, _, ok := splitSubject("t0-nats1x1", s)
		assert.False(t, ok, s)
	}
}

func TestParseProcStatCPU(t *testing.T) {
	// The command name may hold spaces and parentheses.
	stat := "4242 (acr perf (x)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 9 0 100 0 0"
	user, sys, err := parseProcStatCPU(stat)
	require.NoError(t, err)
	assert.Equal(t, 2500*time.Millisecond, user)
	assert.Equal(t, 750*time.Millisecond, sys)
	_, _, err = parseProcStatCPU("4242 (acr) S 1 2")
	assert.Error(t, err)
}

func TestPercentile(t *testing.T) {
	var ds []time.Duration
	for i := 20; i >= 1; i-- { // unsorted on purpose
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	assert.Equal(t, 10*time.Millisecond, percentile(ds, 0.5))
	assert.Equal(t, 18*time.Millisecond, percentile(ds, 0.9))
	assert.Equal(t, 20*time.Millisecond, percentile(ds, 1))
	assert.Equal(t, time.Millisecond, percentile(ds, 0.01))
	assert.Zero(t, percentile(nil, 0.5))
	assert.Equal(t, 20*time.Millisecond, ds[0], "the input is not sorted in place")
}

func TestParseRunsAndDrained(t *testing.T) {
	out := `{"runs":[{"run_id":"run:b000","status":"RUNNING","loop_disposition":"IDLE","cycle":11,"inbox":0},` +
		`{"run_id":"run:b001","status":"RUNNING","loop_disposition":"IDLE","cycle":11,"inbox":0}]}`
	rows, err := parseRuns(out)
	require.NoError(t, err)
	n, err := drained(rows, 2, 10)
	require.NoError(t, err)
	assert.Equal(t, int64(22), n)

	_, err = drained(rows, 3, 10)
	assert.Error(t, err, "a run missing")
	rows[1].Disposition = "CONTINUE"
	_, err = drained(rows, 2, 10)
	assert.ErrorContains(t, err, "run:b001")
	rows[1].Disposition, rows[1].Inbox = "IDLE", 1
	_, err = drained(rows, 2, 10)
	assert.Error(t, err, "an inbox item left")
	_, err = parseRuns("no cycle eligible")
	assert.Error(t, err)
}

func TestSettleTracker(t *testing.T) {
	tr := newSettleTracker(2)
	at := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	msg := func(run, disp string, commit bool, sec int) storeMsg {
		return storeMsg{at: at.Add(time.Duration(sec) * time.Second), kind: "status", run: run, commit: commit,
			data: []byte(`{"run_id":"` + run + `","cycle_seq":3,"disposition":"` + disp + `"}`)}
	}
	tr.see(storeMsg{kind: "ledger", commit: true})
	tr.see(msg("a", "CONTINUE", true, 1))
	tr.see(msg("a", "IDLE", true, 2))
	tr.see(msg("a", "IDLE", true, 3)) // again: counted once
	select {
	case <-tr.done:
		t.Fatal("done with one run of two at rest")
	default:
	}
	tr.see(msg("b", "IDLE", false, 4))
	<-tr.done
	assert.Equal(t, at.Add(4*time.Second), tr.last)
	assert.Equal(t, int64(4), tr.batches)
	tr.see(msg("b", "IDLE", true, 5)) // after done: no second close
}

func TestLedgerType(t *testing.T) {
	assert.Equal(t, "persistent.cycle.started", ledgerType([]byte(`{"chain":"x","event":{"type":"persistent.cycle.started","cycle_seq":4},"seq":9}`)))
	assert.Empty(t, ledgerType([]byte("not json")))
}

// sampleTrials are two rounds of four setups, rates chosen to make the
// ratios easy: directories 100 and 200 cycles/s (1 and 2 loops), NATS 50
// and 60 (1 and 2 workers), in round 2 all twice as fast.
func sampleTrials() ([]trial, []setup) {
	setups := []setup{{procs: 1, conc: 1}, {procs: 2, conc: 1}, {nats: true, procs: 1, conc: 1}, {nats: true, procs: 2, conc: 1}}
	rates := []float64{100, 200, 50, 60}
	var ts []trial
	for round := range 2 {
		for i, s := range setups {
			wall := time.Duration(float64(time.Second) * 1000 / (rates[i] * float64(round+1)))
			t := trial{setup: s, round: round, cycles: 1000, wall: wall, acrCPU: 2 * time.Second}
			if s.nats {
				t.srvCPU, t.srvSys, t.batches = 4*time.Second, 3*time.Second, 2100
			}
			ts = append(ts, t)
		}
	}
	return ts, setups
}

func TestSummarize(t *testing.T) {
	ts, setups := sampleTrials()
	sums := summarize(ts, setups)
	require.Len(t, sums, 4)
	d1, d2, n1, n2 := sums[0], sums[1], sums[2], sums[3]
	assert.Equal(t, setups[2], n1.setup)
	assert.InDelta(t, 200, d1.median, 1e-6, "upper median of 100 and 200")
	assert.InDelta(t, 100, d1.min, 1e-6)
	assert.InDelta(t, 200, d1.max, 1e-6)
	assert.Zero(t, d1.vsDir, "a directory is not compared with itself")
	assert.InDelta(t, 1.0, d1.vsDir1, 1e-6)
	assert.InDelta(t, 2.0, d2.vsDir1, 1e-6)
	assert.InDelta(t, 0.5, n1.vsDir, 1e-6)
	assert.InDelta(t, 0.3, n2.vsDir, 1e-6, "2 workers against 2 loops")
	assert.InDelta(t, 0.6, n2.vsDir1, 1e-6)
	assert.Equal(t, 2*time.Millisecond, n1.acrCPU)
	assert.Equal(t, 4*time.Millisecond, n1.srvCPU)
	assert.InDelta(t, 0.75, n1.srvSys, 1e-6)
	assert.InDelta(t, 2.1, n1.batches, 1e-6)
	assert.Zero(t, d1.srvCPU)
	// Busy: 6 s of CPU over 20 s (round 1) and 10 s (round 2).
	assert.InDelta(t, 0.6, n1.busy, 1e-6)
}

func TestSameRound(t *testing.T) {
	a, b := setup{nats: true, procs: 2, conc: 1}, setup{procs: 1, conc: 1}
	tr := func(s setup, round int, rate float64) trial {
		return trial{setup: s, round: round, cycles: 100, wall: time.Duration(float64(time.Second) * 100 / rate)}
	}
	ts := []trial{tr(a, 0, 10), tr(b, 0, 20), tr(a, 1, 30), tr(b, 1, 30), tr(a, 2, 40), tr(b, 2, 10), tr(a, 3, 99)}
	// Ratios 0.5, 1 and 4 (round 3 has no b): the median is 1, where the
	// ratio of the medians would be 30/20.
	assert.InDelta(t, 1.0, sameRound(ts, a, b), 1e-9)
	assert.Zero(t, sameRound(ts, a, setup{procs: 4, conc: 1}))
	assert.Equal(t, "2 workers", workersLabel(a))
	assert.Equal(t, "1 worker at --concurrency 4", workersLabel(setup{nats: true, procs: 1, conc: 4}))
}

func TestRenderWorkers(t *testing.T) {
	ts, setups := sampleTrials()
	var wakes []wakeSample
	for i := 1; i <= 20; i++ {
		ms := time.Duration(i) * time.Millisecond
		wakes = append(wakes, wakeSample{inbox: 10 * ms, exited: 11 * ms, started: 20 * ms, settled: 25 * ms})
	}
	r := workersReport{
		env:    benchEnv{date: "2026-12-01 18:00 UTC", loadStart: "1.00 1.00 1.00", loadEnd: "2.00 2.00 2.00", tmp: "/tmp/x", took: 3 * time.Minute},
		sz:     workersSizes{runs: 40, items: 10, rounds: 2, setups: setups, wakes: 20, wakeRuns: 4},
		trials: ts, wakes: wakes, dirWakes: []time.Duration{12 * time.Millisecond, 14 * time.Millisecond, 13 * time.Millisecond},
		strace: straceFigures{cycles: 100, server: map[string]int{"fsync": 600, "mkdirat": 600}}, straced: true,
	}
	sec := renderWorkers(r)
	assert.True(t, strings.HasPrefix(sec, workersBegin))
	assert.True(t, strings.HasSuffix(strings.TrimSpace(sec), workersEnd))
	assert.Contains(t, sec, "| NATS, 2 `acr worker` × --concurrency 1 | 120.0 (60.0–120.0) | 0.30× | 0.60× | 2.00 ms + 4.00 ms |")
	assert.Contains(t, sec, "| directory, 1 `acr run` loop(s) | 200.0 (100.0–200.0) | – | 1.00× | 2.00 ms + – |")
	// Median (nearest rank: the 10th of 20) and p90 (the 18th).
	assert.Contains(t, sec, "(`persistent.cycle.started`) reaches the server** | 200 ms | 360 ms | 400 ms |")
	assert.Contains(t, sec, "13.0 ms median for the command")
	assert.Contains(t, sec, "6.0 fsync, 6.0 mkdirat")
	assert.Contains(t, sec, "load average 1.00 1.00 1.00 at the start")
	assert.NotContains(t, sec, "Quick mode")
}

func TestWorkersSectionSplicing(t *testing.T) {
	peers := peersBegin + "\npeers\n" + peersEnd
	doc := "# Performance\n\nrows\n\n" + peers + "\n\n## What bounds the side-by-side rows\nhand-written\n"
	sec := workersBegin + "\nworkers 1\n" + workersEnd + "\n"
	once := spliceSection(doc, workersBegin, workersEnd, sec)
	require.True(t, strings.HasPrefix(once, doc[:len(doc)-1]), "appended after what was there")
	twice := spliceSection(once, workersBegin, workersEnd, strings.Replace(sec, "workers 1", "workers 2", 1))
	assert.Contains(t, twice, "workers 2")
	assert.NotContains(t, twice, "workers 1")
	assert.Equal(t, 1, strings.Count(twice, workersBegin))
	// bench-peers replaces its section and keeps this one.
	thrice := spliceSection(twice, peersBegin, peersEnd, peersBegin+"\npeers 2\n"+peersEnd)
	assert.Contains(t, thrice, "peers 2")
	assert.Contains(t, thrice, "workers 2")
	assert.Contains(t, thrice, "hand-written")
	// make bench keeps everything from the first section on, whichever it is.
	assert.True(t, strings.HasPrefix(keptTail(thrice), peersBegin))
	assert.Contains(t, keptTail(thrice), "workers 2")
	onlyWorkers := spliceSection("# Performance\n", workersBegin, workersEnd, sec)
	assert.True(t, strings.HasPrefix(keptTail(onlyWorkers), workersBegin))
}

func TestWorkersSizes(t *testing.T) {
	for _, quick := range []bool{false, true} {
		sz := workersSizesFor(quick)
		assert.Positive(t, sz.runs)
		assert.Positive(t, sz.wakes)
		var dirs, nats int
		for _, s := range sz.setups {
			if s.nats {
				nats++
			} else {
				dirs++
				assert.Equal(t, 1, s.conc, "a directory loop runs one run at a time")
			}
		}
		assert.Positive(t, dirs)
		assert.Positive(t, nats)
		// Every NATS setup has a directory setup of the same parallelism
		// or at least the one-loop baseline.
		assert.Contains(t, sz.setups, setup{procs: 1, conc: 1})
	}
}
