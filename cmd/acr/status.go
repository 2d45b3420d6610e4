package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// rundirState is a checkpoint read without the lock.
type rundirState struct {
	State    kernel.State
	Manifest state.Manifest
}

func newStatusCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the run: cycle, disposition and why, waits, approvals, commitments, budgets",
		Long: `Show the current state of the run. It reads the last checkpoint without
taking the run lock, so it works while another invocation is running.
With --json it prints the run-state object (acr.persistent-run-state/v0.1).`,
		Example: `  acr status
  acr status --json | jq .pending_approvals`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runStatus(a) },
	}
}

func runStatus(a *app) error {
	rs, err := a.readState()
	if err != nil {
		return err
	}
	r := rs.State.Run
	if a.cfg.JSON {
		a.printJSON(r)
		return nil
	}
	now := a.now()
	a.printf("run          %s (%s)\n", r.RunID, r.Status)
	a.printf("cycle        %d, updated %s\n", r.CycleSeq, when(r.UpdatedAt, now))
	a.printf("disposition  %s: %s\n", r.LoopDisposition, strings.Join(r.ReasonCodes, ", "))
	if w := r.Waiting; w != nil {
		line := fmt.Sprintf("waiting      %s since %s", w.Kind, when(w.Since, now))
		if w.Reason != "" {
			line += ": " + w.Reason
		}
		if w.Deadline != "" {
			line += ", deadline " + when(w.Deadline, now)
		}
		a.printf("%s\n", line)
	}
	if nw := r.NextWake; nw != nil {
		if nw.At != "" {
			a.printf("next wake    %s\n", when(nw.At, now))
		}
		for _, c := range nw.Conditions {
			a.printf("wakes on     %s\n", c)
		}
	}
	pending := 0
	for _, p := range r.PendingApprovals {
		if p.Resolution != nil {
			continue
		}
		if pending == 0 {
			a.printf("pending approvals\n")
		}
		pending++
		a.printf("  %s %s (check %s), requested %s: %s\n", p.Operation, p.Target, p.CheckID, when(p.RequestedAt, now), p.Reason)
		a.printf("    approve: acr approve %s\n    deny:    acr deny %s\n", p.Ref, p.Ref)
	}
	if cs := rs.State.Commitments.Commitments; len(cs) > 0 {
		a.printf("commitments\n")
		for _, c := range cs {
			line := fmt.Sprintf("  %s v%d %s: %s", c.ID, c.Version, c.Status, c.Summary)
			if c.Wake != nil {
				line += "; wakes on " + c.Wake.String()
			}
			if c.Deadline != "" {
				line += "; deadline " + when(c.Deadline, now)
			}
			a.printf("%s\n", line)
		}
	}
	for _, d := range r.Deferred {
		a.printf("deferred     %s until evidence %s (since %s)\n", d.ItemID, strings.Join(d.Evidence, ", "), when(d.Since, now))
	}
	for _, s := range r.Suppressed {
		a.printf("set aside    %s: %s\n", s.ItemID, s.Reason)
	}
	b, l := r.Budget, rs.State.Contract.Budgets
	a.printf("budget       cycles %s, cognitive ops %s, actions %s, compactions %s, wall clock %s\n",
		usage(b.Cycles, l.Cycles), usage(b.CognitiveOperations, l.CognitiveOperations), usage(b.Actions, l.Actions),
		usage(b.Compactions, l.Compactions), usage(b.WallClockSeconds, l.WallClockSeconds)+" s")
	a.printf("world        %d checks failing of %d\n", failing(rs.State.Environment.Checks), len(rs.State.Environment.Checks))
	if hint := nextCommand(rs.State); hint != "" {
		a.printf("next: %s\n", hint)
	}
	return nil
}

func usage(used int64, l governance.Limit) string {
	if l.Hard > 0 {
		return fmt.Sprintf("%d/%d", used, l.Hard)
	}
	return fmt.Sprintf("%d/unlimited", used)
}

func failing(cs []world.CheckResult) int {
	n := 0
	for _, c := range cs {
		if c.Status == world.CheckFail {
			n++
		}
	}
	return n
}

// nextCommand suggests the most useful next command for a waiting run.
func nextCommand(s kernel.State) string {
	r := s.Run
	for _, p := range r.PendingApprovals {
		if p.Resolution == nil {
			return "acr approve " + string(p.Ref) + "   (or acr deny ...)"
		}
	}
	switch r.LoopDisposition {
	case state.Sleep:
		return "acr run (it resumes by itself when a wake condition holds; acr wake --signal manual_resume to look now)"
	case state.Deferred:
		return "acr wake --signal new_environment_observation   (once the missing evidence is in place)"
	case state.Faulted:
		return "acr wake --signal manual_resume   (after fixing the cause; see acr log)"
	case state.Continue:
		return "acr run --max-cycles 20"
	}
	return ""
}

// now is the time used for relative times in human output.
func (a *app) now() time.Time {
	opt, err := a.clock()
	if err != nil {
		return time.Now().UTC()
	}
	return opt.Clock.Now()
}

// when renders a timestamp with its distance from now.
func when(ts string, now time.Time) string {
	t, err := state.ParseTime(ts)
	if err != nil || ts == "" {
		return ts
	}
	d := now.Sub(t).Round(time.Second)
	switch {
	case d > 0:
		return fmt.Sprintf("%s (%s ago)", ts, d)
	case d < 0:
		return fmt.Sprintf("%s (in %s)", ts, -d)
	}
	return ts + " (now)"
}
