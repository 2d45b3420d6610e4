package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jsstore"
	"github.com/acr-project/acr/internal/perf"
)

// workersSizes are the workers benchmark's sizes.
type workersSizes struct {
	runs   int // runs per trial
	items  int // queue items per run: items+1 cycles each
	rounds int // every setup is measured once per round
	setups []setup
	// wakes is how many acr wake latencies are measured, round robin over
	// wakeRuns runs at rest.
	wakes, wakeRuns int
	// straceRuns is the size of the trial measured under strace (0: none).
	straceRuns int
}

// workersSizesFor is the full benchmark (about five minutes on two
// cores) or, quick, a smoke test of the harness (under ten seconds).
func workersSizesFor(quick bool) workersSizes {
	if quick {
		return workersSizes{runs: 4, items: 3, rounds: 1, wakes: 3, wakeRuns: 2,
			setups: []setup{{nats: true, procs: 1, conc: 1}, {nats: true, procs: 2, conc: 1}, {procs: 1, conc: 1}, {procs: 2, conc: 1}}}
	}
	// The shape: 12 runs of 40 effects; one worker at
	// --concurrency 1, 2, 4, 8 (and 16, past where the curve bends), and
	// two workers, against 1, 2 and 4 directory loops.
	return workersSizes{runs: 12, items: 40, rounds: 3, wakes: 25, wakeRuns: 4, straceRuns: 4,
		setups: []setup{
			{procs: 1, conc: 1}, {procs: 2, conc: 1}, {procs: 4, conc: 1},
			{nats: true, procs: 1, conc: 1}, {nats: true, procs: 1, conc: 2}, {nats: true, procs: 1, conc: 4}, {nats: true, procs: 1, conc: 8},
			{nats: true, procs: 1, conc: 16}, {nats: true, procs: 2, conc: 1},
		}}
}

// setup is one way of draining the runs: procs acr worker processes at
// --concurrency conc on the NATS store, or procs parallel loops of acr run
// over state directories (conc 1).
type setup struct {
	nats  bool
	procs int
	conc  int
}

// String names the setup in the report.
func (s setup) String() string {
	if !s.nats {
		return fmt.Sprintf("directory, %d `acr run` loop(s)", s.procs)
	}
	return fmt.Sprintf("NATS, %d `acr worker` × --concurrency %d", s.procs, s.conc)
}

// slug names the setup in file names and store prefixes.
func (s setup) slug() string {
	if !s.nats {
		return fmt.Sprintf("dir%d", s.procs)
	}
	return fmt.Sprintf("nats%dx%d", s.procs, s.conc)
}

// parallelism is how many runs the setup drives at once.
func (s setup) parallelism() int { return s.procs * s.conc }

// trial is one measured drain of every run by one setup.
type trial struct {
	setup  setup
	round  int
	cycles int64
	wall   time.Duration
	// acrCPU is the user and system time of the acr processes (workers,
	// or every acr run of the loops); srvCPU the server process's during
	// the trial (zero for directories), srvSys the system part of it.
	acrCPU, srvCPU, srvSys time.Duration
	// batches is the atomic batches the server committed (NATS only).
	batches int64
	// traffic is what the workers sent the server over the trial, from
	// its /varz (NATS only); acting is the trial's acting cycles (one
	// effect each: runs × items).
	traffic Traffic
	acting  int64
	// polled is set when the end was seen by polling acr runs, not by a
	// status message (which a subscriber may miss).
	polled bool
	// load is the load average right after the trial.
	load string
}

// rate is the trial's durable cycles per second of wall time.
func (t trial) rate() float64 { return float64(t.cycles) / t.wall.Seconds() }

// bench is the state of one workers benchmark.
type bench struct {
	bin, work string
	sz        workersSizes
	srv       *natsServer
	nc        *nats.Conn
	queue     perf.QueueFiles // items items: the throughput runs
	single    perf.QueueFiles // one item: the wake runs
}

// cmd is an acr command with the environment variables that would change
// what is measured (a failpoint, a frozen clock, a default store or run
// id) cleared.
func (b *bench) cmd(args ...string) *exec.Cmd {
	c := exec.Command(b.bin, args...)
	c.Env = append(os.Environ(), "ACR_FAILPOINT=", "ACR_CLOCK=", "ACR_STORE=", "ACR_RUN_ID=")
	return c
}

