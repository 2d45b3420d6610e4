package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
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
reason codes. Between the cycles, a line starting with "!" shows each
failure recorded outside a cycle: a provider (the proposer, a check that
gave no verdict, the world) that failed, so that the run did not advance,
and a fault it led to. --type keeps only cycles (and failures) with an
event whose type starts with the given prefix (for example commitment. or
strategy.review). Read-only; no lock.`,
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

// failureLine is a failure recorded outside a cycle: a provider that
// failed (the run did not advance) or the fault that followed.
type failureLine struct {
	Seq int64 `json:"seq"`
	// AfterCycle is the last cycle completed when it happened.
	AfterCycle int64  `json:"after_cycle"`
	At         string `json:"at"`
	// Kind is provider_failure or faulted.
	Kind string `json:"kind"`
	// Source is what failed: proposer, check:ID, world, inbox, knowledge.
	Source      string   `json:"source,omitempty"`
	Error       string   `json:"error"`
	Consecutive int      `json:"consecutive,omitempty"`
	Reasons     []string `json:"reason_codes,omitempty"`
}

// failures reads the failures recorded outside cycles, with one pass over
// the ledger's lines that decodes only those records.
func failures(h interface {
	ScanLines(func(chain.Line) error) error
}) ([]failureLine, error) {
	var out []failureLine
	inCycle := false
	err := h.ScanLines(func(l chain.Line) error {
		switch l.Type {
		case event.CycleStarted:
			inCycle = true
		case event.CycleCompleted:
			inCycle = false
		case event.ProviderFailed, event.RunFaulted:
			if l.Type == event.RunFaulted && inCycle {
				return nil // the cycle's own disposition shows it
			}
			rec, err := l.Record()
			if err != nil {
				return err
			}
			out = append(out, failureOf(rec))
		}
		return nil
	})
	return out, err
}

// failureOf describes one failure record.
func failureOf(rec event.Record) failureLine {
	ev := rec.Event
	f := failureLine{Seq: rec.Seq, AfterCycle: ev.CycleSeq, At: ev.At, Kind: "provider_failure"}
	if ev.Type == event.RunFaulted {
		f.Kind, f.Reasons, f.Error = "faulted", ev.Reasons, kernel.FaultCause(ev)
		return f
	}
	var body struct {
		Error       string `json:"error"`
		Consecutive int    `json:"consecutive"`
		Fault       *struct {
			Source string `json:"source"`
		} `json:"fault,omitempty"`
	}
	if ev.Object != nil && json.Unmarshal(ev.Object.Body, &body) == nil {
		f.Error, f.Consecutive = body.Error, body.Consecutive
		if body.Fault != nil {
			f.Source = body.Fault.Source
		}
	}
	if f.Source == "" {
		for _, s := range []struct{ marker, source string }{{"proposer:", "proposer"}, {"observe:", "world"}, {"inbox:", "inbox"},
			{"knowledge", "knowledge"}} {
			if strings.Contains(f.Error, s.marker) {
				f.Source = s.source
				break
			}
		}
	}
	return f
}

// text is the failure's line in the timeline.
func (f failureLine) text() string {
	if f.Kind == "faulted" {
		return fmt.Sprintf("!      %s FAULTED after cycle %d (%s): %s", f.At, f.AfterCycle, strings.Join(f.Reasons, ", "), orDashStr(f.Error))
	}
	return fmt.Sprintf("!      %s provider failure after cycle %d (%s, %d in a row): %s", f.At, f.AfterCycle, orDashStr(f.Source), f.Consecutive, f.Error)
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
	var seqs []int64
	for c := since; until == 0 || c <= until; c++ {
		recs, err := h.Cycle(c)
		if errors.Is(err, chain.ErrNoCycle) {
			break
		}
		if err != nil {
			return err
		}
		if typ != "" && !hasType(recs, typ) {
			continue
		}
		lines = append(lines, summarise(recs))
		seqs = append(seqs, recs[0].Seq)
	}
	all, err := failures(h)
	if err != nil {
		return err
	}
	// A failure after cycle c belongs to the attempt at cycle c+1.
	fails := slices.DeleteFunc(all, func(f failureLine) bool {
		kind := map[string]event.Kind{"faulted": event.RunFaulted}[f.Kind]
		if kind == "" {
			kind = event.ProviderFailed
		}
		return f.AfterCycle+1 < since || (until != 0 && f.AfterCycle+1 > until) || (typ != "" && !strings.HasPrefix(string(kind), typ))
	})
	if a.cfg.JSON {
		if lines == nil {
			lines = []logLine{}
		}
		if fails == nil {
			fails = []failureLine{}
		}
		a.printJSON(map[string]any{"cycles": lines, "failures": fails})
		return nil
	}
	for i, l := range lines {
		for len(fails) > 0 && fails[0].Seq < seqs[i] {
			a.printf("%s\n", fails[0].text())
			fails = fails[1:]
		}
		a.printf("%-6d %s %-13s %-8s %-28s %s %s(%s)\n", l.Cycle, l.At, l.Disposition, l.Decision, orDashStr(l.Agenda), orDashStr(l.Action),
			outcomeSuffix(l.Outcome), strings.Join(l.Reasons, ", "))
	}
	for _, f := range fails {
		a.printf("%s\n", f.text())
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
