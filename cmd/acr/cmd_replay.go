package main

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/kernel"
)

// replayOptions are acr replay's flags.
type replayOptions struct {
	Verify bool  `flag:"verify"`
	From   int64 `flag:"from"`
}

func newReplayCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "replay --verify [--from N]",
		Short: "Re-derive recorded cycles with this acr and compare with the ledger",
		Long: `Re-derive every recorded cycle from its recorded inputs (clock readings,
observations, inbox items, knowledge updates, world outcomes: all read from
the ledger, no provider is asked again) with this acr binary, and compare
the derived events with the recorded ones. It never touches the sandbox or
the checkpoint: replay is not re-execution. Run it before upgrading acr on a
live run: it names the first cycle that diverges and the first differing
field, and exits 65 if there is one. --from N verifies from cycle N on (the
cycles before it are still replayed, to rebuild the state).`,
		Example: `  acr replay --verify
  acr replay --verify --from 1000 --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts replayOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runReplay(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().Bool("verify", false, "verify recorded cycles against this acr")
	cmd.Flags().Int64("from", 1, "first cycle to verify")
	return cmd
}

// runReplay re-derives the recorded cycles and compares them with the
// ledger, without the lock; it never re-executes anything.
func runReplay(ctx context.Context, opts replayOptions, a *app) error {
	if !opts.Verify {
		return usagef("replay needs --verify (the only mode: replay never re-executes)")
	}
	from := opts.From
	h, err := a.history()
	if err != nil {
		return err
	}
	recs, err := h.ReadAll()
	if err != nil {
		return err
	}
	rep, err := kernel.Replay(recs, from)
	if err != nil {
		return err
	}
	if a.cfg.JSON {
		a.printJSON(rep)
	} else if rep.OK {
		a.printf("replay ok: %d cycles replayed, %d verified from cycle %d\n", rep.CyclesReplayed, rep.CyclesVerified, from)
		if rep.Incomplete > 0 {
			a.printf("cycle %d is incomplete in the ledger (recovery finishes it)\n", rep.Incomplete)
		}
	} else {
		d := rep.Divergence
		a.printf("replay diverges at cycle %d, ledger seq %d (%s)\n  field     %s\n  recorded  %s\n  derived   %s\n", d.Cycle, d.Seq, d.Event, d.Field, d.Recorded, d.Derived)
	}
	if !rep.OK {
		err := &kernel.ReplayError{Seq: rep.Divergence.Seq, CycleSeq: rep.Divergence.Cycle, Msg: "field " + rep.Divergence.Field + " differs"}
		if a.cfg.JSON {
			return &silentError{err}
		}
		return err
	}
	return nil
}
