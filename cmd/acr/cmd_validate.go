package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/validate"
)

// errValidation marks a validation or scenario whose checks failed.
var errValidation = errors.New("validation failed")

// validateOptions are acr validate's flags.
type validateOptions struct {
	Scenarios string `flag:"scenarios"`
	Out       string `flag:"out"`
	Freeze    bool   `flag:"freeze"`
}

func newValidateCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Run every reference scenario twice and evaluate gates A-U",
		Long: `Run every scenario under --scenarios twice, each in a fresh temporary state
directory with deterministic providers, evaluate the Phase-12 gates A-T and
acr's gate U (every stop source) against the evidence (ledgers, final
states, fingerprints), and write
PHASE12_VALIDATION.md and release-manifest.json into --out. Each gate is
PASS, FAIL or INCONCLUSIVE (evidence missing; never counted as a pass).
Gate P compares the schemas, the format-defining sources and the shapes of
the recorded objects with the frozen hashes in --out/release-manifest.json;
--freeze (make release-manifest) records the current ones on purpose and
freezes every scenario's fingerprints into its scenario.json.
Exit status 0 only if no gate FAILs and every scenario meets its own
expectations (a scenario that fails them makes the verdict FAIL).`,
		Example: `  acr validate
  acr validate --json | jq .gates
  acr validate --freeze        # after an intended change: make release-manifest`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts validateOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runValidate(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().String("scenarios", "scenarios", "folder of scenario folders")
	cmd.Flags().String("out", "docs", "where to write PHASE12_VALIDATION.md and release-manifest.json (and read the frozen manifest from)")
	cmd.Flags().Bool("freeze", false, "record the current hashes and scenario fingerprints as the frozen reference")
	return cmd
}

// scenarioFolder refuses a --scenarios that is not a folder, as the usage
// error it is, before anything is run or written.
func scenarioFolder(dir string) error {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return usagef("--scenarios %s: no such folder (give the folder that holds the scenario folders, e.g. --scenarios scenarios)", dir)
	case err != nil:
		return err
	case !fi.IsDir():
		return usagef("--scenarios %s: not a folder", dir)
	}
	return nil
}

// runValidate runs every scenario twice, evaluates the gates and writes
// the report and the release manifest.
func runValidate(ctx context.Context, opts validateOptions, a *app) error {
	scenarios, out, freeze := opts.Scenarios, opts.Out, opts.Freeze
	if err := scenarioFolder(scenarios); err != nil {
		return err
	}
	manifestPath := filepath.Join(out, "release-manifest.json")
	collect := validate.Options{Scenarios: scenarios, Root: ".", Manifest: manifestPath}
	if freeze {
		// Freeze the scenario fingerprints, then validate again so that the
		// report describes the frozen state rather than the old one.
		ev, cleanup, err := validate.Collect(collect)
		if err != nil {
			return err
		}
		err = validate.FreezeScenarios(scenarios, ev)
		cleanup()
		if err != nil {
			return err
		}
	}
	ev, cleanup, err := validate.Collect(collect)
	if err != nil {
		return err
	}
	defer cleanup()
	frozen := ev.Freeze.Current
	if freeze {
		// Record the current hashes first, then check against them, so
		// that gate P reports what was frozen.
		if err := validate.WriteOutputs(out, ev, validate.Evaluate(ev), validate.BuildManifest(ev, validate.Evaluate(ev), frozen)); err != nil {
			return err
		}
		ev.Freeze = validate.CheckFreeze(".", manifestPath)
	} else if m, err := validate.ReadManifest(manifestPath); err == nil {
		frozen = m.Freeze
	}
	rep := validate.Evaluate(ev)
	if err := validate.WriteOutputs(out, ev, rep, validate.BuildManifest(ev, rep, frozen)); err != nil {
		return err
	}
	if a.cfg.JSON {
		a.printJSON(rep)
	} else {
		for _, g := range rep.Details {
			a.printf("%s  %-36s %-12s %s\n", g.ID, g.Name, g.Verdict, firstOr(g.Evidence))
		}
		for _, name := range rep.FailedScenarios {
			a.printf("scenario %s failed: %s\n", name, firstOr(rep.Scenarios[name].Failures))
		}
		a.printf("verdict %s; wrote %s and %s\n", rep.Verdict, filepath.Join(out, "PHASE12_VALIDATION.md"), manifestPath)
	}
	if rep.Verdict != validate.Fail {
		return nil
	}
	var why []string
	for _, g := range rep.Details {
		if g.Verdict == validate.Fail {
			why = append(why, fmt.Sprintf("gate %s (%s): %s", g.ID, g.Name, strings.Join(g.Evidence, "; ")))
		}
	}
	for _, name := range rep.FailedScenarios {
		why = append(why, fmt.Sprintf("scenario %s: %s", name, strings.Join(rep.Scenarios[name].Failures, "; ")))
	}
	err = fmt.Errorf("%w: %s", errValidation, strings.Join(why, "; "))
	if a.cfg.JSON {
		return &silentError{err}
	}
	return err
}

func firstOr(xs []string) string {
	if len(xs) == 0 {
		return ""
	}
	return xs[0]
}
