package main

import (
	"context"
	"slices"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/storage"
)

// runsOptions are acr runs' flags: it has none of its own.
type runsOptions struct{}

// runRow is one run as acr runs lists it.
type runRow struct {
	RunID       string `json:"run_id"`
	Status      string `json:"status"`
	Disposition string `json:"loop_disposition"`
	Cycle       int64  `json:"cycle"`
	NextWake    string `json:"next_wake,omitempty"`
	Inbox       uint64 `json:"inbox"`
	// Label is the run's worker label (acr init --label), if any.
	Label string `json:"label,omitempty"`
	// Lease is who holds the run now, on a nats:// store (nil: nobody).
	Lease *leaseView `json:"lease,omitempty"`
}

// leaseView is a run's lease as acr runs shows it.
type leaseView struct {
	Holder  string `json:"holder"`
	Host    string `json:"host,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Command string `json:"command,omitempty"`
	Label   string `json:"label,omitempty"`
	Since   string `json:"since,omitempty"`
	// Renewed is when the lease was last written, Until when it lapses
	// unless renewed again (RFC 3339).
	Renewed  string `json:"renewed"`
	Until    string `json:"until"`
	Revision uint64 `json:"revision"`
}

func newLeaseView(l storage.LeaseStatus) *leaseView {
	h := l.Holder
	return &leaseView{Holder: h.Name, Host: h.Host, PID: h.PID, Command: h.Command, Label: h.Label, Since: h.Since,
		Renewed: l.Renewed.UTC().Format(time.RFC3339), Until: l.Until.UTC().Format(time.RFC3339), Revision: l.Revision}
}

func newRunsCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "runs",
		Short: "List the store's runs",
		Long: `List the runs of the store: each run's id, status, disposition, cycle, next
wake and the number of items waiting in its inbox, and on a nats:// store who
holds the run's lease now (host:pid and command, since when, and until when
it lasts unless its holder renews it). A nats:// store holds many runs (three
requests to the server, whatever their number); a state directory holds one.
It never takes a lock or a lease.`,
		Example: `  acr --store nats://localhost:4222 runs
  acr --store nats://localhost:4222 runs --json | jq '.runs[] | select(.inbox > 0)'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runRuns(cmd.Context(), runsOptions{}, a) },
	}
}

// runRuns lists the runs, without a lock or a lease.
func runRuns(ctx context.Context, opts runsOptions, a *app) error {
	st, err := a.store(ctx)
	if err != nil {
		return err
	}
	all, err := st.Runs(ctx)
	if err != nil {
		return err
	}
	var rows []runRow
	leased := false
	for _, r := range all {
		if a.cfg.RunID != "" && r.RunID != a.cfg.RunID {
			continue
		}
		row := runRow{RunID: r.RunID, Status: r.RunStatus, Disposition: r.Disposition, Cycle: r.CycleSeq, NextWake: r.NextWake, Inbox: r.Inbox, Label: r.Label}
		if r.Lease != nil {
			row.Lease = newLeaseView(*r.Lease)
		}
		rows = append(rows, row)
	}
	if _, ok := st.(runstore.Pool); ok {
		// A store of many runs shares them among holders: say who holds
		// each, even when nobody does.
		leased = true
	}
	if a.cfg.JSON {
		if rows == nil {
			rows = []runRow{}
		}
		a.printJSON(map[string]any{"runs": rows})
		return nil
	}
	labelled := slices.ContainsFunc(rows, func(r runRow) bool { return r.Label != "" })
	label := func(s string) string {
		if !labelled {
			return ""
		}
		return "\t" + s
	}
	lease := func(r runRow) string {
		switch {
		case !leased:
			return ""
		case r.Lease == nil:
			return "\t-\t-"
		}
		who := r.Lease.Holder
		if r.Lease.Command != "" {
			who += " (" + r.Lease.Command + ")"
		}
		return "\t" + who + " since " + orDashStr(r.Lease.Since) + "\t" + r.Lease.Until
	}
	head := ""
	if leased {
		head = "\tHELD BY\tUNTIL"
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 4, 2, ' ', 0)
	_, _ = tw.Write([]byte("RUN\tSTATUS\tDISPOSITION\tCYCLE\tNEXT WAKE\tINBOX" + label("LABEL") + head + "\n"))
	for _, r := range rows {
		_, _ = tw.Write([]byte(r.RunID + "\t" + r.Status + "\t" + r.Disposition + "\t" + strconv.FormatInt(r.Cycle, 10) + "\t" + orDashStr(r.NextWake) + "\t" + strconv.FormatUint(r.Inbox, 10) + label(orDashStr(r.Label)) + lease(r) + "\n"))
	}
	return tw.Flush()
}
