package main

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

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

// newSlate initialises a run from in on a clean slate, discarded when
// the command is done.
func (a *app) newSlate(ctx context.Context, in runstore.Inputs, runID string) (*runstore.Slate, error) {
	opt, err := a.clock()
	if err != nil {
		return nil, err
	}
	s, err := runstore.NewSlate(ctx, in, runID, opt)
	if errors.Is(err, runstore.ErrSlateRoot) {
		return nil, usagef("--no-load-state: %v", err)
	}
	if err != nil {
		return nil, err
	}
	a.discard = append(a.discard, s.Discard)
	return s, nil
}

// cleanSlate opens a fresh run on a clean slate, for step and run.
func (a *app) cleanSlate(ctx context.Context, slate slateOptions) (*runstore.Run, error) {
	in, err := slateInputs(slate)
	if err != nil {
		return nil, err
	}
	s, err := a.newSlate(ctx, in, "")
	if err != nil {
		return nil, err
	}
	a.log.Info().Msg("clean slate: the state directory is neither read nor written; the run is discarded at exit")
	return s.Open(ctx)
}

// runInitSlate is acr init --no-load-state: the inputs are validated and a
// run initialised in memory, then discarded.
func runInitSlate(ctx context.Context, opts initOptions, a *app) error {
	in, err := runstore.ReadInputs(opts.Goal, opts.Contract, opts.Env)
	if err != nil {
		return err
	}
	_, err = a.newSlate(ctx, in, opts.RunID)
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
