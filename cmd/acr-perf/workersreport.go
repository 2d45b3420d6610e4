package main

import (
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
)

// The workers section of docs/PERFORMANCE.md lies between these markers.
// make bench-workers rewrites what is between them; make bench and make
// bench-peers keep it.
const (
	workersBegin = "<!-- workers:begin: written by make bench-workers, kept by make bench and make bench-peers -->"
	workersEnd   = "<!-- workers:end -->"
)

// benchEnv is when and where the benchmark ran.
type benchEnv struct {
	date, loadStart, loadEnd, tmp string
	took                          time.Duration
}

// workersReport is everything the workers section shows.
type workersReport struct {
	env      benchEnv
	sz       workersSizes
	trials   []trial
	wakes    []wakeSample
	dirWakes []time.Duration
	strace   straceFigures
	straced  bool
	quick    bool
}

// setupSummary aggregates one setup's trials.
type setupSummary struct {
	setup setup
	// rates are the trials' cycles per second, in round order.
	rates            []float64
	median, min, max float64
	// vsDir is the median over rounds of the rate divided by the rate of
	// the directory setup with the same parallelism in the same round;
	// vsDir1 the same against one directory loop. Zero: no such setup.
	vsDir, vsDir1 float64
	// acrCPU and srvCPU are CPU per cycle (medians), srvSys is the
	// share of srvCPU spent in the kernel; busy is CPU time over wall
	// time, in cores (median).
	acrCPU, srvCPU time.Duration
	srvSys, busy   float64
	// batches is atomic batches per cycle (median; NATS only).
	batches float64
	// msgs and bytes are what the workers sent the server per acting
	// cycle, srvActing the server's CPU per acting cycle (medians; NATS
	// only).
	msgs, bytes float64
	srvActing   time.Duration
	// polled counts trials whose end was seen by polling.
	polled int
}

// medianF is the median of xs (the upper one of an even count, as
// perf.Median).
func medianF(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

// percentile is the nearest-rank p-th percentile (0 < p ≤ 1) of ds.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := int(math.Ceil(p*float64(len(s)))) - 1
	return s[min(max(i, 0), len(s)-1)]
}

// sameRound is the median over rounds of a's rate divided by b's rate in
// the same round (0 if they never ran in one round): two setups measured
// minutes apart on a shared machine compare worse than two measured in
// one round.
func sameRound(trials []trial, a, b setup) float64 {
	rate := map[setup]map[int]float64{} // setup → round → rate
	for _, t := range trials {
		if rate[t.setup] == nil {
			rate[t.setup] = map[int]float64{}
		}
		rate[t.setup][t.round] = t.rate()
	}
	var rs []float64
	for round, ra := range rate[a] {
		if rb, ok := rate[b][round]; ok && rb > 0 {
			rs = append(rs, ra/rb)
		}
	}
	return medianF(rs)
}

// summarize aggregates trials per setup, in the order of setups.
func summarize(trials []trial, setups []setup) []setupSummary {
	dir1 := setup{procs: 1, conc: 1}
	has := map[setup]bool{}
	for _, t := range trials {
		has[t.setup] = true
	}
	var out []setupSummary
	for _, s := range setups {
		sum := setupSummary{setup: s}
		var acr, srv, sys, busy, batches, msgs, bytes, srvActing []float64
		for _, t := range trials {
			if t.setup != s {
				continue
			}
			sum.rates = append(sum.rates, t.rate())
			c := float64(t.cycles)
			acr = append(acr, float64(t.acrCPU)/c)
			srv = append(srv, float64(t.srvCPU)/c)
			if t.srvCPU > 0 {
				sys = append(sys, float64(t.srvSys)/float64(t.srvCPU))
			}
			busy = append(busy, float64(t.acrCPU+t.srvCPU)/float64(t.wall))
			batches = append(batches, float64(t.batches)/c)
			if t.acting > 0 {
				msgs = append(msgs, float64(t.traffic.Msgs)/float64(t.acting))
				bytes = append(bytes, float64(t.traffic.Bytes)/float64(t.acting))
				srvActing = append(srvActing, float64(t.srvCPU)/float64(t.acting))
			}
			if t.polled {
				sum.polled++
			}
		}
		if len(sum.rates) == 0 {
			continue
		}
		sum.median, sum.min, sum.max = medianF(sum.rates), slices.Min(sum.rates), slices.Max(sum.rates)
		if same := (setup{procs: s.parallelism(), conc: 1}); s.nats && has[same] {
			sum.vsDir = sameRound(trials, s, same)
		}
		if has[dir1] {
			sum.vsDir1 = sameRound(trials, s, dir1)
		}
		sum.acrCPU, sum.srvCPU, sum.srvSys = time.Duration(medianF(acr)), time.Duration(medianF(srv)), medianF(sys)
		sum.busy, sum.batches = medianF(busy), medianF(batches)
		sum.msgs, sum.bytes, sum.srvActing = medianF(msgs), medianF(bytes), time.Duration(medianF(srvActing))
		out = append(out, sum)
	}
	return out
}

