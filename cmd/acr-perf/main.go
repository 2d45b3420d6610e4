// Command acr-perf measures acr against its performance targets and writes
// docs/PERFORMANCE.md. Every target is a ratio measured in the same run on
// the same disk; long histories are generated (see internal/perf). Run it
// with make bench; -quick uses small sizes (a smoke test, not the targets).
//
// -peers runs acr side by side with other durable-execution engines, and
// -workers drains many runs with acr worker processes on one NATS server
// against acr run loops over state directories, and times acr wake until
// the cycle that consumes it; each writes its own section of the report.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/perf"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/world"
)

type row struct {
	what, target, measured, verdict string
}

func main() {
	out := flag.String("out", "docs/PERFORMANCE.md", "report to write")
	work := flag.String("work", "", "scratch directory (default: a new temporary one, removed afterwards)")
	quick := flag.Bool("quick", false, "small sizes: checks the harness, not the targets")
	lookup := flag.Bool("lookup", false, "only measure the idempotency lookup row and print it (nothing is written)")
	peers := flag.String("peers", "", "run DIR/side-by-side.sh (the peers' folder) against -acr and write its section of -out")
	acr := flag.String("acr", "bin/acr", "the binary -peers and -workers measure")
	workers := flag.Bool("workers", false, "measure acr worker processes on one NATS server against state directories, and acr wake's latency, and write that section of -out")
	rounds := flag.Int("rounds", 0, "with -workers: rounds of every setup (0: the default, 3; 1 for a first look)")
	serve := flag.String("serve-nats", "", "run a NATS server with its JetStream store in this directory until SIGTERM (used by -workers)")
	flag.Parse()
	do := run
	if *lookup {
		do = runLookup
	}
	if *peers != "" {
		do = func(out, work string, _ bool) error { return runPeers(out, *peers, *acr, work) }
	}
	if *workers {
		do = func(out, work string, quick bool) error { return runWorkers(out, *acr, work, quick, *rounds) }
	}
	if *serve != "" {
		do = func(string, string, bool) error { return serveNATS(*serve) }
	}
	if err := do(*out, *work, *quick); err != nil {
		fmt.Fprintln(os.Stderr, "acr-perf:", err)
		os.Exit(1)
	}
}

