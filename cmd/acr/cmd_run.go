package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/rundir"
	"github.com/acr-project/acr/internal/state"
)

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
		RunE: func(cmd *cobra.Command, args []string) error { return runStep(a) },
	}
	addSlateFlags(cmd)
	return cmd
}

func runStep(a *app) error {
	r, err := a.openRun()
	if err != nil {
		return err
	}
	sum, err := r.Driver.Step()
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	if err != nil && !sum.Executed {
		return err
	}
	if a.cfg.JSON {
		a.printJSON(sum)
	} else {
		a.printCycle(sum)
		a.printHint(r.Driver.State())
	}
	return err
}

type runOptions struct{ maxCycles int }

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
			o := runOptions{maxCycles: a.v.GetInt("max-cycles")}
			if o.maxCycles < 1 {
				return usagef("--max-cycles must be at least 1")
			}
			return runRun(a, o)
		},
	}
	cmd.Flags().Int("max-cycles", 10, "most cycles to run in this invocation")
	addSlateFlags(cmd)
	return cmd
}

func runRun(a *app, o runOptions) error {
	r, err := a.openRun()
	if err != nil {
		return err
	}
	if a.cfg.JSON {
		return runRunJSON(a, r, o)
	}
	each, p := a.printCycle, a.newProgress(o.maxCycles)
	if p != nil {
		p.begin()
		each = func(s kernel.Summary) { p.cycle(s, cycleLine(s)) }
	}
	rep, err := r.Driver.Run(context.Background(), o.maxCycles, each)
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	tail := ""
	if p != nil {
		tail = p.finish()
	}
	if rep.CyclesExecuted == 0 {
		a.printf("no cycle eligible: %s\n", strings.Join(rep.ReasonCodes, ", "))
	} else {
		a.printf("%d cycle(s), final disposition %s%s\n", rep.CyclesExecuted, rep.FinalDisposition, tail)
	}
	a.printHint(r.Driver.State())
	return err
}

// runRunJSON prints one JSON object whose "cycles" array is written as the
// cycles finish, so that a run of any length holds one summary in memory at
// a time and a reader sees each cycle as soon as it is durable. The run's
// totals, and the error if one stopped it, close the object.
func runRunJSON(a *app, r *rundir.Run, o runOptions) error {
	a.printf(`{"cycles":[`)
	n := 0
	rep, err := r.Driver.Run(context.Background(), o.maxCycles, func(s kernel.Summary) {
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
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	tail := map[string]any{
		"cycles_executed": rep.CyclesExecuted, "final_disposition": rep.FinalDisposition,
		"disposition_counts": rep.DispositionCounts, "reason_codes": rep.ReasonCodes,
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
	line := fmt.Sprintf("cycle %-4d %-13s %-8s", s.CycleSeq, s.LoopDisposition, s.GovernanceDecision)
	if s.Agenda != "" {
		line += " " + s.Agenda
	}
	if s.Action != "" {
		line += " -> " + s.Action
	}
	if s.Outcome != "" {
		line += " [" + s.Outcome + "]"
	}
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

func (a *app) printHint(s kernel.State) {
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