// find returns the summary of s, if measured.
func find(sums []setupSummary, s setup) (setupSummary, bool) {
	for _, x := range sums {
		if x.setup == s {
			return x, true
		}
	}
	return setupSummary{}, false
}

// wakeColumn selects one time of a wake sample.
type wakeColumn struct {
	what string
	get  func(wakeSample) time.Duration
}

var wakeColumns = []wakeColumn{
	{"the wake signal reaches the server (its inbox message)", func(s wakeSample) time.Duration { return s.inbox }},
	{"the `acr wake` process has exited", func(s wakeSample) time.Duration { return s.exited }},
	{"**the consuming cycle's first record (`persistent.cycle.started`) reaches the server**", func(s wakeSample) time.Duration { return s.started }},
	{"the run is checkpointed at rest again (its status message)", func(s wakeSample) time.Duration { return s.settled }},
}

// column is one wake time of every sample.
func column(ws []wakeSample, get func(wakeSample) time.Duration) []time.Duration {
	ds := make([]time.Duration, len(ws))
	for i, w := range ws {
		ds[i] = get(w)
	}
	return ds
}

// ms formats a duration in milliseconds.
func ms(d time.Duration) string {
	switch {
	case d >= 100*time.Millisecond:
		return fmt.Sprintf("%.0f ms", float64(d)/1e6)
	case d >= 10*time.Millisecond:
		return fmt.Sprintf("%.1f ms", float64(d)/1e6)
	default:
		return fmt.Sprintf("%.2f ms", float64(d)/1e6)
	}
}

// ratio formats a ratio, or a dash for none.
func ratio(r float64) string {
	if r == 0 {
		return "–"
	}
	return fmt.Sprintf("%.2f×", r)
}

