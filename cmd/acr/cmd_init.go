package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/world"
)

// initOptions are acr init's flags.
type initOptions struct {
	Goal     string `flag:"goal"`
	Contract string `flag:"contract"`
	Env      string `flag:"env"`
	RunID    string `flag:"run-id"`
	// Label names the workers that may run the run (the environment's
	// label; acr worker --label).
	Label string `flag:"label"`
	// Force replaces an existing run; it is taken only from the command
	// line (newInitCommand refuses it from ACR_FORCE or acr.yaml).
	Force bool `flag:"force"`
}

func newInitCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "init --goal FILE --contract FILE --env FILE",
		Short: "Create a run from a goal, a contract and an initial environment",
		Long: `Create a run in the state directory. The three documents are validated
(docs/formats.md and the JSON Schemas in docs/schemas/); the goal and the
contract are pinned by ref for the lifetime of the run, the sandbox world is
created from the environment, and the first checkpoint is written.
The new run is built complete beside the old one and swapped in only
at the end, so a failed init leaves the state directory exactly as it was
(and removes it again if init created it). An existing run, or what is left
of a damaged one, is never replaced unless --force is given on the command
line (never from ACR_FORCE or acr.yaml); then the old run is moved, whole,
to archive/<time>/ inside the state directory, and init says where.`,
		Example: `  acr init --goal scenarios/quickstart/goal.json \
           --contract scenarios/quickstart/contract.json \
           --env scenarios/quickstart/environment.json`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts initOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			if opts.Force && !cmd.Flags().Changed("force") {
				return usagef("--force must be given on the command line: replacing a run is never taken from ACR_FORCE or a configuration file")
			}
			return runInit(cmd.Context(), opts, a)
		},
	}
	f := cmd.Flags()
	f.String("goal", "", "goal document (acr.goal/v0.1)")
	f.String("contract", "", "contract document (acr.contract/v0.1)")
	f.String("env", "", "initial environment document (acr.environment/v0.1)")
	f.String("label", "", "only acr worker --label with this label runs the run (sets the environment's label)")
	f.Bool("force", false, "replace an existing run, archiving it under archive/ in the state directory (command line only)")
	return cmd
}

// runInit creates a run in the state directory (or, with --no-load-state,
// in memory, to be discarded).
func runInit(ctx context.Context, opts initOptions, a *app) error {
	for _, f := range []struct{ name, val string }{{"--goal", opts.Goal}, {"--contract", opts.Contract}, {"--env", opts.Env}} {
		if f.val == "" {
			return usagef("init needs %s FILE (see acr init --help)", f.name)
		}
	}
	if a.cfg.NoLoadState {
		return runInitSlate(ctx, opts, a)
	}
	if opts.Label != "" && !world.ValidLabel(opts.Label) {
		return usagef("--label %q: letters, digits, '.', '_' and '-', starting with a letter or digit, at most 64", opts.Label)
	}
	in, err := runstore.ReadInputs(opts.Goal, opts.Contract, opts.Env)
	if err != nil {
		return err
	}
	if opts.Label != "" {
		in.Spec.Label = opts.Label
	}
	var warnings []string
	for _, w := range in.Warnings {
		// A path in a directory world that names no file yet: the
		// directory may get it later, so init goes on, and says so.
		warnings = append(warnings, w.Error())
		fmt.Fprintf(a.stderr, "acr: warning: %v (the directory may get it later; init goes on)\n", w)
	}
	opt, err := a.clock()
	if err != nil {
		return err
	}
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	rs, err := s.Run(ctx, opts.RunID)
	if err != nil {
		return err
	}
	c, err := rs.Init(ctx, in, opts.Force, opt)
	if err != nil {
		return err
	}
	st := c.State
	archive := ""
	if c.Archive != "" {
		archive = filepath.Join(a.cfg.StateDir, filepath.FromSlash(c.Archive))
		a.log.Info().Str("archive", archive).Msg("previous run archived")
	}
	a.log.Info().Str("run_id", st.Run.RunID).Str("store", a.cfg.Store).Msg("run initialised")
	if a.cfg.JSON {
		out := map[string]any{"run_id": st.Run.RunID, "store": a.cfg.Store, "state_dir": a.cfg.StateDir, "world": c.World, "goal_ref": st.Run.GoalRefs[0],
			"contract_ref": st.Run.ContractRef, "authority_ref": st.Run.AuthorityRef, "environment_ref": st.Run.EnvironmentRef,
			"loop_disposition": st.Run.LoopDisposition, "label": in.Spec.Label}
		if archive != "" {
			out["archived_previous_run"] = archive
		}
		if len(warnings) > 0 {
			out["warnings"] = warnings
		}
		a.printJSON(out)
		return nil
	}
	if archive != "" {
		what := "ledger, checkpoint, world"
		if in.Spec.Root != "" {
			what = "ledger, checkpoint; the directory it looked after stays where it is"
		}
		if in.Spec.Git != nil {
			what = "ledger, checkpoint; its branch stays on the remote"
		}
		a.printf("archived the previous run (%s) in %s\n  read it with: acr --state-dir %s log\n", what, archive, archive)
	}
	_, worldWhat := rs.WorldPlace(in.Spec)
	next := strings.Join(strings.Fields("acr "+s.Flags(st.Run.RunID)+" run --max-cycles 20"), " ")
	a.printf("initialised run %s in %s\n  goal      %s (%s)\n  contract  %s (%s)\n  world     %s\n  checks    %d, failing now: %d\nnext: %s\n",
		st.Run.RunID, rs.Where(), in.Goal.ID, st.Run.GoalRefs[0].Short(), in.Contract.ID, st.Run.ContractRef.Short(),
		worldWhat, len(in.Spec.Checks), failing(st.Environment.Checks), next)
	return nil
}
