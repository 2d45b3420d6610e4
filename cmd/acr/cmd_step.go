package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/kernel"
)

// stepOptions are acr step's flags.
type stepOptions struct {
	Slate  slateOptions
	Notify notifyOptions
}

func newStepCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "step",
		Short: "Run at most one cycle",
		Long: `Recover the run if needed, then run one cycle if one is eligible (CONTINUE,
a wake signal, an approval, a due time, a changed environment, a stop
request). With nothing eligible it changes nothing and reports the current
disposition (executed: false).`,
		Example: `  acr step
  acr step --json | jq .loop_disposition`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts stepOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runStep(cmd.Context(), opts, a)
		},
	}
	addSlateFlags(cmd)
	addNotifyFlag(cmd)
	return finishesCycleOnInterrupt(cmd)
}

// runStep runs at most one cycle. If ctx is cancelled (SIGINT, SIGTERM)
// before the cycle has written anything (while the run is recovered, a
// check runs or the proposer is asked) the program running is stopped, no
// cycle is recorded and the reason is "interrupted"; a cycle that has
// recorded its decision always finishes, and step says it was
// interrupted (naming the signal with --json in "interrupted_by").
func runStep(ctx context.Context, opts stepOptions, a *app) error {
	r, err := a.openRun(ctx, opts.Slate)
	if err != nil {
		return err
	}
	var sum kernel.Summary
	interrupted := ctx.Err() != nil
	if !interrupted {
		sum, err = r.Driver.Step(ctx)
		if errors.Is(err, kernel.ErrInterrupted) {
			// A check or the proposer was stopped before the cycle
			// wrote anything: as if the signal had come before it.
			interrupted, err = true, nil
		} else {
			a.notifyAfter(opts.Notify, nil, r, err)
		}
	}
	if interrupted {
		run := r.Driver.State().Run
		sum = kernel.Summary{CycleSeq: run.CycleSeq, CycleRef: run.LastCycleRef, LoopDisposition: run.LoopDisposition,
			ReasonCodes: []string{"interrupted"}, GovernanceDecision: "NONE"}
	}
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil && !(sum.Executed && errors.Is(err, kernel.ErrFaulted)) {
		// Nothing ran, or the store, the disk or the ledger failed: no
		// cycle line, which would read as success; the next invocation
		// recovers what was stored.
		return err
	}
	switch {
	case a.cfg.JSON:
		a.printJSON(struct {
			kernel.Summary
			InterruptedBy string `json:"interrupted_by,omitempty"`
		}{sum, interruptedBy(ctx)})
	case interrupted:
		a.printf("%s before the cycle was recorded: nothing run (cycle %d, %s)\n", interruptedText(ctx), sum.CycleSeq, sum.LoopDisposition)
	default:
		a.printCycle(sum)
		if ctx.Err() != nil && sum.Executed && err == nil {
			a.printf("%s during cycle %d, which finished and is checkpointed\n", interruptedText(ctx), sum.CycleSeq)
		}
		a.printHint(r.Driver.State())
	}
	return err
}