// renderWorkers is the section between the workers markers.
func renderWorkers(r workersReport) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	sz := r.sz
	sums := summarize(r.trials, sz.setups)
	host, _ := os.Hostname()
	p("%s", workersBegin)
	p("## Workers on one NATS server against state directories")
	p("")
	if r.quick {
		p("**Quick mode: small sizes. These figures check the harness, not the backends.**")
		p("")
	}
	p("Measured by `make bench-workers` (`go run ./cmd/acr-perf -workers`) on %s: %s/%s, %d CPUs, Go %s, nats-server %s,",
		r.env.date, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), server.VERSION)
	p("host %s; state directories and the server's store under %s (one disk). **A shared machine:** other agents'", orDash(host), r.env.tmp)
	p("builds and tests ran on the same cores (load average %s at the start, %s at the end), so single figures are", r.env.loadStart, r.env.loadEnd)
	p("noisy; the whole benchmark took %v.", r.env.took.Round(time.Second))
	p("")
	p("**How.** Each trial creates %d runs of the queue kind (%d items, one durable sandbox effect per cycle; a run", sz.runs, sz.items)
	p("rests IDLE after %d cycles) with `acr init`, not timed: `--store nats://…/PREFIX --run-id …`, each trial in a store", sz.items+1)
	p("prefix of its own, or `--state-dir`, each run in a directory of its own. *NATS:* one nats-server (JetStream file")
	p("storage, one replica, default settings: the stream is synced every 2 minutes, and each atomic batch is staged with")
	p("synchronous writes of its own) runs in a child process of the harness; the setup's `acr worker --concurrency C`")
	p("processes (default `--poll 3s` and `--max-cycles 100`) start at once and are timed from their start until the last")
	p("run's status message (written with its checkpoint at rest) reaches a subscriber in the harness. *Directory:* P")
	p("parallel loops of `acr --state-dir DIR run --max-cycles %d`, each taking the next run not yet taken, timed until", 2*sz.items+10)
	p("the last exits: what a user without a server would script. Durable cycles are counted from `acr runs --json` after")
	p("each trial (every run IDLE, its queue drained), and `acr ledger verify` passes on one run of each trial. The")
	p("setups were alternated over %d round(s), each round starting at another one; figures are medians over rounds,", sz.rounds)
	p("ratios medians of same-round ratios. CPU per cycle is the user+system time of the acr processes, and of the")
	p("server's process over the trial, divided by the cycles; cores busy is their sum over the wall time.")
	p("")
	p("| setup | durable cycles/s, median (min–max) | vs directory, same parallelism | vs 1 directory loop | CPU per cycle: acr + server | cores busy | atomic batches per cycle |")
	p("| --- | --- | --- | --- | --- | --- | --- |")
	for _, s := range sums {
		srv, batches := "–", "–"
		if s.setup.nats {
			srv, batches = ms(s.srvCPU), fmt.Sprintf("%.2f", s.batches)
		}
		p("| %s | %.1f (%.1f–%.1f) | %s | %s | %s + %s | %.2f of %d | %s |", s.setup, s.median, s.min, s.max, ratio(s.vsDir), ratio(s.vsDir1),
			ms(s.acrCPU), srv, s.busy, runtime.NumCPU(), batches)
	}
	p("")
	p("**Store rows.** What the workers sent the server per *acting* cycle (one effect each; %d per trial), from the", sz.runs*sz.items)
	p("server's own counters (`/varz` `in_msgs` and `in_bytes`, read before the workers start and after they exit: every")
	p("publish and request, the lease, the reads and the listing of due runs included), and the server's CPU per acting")
	p("cycle. The issue's targets: at most 4 messages and 8 KiB per acting cycle, and a worker at 0.7× the directory.")
	p("")
	p("| setup | vs directory, same parallelism | messages per acting cycle | KiB per acting cycle | server CPU per acting cycle |")
	p("| --- | --- | --- | --- | --- |")
	for _, s := range sums {
		if s.setup.nats {
			p("| %s | %s | %.2f | %.1f | %s |", s.setup, ratio(s.vsDir), s.msgs, s.bytes/1024, ms(s.srvActing))
		}
	}
	p("")
	if n := polledTrials(sums); n > 0 {
		p("(%d trial(s) ended by polling `acr runs` every 5 s: the subscriber missed a status message, so their wall time is up to 5 s long.)", n)
		p("")
	}
	p("### `acr wake` until the cycle that consumes it")
	p("")
	p("One `acr worker` with its default settings (`--poll 3s`, `--concurrency 1`; it hears of inbox items at once")
	p("through a subscription, `WatchInbox`) and %d runs at rest (IDLE after one item). %d times, 150–450 ms after the", sz.wakeRuns, len(r.wakes))
	p("previous wake had settled (a random phase of the worker's poll), `acr --store … --run-id … wake --signal")
	p("external_event` was started as a process of its own, round robin over the runs. Times are from just before that")
	p("process started to a subscriber in the harness seeing the message on the store's subjects (the ledger's own `at`")
	p("has one-second resolution, too coarse for this).")
	p("")
	p("| from just before `acr wake` starts until | median | p90 | max |")
	p("| --- | --- | --- | --- |")
	for _, c := range wakeColumns {
		ds := column(r.wakes, c.get)
		p("| %s | %s | %s | %s |", c.what, ms(percentile(ds, 0.5)), ms(percentile(ds, 0.9)), ms(percentile(ds, 1)))
	}
	p("")
	p("A cycle without an effect writes its records in one batch at its end, so its first record reaches the server")
	p("after the cycle's work: the bold row is later than the cycle's start by that (a few ms of CPU). The server passes")
	p("a batch's messages to subscribers as they arrive; the commit that stores them follows the last one.")
	p("")
	p("**State directory: no figure.** A directory run has no daemon: `acr wake` drops a file into the run's `inbox/`")
	p("(%s median for the command, over %d wakes), and the cycle that consumes it starts when something next runs", ms(percentile(r.dirWakes, 0.5)), len(r.dirWakes))
	p("`acr run` on the directory (a cron line, a script): the latency is that schedule's, not acr's.")
	p("")
	p("### What bounds these numbers")
	p("")
	for _, para := range boundNotes(r, sums) {
		p("%s", para)
		p("")
	}
	p("<details><summary>every trial</summary>")
	p("")
	p("| round | setup | cycles | wall | cycles/s | acr CPU | server CPU | load average after |")
	p("| --- | --- | --- | --- | --- | --- | --- | --- |")
	for _, t := range r.trials {
		srv := "–"
		if t.setup.nats {
			srv = ms(t.srvCPU)
		}
		p("| %d | %s | %d | %s | %.1f | %s | %s | %s |", t.round+1, t.setup, t.cycles, ms(t.wall), t.rate(), ms(t.acrCPU), srv, t.load)
	}
	p("")
	p("</details>")
	p("")
	p("To rerun: `make bench-workers` (about %s on two cores); `go run ./cmd/acr-perf -workers -quick -acr bin/acr` runs", about(r.env.took))
	p("tiny sizes and prints the section without writing it.")
	p("%s", workersEnd)
	return b.String()
}

