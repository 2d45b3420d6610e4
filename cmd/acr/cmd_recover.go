package main

import (
	"context"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
)

// recoverOptions are acr recover's flags: it has none of its own.
type recoverOptions struct{}

func newRecoverCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Check the checkpoint and ledger and bring the run to a safe boundary",
		Long: `Run the recovery path that every step and run runs first, and report it:
validate every checkpoint file against the manifest, verify the ledger
frontier from its tail (here the whole chain is walked first), repair a torn
last ledger line (keeping a .broken copy), and roll forward any cycle the ledger holds beyond the checkpoint from
its recorded inputs: an effect whose idempotency key is already committed is
reused, never applied again. Integrity failures exit 65 and change nothing.
A run whose manifest.json is missing gets it rebuilt first, from the newest
set of checkpoint files that the ledger recorded as a checkpoint (files that
fit no such checkpoint are kept under archive/, never deleted); without such
a set it exits 65. An init that was cut off while swapping a new run in is
finished.`,
		Example: `  acr recover
  acr recover --json | jq .classification`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runRecover(cmd.Context(), recoverOptions{}, a) },
	}
}

// runRecover runs the recovery path and reports it: what the store can
// rebuild without guessing (a state directory's lost manifest), the whole
// history verified, then the run opened, which repairs a torn tail and
// rolls forward what the ledger holds beyond the checkpoint.
func runRecover(ctx context.Context, opts recoverOptions, a *app) error {
	if a.cfg.NoLoadState {
		return noLoadState(a)
	}
	opt, err := a.clock()
	if err != nil {
		return err
	}
	rs, err := a.run(ctx)
	if err != nil {
		return err
	}
	rec, rebuilt, st, err := rs.Recover(ctx, holder("recover", ""), opt)
	if rebuilt != nil {
		a.log.Warn().Int64("cycle", rebuilt.CycleSeq).Int64("ledger_seq", rebuilt.Frontier.Seq).Msg("the manifest was missing; rebuilt it")
		if !a.cfg.JSON {
			a.printf("rebuilt manifest.json from the checkpoint of cycle %d (recorded at ledger seq %d) and the ledger\n",
				rebuilt.CycleSeq, rebuilt.Frontier.Seq)
			if rebuilt.Kept != "" {
				a.printf("  %d checkpoint files that belong to no recorded checkpoint were kept in %s\n", len(rebuilt.Unused),
					filepath.Join(a.cfg.StateDir, filepath.FromSlash(rebuilt.Kept)))
			}
		}
	}
	if err != nil {
		return err
	}
	var out any = rec
	if rebuilt != nil {
		out = struct {
			kernel.Recovery
			Rebuilt *runstore.Rebuilt `json:"manifest_rebuilt"`
		}{rec, rebuilt}
	}
	a.report(out, "recovered: %t, classification: %s, cycles rolled forward: %d, actions reused: %d, ledger repaired: %t\n",
		rec.Recovered, rec.Classification, rec.CyclesRolledForward, rec.ActionsReused, rec.LedgerRepaired)
	if !a.cfg.JSON {
		a.printHint(st)
	}
	return nil
}
