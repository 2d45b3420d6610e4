package main

import (
	"context"

	"github.com/spf13/cobra"
)

func newLedgerCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ledger",
		Short: "Inspect the causal ledger",
		Long:  "Commands on the run's causal ledger (ledger/events.jsonl).",
		Example: `  acr ledger verify
  acr ledger verify --json | jq .ok`,
		Args: groupArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	verify := &cobra.Command{
		Use:   "verify",
		Short: "Walk the whole hash chain and the cycles' structure, and report damage",
		Long: `Walk every line of the ledger: framing, each line's own hash, the chain link to
the previous line, seq continuity, strict decoding of each event, and that
the line the checkpoint names as its frontier is there. Then the history's
structure: cycles in order, each effect's intent followed by its outcome or a
recovery record before the next cycle starts, and a checkpoint frontier that
is not inside an open cycle (docs/on-disk-format.md). Damage is reported with
its line number and exits 65; a torn last line (a crash mid-append) and a
cycle left open at the end are reported but are not damage: the next run
repairs the one and recovers the other. Read-only; no lock.`,
		Example: `  acr ledger verify
  acr ledger verify --json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runLedgerVerify(cmd.Context(), ledgerVerifyOptions{}, a)
		},
	}
	cmd.AddCommand(verify)
	verify.Long += "\n" + exitStatusHelp
	return cmd
}

// ledgerVerifyOptions are acr ledger verify's flags: it has none of its
// own.
type ledgerVerifyOptions struct{}

// runLedgerVerify walks the whole ledger and reports damage, without the
// lock.
func runLedgerVerify(ctx context.Context, opts ledgerVerifyOptions, a *app) error {
	if a.cfg.NoLoadState {
		return noLoadState(a)
	}
	h, err := a.history()
	if err != nil {
		return err
	}
	expect, err := h.Expect()
	if err != nil {
		return err
	}
	rep, err := h.Verify(expect)
	if err != nil {
		return err
	}
	out := map[string]any{"ok": rep.OK, "events": rep.Events, "frontier": rep.Frontier}
	if rep.Torn != nil {
		out["torn_tail"] = rep.Torn
	}
	if rep.OpenCycle != 0 {
		out["open_cycle"] = rep.OpenCycle
	}
	if rep.Damage != nil {
		out["damage"] = map[string]any{"line": rep.Damage.Line, "offset": rep.Damage.Offset, "message": rep.Damage.Msg}
	}
	if a.cfg.JSON {
		a.printJSON(out)
	} else if rep.OK {
		a.printf("ledger ok: %d events, frontier seq %d (%s)\n", rep.Events, rep.Frontier.Seq, rep.Frontier.Hash)
		if rep.Torn != nil {
			a.printf("torn last line at byte %d (%d bytes): repaired by the next acr run/step/recover\n", rep.Torn.Offset, rep.Torn.Length)
		}
		if rep.OpenCycle != 0 {
			a.printf("cycle %d is open at the end (interrupted): recovered by the next acr run/step/recover\n", rep.OpenCycle)
		}
	}
	if !rep.OK {
		if a.cfg.JSON {
			return &silentError{rep.Damage}
		}
		return rep.Damage
	}
	return nil
}
