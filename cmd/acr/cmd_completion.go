package main

import (
	"context"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/state"
)

// newCompletionCommand replaces cobra's default completion command, which
// acr disables, with one whose help says how to install the script. The
// install lines are indented by four spaces so that the man page, which
// reads the description as markdown, keeps them as a block.
func newCompletionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish",
		Short: "Print a shell completion script",
		Long: `Print the completion script for bash, zsh or fish on stdout. Besides
commands and flags it completes the refs of pending approvals after acr
approve and acr deny (read from the state directory given on the same
line, or the configured one), wake sources after --signal, scenario names
after acr scenario run, and the values of --format and --log-level.

Install it once:

    bash  needs the bash-completion package (version 2);
          acr completion bash > /etc/bash_completion.d/acr
          or, for one user, in ~/.bashrc: source <(acr completion bash)
    zsh   acr completion zsh > "${fpath[1]}/_acr"
          (compinit must be enabled: autoload -U compinit; compinit)
    fish  acr completion fish > ~/.config/fish/completions/acr.fish

Open a new shell afterwards.`,
		Example: `  acr completion bash > /etc/bash_completion.d/acr
  source <(acr completion bash)
  acr completion zsh > "${fpath[1]}/_acr"
  acr completion fish > ~/.config/fish/completions/acr.fish`,
		ValidArgs: []string{"bash", "zsh", "fish"},
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) != 1 || !strings.Contains(" bash zsh fish ", " "+args[0]+" ") {
				return usagef("completion takes one shell: bash, zsh or fish (see acr completion --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return runCompletion(cmd.Context(), completionOptions{Shell: args[0], Root: cmd.Root()}, a)
		},
	}
}

// completionOptions are acr completion's argument, and the command tree to
// complete.
type completionOptions struct {
	Shell string // bash, zsh or fish
	Root  *cobra.Command
}

// runCompletion prints the completion script for opts.Shell.
func runCompletion(ctx context.Context, opts completionOptions, a *app) error {
	switch opts.Shell {
	case "bash":
		return opts.Root.GenBashCompletionV2(a.stdout, true)
	case "zsh":
		return opts.Root.GenZshCompletion(a.stdout)
	}
	return opts.Root.GenFishCompletion(a.stdout, true)
}

// addCompletions registers the completions that need to know acr's data:
// flag values and the arguments that name something in the state
// directory or the scenario folder. A command that registered its own
// completion for a flag keeps it.
func addCompletions(a *app, root *cobra.Command) error {
	type completer = func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective)
	fixed := func(vals ...string) completer {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return vals, cobra.ShellCompDirectiveNoFileComp
		}
	}
	files := func(exts ...string) completer {
		return func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
			return exts, cobra.ShellCompDirectiveFilterFileExt
		}
	}
	dirs := func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	var err error
	register := func(c *cobra.Command, name string, fn completer) {
		if c.Flag(name) == nil {
			return
		}
		if _, taken := c.GetFlagCompletionFunc(name); !taken {
			err = firstErr(err, c.RegisterFlagCompletionFunc(name, fn))
		}
	}
	register(root, "log-level", fixed("debug", "info", "warn", "error"))
	register(root, "state-dir", dirs)
	register(root, "config", files("yaml", "yml"))
	// Per command, by path: the same flag name can mean a file in one
	// command and a directory in another.
	perCommand := map[string]map[string]completer{
		"acr init":         {"goal": files("json"), "contract": files("json"), "env": files("json")},
		"acr wake":         {"payload": files("json"), "signal": fixed(state.WakeSources()...)},
		"acr audit":        {"format": fixed("text", "json", "dot")},
		"acr report":       {"axis": fixed("cycle", "time")},
		"acr validate":     {"out": dirs, "scenarios": dirs},
		"acr scenario run": {"scenarios": dirs},
		"acr man":          {"dir": dirs},
	}
	walkCommands(root, func(c *cobra.Command) {
		for name, fn := range perCommand[c.CommandPath()] {
			register(c, name, fn)
		}
		switch c.CommandPath() {
		case "acr approve", "acr deny", "acr resolve":
			c.ValidArgsFunction = a.completePendingRefs
		case "acr scenario run":
			c.ValidArgsFunction = a.completeScenarios
		}
	})
	return err
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}

// completePendingRefs offers the refs of the approvals the run waits for,
// each described by its operation and target. The state directory is
// looked up again here: flags on the line being completed are parsed
// after acr's configuration was read.
func (a *app) completePendingRefs(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	a.cfg.Store, a.cfg.StateDir = a.v.GetString("store"), a.v.GetString("state-dir")
	if err := a.resolveStore(); err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	rs, err := a.readState()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var refs []string
	for _, p := range rs.State.Run.PendingApprovals {
		if p.Resolution == nil && strings.HasPrefix(string(p.Ref), toComplete) {
			refs = append(refs, string(p.Ref)+"\t"+p.Operation+" "+p.Target)
		}
	}
	return refs, cobra.ShellCompDirectiveNoFileComp
}

// completeScenarios offers the scenario folders under --scenarios, and
// directories, since a scenario can also be given by its path.
func (a *app) completeScenarios(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	dir := "scenarios"
	if f := cmd.Flag("scenarios"); f != nil {
		dir = f.Value.String()
		if !f.Changed && a.v.IsSet("scenarios") {
			dir = a.v.GetString("scenarios")
		}
	}
	names, err := scenarioNames(dir)
	if err != nil {
		return nil, cobra.ShellCompDirectiveFilterDirs
	}
	var match []string
	for _, n := range names {
		if strings.HasPrefix(n, toComplete) {
			match = append(match, n)
		}
	}
	return match, cobra.ShellCompDirectiveFilterDirs
}
