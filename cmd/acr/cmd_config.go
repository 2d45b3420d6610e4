package main

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
)

func newConfigCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "config",
		Short: "Inspect acr's configuration",
		Long: `Commands about acr's own configuration: the flags, ACR_* environment
variables and the acr.yaml file that together set every option.`,
		Example: `  acr config show`,
		Args:    groupArgs,
		RunE:    func(cmd *cobra.Command, args []string) error { return cmd.Help() },
	}
	show := &cobra.Command{
		Use:   "show",
		Short: "Print the effective configuration and where each value comes from",
		Long: `Print every setting acr knows, its effective value, and where that value
comes from: a flag on this command line, an environment variable
(ACR_<NAME>, dashes as underscores), the configuration file (--config,
ACR_CONFIG, else ./acr.yaml if present), or the built-in default. A
setting used only by some commands names them. Values from the environment
or the file that a flag would refuse are reported as usage errors by every
command, this one included.`,
		Example: `  acr config show
  ACR_MAX_CYCLES=50 acr config show
  acr config show --json | jq '.settings[] | select(.source != "default")'`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return runConfigShow(cmd.Context(), configShowOptions{Cmd: cmd}, a)
		},
	}
	cmd.AddCommand(show)
	return cmd
}

// configShowOptions name the command line whose settings are shown: its
// flags, and the tree of every command's flags.
type configShowOptions struct {
	Cmd *cobra.Command
}

// runConfigShow prints every setting, its effective value and its source.
func runConfigShow(ctx context.Context, opts configShowOptions, a *app) error {
	cmd := opts.Cmd
	specs := settingSpecs(cmd.Root())
	keys := make([]string, 0, len(specs))
	for k := range specs {
		keys = append(keys, k)
	}
	// The global settings first, then the per-command ones, each sorted.
	slices.SortFunc(keys, func(x, y string) int {
		if gx, gy := specs[x].global, specs[y].global; gx != gy {
			if gx {
				return -1
			}
			return 1
		}
		return strings.Compare(x, y)
	})
	rows := make([]setting, 0, len(keys))
	for _, k := range keys {
		rows = append(rows, a.settingOf(cmd, k, specs[k]))
	}
	if a.cfg.JSON {
		a.printJSON(map[string]any{"config_file": a.cfg.ConfigFile, "settings": rows})
		return nil
	}
	if a.cfg.ConfigFile == "" {
		a.printf("config file: none (no --config or ACR_CONFIG, and no acr.yaml in the working directory)\n\n")
	} else {
		a.printf("config file: %s\n\n", a.cfg.ConfigFile)
	}
	tw := tabwriter.NewWriter(a.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SETTING\tVALUE\tSOURCE\tUSED BY")
	for _, r := range rows {
		src := r.Source
		if r.From != "" && r.Source != "flag" {
			src += " " + r.From
		}
		used := "every command"
		if len(r.Commands) > 0 {
			used = strings.Join(r.Commands, ", ")
		}
		// Quote a value that would not read as one word in the table.
		val := fmt.Sprint(r.Value)
		if val == "" || strings.ContainsAny(val, " \t") {
			val = strconv.Quote(val)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", r.Key, val, src, used)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write configuration: %w", err)
	}
	return nil
}
