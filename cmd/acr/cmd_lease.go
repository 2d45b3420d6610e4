package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
)

// leaseBreakOptions are acr lease break's flags.
type leaseBreakOptions struct {
	Yes    bool   `flag:"yes"`
	By     string `flag:"by"`
	Reason string `flag:"reason"`
}

func newLeaseCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "lease",
		Short: "See and end the lease on a run of a nats:// store",
		Long: `A run of a nats:// store is run by one process at a time, the holder of its
lease: a worker, or a command such as acr run. The lease lapses 30 s after its
holder stops renewing it; acr runs shows who holds each run, since when and
until when.`,
		Example: `  acr --store nats://localhost:4222 runs
  acr --store nats://localhost:4222 --run-id repo:api lease break --by alice --reason "host-a is gone"`,
		Args: groupArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	brk := &cobra.Command{
		Use:   "break --run-id RUN",
		Short: "End a lease whose holder is gone, and fence that holder off",
		Long: `End the lease of a run whose holder you know to be gone (a host that died, a
process killed), so that the run does not wait for the lease to lapse. The
holder is fenced off as well, in case it is alive after all: a
persistent.lease.broken record, naming the holder and you, is appended to the
run's ledger, and the run's world in the store is taken, so that none of the
old holder's writes (its next ledger append, checkpoint or world write) is
stored. The next worker to take the run recovers it as after a crash: an
effect the old holder began is found in the store, never made twice.

At a terminal, acr shows the lease and asks before breaking it; without one,
--yes is required. The lease broken is the one shown: if its holder renewed,
released or lost it in between, nothing is broken (exit 75: look again).`,
		Example: `  acr --store nats://localhost:4222 --run-id repo:api lease break
  acr --store nats://localhost:4222 --run-id repo:api lease break --yes --by ops --reason "host-a decommissioned"`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts leaseBreakOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runLeaseBreak(cmd.Context(), opts, a)
		},
	}
	brk.Flags().Bool("yes", false, "break without asking (required without a terminal)")
	brk.Flags().String("by", "", "who breaks the lease, recorded in the ledger (default: the OS user)")
	brk.Flags().String("reason", "", "why, recorded in the ledger")
	cmd.AddCommand(brk)
	brk.Long += "\n" + exitStatusHelp
	return cmd
}

// runLeaseBreak shows the run's lease, asks at a terminal, breaks it and
// fences its holder.
func runLeaseBreak(ctx context.Context, opts leaseBreakOptions, a *app) error {
	rs, err := a.run(ctx)
	if err != nil {
		return err
	}
	if !opts.Yes && (a.cfg.JSON || !a.stdinTerminal()) {
		return usagef("acr lease break asks before it breaks a lease, and stdin is not a terminal: give --yes to break it without asking")
	}
	l, ok, err := rs.Lease(ctx)
	if err != nil {
		return err
	}
	if !ok {
		a.report(map[string]any{"broken": false, "run_id": a.cfg.RunID, "effect": "none"},
			"nobody holds the lease of %s: nothing to break\n", a.cfg.RunID)
		return nil
	}
	view := newLeaseView(l)
	if !a.cfg.JSON {
		a.printf("run %s is held by %s since %s; renewed %s, lapses %s unless renewed\n",
			a.cfg.RunID, l.Holder, orDashStr(l.Holder.Since), view.Renewed, view.Until)
	}
	if !opts.Yes && !confirm(a.stdin, a.stdout, "break this lease? Do it only if that holder is gone for good") {
		a.report(map[string]any{"broken": false, "run_id": a.cfg.RunID, "effect": "none"}, "not broken: the lease of %s is as it was\n", a.cfg.RunID)
		return nil
	}
	by := opts.By
	if by == "" {
		by = osUser()
	}
	b, err := rs.BreakLease(ctx, l, by, opts.Reason)
	if err != nil {
		return fmt.Errorf("break the lease of %s: %w", a.cfg.RunID, err)
	}
	out := map[string]any{"broken": true, "run_id": a.cfg.RunID, "lease": view, "by": by,
		"fence": map[string]any{"ledger_seq": b.Fence.Seq, "world_taken": b.WorldTaken}}
	text := fmt.Sprintf("broke the lease of %s held by %s; fenced: ledger record seq %d", a.cfg.RunID, l.Holder, b.Fence.Seq)
	if b.WorldTaken {
		text += ", world taken"
	}
	a.report(out, "%s\n", text)
	a.next("a worker takes the run at its next poll and recovers it (or acr --run-id " + a.cfg.RunID + " recover)")
	return nil
}
