package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// nearest returns the candidate closest to what was typed: within two
// edits, or one that starts with it (a flag cut short). Ties go to the
// first in sorted order, so the suggestion does not depend on map order.
func nearest(typed string, candidates []string) string {
	// A short word is within two edits of too much: "x" is two edits
	// from "id". Allow one edit up to three letters, two from four.
	limit := 2
	if len(typed) <= 3 {
		limit = 1
	}
	best, bestDist := "", limit+1
	sorted := slices.Sorted(slices.Values(candidates))
	for _, c := range sorted {
		d := editDistance(strings.ToLower(typed), strings.ToLower(c))
		if d < bestDist {
			best, bestDist = c, d
		}
	}
	if best != "" || len(typed) < 2 {
		return best
	}
	for _, c := range sorted {
		if strings.HasPrefix(c, typed) {
			return c
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// flagError turns a flag parsing error into a usage error that points at
// help and, for an unknown flag, names the nearest flag of the command, or
// the command that has a flag of that exact name.
func flagError(c *cobra.Command, err error) error {
	path := c.CommandPath()
	var iv *pflag.InvalidValueError
	if errors.As(err, &iv) {
		// pflag's own text ends in strconv's ("strconv.ParseInt: parsing
		// "ten": invalid syntax"); say what the flag wants instead.
		want := "want a " + iv.GetFlag().Value.Type()
		if _, terr := typed(iv.GetFlag(), iv.GetValue()); terr != nil {
			want = terr.Error()
		}
		return usagef("--%s %q: %s (see %s --help)", iv.GetFlag().Name, iv.GetValue(), want, path)
	}
	var ne *pflag.NotExistError
	if errors.As(err, &ne) && ne.GetSpecifiedShortnames() == "" && len(ne.GetSpecifiedName()) > 1 {
		name := ne.GetSpecifiedName()
		var names []string
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.InheritedFlags()} {
			fs.VisitAll(func(f *pflag.Flag) {
				if !f.Hidden {
					names = append(names, f.Name)
				}
			})
		}
		if s := nearest(name, names); s != "" {
			return usagef("%v; did you mean --%s? (see %s --help)", err, s, path)
		}
		if owner := flagOwner(c.Root(), name); owner != "" {
			return usagef("%v for %s; it is a flag of %s (see %s --help)", err, path, owner, owner)
		}
	}
	return usagef("%v (see %s --help)", err, path)
}

// flagOwner returns the path of a command that defines a flag named name.
func flagOwner(root *cobra.Command, name string) string {
	owner := ""
	walkCommands(root, func(c *cobra.Command) {
		if owner == "" && c.LocalNonPersistentFlags().Lookup(name) != nil {
			owner = c.CommandPath()
		}
	})
	return owner
}

// groupArgs is the Args check of a command that only groups subcommands
// (acr, acr ledger, acr config, acr scenario): anything but a subcommand
// is a usage error that names the nearest one.
func groupArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	var names []string
	for _, s := range cmd.Commands() {
		if s.IsAvailableCommand() {
			names = append(names, s.Name())
		}
	}
	msg := fmt.Sprintf("unknown command %q", args[0])
	if cmd.HasParent() {
		msg += fmt.Sprintf(" for %q", cmd.CommandPath())
	}
	if s := nearest(args[0], names); s != "" {
		msg += fmt.Sprintf("; did you mean %q?", s)
	}
	return usagef("%s (see %s --help)", msg, cmd.CommandPath())
}

// walkCommands calls fn for c and every command below it, in tree order.
func walkCommands(c *cobra.Command, fn func(*cobra.Command)) {
	fn(c)
	for _, s := range c.Commands() {
		walkCommands(s, fn)
	}
}
