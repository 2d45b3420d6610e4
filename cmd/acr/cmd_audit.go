package main

import (
	"errors"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/audit"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/rundir"
	"github.com/acr-project/acr/internal/state"
)

func newAuditCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "audit CYCLE",
		Short: "Explain one past cycle from the ledger",
		Long: `Explain why cycle CYCLE did what it did, from evidence only: its causal chain
of events, its inputs (and who sent any inbox item), the agenda resolution and
why, the cognitive program and self-dialogue, the action request, the
governance decision and its receipt with the contract, rule and authority in
force, commitments it touched, strategy lenses with their exact source
versions, the idempotency key and world outcome, the evaluation, and which
later compaction summarised the cycle's working memory. Everything is
resolved by ref in the ledger, so it answers the same before and after
compaction and across restarts. Read-only; no lock.
--format dot renders the causal graph for Graphviz (dot -Tsvg).`,
		Example: `  acr audit 3
  acr audit 3 --format json | jq .decision
  acr audit 3 --format dot | dot -Tsvg > cycle3.svg`,
		Args: exactArgs(1, "one CYCLE number"),
		RunE: func(cmd *cobra.Command, args []string) error {
			n, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || n < 1 {
				return usagef("CYCLE must be a cycle number (1 or more), got %q", args[0])
			}
			format := a.v.GetString("format")
			if a.cfg.JSON {
				format = "json"
			}
			return runAudit(a, n, format)
		},
	}
	cmd.Flags().String("format", "text", "output format: text, json or dot")
	return cmd
}

// ledgerFS opens the state directory for reading its ledger, which is
// read whether or not the rest of the run is intact.
func (a *app) ledgerFS() (*disk.OSDir, error) {
	if a.cfg.NoLoadState {
		return nil, noLoadState(a)
	}
	return rundir.RequireLedger(a.cfg.StateDir)
}

func runAudit(a *app, cycle int64, format string) error {
	if format != "text" && format != "json" && format != "dot" {
		return usagef("--format %q: want text, json or dot", format)
	}
	fsys, err := a.ledgerFS()
	if err != nil {
		return err
	}
	rep, err := audit.Explain(fsys, cycle)
	if errors.Is(err, ledger.ErrNoCycle) {
		return dataf("cycle %d: the ledger has no completed cycle with that number (see acr log)", cycle)
	}
	if err != nil {
		return err
	}
	switch format {
	case "json":
		a.printJSON(rep)
	case "dot":
		return rep.WriteDOT(a.stdout)
	default:
		return rep.WriteText(a.stdout)
	}
	return nil
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
			return runLog(a, a.v.GetInt64("since"), a.v.GetInt64("until"), a.v.GetString("type"))
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

func runLog(a *app, since, until int64, typ string) error {
	fsys, err := a.ledgerFS()
	if err != nil {
		return err
	}
	if since < 1 {
		since = 1
	}
	var lines []logLine
	lr := ledger.NewReader(fsys)
	for c := since; until == 0 || c <= until; c++ {
		recs, err := lr.Cycle(c)
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
			if !a.v.GetBool("verify") {
				return usagef("replay needs --verify (the only mode: replay never re-executes)")
			}
			return runReplay(a, a.v.GetInt64("from"))
		},
	}
	cmd.Flags().Bool("verify", false, "verify recorded cycles against this acr")
	cmd.Flags().Int64("from", 1, "first cycle to verify")
	return cmd
}

func runReplay(a *app, from int64) error {
	fsys, err := a.ledgerFS()
	if err != nil {
		return err
	}
	recs, err := ledger.ReadAll(fsys)
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
