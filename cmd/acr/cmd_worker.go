package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// workerOptions are acr worker's flags.
type workerOptions struct {
	Once        bool   `flag:"once"`
	Poll        string `flag:"poll"`
	MaxCycles   int    `flag:"max-cycles"`
	Concurrency int    `flag:"concurrency"`
	Label       string `flag:"label"`
	OutageLimit string `flag:"outage-limit"`
	Metrics     string `flag:"metrics"`
	Notify      notifyOptions
}

func newWorkerCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker --store nats://HOST:PORT[/PREFIX]",
		Short: "Run the runs of a nats:// store that are due",
		Long: `Run whatever is due in a JetStream store: a run whose last cycle asked to
continue, whose wake time has come, or whose inbox holds items. For each, the
worker takes the run's lease (a run another worker holds is skipped), keeps
it while it runs the run's cycles until the run rests (or --max-cycles), then
releases it and moves on. It runs up to --concurrency runs at once, each
under its own lease (never one run twice). It hears of an inbox item at once
and looks for due runs every --poll otherwise. Several workers, on one host or on
several (a run's world is in the store; each host keeps a copy of the worlds
it runs in its state directory), share the work; the lease keeps two of them
off one run, and if both ever write it (a lease lost to a long pause), the
store refuses the stale one's writes whole.

A run created with acr init --label L is run only by workers started with
--label L (a list: --label eu,gpu); a run without a label by any worker.

An outage of the store (a server paused, restarting or unreachable, a
stream's leader being elected again) pauses the worker: every request waits
for the server, trying again with a growing pause, and the runs it held go
on where they were once it answers (a write whose answer was lost is found
in the store, never made twice). The worker exits 74, naming the store, only
when the store has not answered for --outage-limit.

SIGINT or SIGTERM stops every run at a cycle boundary (a check or proposer
call in progress is stopped and its cycle not written; a cycle that recorded
its decision finishes, effect included), checkpoints it, releases the
leases, and exits 0. --once does one pass over
what is due and exits (for cron on several hosts, and for tests). It prints
one line per run it ran.

--metrics ADDR serves Prometheus metrics on http://ADDR/metrics (runs held,
cycles and effects by outcome, provider failures, store requests and their
latency, time spent waiting for the store, lease renewals and losses) and a
health check on /healthz, which answers 503 while the store does not.

--notify PROGRAM tells a person when a run it ran comes to need one or to an
end, as acr run --notify does: once per condition, recorded in the run's
ledger, so that no other worker tells it again.`,
		Example: `  acr --store nats://localhost:4222 worker
  acr --store nats://localhost:4222 worker --concurrency 8
  acr --store nats://localhost:4222 worker --label host-a
  acr --store nats://localhost:4222 worker --metrics :9464 --outage-limit 10m
  acr --store nats://localhost:4222 worker --once`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts workerOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runWorker(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().Bool("once", false, "one pass over the runs that are due, then exit")
	addNotifyFlag(cmd)
	cmd.Flags().String("poll", "3s", "how often to look for runs that are due")
	cmd.Flags().Int("max-cycles", 100, "most cycles of one run per turn, before the worker moves on")
	cmd.Flags().Int("concurrency", 1, "most runs this worker runs at once, each under its own lease")
	cmd.Flags().String("label", "", "comma-separated labels: also run the runs with one of these labels (acr init --label); without, only runs without a label")
	cmd.Flags().String("outage-limit", "5m", "how long the worker waits for a store that does not answer before it exits 74")
	cmd.Flags().String("metrics", "", "serve Prometheus metrics on http://ADDR/metrics and a health check on /healthz (ADDR: host:port, or :port)")
	return finishesCycleOnInterrupt(cmd)
}