// polledTrials counts the trials whose end was polled.
func polledTrials(sums []setupSummary) int {
	n := 0
	for _, s := range sums {
		n += s.polled
	}
	return n
}

// about is a duration for "to rerun": minutes, or seconds if under one.
func about(d time.Duration) string {
	if d < time.Minute {
		return fmt.Sprintf("%.0f seconds", d.Seconds())
	}
	return fmt.Sprintf("%.0f minutes", math.Ceil(d.Minutes()))
}

// workersLabel names a NATS setup in a sentence: "2 workers", "1 worker
// at --concurrency 4".
func workersLabel(s setup) string {
	w := fmt.Sprintf("%d workers", s.procs)
	if s.procs == 1 {
		w = "1 worker"
	}
	if s.conc > 1 {
		w += fmt.Sprintf(" at --concurrency %d", s.conc)
	}
	return w
}

// concurrencyNote describes how one worker's rate grows with
// --concurrency, where the curve bends (the first doubling that gains
// less than 10%), and what bounds it there, from the measured figures:
// cores busy against the machine's, CPU per cycle.
func concurrencyNote(r workersReport, sums []setupSummary, one setupSummary) string {
	var curve []string
	var ones []setupSummary
	for _, s := range sums {
		if !s.setup.nats || s.setup.procs != 1 {
			continue
		}
		curve = append(curve, fmt.Sprintf("--concurrency %d: %.1f cycles/s (%.2f× of 1; %.2f cores busy; CPU per cycle %s + %s)",
			s.setup.conc, s.median, sameRound(r.trials, s.setup, one.setup), s.busy, ms(s.acrCPU), ms(s.srvCPU)))
		ones = append(ones, s)
	}
	if len(ones) < 2 {
		return ""
	}
	cores := runtime.NumCPU()
	n := "**Concurrency.** One worker, more runs at once (medians; ratios of same-round trials): " + strings.Join(curve, "; ") + ". "
	bend := ones[len(ones)-1]
	for i := 1; i < len(ones); i++ {
		if sameRound(r.trials, ones[i].setup, ones[i-1].setup) < 1.1 {
			bend = ones[i-1]
			break
		}
	}
	both := bend.acrCPU + bend.srvCPU
	n += fmt.Sprintf("The curve bends at --concurrency %d: past it, more runs at once gain under 10%%. There the worker and "+
		"the server spend %s of CPU per cycle together, so %d cores could run at most %.0f cycles/s, and they keep %.2f of "+
		"the %d cores busy. ", bend.setup.conc, ms(both), cores, float64(cores)*float64(time.Second)/float64(max(both, time.Microsecond)),
		bend.busy, cores)
	if bend.busy >= 0.7*float64(cores) {
		n += "The cores are the limit: runs at once fill each other's waits for the server until no core is idle, and more " +
			"of them only queue for the cores (on this shared machine, other agents' work took part of them too). "
	} else {
		n += "The cores are not all busy, yet more runs at once do not help: what is left is serial (the one stream's " +
			"lock, the server's writes to its disk, the worker's own turns between its runs' answers) or taken by other " +
			"agents' work on this shared machine. "
	}
	n += "The directory loops share nothing but the disk and the cores."
	return n
}

