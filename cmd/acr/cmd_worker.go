package main

import (
	"context"
	"errors"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/jsstore"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/storage"
)

// workerOptions are acr worker's flags.
type workerOptions struct {
	Once      bool   `flag:"once"`
	Poll      string `flag:"poll"`
	MaxCycles int    `flag:"max-cycles"`
}

func newWorkerCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "worker --store nats://HOST:PORT[/PREFIX]",
		Short: "Run the runs of a nats:// store that are due, one at a time",
		Long: `Run whatever is due in a JetStream store: a run whose last cycle asked to
continue, whose wake time has come, or whose inbox holds items. For each, the
worker takes the run's lease (a run another worker holds is skipped), keeps
it while it runs the run's cycles until the run rests (or --max-cycles), then
releases it and moves on. It hears of an inbox item at once and looks for due
runs every --poll otherwise. Several workers, on one host or on several that
share the state directory holding the runs' worlds, share the work; the
lease keeps two of them off one run, and if both ever write it (a lease lost
to a long pause), the store refuses the stale one's writes whole.

SIGINT or SIGTERM lets the cycle in progress finish and checkpoint, releases
the lease, and exits 0. --once does one pass over what is due and exits
(for cron on several hosts, and for tests). It prints one line per run it
ran.`,
		Example: `  acr --store nats://localhost:4222 worker
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
	cmd.Flags().String("poll", "3s", "how often to look for runs that are due")
	cmd.Flags().Int("max-cycles", 100, "most cycles of one run per turn, before the worker moves on")
	return finishesCycleOnInterrupt(cmd)
}

// runWorker runs due runs until ctx ends (or one pass with --once).
func runWorker(ctx context.Context, opts workerOptions, a *app) error {
	if !a.nats() {
		return usagef("acr worker runs the runs of a nats:// store: give --store nats://HOST:PORT (a state directory has one run: use acr run)")
	}
	poll, err := time.ParseDuration(opts.Poll)
	if err != nil || poll <= 0 {
		return usagef("--poll %q: want a positive duration such as 3s", opts.Poll)
	}
	if opts.MaxCycles < 1 {
		return usagef("--max-cycles must be at least 1")
	}
	opt, err := a.clock()
	if err != nil {
		return err
	}
	s, err := runstore.DialStore(ctx, a.cfg.Store, a.cfg.NatsCreds)
	if err != nil {
		return err
	}
	defer s.Close()
	woken := make(chan struct{}, 1)
	unwatch, err := s.WatchInbox(func(string) {
		select {
		case woken <- struct{}{}:
		default:
		}
	})
	if err != nil {
		return err
	}
	defer func() { _ = unwatch() }()
	w := worker{a: a, s: s, opt: opt, max: opts.MaxCycles, holder: holderName()}
	tick := time.NewTicker(poll)
	defer tick.Stop()
	for {
		if err := w.pass(ctx); err != nil {
			if ctx.Err() != nil {
				return nil // stopped (SIGINT, SIGTERM) while it talked to the store
			}
			return err
		}
		if opts.Once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-woken:
		case <-tick.C:
		}
	}
}

// worker is one acr worker's loop state.
type worker struct {
	a      *app
	s      *jsstore.Store
	opt    runstore.Options
	max    int
	holder string
}

// pass runs each run that is due once. A run that cannot be run here
// (held by another worker, another writer won, its world not on this
// host, damaged) is logged and skipped; only an unreachable store ends
// the worker (exit 74).
func (w *worker) pass(ctx context.Context) error {
	due, err := w.s.Due(ctx, w.opt.Clock.Now())
	if err != nil {
		return err
	}
	for _, st := range due {
		if ctx.Err() != nil {
			return nil
		}
		err := w.turn(ctx, st.RunID)
		switch {
		case err == nil:
		case ctx.Err() != nil:
			return nil
		case runstore.Unavailable(err):
			return err
		case errors.Is(err, storage.ErrBusy):
			w.a.log.Debug().Str("run_id", st.RunID).Msg("held by another worker")
		default:
			w.a.log.Warn().Str("run_id", st.RunID).Err(err).Msg("run skipped")
			w.a.printf("%s: skipped: %v\n", st.RunID, err)
		}
	}
	return nil
}

// turn takes a run's lease, runs it until it rests or max cycles, and
// gives the lease back.
func (w *worker) turn(ctx context.Context, id string) error {
	m, err := runstore.OpenRemote(ctx, w.s, w.a.cfg.Store, id, w.a.cfg.StateDir)
	if err != nil {
		return err
	}
	r, err := m.Open(ctx, w.holder, w.opt)
	if err != nil {
		return err
	}
	rep, err := r.Driver.Run(r.Held, w.max, nil)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	w.a.printf("%s: %d cycle(s), final disposition %s\n", id, rep.CyclesExecuted, rep.FinalDisposition)
	return nil
}
