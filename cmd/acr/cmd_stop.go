package main

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/state"
)

// stopOptions are acr stop's flags.
type stopOptions struct {
	Reason string `flag:"reason"`
	Kill   bool   `flag:"kill"`
	By     string `flag:"by"`
}

func newStopCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "stop",
		Short: "Ask the run to stop",
		Long: `Queue a stop request. The next invocation records persistent.run.stopped and a
terminal checkpoint; after that every invocation reports STOPPED and does
nothing. --kill marks the request as the operator kill switch. It never
takes the run lock, so it works while another invocation is running.
Stopping a run that is already stopped changes nothing: "nothing queued",
exit 0 ("effect": "none" with --json).`,
		Example: `  acr stop --reason "maintenance window"
  acr stop --kill`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts stopOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runStop(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().String("reason", "", "why the run stops")
	cmd.Flags().Bool("kill", false, "operator kill switch")
	cmd.Flags().String("by", "", "who stops it (default: the OS user)")
	return cmd
}

// runStop queues a stop request in the run's inbox, without the run lock.
func runStop(ctx context.Context, opts stopOptions, a *app) error {
	rs, err := a.readState()
	if err != nil {
		return err
	}
	if rs.State.Run.Status == state.RunStopped {
		return a.nothingQueued("the run is already stopped")
	}
	by := opts.By
	if by == "" {
		by = osUser()
	}
	q, err := a.queue()
	if err != nil {
		return err
	}
	id, err := q.Put(&state.StopRequest{Schema: state.StopSchema, By: by, Reason: opts.Reason, Kill: opts.Kill,
		CreatedAt: state.FormatTime(a.now().UTC().Truncate(time.Second))})
	if err != nil {
		return err
	}
	a.report(map[string]any{"effect": "queued", "queued": true, "id": id, "kill": opts.Kill}, "queued stop request %s\n", id)
	a.next("acr run   (the next invocation records the stop; a scheduled run does too)")
	return nil
}
