package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// runOptions are acr run's flags.
type runOptions struct {
	MaxCycles int `flag:"max-cycles"`
	Slate     slateOptions
	Notify    notifyOptions
}

func newRunCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "run --max-cycles N",
		Short: "Run up to N cycles, stopping early when the loop rests",
		Long: `Recover the run if needed, then run cycles until N have run or the loop
rests: IDLE, SLEEP, WAIT_APPROVAL or DEFERRED with nothing else eligible,
STOPPED or FAULTED. An idle run costs nothing: no cycle, no write.`,
		Example: `  acr run --max-cycles 20
  acr run --max-cycles 100 --json | jq .disposition_counts
  */5 * * * * cd /srv/loop && acr run --max-cycles 50   # crontab`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts runOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runRun(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().Int("max-cycles", 10, "most cycles to run in this invocation")
	addSlateFlags(cmd)
	addNotifyFlag(cmd)
	return finishesCycleOnInterrupt(cmd)
}

// runRun runs cycles until opts.MaxCycles have run or the loop rests. When
// ctx is cancelled (SIGINT, SIGTERM) the run stops at a cycle boundary (a
// check or proposer call in progress is stopped and its cycle not
// written; a cycle that recorded its decision finishes), is checkpointed,
// and ends with the reason "interrupted": exit 0.
func runRun(ctx context.Context, opts runOptions, a *app) error {
	if opts.MaxCycles < 1 {
		return usagef("--max-cycles must be at least 1")
	}
	r, err := a.openRun(ctx, opts.Slate)
	if err != nil {
		return err
	}
	if a.cfg.JSON {
		return runRunJSON(ctx, opts, a, r)
	}
	show, p := a.printCycle, a.newProgress(opts.MaxCycles)
	if p != nil {
		p.begin()
		show = func(s kernel.Summary) { p.cycle(s, cycleLine(s)) }
	}
	each := func(s kernel.Summary) { a.logCycle(s); show(s) }
	rep, err := r.Driver.Run(heldContext(ctx, r), opts.MaxCycles, each)
	a.notifyAfter(opts.Notify, nil, r, err)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	tail := ""
	if p != nil {
		tail = p.finish()
	}
	interrupted := wasInterrupted(rep)
	if err != nil && !errors.Is(err, kernel.ErrProvider) && !errors.Is(err, kernel.ErrFaulted) {
		// The store, the disk or the ledger failed: no summary, which
		// would read as success; the error says what happened, and the
		// next invocation recovers what was stored.
		return err
	}
	switch {
	case interrupted && rep.CyclesExecuted == 0:
		a.printf("%s before the first cycle: nothing run\n", interruptedText(ctx))
	case rep.CyclesExecuted == 0 && errors.As(err, new(*kernel.FaultedError)):
		a.printf("no cycle ran: the run is FAULTED and waits for a person (the error follows)\n")
	case rep.CyclesExecuted == 0 && errors.Is(err, kernel.ErrProvider):
		a.printf("no cycle ran: an input provider failed and the run state did not advance (the error follows)\n")
	case rep.CyclesExecuted == 0:
		a.printf("no cycle eligible: %s\n", strings.Join(rep.ReasonCodes, ", "))
	default:
		a.printf("%d cycle(s), final disposition %s%s\n", rep.CyclesExecuted, rep.FinalDisposition, tail)
	}
	st := r.Driver.State()
	if interrupted && rep.CyclesExecuted > 0 && err == nil {
		a.printf("%s after cycle %d, which finished and is checkpointed\n", interruptedText(ctx), st.Run.CycleSeq)
	}
	if interrupted && st.Run.LoopDisposition == state.Continue && !a.cfg.NoLoadState {
		a.printf("next: acr run   (goes on from there; a scheduled run does too)\n")
	}
	a.printHint(st)
	return err
}