func run(out, work string, quick bool) error {
	ctx := context.Background() // a benchmark tool: nothing stops it half-way but a kill
	if work == "" {
		d, err := os.MkdirTemp("", "acr-perf-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	bin := filepath.Join(work, "acr")
	if b, err := exec.Command("go", "build", "-o", bin, "./cmd/acr").CombinedOutput(); err != nil {
		return fmt.Errorf("build acr: %v\n%s", err, b)
	}
	sizes := struct {
		events, auditCycles, queue, rssBig, rssSmall, lookupKeys, trials int
	}{1_000_000, 100_000, 10_000, 100_000, 1_000, 100_000, 11}
	if quick {
		sizes.events, sizes.auditCycles, sizes.queue, sizes.rssBig, sizes.rssSmall, sizes.lookupKeys, sizes.trials = 20_000, 2_000, 500, 2_000, 200, 2_000, 3
	}
	var rows []row
	var notes []string // what bounds each missed target
	note := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

	// Long histories.
	note("generating a run with at least %d cycles (and %d events)...", sizes.auditCycles, sizes.events)
	t0 := time.Now()
	large, err := perf.Generate(ctx, filepath.Join(work, "large"), int64(sizes.events), int64(sizes.auditCycles))
	if err != nil {
		return err
	}
	genTime := time.Since(t0)
	note("  %d cycles, %d events, %d MB in %v", large.Cycles, large.Events, large.Bytes>>20, genTime.Round(time.Second))
	small, err := perf.Generate(ctx, filepath.Join(work, "small"), 100, 0)
	if err != nil {
		return err
	}
	small100, err := perf.Generate(ctx, filepath.Join(work, "small100"), 0, 100)
	if err != nil {
		return err
	}

	// 1. step on 1M events vs 100.
	note("timing acr step...")
	// These steps must not seal the long history (acr run and step seal
	// an unsealed ledger once it is long enough): the rows below measure
	// it unsealed first, then sealed (5b). Read-only commands never seal.
	if err := os.Setenv("ACR_LEDGER_SEAL_BYTES", "0"); err != nil {
		return err
	}
	ts, tl, err := perf.StepTimes(bin, small.Dir, large.Dir, sizes.trials)
	if err != nil {
		return err
	}
	if err := os.Unsetenv("ACR_LEDGER_SEAL_BYTES"); err != nil {
		return err
	}
	r := float64(tl) / float64(ts)
	rows = append(rows, row{fmt.Sprintf("`acr step` on a run with %d ledger events vs %d", large.Events, small.Events), "≤ 1.15×",
		fmt.Sprintf("%.2f× (median %v vs %v)", r, tl.Round(time.Microsecond), ts.Round(time.Microsecond)), verdict(r <= 1.15)})

	// 2. idle run vs version.
	note("timing an idle acr run...")
	tr, tv, untouched, err := perf.IdleTimes(bin, small.Dir, sizes.trials*2)
	if err != nil {
		return err
	}
	r = float64(tr) / float64(tv)
	rows = append(rows, row{"`acr run` on an idle run vs `acr version`", "≤ 1.5× wall time, 0 bytes written",
		fmt.Sprintf("%.2f× (median %v vs %v); directory unchanged: %t", r, tr.Round(time.Microsecond), tv.Round(time.Microsecond), untouched), verdict(r <= 1.5 && untouched)})
	if r > 1.5 {
		notes = append(notes, fmt.Sprintf("**Idle run.** `acr version` is the cost of starting the process; an idle `acr run` adds %v: "+
			"taking the lock, reading every checkpoint file and checking it against the manifest's hash and its own canonical "+
			"re-encoding, reading the ledger's last line, and observing the world (every world file read and hashed, because "+
			"a changed world is what makes a cycle eligible). `go test -bench IdleInvocation ./internal/runstore` measures that "+
			"part in process.", (tr-tv).Round(time.Microsecond)))
	}

	// 3. throughput vs floor, and 8. checkpoint size.
	note("timing acr run --max-cycles %d on a queue of %d items...", sizes.queue, sizes.queue)
	qdir := filepath.Join(work, "queue")
	if err := perf.InitQueue(ctx, qdir, sizes.queue); err != nil {
		return err
	}
	if _, err := perf.RunAcr(bin, "--state-dir", qdir, "run", "--max-cycles", "100", "--json"); err != nil {
		return err
	}
	cp100, err := perf.DirSize(filepath.Join(qdir, "checkpoint"))
	if err != nil {
		return err
	}
	p, err := perf.RunAcr(bin, "--state-dir", qdir, "run", "--max-cycles", fmt.Sprint(sizes.queue-100), "--json")
	if err != nil {
		return err
	}
	rate := float64(sizes.queue-100) / p.Wall.Seconds()
	cpN, err := perf.DirSize(filepath.Join(qdir, "checkpoint"))
	if err != nil {
		return err
	}
	floor, err := perf.Floor(filepath.Join(work, "floor"), 2000)
	if err != nil {
		return err
	}
	r = rate / floor
	fsyncs, perCycle := fsyncsPerCycle(bin, work)
	cpu := p.CPU / time.Duration(sizes.queue-100)
	rows = append(rows, row{fmt.Sprintf("durable cycle throughput of `acr run --max-cycles %d` (one sandbox effect per cycle) vs the machine's floor", sizes.queue),
		"≥ 1.0× the floor's rate", fmt.Sprintf("%.2f× (%.0f cycles/s vs floor %.0f/s; %s; %v CPU per cycle)", r, rate, floor, fsyncs, cpu.Round(time.Microsecond)), verdict(r >= 1.0)})
	// What bounds it: the floor is three fsyncs (ledger, file, directory)
	// and no work. An acting cycle needs its decision and intent durable
	// before its effect, and the previous cycle's outcome rides in that
	// same fsync; the effect is an atomic replace (file and directory).
	// Three fsyncs, the floor's count, plus the checkpoint's and the
	// cycle's CPU.
	fsyncCost := time.Duration(float64(time.Second) / floor / 3)
	if perCycle > 0 && r < 1.0 {
		bound := (1 / floor) / (perCycle*fsyncCost.Seconds() + cpu.Seconds())
		notes = append(notes, fmt.Sprintf("**Throughput.** The floor's iteration is three fsyncs (ledger line, file, directory) "+
			"and nothing else: %v each on this disk. An acting cycle of acr makes %.1f fsyncs (strace): one ledger fsync makes "+
			"the cycle's decision and intent durable before its effect, together with the previous cycle's outcome (held "+
			"in memory until then: recovery classifies an effect whose outcome was lost from the world's before/after "+
			"hashes); the effect itself is an atomic replace (file and directory); the rest is the directory checkpoint every "+
			"%d cycles. At zero CPU that is %.2f× the floor; with the %v of CPU a cycle spends (encoding and hashing its "+
			"events, deciding, patching and hashing the world file), the model gives %.2f× and the run measured %.2f×. "+
			"The side-by-side section below says where the CPU goes.",
			fsyncCost.Round(time.Microsecond), perCycle, 64, 3/perCycle, cpu.Round(time.Microsecond), bound, r))
	}
	rc := float64(cpN) / float64(cp100)
	rows = append(rows, row{fmt.Sprintf("checkpoint size at %d cycles vs 100 cycles", sizes.queue), "≤ 1.5×",
		fmt.Sprintf("%.2f× (%d vs %d bytes)", rc, cpN, cp100), verdict(rc <= 1.5)})

	// 4. audit.
	note("timing acr audit...")
	ta, tb, err := auditTimes(bin, large, small100, sizes.trials)
	if err != nil {
		return err
	}
	r = float64(ta) / float64(tb)
	rows = append(rows, row{fmt.Sprintf("`acr audit` of a cycle in a %d-cycle run vs a %d-cycle run", large.Cycles, small100.Cycles), "≤ 1.2×",
		fmt.Sprintf("%.2f× (median %v vs %v)", r, ta.Round(time.Microsecond), tb.Round(time.Microsecond)), verdict(r <= 1.2)})

	// 5. verify vs sha256.
	note("timing ledger verify...")
	vr, sr, err := perf.VerifyVsSHA256(large.Dir)
	if err != nil {
		return err
	}
	r = vr / sr
	rows = append(rows, row{"`acr ledger verify` throughput vs plain SHA-256 over the same bytes", "≥ 0.5×",
		fmt.Sprintf("%.2f× (%.0f MB/s vs %.0f MB/s over %d MB)", r, vr/1e6, sr/1e6, large.Bytes>>20), verdict(r >= 0.5)})
	if r < 0.5 {
		notes = append(notes, fmt.Sprintf("**Ledger verify.** Every byte is hashed for its line, objects are hashed again for "+
			"their refs, and every event is checked for canonical syntax and its envelope's fields, in %d worker(s); "+
			"plain SHA-256 hashes once on one core. The syntax check is the larger part: per byte the canonical walk costs "+
			"about 2.5 SHA-256 passes (`go test -bench 'WalkCanonical|VerifySHA256' ./internal/state ./internal/ledger`: "+
			"about 500 vs 1300 MB/s, and a CPU profile of BenchmarkVerify puts half its time in codec.WalkCanonical), so with "+
			"the second hash of object bodies a byte costs about 4.3 SHA-256 passes of work shared by two cores: a ceiling "+
			"near 0.47×, and a busy machine starves the workers first. Skipping the walk would let through events that "+
			"decoding rejects; the ledger's format is frozen with the release.", runtime.GOMAXPROCS(0)))
	}

	// 5b. the same history sealed, as acr run leaves a long run's ledger:
	// step, audit and verify again, reading through the segments.
	note("sealing the long history and timing step, audit and verify on it...")
	lb, la, err := perf.SealHistory(large.Dir)
	if err != nil {
		return err
	}
	ts, tl, err = perf.StepTimes(bin, small.Dir, large.Dir, sizes.trials)
	if err != nil {
		return err
	}
	r = float64(tl) / float64(ts)
	rows = append(rows, row{fmt.Sprintf("`acr step` on the same run, its ledger sealed (%d MB of lines in %d MB of segments), vs %d events", lb>>20, la>>20, small.Events), "≤ 1.15×",
		fmt.Sprintf("%.2f× (median %v vs %v)", r, tl.Round(time.Microsecond), ts.Round(time.Microsecond)), verdict(r <= 1.15)})
	ta, tb, err = auditTimes(bin, large, small100, sizes.trials)
	if err != nil {
		return err
	}
	r = float64(ta) / float64(tb)
	rows = append(rows, row{fmt.Sprintf("`acr audit` of a cycle in the sealed %d-cycle run vs a %d-cycle run", large.Cycles, small100.Cycles), "≤ 1.2×",
		fmt.Sprintf("%.2f× (median %v vs %v)", r, ta.Round(time.Microsecond), tb.Round(time.Microsecond)), verdict(r <= 1.2)})
	vs, err := perf.VerifyRate(large.Dir)
	if err != nil {
		return err
	}
	r = vs / sr
	rows = append(rows, row{"`acr ledger verify` of the sealed ledger vs plain SHA-256 over its bytes uncompressed (the rate measured above)", "≥ 0.5×",
		fmt.Sprintf("%.2f× (%.0f MB/s of ledger bytes vs %.0f MB/s)", r, vs/1e6, sr/1e6), verdict(r >= 0.5)})

	// 6. idempotency lookup.
	note("timing idempotency lookups...")
	lBig, lSmall, err := lookupRatio(work, sizes.lookupKeys)
	if err != nil {
		return err
	}
	r = lBig.perLookup / lSmall.perLookup
	rows = append(rows, row{fmt.Sprintf("idempotency lookup with %d recorded keys vs 100", sizes.lookupKeys), "≤ 1.2×",
		fmt.Sprintf("%.2f× (%.1f µs vs %.1f µs per lookup; the first lookup of an invocation reads the table once: %v vs %v)",
			r, lBig.perLookup/1e3, lSmall.perLookup/1e3, lBig.first.Round(time.Microsecond), lSmall.first.Round(time.Microsecond)), verdict(r <= 1.2)})

	// 7. peak RSS.
	note("measuring peak RSS of %d- and %d-cycle runs...", sizes.rssBig, sizes.rssSmall)
	longRun, err := rssOf(bin, filepath.Join(work, "rssbig"), sizes.rssBig, sizes.rssBig)
	if err != nil {
		return err
	}
	shortRun, err := rssOf(bin, filepath.Join(work, "rsssmall"), sizes.rssSmall, sizes.rssBig)
	if err != nil {
		return err
	}
	rssBig, rssSmall := longRun.MaxRSS, shortRun.MaxRSS
	first, last := longRun.RSSTenths()
	r = float64(rssBig) / float64(rssSmall)
	mib := func(b int64) float64 { return float64(b) / (1 << 20) }
	rows = append(rows, row{fmt.Sprintf("peak RSS of a %d-cycle run vs a %d-cycle run (one invocation each, same %d-item world)", sizes.rssBig, sizes.rssSmall, sizes.rssBig), "≤ 1.2×, and under 64 MiB",
		fmt.Sprintf("%.2f× (%.1f MiB vs %.1f MiB); resident memory of the long run, median of its first tenth %.1f MiB, of its last tenth %.1f MiB",
			r, mib(rssBig), mib(rssSmall), mib(first), mib(last)), verdict(r <= 1.2 && rssBig < 64<<20)})
	if r > 1.2 {
		notes = append(notes, fmt.Sprintf("**Peak RSS.** Resident memory does not grow with the run: the long run's median was %.1f MiB in its first "+
			"tenth and %.1f MiB in its last (sampled every 2 ms), and the heap after each GC stays at 1–2 MB (GODEBUG=gctrace=1). "+
			"The peak is an excursion: an acting cycle on this world allocates about 1.7 MB of garbage (it reads, patches and hashes "+
			"a 200 KB file several times; `go tool pprof -sample_index=alloc_space`), and when a GC's mark phase is held up for "+
			"10–15 ms (the trace shows about 1 ms of GC work done in that time: its workers were not running) the heap grows by "+
			"the cycles that ran meanwhile, and the pages stay resident. A run 100 times longer meets such a stall more surely. "+
			"The excursion scales with a cycle's garbage, which is what bounds this row: cutting it from 3.5 MB to 2.3 MB took "+
			"the long run's peak from 32.7 to 27.8 MiB in earlier runs of this harness.", mib(first), mib(last)))
	}

	report := render(rows, notes, quick, genTime, large)
	fmt.Print(report)
	if quick {
		return nil
	}
	// The side-by-side section and what follows it are make bench-peers's
	// and the engineers'; keep them.
	if old, err := os.ReadFile(out); err == nil {
		if tail := keptTail(string(old)); tail != "" {
			report += "\n" + tail
		}
	}
	return os.WriteFile(out, []byte(report), 0o644)
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "**missed**"
}

// auditTimes times acr audit of the middle cycle of each run, the two
// runs alternated (as StepTimes does) so that a change in the machine's
// load moves both medians alike instead of the ratio; it returns the
// medians. Each audit row measures its own baseline for the same reason.
func auditTimes(bin string, a, b perf.Generated, trials int) (time.Duration, time.Duration, error) {
	var ta, tb []time.Duration
	for range trials {
		for _, x := range []struct {
			run perf.Generated
			ts  *[]time.Duration
		}{{a, &ta}, {b, &tb}} {
			p, err := perf.RunAcr(bin, "--state-dir", x.run.Dir, "audit", fmt.Sprint(x.run.Cycles/2), "--format", "json")
			if err != nil {
				return 0, 0, err
			}
			*x.ts = append(*x.ts, p.Wall)
		}
	}
	return perf.Median(ta), perf.Median(tb), nil
}

// runLookup measures the idempotency lookup row alone (out is unused).
func runLookup(_, work string, quick bool) error {
	if work == "" {
		d, err := os.MkdirTemp("", "acr-perf-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work = d
	}
	n := 100_000
	if quick {
		n = 2_000
	}
	big, small, err := lookupRatio(work, n)
	if err != nil {
		return err
	}
	r := big.perLookup / small.perLookup
	fmt.Printf("idempotency lookup with %d recorded keys vs 100: %.2f× (%.1f µs vs %.1f µs per lookup; first lookup %v vs %v): %s (target ≤ 1.2×)\n",
		n, r, big.perLookup/1e3, small.perLookup/1e3, big.first.Round(time.Microsecond), small.first.Round(time.Microsecond), verdict(r <= 1.2))
	return nil
}

// lookupTimes are the costs of idempotency lookups in one table.
type lookupTimes struct {
	// first is the first lookup of a freshly opened world, which reads the
	// whole table once to index it.
	first time.Duration
	// perLookup is a lookup after that, in nanoseconds.
	perLookup float64
}

// lookupRatio times Lookup of recorded keys in tables of n and 100 keys.
// The two tables are timed in alternation, several rounds each, and the
// median round counts: on a shared machine a single round of either can be
// slowed by something else entirely.
func lookupRatio(work string, n int) (lookupTimes, lookupTimes, error) {
	type table struct {
		w     *sandbox.World
		keys  []string
		times lookupTimes
	}
	open := func(keys int) (table, error) {
		dir := filepath.Join(work, fmt.Sprintf("lookup-%d", keys))
		fsys, err := disk.CreateOSDir(dir)
		if err != nil {
			return table{}, err
		}
		spec := world.Spec{Schema: world.SpecSchema, Files: map[string]string{"a.txt": "x\n"}}
		w, err := sandbox.Create(dir, spec, fsys)
		if err != nil {
			return table{}, err
		}
		ks, err := sandbox.SeedOutcomes(w, keys)
		if err != nil {
			_ = w.Close()
			return table{}, err
		}
		if err := w.Close(); err != nil {
			return table{}, err
		}
		// Opened again, as by the next invocation: nothing of the table
		// is in memory until the first lookup.
		w, err = sandbox.Open(dir, spec, fsys)
		if err != nil {
			return table{}, err
		}
		t0 := time.Now()
		if _, ok, err := w.Lookup(ks[len(ks)/2]); err != nil || !ok {
			_ = w.Close()
			return table{}, fmt.Errorf("first lookup: found %t: %v", ok, err)
		}
		return table{w: w, keys: ks, times: lookupTimes{first: time.Since(t0)}}, nil
	}
	big, err := open(n)
	if err != nil {
		return lookupTimes{}, lookupTimes{}, err
	}
	defer big.w.Close()
	small, err := open(100)
	if err != nil {
		return lookupTimes{}, lookupTimes{}, err
	}
	defer small.w.Close()
	bench := func(t table) (float64, error) {
		var failed error
		res := testing.Benchmark(func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				if _, ok, err := t.w.Lookup(t.keys[(i*7919)%len(t.keys)]); err != nil || !ok {
					failed = fmt.Errorf("lookup: found %t: %v", ok, err)
					b.FailNow()
				}
			}
		})
		return float64(res.NsPerOp()), failed
	}
	var bigNs, smallNs []float64
	for range 5 {
		for _, t := range []struct {
			t   table
			out *[]float64
		}{{small, &smallNs}, {big, &bigNs}} {
			ns, err := bench(t.t)
			if err != nil {
				return lookupTimes{}, lookupTimes{}, err
			}
			*t.out = append(*t.out, ns)
		}
	}
	slices.Sort(bigNs)
	slices.Sort(smallNs)
	big.times.perLookup, small.times.perLookup = bigNs[len(bigNs)/2], smallNs[len(smallNs)/2]
	return big.times, small.times, nil
}

// rssOf measures the peak RSS of one acr run of cycles cycles over a queue
// of items items. Both runs of the RSS row use the same world, so that the
// length of the history is the only thing that differs.
func rssOf(bin, dir string, cycles, items int) (perf.Proc, error) {
	ctx := context.Background() // a benchmark tool: nothing stops it half-way but a kill
	if err := perf.InitQueue(ctx, dir, items); err != nil {
		return perf.Proc{}, err
	}
	p, err := perf.RunAcr(bin, "--state-dir", dir, "run", "--max-cycles", fmt.Sprint(cycles), "--json")
	if err != nil {
		return perf.Proc{}, err
	}
	if !strings.Contains(p.Out, fmt.Sprintf(`"cycles_executed":%d`, cycles)) {
		return perf.Proc{}, fmt.Errorf("the %d-cycle run did not execute %d cycles", cycles, cycles)
	}
	return p, nil
}

// fsyncsPerCycle counts fsyncs with strace on a short queue run, if strace
// is installed.
func fsyncsPerCycle(bin, work string) (string, float64) {
	ctx := context.Background() // a benchmark tool: nothing stops it half-way but a kill
	if _, err := exec.LookPath("strace"); err != nil {
		return "fsyncs per cycle not counted: strace not installed", 0
	}
	dir := filepath.Join(work, "strace")
	if err := perf.InitQueue(ctx, dir, 300); err != nil {
		return "fsyncs not counted: " + err.Error(), 0
	}
	cmd := exec.Command("strace", "-f", "-c", "-e", "trace=fsync,fdatasync", bin, "--state-dir", dir, "run", "--max-cycles", "300")
	var errb bytes.Buffer
	cmd.Stderr = &errb
	if err := cmd.Run(); err != nil {
		return "fsyncs not counted: " + err.Error(), 0
	}
	var calls int
	for _, l := range strings.Split(errb.String(), "\n") {
		f := strings.Fields(l)
		if len(f) >= 5 && (f[len(f)-1] == "fsync" || f[len(f)-1] == "fdatasync") {
			var n int
			fmt.Sscan(f[3], &n)
			calls += n
		}
	}
	return fmt.Sprintf("%.1f fsyncs per cycle (strace, 300 cycles)", float64(calls)/300), float64(calls) / 300
}

func render(rows []row, notes []string, quick bool, gen time.Duration, large perf.Generated) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Performance")
	p("")
	if quick {
		p("**Quick mode: small sizes. These figures check the harness, not the targets.**")
		p("")
	}
	host, _ := os.Hostname()
	p("Measured by `make bench` (`go run ./cmd/acr-perf`) on %s: %s/%s, %d CPUs, Go %s, state directories under %s.",
		time.Now().UTC().Format("2006-01-02"), runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), runtime.Version(), os.TempDir())
	if host != "" {
		p("Host: %s.", host)
	}
	p("Every figure is a ratio of two measurements taken in the same run on the same disk; wall times are medians of")
	p("repeated runs of the real binary. The long history (%d cycles, %d ledger events, %d MB) was generated in %v by",
		large.Cycles, large.Events, large.Bytes>>20, gen.Round(time.Second))
	p("driving the real cycle over a toggling world with the ledger appended in large batches; it passes `acr ledger")
	p("verify`, `acr replay --verify` and `acr recover` (tested in `internal/perf`).")
	p("")
	p("| what | target | measured | |")
	p("| --- | --- | --- | --- |")
	for _, r := range rows {
		p("| %s | %s | %s | %s |", r.what, r.target, r.measured, r.verdict)
	}
	p("")
	if len(notes) > 0 {
		p("## What bounds the missed targets")
		p("")
		for _, n := range notes {
			p("%s", n)
			p("")
		}
	}
	p("To rerun: `make bench` (about twenty minutes on two cores; it needs a few GB of free disk for the generated histories).")
	p("`make bench-quick` runs the same harness with small sizes in about a minute.")
	return b.String()
}