// runWorker runs due runs until ctx ends (or one pass with --once), up to
// --concurrency of them at once.
func runWorker(ctx context.Context, opts workerOptions, a *app) error {
	poll, err := time.ParseDuration(opts.Poll)
	if err != nil || poll <= 0 {
		return usagef("--poll %q: want a positive duration such as 3s", opts.Poll)
	}
	limit, err := time.ParseDuration(opts.OutageLimit)
	if err != nil || limit <= 0 {
		return usagef("--outage-limit %q: want a positive duration such as 5m", opts.OutageLimit)
	}
	if opts.MaxCycles < 1 {
		return usagef("--max-cycles must be at least 1")
	}
	if opts.Concurrency < 1 {
		return usagef("--concurrency must be at least 1")
	}
	var labels []string
	if opts.Label != "" {
		for l := range strings.SplitSeq(opts.Label, ",") {
			if !world.ValidLabel(l) {
				return usagef("--label %q: comma-separated labels of letters, digits, '.', '_' and '-', starting with a letter or digit", opts.Label)
			}
			labels = append(labels, l)
		}
	}
	opt, err := a.clock()
	if err != nil {
		return err
	}
	m := newWorkerMetrics(a.wall)
	m.changed = func(up bool, down time.Time) {
		if up {
			a.log.Info().Str("store", a.cfg.Store).Dur("outage", a.wall().Sub(down)).Msg("the store answers again: the runs go on where they were")
			return
		}
		a.log.Warn().Str("store", a.cfg.Store).Dur("outage_limit", limit).Msg("the store does not answer: waiting for it (requests are tried again; nothing is written twice)")
	}
	if opts.Metrics != "" {
		stop, err := m.serve(opts.Metrics)
		if err != nil {
			return usagef("--metrics %s: %v", opts.Metrics, err)
		}
		defer stop()
	}
	notify := opt.Notify
	opt.Notify = func(n kernel.Notice) {
		m.notice(n)
		if notify != nil {
			notify(n)
		}
	}
	// Every request waits out an outage up to the limit: the worker
	// pauses where it is and goes on when the server answers.
	conn := a.connection()
	conn.Patience, conn.Observe = limit, m.observe
	st, err := runstore.OpenStore(ctx, a.cfg.Store, conn, a.cfg.StateDir)
	if err != nil {
		return outage(a.cfg.Store, limit, err)
	}
	defer st.Close()
	s, ok := st.(runstore.Pool)
	if !ok {
		return usagef("acr worker runs the runs of a store of many runs, such as --store nats://HOST:PORT (%s holds one run: use acr run)", a.cfg.Store)
	}
	woken := make(chan struct{}, 1)
	wake := func() {
		select {
		case woken <- struct{}{}:
		default:
		}
	}
	unwatch, err := s.WatchInbox(func(string) { wake() })
	if err != nil {
		return outage(a.cfg.Store, limit, err)
	}
	defer func() { _ = unwatch() }()
	// A run's goroutine that meets a store unreachable for longer than
	// the limit cancels work: the other runs finish their cycle in
	// progress and checkpoint if they can (as on SIGTERM), and the worker
	// exits 74.
	work, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	w := &worker{a: a, s: s, opt: opt, max: opts.MaxCycles, notify: opts.Notify, holder: holder("worker", strings.Join(labels, ",")), labels: labels,
		slots: make(chan struct{}, opts.Concurrency), busy: map[string]bool{}, freed: wake, fail: stop, metrics: m}
	defer w.wg.Wait()
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		err := w.pass(work)
		if err == nil && opts.Once {
			w.wg.Wait()
		}
		if work.Err() != nil {
			err = context.Cause(work)
		}
		switch {
		case ctx.Err() != nil:
			a.log.Info().Int("runs", w.running()).Msg("stopping: the runs in progress finish their cycle and checkpoint")
			w.wg.Wait()
			return nil // stopped (SIGINT, SIGTERM)
		case err != nil:
			w.wg.Wait()
			if runstore.Unavailable(err) {
				return outage(a.cfg.Store, limit, err)
			}
			return err
		case opts.Once:
			return nil
		}
		select {
		case <-work.Done():
		case <-woken:
		case <-tick.C:
		}
	}
}

// outage names the store a worker gave up on.
func outage(store string, limit time.Duration, err error) error {
	if !runstore.Unavailable(err) {
		return err
	}
	return fmt.Errorf("--store %s did not answer for --outage-limit %v: %w", store, limit, err)
}

