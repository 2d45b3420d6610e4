package main

import (
	"github.com/spf13/cobra"
)

func newRecoverCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Check the checkpoint and ledger and bring the run to a safe boundary",
		Long: `Run the recovery path that every step and run runs first, and report it:
validate every checkpoint file against the manifest, verify the ledger
frontier from its tail, repair a torn last ledger line (keeping a .broken
copy), and roll forward any cycle the ledger holds beyond the checkpoint from
its recorded inputs: an effect whose idempotency key is already committed is
reused, never applied again. Integrity failures exit 65 and change nothing.`,
		Example: `  acr recover
  acr recover --json | jq .classification`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			r, err := a.openRun()
			if err != nil {
				return err
			}
			rec := r.Driver.Recovery()
			if err := r.Close(); err != nil {
				return err
			}
			a.report(rec, "recovered: %t, classification: %s, cycles rolled forward: %d, actions reused: %d, ledger repaired: %t\n",
				rec.Recovered, rec.Classification, rec.CyclesRolledForward, rec.ActionsReused, rec.LedgerRepaired)
			return nil
		},
	}
}