// acr runs an acr command to completion and returns its standard output.
func (b *bench) acr(args ...string) (string, error) {
	var out, errb bytes.Buffer
	c := b.cmd(args...)
	c.Stdout, c.Stderr = &out, &errb
	if err := c.Run(); err != nil {
		return "", fmt.Errorf("acr %s: %w\n%s%s", strings.Join(args, " "), err, out.String(), errb.String())
	}
	return out.String(), nil
}

// parallel calls fn(i) for i in [0, n), at most width at a time, and
// returns the first error.
func parallel(n, width int, fn func(i int) error) error {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	sem := make(chan struct{}, width)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				first = firstErr(first, err)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

// firstErr keeps the first non-nil error.
func firstErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// runIDs are the run ids of a trial.
func runIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = fmt.Sprintf("run:b%03d", i)
	}
	return ids
}

// storeMsg is one message the harness saw on a store's subjects.
type storeMsg struct {
	at     time.Time
	kind   string // the subject's second token: ledger, status, inbox, ckpt…
	run    string
	data   []byte
	commit bool // the last message of an atomic batch
}

// tap subscribes to every subject of the store with prefix (a plain
// subscription: it sees each message as it is published, batch messages
// included) and calls fn with each, stamped on arrival.
func (b *bench) tap(prefix string, fn func(storeMsg)) (*nats.Subscription, error) {
	// Ledger messages and checkpoints are zstd-compressed, with acr's
	// dictionary (jsstore's Acr-Encoding); the harness reads their lines.
	dec, err := jsstore.NewDecoder()
	if err != nil {
		return nil, fmt.Errorf("tap %s: %w", prefix, err)
	}
	sub, err := b.nc.Subscribe(prefix+".>", func(m *nats.Msg) {
		at := time.Now()
		kind, run, ok := splitSubject(prefix, m.Subject)
		if !ok {
			return
		}
		data := m.Data
		if enc := m.Header.Get(jsstore.HeaderEncoding); enc != "" {
			d, derr := dec.Decode(enc, m.Data)
			if derr != nil {
				d = nil // not a ledger line: seen, never matched
			}
			data = d
		}
		fn(storeMsg{at: at, kind: kind, run: run, data: data, commit: m.Header.Get("Nats-Batch-Commit") != ""})
	})
	if err != nil {
		return nil, fmt.Errorf("subscribe %s.>: %w", prefix, err)
	}
	if err := sub.SetPendingLimits(-1, -1); err != nil {
		return nil, fmt.Errorf("subscribe %s.>: %w", prefix, err)
	}
	return sub, b.nc.Flush()
}

// splitSubject reads <prefix>.<kind>.<run token>[.<more>].
func splitSubject(prefix, subject string) (kind, run string, ok bool) {
	rest, ok := strings.CutPrefix(subject, prefix+".")
	if !ok {
		return "", "", false
	}
	kind, tok, ok := strings.Cut(rest, ".")
	if !ok {
		return "", "", false
	}
	// A world's subjects go on after the run: <prefix>.world.<run>.<file
	// or head>.
	tok, _, _ = strings.Cut(tok, ".")
	run, err := jetstream.ParseToken(tok)
	return kind, run, err == nil
}

// statusMsg is the part of a <prefix>.status.<run> message read here.
type statusMsg struct {
	RunID       string `json:"run_id"`
	CycleSeq    int64  `json:"cycle_seq"`
	Disposition string `json:"disposition"`
}

// ledgerType is the event type of the first line of a ledger message.
func ledgerType(msg []byte) string {
	// A ledger message is one or more ledger lines (one per append); the
	// first is the one that started.
	line, _, _ := bytes.Cut(msg, []byte("\n"))
	var l struct {
		Event struct {
			Type string `json:"type"`
		} `json:"event"`
	}
	if json.Unmarshal(line, &l) != nil {
		return ""
	}
	return l.Event.Type
}

// settleTracker follows the status messages of a trial's runs and closes
// done when every run has reported IDLE; it counts batch commits.
type settleTracker struct {
	mu      sync.Mutex
	idle    map[string]bool
	n       int
	last    time.Time
	batches int64
	done    chan struct{}
}

func newSettleTracker(n int) *settleTracker {
	return &settleTracker{idle: map[string]bool{}, n: n, done: make(chan struct{})}
}