// worker is one acr worker's loop state.
type worker struct {
	a      *app
	s      runstore.Pool
	opt    runstore.Options
	max    int
	notify notifyOptions
	holder storage.Holder
	// labels are --label's: the labelled runs this worker may run.
	labels []string

	// slots holds a token for each run in progress (--concurrency).
	slots chan struct{}
	// busy names the runs this process is running: never two goroutines
	// on one run (across processes the lease sees to it; within one the
	// lease's holder is this process, whose own lease Acquire takes over,
	// so this map does).
	mu   sync.Mutex
	busy map[string]bool
	wg   sync.WaitGroup
	// freed asks for another pass when a run ran cycles; fail ends the
	// worker with an error (a store unreachable past the outage limit).
	freed   func()
	fail    context.CancelCauseFunc
	out     sync.Mutex
	metrics *workerMetrics
}

// pass starts each due run that is not already running here, waiting for
// a free slot when all are taken. A run that cannot be run here (held by
// another worker, another writer won, no world for it in the store,
// damaged) is logged and skipped; a store unreachable past the outage
// limit ends the worker (exit 74).
func (w *worker) pass(ctx context.Context) error {
	all, err := w.s.Runs(ctx)
	if err != nil {
		return err
	}
	w.metrics.runs(all)
	now := w.opt.Clock.Now()
	for _, st := range all {
		if !st.Due(now) || !st.Takes(w.labels) || !w.claim(st.RunID) {
			continue
		}
		select {
		case w.slots <- struct{}{}:
		case <-ctx.Done():
			w.unclaim(st.RunID)
			return nil
		}
		w.wg.Add(1)
		go func(id string) {
			defer w.wg.Done()
			cycles, err := w.turn(ctx, id)
			<-w.slots
			w.unclaim(id)
			w.report(ctx, id, err)
			if cycles > 0 {
				w.freed() // it may be due again (--max-cycles), or others wait
			}
		}(st.RunID)
	}
	return nil
}

func (w *worker) claim(id string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.busy[id] {
		return false
	}
	w.busy[id] = true
	w.metrics.held.Set(float64(len(w.busy)))
	return true
}

func (w *worker) unclaim(id string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.busy, id)
	w.metrics.held.Set(float64(len(w.busy)))
}

// running is how many runs are in progress.
func (w *worker) running() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.busy)
}

// report logs what became of a run's turn.
func (w *worker) report(ctx context.Context, id string, err error) {
	switch {
	case err == nil:
	case errors.Is(err, storage.ErrLeaseLost):
		w.metrics.leaseLost.Inc()
		w.a.log.Warn().Str("run_id", id).Err(err).Msg("lease lost: the run goes to whoever takes it next")
	case ctx.Err() != nil:
	case runstore.Unavailable(err):
		w.fail(err)
	case errors.Is(err, storage.ErrBusy):
		w.a.log.Debug().Str("run_id", id).Err(err).Msg("held by another worker")
	default:
		w.a.log.Warn().Str("run_id", id).Err(err).Msg("run skipped")
		w.printf("%s: skipped: %v\n", id, err)
	}
}

// printf prints a line for one run; runs end concurrently.
func (w *worker) printf(format string, args ...any) {
	w.out.Lock()
	defer w.out.Unlock()
	w.a.printf(format, args...)
}

// turn takes a run's lease, runs it until it rests or max cycles, and
// gives the lease back. It returns how many cycles it ran.
func (w *worker) turn(ctx context.Context, id string) (int, error) {
	rs, err := w.s.Run(ctx, id)
	if err != nil {
		return 0, err
	}
	r, err := rs.Open(ctx, w.holder, w.opt)
	if err != nil {
		return 0, err
	}
	rep, err := r.Driver.Run(r.Held, w.max, w.metrics.cycle)
	lost := context.Cause(r.Held)
	if !errors.Is(lost, storage.ErrLeaseLost) {
		// Told while the lease is held, so that the record of it is
		// this worker's to write.
		w.a.notifyAfter(w.notify, rs, r, err)
	}
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err == nil && errors.Is(lost, storage.ErrLeaseLost) {
		// The run stopped because its lease was lost, not because it
		// rested or the worker is stopping.
		err = lost
	}
	if err != nil {
		return 0, err
	}
	w.printf("%s: %d cycle(s), final disposition %s\n", id, rep.CyclesExecuted, rep.FinalDisposition)
	return rep.CyclesExecuted, nil
}
