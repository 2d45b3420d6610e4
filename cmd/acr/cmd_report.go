package main

import (
	"bytes"
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/report"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// reportOptions are acr report's flags.
type reportOptions struct {
	Out  string `flag:"out"`  // a file, or "-" for stdout
	Axis string `flag:"axis"` // cycle or time
}

func newReportCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report [--out FILE]",
		Short: "Write the run's history as one self-contained HTML page",
		Long: `Write a picture of the run as one HTML file that needs nothing else (inline CSS
and SVG, no network, no external files): a timeline of cycles coloured by the
loop disposition they ended in and, under it, by the governance decision they
reached, with each cycle's agenda, decision, action and outcome on hover or
click; the number of failing checks over the run and a table of every check;
lanes for commitments' lifecycles; compaction points; approvals requested and
resolved; incidents such as recoveries; and budget use against the
contract's limits.

--axis time lays the timeline on the wall clock instead of one bar per cycle:
a bar starts when its cycle ran and lasts until the next one, so a night the
run slept through is wide and a burst of cycles thin.

The page stays small and quick whatever the length of the run: up to 2,000
cycles get one bar each; beyond that, consecutive cycles share a bar that shows
their mix of dispositions, and the most recent 200 cycles follow with one bar
each. Full detail is kept for the recent cycles and for the latest notable ones
(approvals, faults and stops, compactions, strategic reviews, commitment
changes, refusals). The file is never larger than 4 MiB.

--out FILE writes the page atomically (a temporary file, fsync, rename); without
--out, or with --out -, the page goes to stdout, but not to a terminal. The
report reads the checkpoint and streams the ledger once; it takes no lock and
never writes into the state directory, so it is safe while a run is going on.
With --json (which needs --out) it prints what it wrote.`,
		Example: `  acr report --out report.html
  acr report --axis time --out report.html
  acr report > report.html
  acr report --state-dir /var/lib/acr/site --out /srv/www/acr.html --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts reportOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runReport(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().String("out", "-", "file to write the page to, atomically; - for stdout")
	cmd.Flags().String("axis", "cycle", "timeline axis: cycle (one bar per cycle) or time (the wall clock)")
	return cmd
}

// runReport renders the run's history as one HTML page, to stdout or to
// opts.Out, without the lock.
func runReport(ctx context.Context, opts reportOptions, a *app) error {
	out, axis := opts.Out, opts.Axis
	if axis != "cycle" && axis != "time" {
		return usagef("--axis %q: want cycle or time (see acr report --help)", axis)
	}
	toStdout := out == "" || out == "-"
	if toStdout && a.cfg.JSON {
		return usagef("--json prints a summary on stdout, so the page needs --out FILE")
	}
	if isTerm, _ := a.term(a.stdout); toStdout && isTerm {
		return usagef("refusing to write HTML to a terminal: use --out report.html, or redirect stdout")
	}
	if !toStdout {
		if err := outsideStateDir("--out", out, a.cfg.StateDir, "acr report"); err != nil {
			return err
		}
	}
	rs, err := a.readState()
	if err != nil {
		return err
	}
	h, err := a.history()
	if err != nil {
		return err
	}
	head := report.HeadOf(rs.State)
	// A git world's command fix waiting for approval shows its diff, as
	// acr status does: tried in a throwaway work tree, nothing written.
	head.Preview(func(ref codec.Ref) (string, bool) {
		i := slices.IndexFunc(rs.State.Run.PendingApprovals, func(p state.PendingApproval) bool { return p.Ref == ref && p.Resolution == nil })
		if i < 0 || !gitCommand(rs.State, rs.State.Run.PendingApprovals[i]) {
			return "", false
		}
		text, err := a.shownChange(ctx, nil, rs.State, rs.State.Run.PendingApprovals[i])
		if err != nil {
			text += "change: cannot be shown: " + err.Error() + "\n"
		}
		return text, true
	})
	v, err := report.Read(h, head, report.Options{Generator: "acr " + version, TimeAxis: axis == "time"})
	if err != nil {
		return err
	}
	// The page is rendered whole before anything is written, so a failure
	// leaves no partial page behind, on stdout or on disk.
	var page bytes.Buffer
	if err := report.Render(&page, v); err != nil {
		return err
	}
	if toStdout {
		if _, err := a.stdout.Write(page.Bytes()); err != nil {
			return fmt.Errorf("write report to stdout: %w", err)
		}
		return nil
	}
	if err := runstore.WriteOutput(out, page.Bytes()); err != nil {
		return fmt.Errorf("write report: %w", err)
	}
	if a.cfg.JSON {
		a.printJSON(map[string]any{"out": out, "bytes": page.Len(), "run_id": v.Head.RunID, "cycles": v.Cycles,
			"bucket_width": v.BucketWidth, "cycles_in_detail": len(v.Details), "axis": map[bool]string{true: "time", false: "cycle"}[v.TimeAxis]})
		return nil
	}
	a.printf("wrote %s (%d bytes): %d cycles", out, page.Len(), v.Cycles)
	if v.BucketWidth > 1 {
		a.printf(", %d per bar", v.BucketWidth)
	}
	switch {
	case v.TimeAxis:
		a.printf(", on the wall clock from %s to %s", v.FirstAt, v.LastAt)
	case axis == "time":
		a.printf(", one bar per cycle: they all ran at one instant, so a wall-clock axis would show nothing")
	}
	a.printf("\n")
	return nil
}

// outsideStateDir refuses an output file (flag) inside the state
// directory: the report and the export (who) never write there, and a
// file acr does not know about does not belong.
func outsideStateDir(flag, out, stateDir, who string) error {
	o, err1 := filepath.Abs(filepath.Dir(out))
	s, err2 := filepath.Abs(stateDir)
	if err1 != nil || err2 != nil {
		return nil // the write itself will report a bad path
	}
	if r, err := filepath.EvalSymlinks(o); err == nil {
		o = r
	}
	if r, err := filepath.EvalSymlinks(s); err == nil {
		s = r
	}
	if rel, err := filepath.Rel(s, o); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return usagef("%s %s is inside the state directory %s; %s never writes there", flag, out, stateDir, who)
	}
	return nil
}
