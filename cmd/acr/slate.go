package main

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/runstore"
)

// A clean slate (--no-load-state, ADR-0146): the command starts from no
// engine state at all. The state directory is neither read nor written;
// the run lives in memory, its sandbox world in a temporary directory that
// is removed when the command ends, and nothing of it is kept. It is for
// debugging and testing ("what would a fresh run of these inputs do?"), so
// init, step and run take the inputs of the slate as --goal, --contract and
// --env, and status reports the slate instead of the directory.

// addSlateFlags gives step and run the inputs of a clean slate.
func addSlateFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("goal", "", "with --no-load-state: goal document of the clean slate")
	f.String("contract", "", "with --no-load-state: contract document of the clean slate")
	f.String("env", "", "with --no-load-state: environment document of the clean slate")
}

// slateOptions are the inputs of a clean slate, which step and run take
// as --goal, --contract and --env.
type slateOptions struct {
	Goal     string `flag:"goal"`
	Contract string `flag:"contract"`
	Env      string `flag:"env"`
}

// slateInputs reads the inputs of a clean slate.
func slateInputs(o slateOptions) (runstore.Inputs, error) {
	if o.Goal == "" || o.Contract == "" || o.Env == "" {
		return runstore.Inputs{}, usagef("--no-load-state starts from a clean slate in memory: give it --goal, --contract and --env")
	}
	return runstore.ReadInputs(o.Goal, o.Contract, o.Env)
}

// newSlate initialises a run from in on a clean slate and returns the
// in-memory file system and the world directory it lives in.
func (a *app) newSlate(in runstore.Inputs, runID string) (disk.FS, string, runstore.Options, error) {
	if in.Spec.Root != "" {
		// A clean slate writes nothing, and a run changes its world: a
		// real directory cannot be its world.
		return nil, "", runstore.Options{}, usagef("--no-load-state writes nothing, but this environment makes %s the world a run changes; use an environment that lists its files, or one whose root is a copy", in.Spec.Root)
	}
	opt, err := a.clock()
	if err != nil {
		return nil, "", opt, err
	}
	dir, err := os.MkdirTemp("", "acr-clean-slate-")
	if err != nil {
		return nil, "", opt, err
	}
	a.discard = append(a.discard, func() { _ = os.RemoveAll(dir) })
	world := dir
	fsys := disk.NewMem()
	if _, err := runstore.InitOn(fsys, world, in, runID, opt); err != nil {
		return nil, "", opt, err
	}
	return fsys, world, opt, nil
}

// cleanSlate opens a fresh run on a clean slate, for step and run.
func (a *app) cleanSlate(slate slateOptions) (*runstore.Run, error) {
	in, err := slateInputs(slate)
	if err != nil {
		return nil, err
	}
	fsys, world, opt, err := a.newSlate(in, "")
	if err != nil {
		return nil, err
	}
	a.log.Info().Msg("clean slate: the state directory is neither read nor written; the run is discarded at exit")
	return runstore.OpenOn(fsys, world, opt, nil)
}

// runInitSlate is acr init --no-load-state: the inputs are validated and a
// run initialised in memory, then discarded.
func runInitSlate(opts initOptions, a *app) error {
	in, err := runstore.ReadInputs(opts.Goal, opts.Contract, opts.Env)
	if err != nil {
		return err
	}
	_, _, _, err = a.newSlate(in, opts.RunID)
	if err != nil {
		return err
	}
	if a.cfg.JSON {
		a.printJSON(map[string]any{"clean_slate": true, "written": false})
		return nil
	}
	a.printf("clean slate: the inputs are valid and a run initialised in memory; nothing was written (--no-load-state)\n")
	return nil
}

// runStatusSlate is acr status --no-load-state.
func runStatusSlate(a *app) error {
	if a.cfg.JSON {
		a.printJSON(map[string]any{"clean_slate": true, "state_dir_read": false})
		return nil
	}
	a.printf("clean slate (--no-load-state): no engine state loaded; %s is neither read nor written\n", a.cfg.StateDir)
	return nil
}