// orDash is s, or a dash if empty.
func orDash(s string) string {
	if s == "" {
		return "–"
	}
	return s
}

// boundNotes explains the figures with the measured numbers.
func boundNotes(r workersReport, sums []setupSummary) []string {
	var notes []string
	cores := runtime.NumCPU()
	one, okOne := find(sums, setup{nats: true, procs: 1, conc: 1})
	if okOne && one.median > 0 {
		var scaling []string
		for _, s := range sums {
			if s.setup.nats && s.setup != one.setup {
				scaling = append(scaling, fmt.Sprintf("%s %.2f×", workersLabel(s.setup), sameRound(r.trials, s.setup, one.setup)))
			}
		}
		wall := time.Duration(float64(time.Second) / one.median)
		n := fmt.Sprintf("**NATS.** A cycle is %.2f atomic batches on the server: the driver holds a cycle's "+
			"outcome until the next cycle's decision and intent and appends the two together, and jsstore stores the "+
			"append's lines as one message (ledger format 2) with a plain publish where a state directory makes one write "+
			"and fsync; the effect's file is one more plain publish, guarded by the ledger's end. An atomic batch is left "+
			"for the checkpoint and status at rest (one per run). Before format 2 every append was an atomic batch as well, "+
			"and until this release each effect's file and the world's head were one (1.00 per cycle). "+
			"A single-replica file stream stages each atomic batch "+
			"in a small store of its own with synchronous writes, under the stream's lock, and every run's records go to the "+
			"one stream `PREFIX-runs`.", one.batches)
		if r.straced {
			c := float64(r.strace.cycles)
			sv := func(k ...string) float64 {
				t := 0
				for _, x := range k {
					t += r.strace.server[x]
				}
				return float64(t) / c
			}
			n += fmt.Sprintf(" Per durable cycle the server made %.1f fsync, %.1f mkdirat, %.1f openat and %.1f unlinkat calls "+
				"(strace -f -c attached to it over %d cycles of one worker; the worker itself made %.1f fsyncs per cycle, "+
				"its world's).", sv("fsync", "fdatasync"), sv("mkdirat"), sv("openat"), sv("unlinkat"), r.strace.cycles,
				float64(r.strace.worker["fsync"]+r.strace.worker["fdatasync"])/c)
		}
		both := one.srvCPU + one.acrCPU
		n += fmt.Sprintf(" The server spent %s of CPU per cycle, %.0f%% of it in the kernel, and the worker %s: %s together, "+
			"so %d free cores could run at most %.0f cycles/s of this workload even if nothing were serial. With one worker "+
			"the two take turns (the worker waits for each write's answer, the server for the next write), so a cycle's %s "+
			"of wall time is at least their sum; the rest "+
			"is waiting for the disk and for a core (load average %s at the start). More workers let a worker's CPU overlap "+
			"the server's, and contend with it for the same cores: against one worker (medians of same-round ratios), %s. On two shared cores the stream's "+
			"lock and the cores cannot be told apart as the bound; sharding runs over several streams, or a 3-node cluster "+
			"(jsstore's NOTES.md), on more cores would show which comes first.",
			ms(one.srvCPU), 100*one.srvSys, ms(one.acrCPU), ms(both), cores,
			float64(cores)*float64(time.Second)/float64(max(both, time.Microsecond)), ms(wall), r.env.loadStart, strings.Join(scaling, ", "))
		notes = append(notes, n)
		notes = append(notes, fmt.Sprintf("**Store rows.** One worker sent the server %.2f messages and %.1f KiB per acting "+
			"cycle, and the server spent %s of CPU on it. A cycle's messages: one ledger append (the cycle's decision and "+
			"intent with the last cycle's held outcome: since ledger format 2 one message, `Acr-Lines: n`, the lines byte for "+
			"byte as a state directory's ledger holds them, stored with a plain publish, where it was one message per record, "+
			"about 27 an acting cycle, in an atomic batch) and the effect's file (one message; until this release an atomic "+
			"batch of the file and the world's head, whose staging was most of the server's CPU per cycle); per run "+
			"rather than per cycle, the lease, the open's reads (checkpoint, ledger end, world, inbox), the world's take, the "+
			"checkpoint at rest and the listing of due runs. The inbox is heard (a subscription on the run's inbox subject), "+
			"not read every cycle: a cycle that finds nothing new sends nothing (a watched inbox is read again once a second at most). Bytes are mostly the ledger message, "+
			"compressed with zstd and a dictionary built from the reference scenarios' ledgers and checkpoints "+
			"(`Acr-Encoding: zstd-d1`), which takes a queue cycle's lines from 3.3 to 5.4 times smaller. The same harness "+
			"on the release before format 2, on this machine on 2026-12-06 (40 runs of 10 items): 33.7 messages, 40.6 KiB and "+
			"8.78 ms of server CPU per acting cycle; on the release before this one (inbox read every cycle, no dictionary, "+
			"the world's file and head in an atomic batch), 5.17 messages, 11.4 KiB and 4.25–5.10 ms (40 runs of 10 items), "+
			"and 3.32 messages, 7.5 KiB and 4.54 ms in this shape with the inbox heard and the dictionary (one round, "+
			"0.51× the directory). A run that checkpoints every cycle adds the checkpoint and status (an atomic batch of "+
			"two) and a second append per cycle: runstore's TestRemoteMessagesPerActingCycle counts such a run from the "+
			"server's counters and bounds it (34 messages and 73 KB per acting cycle before format 2, 7.5 and 26 KB after, "+
			"5.5 and 19.5 KB now).", one.msgs, one.bytes/1024, ms(one.srvActing)))
		if curve := concurrencyNote(r, sums, one); curve != "" {
			notes = append(notes, curve)
		}
	}
	if d1, ok := find(sums, setup{procs: 1, conc: 1}); ok && d1.median > 0 {
		var scaling []string
		for _, s := range sums {
			if !s.setup.nats && s.setup.procs > 1 {
				scaling = append(scaling, fmt.Sprintf("%d loops %.2f× (%.2f cores busy)", s.setup.procs, sameRound(r.trials, s.setup, d1.setup), s.busy))
			}
		}
		n := fmt.Sprintf("**Directories.** A loop's cycle costs %s of CPU in its acr process (process start and opening "+
			"the run included) and about three fsyncs of its own files (the side-by-side section above): %s of wall time per "+
			"cycle with one loop, which kept %.2f cores busy; the rest is waiting for fsyncs and for a core. Loops on different "+
			"runs share only the disk and the cores, so more loops fill each other's waits until the cores or the disk are "+
			"busy (against one loop, medians of same-round ratios)",
			ms(d1.acrCPU), ms(time.Duration(float64(time.Second)/d1.median)), d1.busy)
		if len(scaling) > 0 {
			n += ": " + strings.Join(scaling, ", ")
		}
		n += "."
		notes = append(notes, n)
	}
	if len(r.wakes) > 0 {
		started := percentile(column(r.wakes, func(s wakeSample) time.Duration { return s.started }), 0.5)
		inbox := percentile(column(r.wakes, func(s wakeSample) time.Duration { return s.inbox }), 0.5)
		reaction := percentile(column(r.wakes, func(s wakeSample) time.Duration { return s.started - s.inbox }), 0.5)
		notes = append(notes, fmt.Sprintf("**Wake.** Of the median %s, %s pass before the signal reaches the server: the `acr wake` "+
			"process starts, connects, and publishes into the inbox stream (on a directory the same command takes %s). From "+
			"there, a median %s to the cycle's first record: the worker hears of the item through its subscription, lists the "+
			"due runs (two requests), takes the run's lease, opens it (its checkpoint, the ledger's end, its local world), and runs the cycle, whose "+
			"records are one atomic batch. The worker's poll (3 s) plays no part unless the subscription's message is lost.",
			ms(started), ms(inbox), ms(percentile(r.dirWakes, 0.5)), ms(reaction)))
	}
	return notes
}
