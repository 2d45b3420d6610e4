package main

import (
	"context"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// verifyWholeLedger walks the ledger before recovery touches anything. A
// torn tail is not damage (recovery repairs it); anything else is.
func verifyWholeLedger(a *app) error {
	fsys, err := runstore.RequireRun(a.cfg.StateDir)
	if err != nil {
		return err
	}
	if _, err := dirstore.NewStore(fsys).ReadManifest(); err != nil {
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

// runRecover runs the recovery path and reports it: the manifest rebuilt
// if it is missing, the whole ledger verified, then the run opened, which
// repairs a torn tail and rolls forward what the ledger holds beyond the
// checkpoint.
func runRecover(ctx context.Context, opts recoverOptions, a *app) error {
	if a.cfg.NoLoadState {
		return noLoadState(a)
	}
	if a.nats() {
		return runRecoverRemote(ctx, a)
	}
	// A run whose manifest is gone gets it back first, if the
	// checkpoint files and the ledger allow it without guessing.
	opt, err := a.clock()
	if err != nil {
		return err
	}
	rebuilt, err := runstore.RebuildManifest(a.cfg.StateDir, opt)
	if err != nil {
		return err
	}
	if rebuilt != nil {
		a.log.Warn().Int64("cycle", rebuilt.CycleSeq).Int64("ledger_seq", rebuilt.Frontier.Seq).Msg("manifest.json was missing; rebuilt it")
		if !a.cfg.JSON {
			a.printf("rebuilt %s from the checkpoint of cycle %d (recorded at ledger seq %d) and the ledger\n",
				dirstore.ManifestName, rebuilt.CycleSeq, rebuilt.Frontier.Seq)
			if rebuilt.Kept != "" {
				a.printf("  %d checkpoint files that belong to no recorded checkpoint were kept in %s\n", len(rebuilt.Unused),
					filepath.Join(a.cfg.StateDir, filepath.FromSlash(rebuilt.Kept)))
			}
		}
	}
	// An explicit recover walks the whole chain first: it is the
	// operator's check, so O(history) is fine here.
	if err := verifyWholeLedger(a); err != nil {
		return err
	}
	return reportRecovery(ctx, a, rebuilt)
}

// runRecoverRemote recovers a run in a JetStream store: its records and
// checkpoint are stored whole or not at all, so there is no manifest to
// rebuild and no torn line to repair; the whole chain is walked, then the
// run is opened under its lease, which rolls forward what the ledger
// holds beyond the checkpoint.
func runRecoverRemote(ctx context.Context, a *app) error {
	h, err := a.history()
	if err != nil {
		return err
	}
	rep, err := h.Verify(nil)
	if err != nil {
		return err
	}
	if !rep.OK {
		return rep.Damage
	}
	return reportRecovery(ctx, a, nil)
}

// reportRecovery opens the run, which recovers it, and reports what the
// recovery did.
func reportRecovery(ctx context.Context, a *app, rebuilt *runstore.Rebuilt) error {
	r, err := a.openRun(ctx, slateOptions{})
	if err != nil {
		return err
	}
	rec := r.Driver.Recovery()
	if err := r.Close(); err != nil {
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
		a.printHint(r.Driver.State())
	}
	return nil
}
