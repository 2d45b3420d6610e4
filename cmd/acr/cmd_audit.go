package main

import (
	"context"
	"errors"
	"strconv"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/audit"
	"github.com/acr-project/acr/internal/chain"
)

// auditOptions are acr audit's flags and argument.
type auditOptions struct {
	Cycle  int64
	Format string `flag:"format"` // text, json or dot; --json means json
}

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
			var opts auditOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			n, err := strconv.ParseInt(args[0], 10, 64)
			if err != nil || n < 1 {
				return usagef("CYCLE must be a cycle number (1 or more), got %q", args[0])
			}
			opts.Cycle = n
			if a.cfg.JSON {
				opts.Format = "json"
			}
			return runAudit(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().String("format", "text", "output format: text, json or dot")
	return cmd
}

// runAudit explains one past cycle from the ledger, without the lock.
func runAudit(ctx context.Context, opts auditOptions, a *app) error {
	cycle, format := opts.Cycle, opts.Format
	if format != "text" && format != "json" && format != "dot" {
		return usagef("--format %q: want text, json or dot", format)
	}
	h, err := a.history()
	if err != nil {
		return err
	}
	rep, err := audit.Explain(h, cycle)
	if errors.Is(err, chain.ErrNoCycle) {
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
