package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/scenario"
)

// scenarioRunOptions are acr scenario run's flags and argument.
type scenarioRunOptions struct {
	// Scenario is a scenario's folder, or its name under Scenarios.
	Scenario  string
	Scenarios string `flag:"scenarios"`
	Keep      bool   `flag:"keep"`
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
			opts := scenarioRunOptions{Scenario: args[0]}
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runScenario(cmd.Context(), opts, a)
		},
	}
	run.Flags().String("scenarios", "scenarios", "folder of scenario folders")
	run.Flags().Bool("keep", false, "keep the state directory and print its path")
	run.Long += "\n" + exitStatusHelp
	cmd.AddCommand(run)
	return cmd
}

// runScenario runs one scenario in a fresh temporary state directory and
// checks it against its expectations.
func runScenario(ctx context.Context, opts scenarioRunOptions, a *app) error {
	nameOrDir, root, keep := opts.Scenario, opts.Scenarios, opts.Keep
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