// wasInterrupted reports whether a run stopped because its context was
// cancelled.
func wasInterrupted(rep kernel.RunReport) bool {
	return slices.Equal(rep.ReasonCodes, []string{"interrupted"})
}

// runRunJSON prints one JSON object whose "cycles" array is written as the
// cycles finish, so that a run of any length holds one summary in memory at
// a time and a reader sees each cycle as soon as it is durable. The run's
// totals, and the error if one stopped it, close the object; a run stopped
// by a signal has the reason code "interrupted" and names the signal in
// "interrupted_by".
func runRunJSON(ctx context.Context, opts runOptions, a *app, r *runstore.Run) error {
	a.printf(`{"cycles":[`)
	n := 0
	rep, err := r.Driver.Run(heldContext(ctx, r), opts.MaxCycles, func(s kernel.Summary) {
		b, merr := json.Marshal(s)
		if merr != nil {
			b = []byte("null")
		}
		if n > 0 {
			a.printf(",")
		}
		n++
		a.printf("%s", b)
	})
	a.notifyAfter(opts.Notify, nil, r, err)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	tail := map[string]any{
		"cycles_executed": rep.CyclesExecuted, "final_disposition": rep.FinalDisposition,
		"disposition_counts": rep.DispositionCounts, "reason_codes": rep.ReasonCodes,
	}
	if by := interruptedBy(ctx); by != "" && wasInterrupted(rep) {
		tail["interrupted_by"] = by
	}
	if err != nil {
		code, kind := errorKind(err)
		tail["error"], tail["kind"], tail["exit_code"] = err.Error(), kind, code
	}
	b, merr := json.Marshal(tail)
	if merr != nil {
		return merr
	}
	a.printf("],%s\n", b[1:])
	if err != nil {
		return &silentError{err}
	}
	return nil
}

// printCycle prints one readable line per cycle.
func (a *app) printCycle(s kernel.Summary) { a.printf("%s\n", cycleLine(s)) }

// cycleLine is the one-line account of a cycle: disposition, governance
// decision, agenda item, action and outcome, then the reason codes.
func cycleLine(s kernel.Summary) string {
	if !s.Executed {
		return fmt.Sprintf("no cycle eligible (cycle %d, %s): %s", s.CycleSeq, s.LoopDisposition, strings.Join(s.ReasonCodes, ", "))
	}
	line := fmt.Sprintf("cycle %-4d %-13s %-8s", s.CycleSeq, s.LoopDisposition, s.GovernanceDecision) + workDone(s.Agenda, s.Action, s.Outcome)
	extra := []string{}
	if s.StrategicReview {
		extra = append(extra, "strategic review")
	}
	if s.Compacted {
		extra = append(extra, "context compacted")
	}
	line += "  (" + strings.Join(append(extra, s.ReasonCodes...), ", ") + ")"
	return line
}

// workDone is what a cycle worked on, as a cycle's line shows it: its
// agenda item, the action and the outcome, each when there is one.
func workDone(agenda, action, outcome string) string {
	var b strings.Builder
	if agenda != "" {
		b.WriteString(" " + agenda)
	}
	if action != "" {
		b.WriteString(" -> " + action)
	}
	if outcome != "" {
		b.WriteString(" [" + outcome + "]")
	}
	return b.String()
}

func (a *app) printHint(s kernel.EngineState) {
	if a.cfg.NoLoadState {
		a.printf("clean slate: the run is discarded; nothing was written (--no-load-state)\n")
		return
	}
	if s.Run.LoopDisposition == state.Continue || s.Run.RunID == "" {
		return
	}
	if hint := nextCommand(s, nil); hint != "" {
		a.printf("next: %s\n", hint)
	}
}

// heldContext is the context cycles run under: ctx, and for a run in a
// JetStream store also the lease, so that no cycle starts once the lease
// is lost (the revision checks protect the run either way).
func heldContext(ctx context.Context, r *runstore.Run) context.Context {
	if r.Held == nil {
		return ctx
	}
	return r.Held
}
