package main

import (
	"context"
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// logOptions are acr log's flags.
type logOptions struct {
	Since int64  `flag:"since"`
	Until int64  `flag:"until"`
	Type  string `flag:"type"`
}

func newLogCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "log",
		Short: "One line per cycle: disposition, agenda, decision, action, reasons",
		Long: `Print a compact timeline of the run, one line per cycle: cycle number,
clock reading, disposition, agenda item, governance decision, action and
reason codes. --type keeps only cycles with an event whose type starts
with the given prefix (for example commitment. or strategy.review).
Read-only; no lock.`,
		Example: `  acr log
  acr log --since 40 --until 60
  acr log --type commitment. --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts logOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runLog(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().Int64("since", 1, "first cycle")
	cmd.Flags().Int64("until", 0, "last cycle (default: the last completed one)")
	cmd.Flags().String("type", "", "only cycles with an event of this type (prefix)")
	return cmd
}

// logLine is one cycle in the timeline.
type logLine struct {
	Cycle       int64    `json:"cycle"`
	At          string   `json:"at"`
	Disposition string   `json:"loop_disposition"`
	Agenda      string   `json:"agenda"`
	Decision    string   `json:"governance_decision"`
	Action      string   `json:"action"`
	Outcome     string   `json:"outcome"`
	Reasons     []string `json:"reason_codes"`
}

// runLog prints one line per cycle from the ledger, without the lock.
func runLog(ctx context.Context, opts logOptions, a *app) error {
	since, until, typ := opts.Since, opts.Until, opts.Type
	h, err := a.history()
	if err != nil {
		return err
	}
	if since < 1 {
		since = 1
	}
	var lines []logLine
	for c := since; until == 0 || c <= until; c++ {
		recs, err := h.Cycle(c)
		if errors.Is(err, ledger.ErrNoCycle) {
			break
		}
		if err != nil {
			return err
		}
		if typ != "" && !hasType(recs, typ) {
			continue
		}
		lines = append(lines, summarise(recs))
	}
	if a.cfg.JSON {
		if lines == nil {
			lines = []logLine{}
		}
		a.printJSON(map[string]any{"cycles": lines})
		return nil
	}
	for _, l := range lines {
		a.printf("%-6d %s %-13s %-8s %-28s %s %s(%s)\n", l.Cycle, l.At, l.Disposition, l.Decision, orDashStr(l.Agenda), orDashStr(l.Action),
			outcomeSuffix(l.Outcome), strings.Join(l.Reasons, ", "))
	}
	return nil
}

func hasType(recs []event.Record, prefix string) bool {
	for _, r := range recs {
		if strings.HasPrefix(string(r.Event.Type), prefix) {
			return true
		}
	}
	return false
}

func summarise(recs []event.Record) logLine {
	l := logLine{Decision: "NONE", Reasons: []string{}}
	for _, r := range recs {
		ev := r.Event
		switch ev.Type {
		case event.CycleStarted:
			l.Cycle, l.At = ev.CycleSeq, ev.At
		case event.AgendaSelected:
			var res agenda.Resolution
			if ev.Object.Decode(&res) == nil && res.Selected != nil {
				l.Agenda = res.Selected.ItemID
			}
		case event.ActionProposed:
			l.Action = field(ev, "operation") + " " + field(ev, "target")
		case event.DecisionRecorded:
			l.Decision = field(ev, "verdict")
		case event.ActionCommitted, event.ActionNotApplied:
			l.Outcome = field(ev, "status")
		case event.CycleCompleted:
			var cr state.CycleRecord
			if ev.Object.Decode(&cr) == nil {
				l.Disposition, l.Reasons = cr.LoopDisposition.String(), cr.ReasonCodes
			}
		}
	}
	return l
}

// field reads one top-level string field of an event's object.
func field(ev event.Event, key string) string {
	if ev.Object == nil {
		return ""
	}
	v, err := codec.ParseCanonical(ev.Object.Body)
	if err != nil {
		return ""
	}
	for _, m := range v.Obj {
		if m.Key == key && m.Val.Kind == codec.KindString {
			return m.Val.Str
		}
	}
	return ""
}

func orDashStr(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func outcomeSuffix(s string) string {
	if s == "" {
		return ""
	}
	return "[" + s + "] "
}
