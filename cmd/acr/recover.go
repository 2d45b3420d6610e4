package main

import (
	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// verifyWholeLedger walks the ledger before recovery touches anything. A
// torn tail is not damage (recovery repairs it); anything else is.
func verifyWholeLedger(a *app) error {
	if a.cfg.NoLoadState {
		return state.ErrNoRun
	}
	fsys, err := disk.OpenOSDir(a.cfg.StateDir)
	if err != nil {
		return state.ErrNoRun
	}
	if _, err := state.NewStore(fsys).ReadManifest(); err != nil {
		return err
	}
	rep, err := ledger.Verify(fsys, nil)
	if ledger.IsNotExist(err) {
		return &state.IntegrityError{File: ledger.FileName, Msg: "the ledger is missing"}
	}
	if err != nil {
		return err
	}
	if !rep.OK {
		return rep.Damage
	}
	return nil
}

func newRecoverCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "recover",
		Short: "Check the checkpoint and ledger and bring the run to a safe boundary",
		Long: `Run the recovery path that every step and run runs first, and report it:
validate every checkpoint file against the manifest, verify the ledger
frontier from its tail (here the whole chain is walked first), repair a torn
last ledger line (keeping a .broken copy), and roll forward any cycle the ledger holds beyond the checkpoint from
its recorded inputs: an effect whose idempotency key is already committed is
reused, never applied again. Integrity failures exit 65 and change nothing.`,
		Example: `  acr recover
  acr recover --json | jq .classification`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// An explicit recover walks the whole chain first: it is the
			// operator's check, so O(history) is fine here.
			if err := verifyWholeLedger(a); err != nil {
				return err
			}
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
			if !a.cfg.JSON {
				a.printHint(r.Driver.State())
			}
			return nil
		},
	}
}