func (t *settleTracker) see(m storeMsg) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if m.commit {
		t.batches++
	}
	if m.kind != "status" || len(t.idle) == t.n {
		return
	}
	var st statusMsg
	if json.Unmarshal(m.data, &st) != nil || st.Disposition != "IDLE" || t.idle[st.RunID] {
		return
	}
	t.idle[st.RunID] = true
	if len(t.idle) == t.n {
		t.last = m.at
		close(t.done)
	}
}

// runRow is one run of acr runs --json.
type runRow struct {
	RunID       string `json:"run_id"`
	Disposition string `json:"loop_disposition"`
	Cycle       int64  `json:"cycle"`
	Inbox       uint64 `json:"inbox"`
}

// parseRuns reads acr runs --json.
func parseRuns(out string) ([]runRow, error) {
	var v struct {
		Runs []runRow `json:"runs"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		return nil, fmt.Errorf("acr runs --json: %w", err)
	}
	return v.Runs, nil
}

// drained checks that every run of rows is IDLE with an empty inbox after
// at least items cycles (its queue is empty: the check passes) and
// returns the cycles of all of them.
func drained(rows []runRow, runs, items int) (int64, error) {
	if len(rows) != runs {
		return 0, fmt.Errorf("%d runs listed, want %d", len(rows), runs)
	}
	var n int64
	for _, r := range rows {
		if r.Disposition != "IDLE" || r.Inbox != 0 || r.Cycle < int64(items) {
			return 0, fmt.Errorf("run %s did not drain: %s after %d cycles, %d inbox item(s)", r.RunID, r.Disposition, r.Cycle, r.Inbox)
		}
		n += r.Cycle
	}
	return n, nil
}

// proc is a started acr process whose output is kept.
type proc struct {
	cmd *exec.Cmd
	out *bytes.Buffer
}

// start starts an acr command, its output kept in memory.
func (b *bench) start(args ...string) (*proc, error) {
	var out bytes.Buffer
	c := b.cmd(args...)
	c.Stdout, c.Stderr = &out, &out
	if err := c.Start(); err != nil {
		return nil, fmt.Errorf("start acr %s: %w", strings.Join(args, " "), err)
	}
	return &proc{cmd: c, out: &out}, nil
}

// stop sends SIGTERM (a worker finishes its cycle, releases its leases
// and exits 0), waits, and returns the process's CPU time.
func (p *proc) stop() (time.Duration, error) {
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- p.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(60 * time.Second):
		_ = p.cmd.Process.Kill()
		<-done
		err = errors.New("did not exit 60s after SIGTERM")
	}
	st := p.cmd.ProcessState
	cpu := st.UserTime() + st.SystemTime()
	// A worker signalled before it installed its handler dies of the
	// signal; that is a stop too.
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGTERM {
		err = nil
	}
	if err != nil {
		return cpu, fmt.Errorf("acr worker: %w\n%s", err, p.out.String())
	}
	return cpu, nil
}

// dropStore deletes the streams (and key-value buckets, which are
// streams) of the store with prefix, so that every trial starts on a
// server holding no other trial's data.
func (b *bench) dropStore(prefix string) error {
	js, err := natsjs.New(b.nc)
	if err != nil {
		return fmt.Errorf("drop store %s: %w", prefix, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	names := js.StreamNames(ctx)
	var drop []string
	for n := range names.Name() {
		if strings.HasPrefix(n, prefix+"-") || strings.HasPrefix(n, "KV_"+prefix+"-") {
			drop = append(drop, n)
		}
	}
	if err := names.Err(); err != nil {
		return fmt.Errorf("drop store %s: %w", prefix, err)
	}
	for _, n := range drop {
		if err := js.DeleteStream(ctx, n); err != nil {
			return fmt.Errorf("drop store %s: %w", prefix, err)
		}
	}
	return nil
}

// natsTrial creates the runs in a store of their own (prefix name), starts
// the setup's workers at once and times them until every run has reported
// IDLE.
// initStore creates n runs of the given inputs in a fresh store prefix
// name (and a local state directory of the same name), four acr init
// processes at a time, and returns where they are.
func (b *bench) initStore(name string, n int, in perf.QueueFiles) (store, state string, ids []string, err error) {
	store, state, ids = b.srv.URL+"/"+name, filepath.Join(b.work, name), runIDs(n)
	err = parallel(len(ids), 4, func(i int) error {
		_, err := b.acr("--state-dir", state, "--store", store, "--run-id", ids[i], "init", "--goal", in.Goal, "--contract", in.Contract, "--env", in.Env)
		return err
	})
	return store, state, ids, err
}

func (b *bench) natsTrial(s setup, round int, name string) (trial, error) {
	t := trial{setup: s, round: round}
	store, state, ids, err := b.initStore(name, b.sz.runs, b.queue)
	if err != nil {
		return t, err
	}
	tr := newSettleTracker(len(ids))
	sub, err := b.tap(name, tr.see)
	if err != nil {
		return t, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	user0, sys0, err := b.srv.CPU()
	if err != nil {
		return t, err
	}
	in0, err := b.srv.Traffic()
	if err != nil {
		return t, err
	}
	t0 := time.Now()
	var workers []*proc
	stopAll := func() error {
		var first error
		for _, w := range workers {
			cpu, err := w.stop()
			t.acrCPU += cpu
			first = firstErr(first, err)
		}
		return first
	}
	for range s.procs {
		w, err := b.start("--state-dir", state, "--store", store, "worker", "--concurrency", strconv.Itoa(s.conc))
		if err != nil {
			_ = stopAll()
			return t, err
		}
		workers = append(workers, w)
	}
	end, polled, err := b.awaitSettled(tr, store, len(ids))
	user1, sys1, cerr := b.srv.CPU()
	if serr := stopAll(); err == nil {
		err = serr
	}
	if err == nil {
		err = cerr
	}
	in1, terr := b.srv.Traffic()
	if err == nil {
		err = terr
	}
	if err != nil {
		return t, err
	}
	t.wall, t.polled = end.Sub(t0), polled
	t.srvCPU, t.srvSys = user1-user0+sys1-sys0, sys1-sys0
	t.traffic, t.acting = in1.Sub(in0), int64(len(ids)*b.sz.items)
	tr.mu.Lock()
	t.batches = tr.batches
	tr.mu.Unlock()
	out, err := b.acr("--store", store, "runs", "--json")
	if err != nil {
		return t, err
	}
	rows, err := parseRuns(out)
	if err != nil {
		return t, err
	}
	if t.cycles, err = drained(rows, len(ids), b.sz.items); err != nil {
		return t, err
	}
	if _, err = b.acr("--state-dir", state, "--store", store, "--run-id", ids[0], "ledger", "verify"); err != nil {
		return t, err
	}
	return t, b.dropStore(name)
}

// awaitSettled waits for the tracker to see every run IDLE. Delivery to a
// plain subscriber is at most once, so acr runs is also asked every few
// seconds; if it shows every run IDLE first, its time is the end.
func (b *bench) awaitSettled(tr *settleTracker, store string, runs int) (time.Time, bool, error) {
	deadline := time.After(5 * time.Minute)
	poll := time.NewTicker(5 * time.Second)
	defer poll.Stop()
	for {
		select {
		case <-tr.done:
			tr.mu.Lock()
			defer tr.mu.Unlock()
			return tr.last, false, nil
		case <-poll.C:
			out, err := b.acr("--store", store, "runs", "--json")
			if err != nil {
				return time.Time{}, false, err
			}
			rows, err := parseRuns(out)
			if err != nil {
				return time.Time{}, false, err
			}
			if _, err := drained(rows, runs, b.sz.items); err == nil {
				select {
				case <-tr.done: // it came meanwhile
					tr.mu.Lock()
					defer tr.mu.Unlock()
					return tr.last, false, nil
				default:
				}
				return time.Now(), true, nil
			}
		case <-deadline:
			return time.Time{}, false, errors.New("runs did not settle in 5 minutes")
		}
	}
}

// dirTrial creates the runs, each in a state directory of its own, and
// times procs parallel loops of acr run draining them (each loop takes the
// next run not yet taken), as a user without a server would.
func (b *bench) dirTrial(s setup, round int, name string) (trial, error) {
	t := trial{setup: s, round: round}
	dirs := make([]string, b.sz.runs)
	for i := range dirs {
		dirs[i] = filepath.Join(b.work, name, fmt.Sprintf("r%03d", i))
	}
	if err := parallel(len(dirs), 4, func(i int) error {
		_, err := b.acr("--state-dir", dirs[i], "init", "--goal", b.queue.Goal, "--contract", b.queue.Contract, "--env", b.queue.Env)
		return err
	}); err != nil {
		return t, err
	}
	var mu sync.Mutex
	next := 0
	t0 := time.Now()
	err := parallel(s.procs, s.procs, func(int) error {
		for {
			mu.Lock()
			i := next
			next++
			mu.Unlock()
			if i >= len(dirs) {
				return nil
			}
			c := b.cmd("--state-dir", dirs[i], "run", "--max-cycles", strconv.Itoa(2*b.sz.items+10))
			out, err := c.CombinedOutput()
			if err != nil {
				return fmt.Errorf("acr run %s: %w\n%s", dirs[i], err, out)
			}
			mu.Lock()
			t.acrCPU += c.ProcessState.UserTime() + c.ProcessState.SystemTime()
			mu.Unlock()
		}
	})
	t.wall = time.Since(t0)
	if err != nil {
		return t, err
	}
	rows := make([]runRow, len(dirs))
	if err := parallel(len(dirs), 4, func(i int) error {
		out, err := b.acr("--state-dir", dirs[i], "runs", "--json")
		if err != nil {
			return err
		}
		r, err := parseRuns(out)
		if err != nil {
			return err
		}
		if len(r) != 1 {
			return fmt.Errorf("%s: acr runs listed %d runs", dirs[i], len(r))
		}
		rows[i] = r[0]
		return nil
	}); err != nil {
		return t, err
	}
	if t.cycles, err = drained(rows, len(dirs), b.sz.items); err != nil {
		return t, err
	}
	_, err = b.acr("--state-dir", dirs[0], "ledger", "verify")
	return t, err
}

// wakeSample is one acr wake, timed from just before its process started.
type wakeSample struct {
	// inbox: the item reached the server (a subscriber saw it); started:
	// the consuming cycle's first ledger record (persistent.cycle.started)
	// did; settled: the run's status said IDLE again (checkpointed at
	// rest); exited: the acr wake process exited.
	inbox, started, settled, exited time.Duration
}

// wakeLatency measures acr wake against one worker with its default
// settings and runs at rest.
func (b *bench) wakeLatency(rng *rand.Rand) ([]wakeSample, error) {
	const name = "wake"
	store, state, ids, err := b.initStore(name, b.sz.wakeRuns, b.single)
	if err != nil {
		return nil, err
	}
	msgs := make(chan storeMsg, 1<<16)
	tr := newSettleTracker(len(ids))
	sub, err := b.tap(name, func(m storeMsg) {
		tr.see(m)
		select {
		case msgs <- m:
		default: // only the messages of the wake in progress matter
		}
	})
	if err != nil {
		return nil, err
	}
	defer func() { _ = sub.Unsubscribe() }()
	w, err := b.start("--state-dir", state, "--store", store, "worker")
	if err != nil {
		return nil, err
	}
	fail := func(err error) ([]wakeSample, error) {
		_, _ = w.stop()
		return nil, fmt.Errorf("%w\nworker output:\n%s", err, w.out.String())
	}
	if _, _, err := b.awaitSettled(tr, store, len(ids)); err != nil {
		return fail(err)
	}
	var samples []wakeSample
	for i := range b.sz.wakes {
		id := ids[i%len(ids)]
		// At a random phase of the worker's poll, the run at rest.
		time.Sleep(150*time.Millisecond + time.Duration(rng.IntN(300))*time.Millisecond)
		for len(msgs) > 0 {
			<-msgs
		}
		c := b.cmd("--state-dir", state, "--store", store, "--run-id", id, "wake", "--signal", "external_event", "--dedup-key", fmt.Sprintf("bench-%d", i))
		var out bytes.Buffer
		c.Stdout, c.Stderr = &out, &out
		exited := make(chan error, 1)
		t0 := time.Now()
		if err := c.Start(); err != nil {
			return fail(err)
		}
		go func() { err := c.Wait(); exited <- err }()
		var s wakeSample
		timeout := time.After(30 * time.Second)
		for s.inbox == 0 || s.started == 0 || s.settled == 0 || s.exited == 0 {
			select {
			case err := <-exited:
				s.exited = time.Since(t0)
				if err != nil {
					return fail(fmt.Errorf("acr wake: %w\n%s", err, out.String()))
				}
			case m := <-msgs:
				if m.run != id {
					continue
				}
				switch {
				case m.kind == "inbox" && s.inbox == 0:
					s.inbox = m.at.Sub(t0)
				case m.kind == "ledger" && s.started == 0 && ledgerType(m.data) == "persistent.cycle.started":
					s.started = m.at.Sub(t0)
				case m.kind == "status" && s.started != 0 && s.settled == 0:
					var st statusMsg
					if json.Unmarshal(m.data, &st) == nil && st.Disposition == "IDLE" {
						s.settled = m.at.Sub(t0)
					}
				}
			case <-timeout:
				return fail(fmt.Errorf("wake %d of %s: not consumed after 30s (%+v)", i, id, s))
			}
		}
		samples = append(samples, s)
	}
	if _, err := w.stop(); err != nil {
		return nil, err
	}
	return samples, nil
}

// dirWakeTimes times acr wake on a state directory at rest (the command
// only: no process runs a directory's cycles until the next acr run), and
// consumes each signal with an untimed acr run.
func (b *bench) dirWakeTimes() ([]time.Duration, error) {
	dir := filepath.Join(b.work, "wake-dir")
	if _, err := b.acr("--state-dir", dir, "init", "--goal", b.single.Goal, "--contract", b.single.Contract, "--env", b.single.Env); err != nil {
		return nil, err
	}
	if _, err := b.acr("--state-dir", dir, "run", "--max-cycles", "10"); err != nil {
		return nil, err
	}
	var ds []time.Duration
	for i := range b.sz.wakes {
		t0 := time.Now()
		if _, err := b.acr("--state-dir", dir, "wake", "--signal", "external_event", "--dedup-key", fmt.Sprintf("bench-%d", i)); err != nil {
			return nil, err
		}
		ds = append(ds, time.Since(t0))
		if _, err := b.acr("--state-dir", dir, "run", "--max-cycles", "10"); err != nil {
			return nil, err
		}
	}
	return ds, nil
}

// straceFigures are the syscalls of one worker trial under strace, per
// durable cycle, of the server and of the worker.
type straceFigures struct {
	cycles         int64
	server, worker map[string]int
}

// straceSyscalls are the syscalls the strace trial counts.
const straceSyscalls = "fsync,fdatasync,openat,mkdirat,unlinkat,renameat,write,pwrite64"

// straceTrial drains sz.straceRuns runs with one acr worker --once under
// strace -f -c while another strace is attached to the server. Tracing
// slows both, so only the counts are used. ok is false without strace.
func (b *bench) straceTrial() (f straceFigures, ok bool, err error) {
	if _, err := exec.LookPath("strace"); err != nil || b.sz.straceRuns == 0 {
		return f, false, nil
	}
	const name = "strace"
	store, state, ids, err := b.initStore(name, b.sz.straceRuns, b.queue)
	if err != nil {
		return f, false, err
	}
	srvOut, wOut := filepath.Join(b.work, "strace-server.txt"), filepath.Join(b.work, "strace-worker.txt")
	att := exec.Command("strace", "-f", "-c", "-e", "trace="+straceSyscalls, "-o", srvOut, "-p", strconv.Itoa(b.srv.Pid()))
	stderr, err := att.StderrPipe()
	if err != nil {
		return f, false, fmt.Errorf("strace: %w", err)
	}
	if err := att.Start(); err != nil {
		return f, false, fmt.Errorf("strace: %w", err)
	}
	attached := make(chan struct{})
	go func() {
		var once sync.Once
		buf := make([]byte, 4096)
		var seen strings.Builder
		for {
			n, err := stderr.Read(buf)
			seen.Write(buf[:n])
			if strings.Contains(seen.String(), "attached") {
				once.Do(func() { close(attached) })
			}
			if err != nil {
				once.Do(func() { close(attached) })
				_, _ = io.Copy(io.Discard, stderr)
				return
			}
		}
	}()
	select {
	case <-attached:
	case <-time.After(10 * time.Second):
	}
	w := exec.Command("strace", "-f", "-c", "-e", "trace="+straceSyscalls, "-o", wOut,
		b.bin, "--state-dir", state, "--store", store, "worker", "--once")
	w.Env = b.cmd().Env
	wout, werr := w.CombinedOutput()
	_ = att.Process.Signal(syscall.SIGINT)
	_ = att.Wait()
	if werr != nil {
		return f, false, fmt.Errorf("acr worker --once under strace: %w\n%s", werr, wout)
	}
	out, err := b.acr("--store", store, "runs", "--json")
	if err != nil {
		return f, false, err
	}
	rows, err := parseRuns(out)
	if err != nil {
		return f, false, err
	}
	if f.cycles, err = drained(rows, len(ids), b.sz.items); err != nil {
		return f, false, err
	}
	for path, m := range map[string]*map[string]int{srvOut: &f.server, wOut: &f.worker} {
		table, err := os.ReadFile(path)
		if err != nil {
			return f, false, fmt.Errorf("strace: %w", err)
		}
		*m = parseStraceSummary(string(table))
	}
	return f, true, nil
}

// loadAvg is /proc/loadavg's three averages.
func loadAvg() string {
	b, _ := os.ReadFile("/proc/loadavg")
	f := strings.Fields(string(b))
	return strings.Join(f[:min(3, len(f))], " ")
}

// runWorkers runs the workers benchmark and writes its section of out
// (quick: prints it only).
func runWorkers(out, bin, work string, quick bool, rounds int) error {
	sz := workersSizesFor(quick)
	if rounds > 0 {
		sz.rounds = rounds
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	if _, err := os.Stat(abs); err != nil {
		return fmt.Errorf("%s: %w (build it first: make build)", bin, err)
	}
	where := work
	if work == "" {
		d, err := os.MkdirTemp("", "acr-workers-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(d)
		work, where = d, os.TempDir()
	}
	note := func(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }
	env := benchEnv{date: time.Now().UTC().Format("2006-01-02 15:04 UTC"), loadStart: loadAvg(), tmp: where}
	began := time.Now()
	srv, err := startNATS(filepath.Join(work, "nats"))
	if err != nil {
		return err
	}
	defer srv.Stop()
	nc, err := nats.Connect(srv.URL)
	if err != nil {
		return fmt.Errorf("connect %s: %w", srv.URL, err)
	}
	defer nc.Close()
	b := &bench{bin: abs, work: work, sz: sz, srv: srv, nc: nc}
	if b.queue, err = perf.WriteQueueFiles(filepath.Join(work, "inputs-queue"), sz.items, int64(sz.items)+10); err != nil {
		return err
	}
	if b.single, err = perf.WriteQueueFiles(filepath.Join(work, "inputs-single"), 1, int64(sz.wakes)+10); err != nil {
		return err
	}

	var trials []trial
	for round := range sz.rounds {
		// Each round starts at another setup, so that none is always
		// measured first or right after the same other one.
		for k := range sz.setups {
			s := sz.setups[(k+round)%len(sz.setups)]
			name := fmt.Sprintf("t%d-%s", round, s.slug())
			do := b.dirTrial
			if s.nats {
				do = b.natsTrial
			}
			t, err := do(s, round, name)
			if err != nil {
				return fmt.Errorf("%s: %w", s, err)
			}
			t.load = loadAvg()
			note("round %d, %s: %d cycles in %v: %.1f cycles/s (load %s)", round+1, s, t.cycles, t.wall.Round(time.Millisecond), t.rate(), t.load)
			trials = append(trials, t)
			// The trial's files are not needed again; free the disk.
			_ = os.RemoveAll(filepath.Join(work, name))
		}
	}
	note("timing %d acr wake signals against a worker...", sz.wakes)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 0x77a4e))
	wakes, err := b.wakeLatency(rng)
	if err != nil {
		return err
	}
	dirWakes, err := b.dirWakeTimes()
	if err != nil {
		return err
	}
	st, straced, err := b.straceTrial()
	if err != nil {
		return err
	}
	env.loadEnd, env.took = loadAvg(), time.Since(began)
	section := renderWorkers(workersReport{env: env, sz: sz, trials: trials, wakes: wakes, dirWakes: dirWakes, strace: st, straced: straced, quick: quick})
	fmt.Print(section)
	if quick {
		return nil
	}
	doc, err := os.ReadFile(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(out, []byte(spliceSection(string(doc), workersBegin, workersEnd, section)), 0o644)
}
