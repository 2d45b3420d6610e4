package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/scenario"
	"github.com/acr-project/acr/internal/validate"
)

// errValidation marks a validation or scenario whose checks failed.
var errValidation = errors.New("validation failed")

func newValidateCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "validate",
		Short: "Run every reference scenario twice and evaluate gates A-T",
		Long: `Run every scenario under --scenarios twice, each in a fresh temporary state
directory with deterministic providers, evaluate the Phase-12 gates A-T
against the evidence (ledgers, final states, fingerprints), and write
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
			return runValidate(a, a.v.GetString("scenarios"), a.v.GetString("out"), a.v.GetBool("freeze"))
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

func runValidate(a *app, scenarios, out string, freeze bool) error {
	if err := scenarioFolder(scenarios); err != nil {
		return err
	}
	manifestPath := filepath.Join(out, "release-manifest.json")
	opts := validate.Options{Scenarios: scenarios, Root: ".", Manifest: manifestPath}
	if freeze {
		// Freeze the scenario fingerprints, then validate again so that the
		// report describes the frozen state rather than the old one.
		ev, cleanup, err := validate.Collect(opts)
		if err != nil {
			return err
		}
		err = validate.FreezeScenarios(scenarios, ev)
		cleanup()
		if err != nil {
			return err
		}
	}
	ev, cleanup, err := validate.Collect(opts)
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

func newScenarioCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "scenario",
		Short: "Run reference scenarios",
		Long: `Commands on the reference scenarios: folders with a goal, a contract, an
environment and a scenario.json of steps and expectations (docs/scenarios.md).`,
		Example: `  acr scenario run p01-bootstrap
  acr scenario run p05-approval-escalation --keep`,
		Args: groupArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	run := &cobra.Command{
		Use:   "run NAME|DIR",
		Short: "Run one scenario in a fresh temporary state directory and check it",
		Long: `Run one scenario (a folder with goal.json, contract.json, environment.json and
scenario.json; NAME is looked up under --scenarios) in a fresh temporary state
directory with deterministic providers, and compare the outcome with its
expectations and frozen fingerprints. --keep leaves the state directory
behind so that acr status, log and audit can look at it.`,
		Example: `  acr scenario run p05-approval-escalation
  acr scenario run ./my-scenario --keep --json`,
		Args: exactArgs(1, "one scenario NAME or DIR"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runScenario(a, args[0], a.v.GetString("scenarios"), a.v.GetBool("keep"))
		},
	}
	run.Flags().String("scenarios", "scenarios", "folder of scenario folders")
	run.Flags().Bool("keep", false, "keep the state directory and print its path")
	run.Long += "\n" + exitStatusHelp
	cmd.AddCommand(run)
	return cmd
}

func runScenario(a *app, nameOrDir, root string, keep bool) error {
	dir := nameOrDir
	if _, err := os.Stat(filepath.Join(dir, "scenario.json")); err != nil {
		if err := scenarioFolder(root); err != nil {
			var ue *usageError
			if errors.As(err, &ue) {
				return usagef("no scenario %q: %v", nameOrDir, err)
			}
			return err
		}
		dir = filepath.Join(root, nameOrDir)
		if _, err := os.Stat(filepath.Join(dir, "scenario.json")); err != nil {
			return usagef("no scenario %q %s", nameOrDir, whereScenarios(root))
		}
	}
	sc, err := scenario.Load(dir)
	if err != nil {
		return err
	}
	res, err := scenario.Run(sc, scenario.Options{Keep: keep})
	if err != nil {
		return err
	}
	if a.cfg.JSON {
		a.printJSON(res)
	} else {
		a.printf("%s: %s, %d cycles, final %s\n", res.Name, map[bool]string{true: "PASS", false: "FAIL"}[res.Passed], res.Cycles, res.FinalDisposition)
		a.printf("  history %s\n  world   %s\n", res.Fingerprints.History, res.Fingerprints.World)
		for _, f := range res.Failures {
			a.printf("  failed: %s\n", f)
		}
		if keep {
			a.printf("  state directory kept at %s\n", res.Dir)
		}
	}
	if !res.Passed {
		err := fmt.Errorf("%w: scenario %s: %s", errValidation, res.Name, strings.Join(res.Failures, "; "))
		if a.cfg.JSON {
			return &silentError{err}
		}
		return err
	}
	return nil
}

// whereScenarios says what the scenarios folder (which exists) holds, for
// the message about a scenario name that is not there: the names it knows,
// or that it is empty and how to point at another.
func whereScenarios(root string) string {
	names, err := scenarioNames(root)
	switch {
	case err != nil:
		return fmt.Sprintf("(%v)", err)
	case len(names) == 0:
		return fmt.Sprintf("(the scenarios folder %q holds no scenario: a scenario is a folder with a scenario.json; give --scenarios DIR or the scenario's own DIR)", root)
	}
	return fmt.Sprintf("(known under %s: %s)", root, strings.Join(names, ", "))
}

// scenarioNames lists the scenario folders under root, sorted.
func scenarioNames(root string) ([]string, error) {
	known, err := scenario.Discover(root)
	if err != nil {
		return nil, fmt.Errorf("list scenarios in %s: %w", root, err)
	}
	var names []string
	for _, k := range known {
		names = append(names, filepath.Base(k))
	}
	slices.Sort(names)
	return names, nil
}
