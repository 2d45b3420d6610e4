package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/spf13/pflag"
)

// manOptions are acr man's flags, and the command tree to document.
type manOptions struct {
	Dir  string `flag:"dir"`
	Root *cobra.Command
}

func newManCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "man --dir DIR",
		Short: "Write a man page for every command into DIR",
		Long: `Write one man page (section 1) per command into DIR, generated from the same
command tree as --help: acr.1, acr-run.1, acr-ledger-verify.1 and so on,
each with its description, options, exit status, the environment
variables and files it reads, examples and related pages. make man writes them into man/. Set SOURCE_DATE_EPOCH for a
reproducible date in the page footers.`,
		Example: `  acr man --dir man && man -l man/acr-run.1
  sudo acr man --dir /usr/local/share/man/man1 && man acr-status`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := manOptions{Root: cmd.Root()}
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runMan(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().String("dir", "", "directory to write the pages into (created if missing)")
	return cmd
}

// runMan writes a man page for every command of opts.Root.
func runMan(ctx context.Context, opts manOptions, a *app) error {
	if opts.Dir == "" {
		return usagef("man needs --dir DIR (see acr man --help)")
	}
	n, err := writeManPages(opts.Root, opts.Dir)
	if err != nil {
		return err
	}
	a.report(map[string]any{"dir": opts.Dir, "pages": n}, "wrote %d man pages to %s\n", n, opts.Dir)
	return nil
}

// writeManPages renders every available command's page. cobra's generator
// puts the long description under DESCRIPTION as markdown, where the exit
// status table would be run together into one paragraph; so the table is
// cut from the description and written as its own EXIT STATUS section,
// followed by ENVIRONMENT and FILES, before the examples, in the order of
// man-pages(7).
func writeManPages(root *cobra.Command, dir string) (int, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return 0, fmt.Errorf("create man page directory: %w", err)
	}
	root.DisableAutoGenTag = true
	root.InitDefaultHelpCmd()
	n := 0
	var err error
	walkCommands(root, func(c *cobra.Command) {
		if err != nil || !c.IsAvailableCommand() && c != root {
			return
		}
		err = writeManPage(c, dir)
		n++
	})
	return n, err
}

func writeManPage(c *cobra.Command, dir string) error {
	long := c.Long
	c.Long = strings.TrimSpace(strings.Replace(long, exitStatusHelp, "", 1))
	defer func() { c.Long = long }()
	var buf bytes.Buffer
	header := &doc.GenManHeader{Title: strings.ToUpper(strings.ReplaceAll(c.CommandPath(), " ", "-")), Section: "1",
		Source: "acr " + version, Manual: "acr manual"}
	if err := doc.GenMan(c, header, &buf); err != nil {
		return fmt.Errorf("render man page of %s: %w", c.CommandPath(), err)
	}
	page := buf.String()
	at := strings.Index(page, "\n.SH EXAMPLE")
	if at < 0 {
		at = strings.Index(page, "\n.SH SEE ALSO")
	}
	if at < 0 {
		at = len(page) - 1
	}
	page = page[:at+1] + manExitStatus() + manEnvironment(c) + manFiles() + page[at+1:]
	name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
	if err := os.WriteFile(filepath.Join(dir, name), []byte(page), 0o644); err != nil {
		return fmt.Errorf("write man page: %w", err)
	}
	return nil
}

// manExitStatus renders the exit status table (the same text as in every
// --help) as a roff section: one tagged paragraph per code.
func manExitStatus() string {
	var b strings.Builder
	b.WriteString(".SH EXIT STATUS\n")
	for _, line := range strings.Split(strings.TrimSpace(exitStatusHelp), "\n")[1:] {
		code, text, _ := strings.Cut(strings.TrimSpace(line), " ")
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", code, strings.ReplaceAll(strings.TrimSpace(text), `\`, `\e`))
	}
	return b.String()
}

// roffText escapes a line of text for roff: backslashes, and a leading dot
// or quote that would read as a request.
func roffText(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	if strings.HasPrefix(s, ".") || strings.HasPrefix(s, "'") {
		s = `\&` + s
	}
	return s
}

// manEnvironment lists the environment variables a command reads: one
// ACR_<NAME> per flag it takes (the same setting as the flag), then those
// every command reads.
func manEnvironment(c *cobra.Command) string {
	var b strings.Builder
	b.WriteString(".SH ENVIRONMENT\n")
	b.WriteString("Every flag can be set as ACR_<NAME>, the flag's name in capitals with dashes as underscores; " +
		"a flag on the command line wins over the environment, which wins over the configuration file.\n")
	var names []string
	seen := map[string]bool{}
	for _, fs := range []*pflag.FlagSet{c.NonInheritedFlags(), c.InheritedFlags()} {
		fs.VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Name == "version" || seen[f.Name] {
				return
			}
			seen[f.Name] = true
			names = append(names, f.Name)
		})
	}
	slices.Sort(names)
	for _, n := range names {
		f := c.Flag(n)
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", strings.Join(envNames(n), "\\fR, \\fB"), roffText("--"+n+": "+f.Usage))
	}
	for _, e := range []struct{ name, text string }{
		{"ACR_CLOCK", "an RFC 3339 time: freeze the clock at it (reproducible tests and scenario output)"},
		{"ACR_FAILPOINT", "name[:n[:hang]]: kill the process (or park it) the n-th time it reaches a named substage, for crash tests (docs/cli.md lists the names)"},
		{"ACR_FAILPOINT_READY", "a file created when a hanging failpoint is reached"},
		{"ACR_CPUPROFILE", "write a CPU profile of the invocation to this file"},
		{"ACR_TIMINGS", "write the wall time spent in each step of the invocation's cycles to this file (JSON, docs/cli.md)"},
		{"NO_COLOR", "set to anything non-empty: no colour on the terminal"},
		{"TERM", "dumb: no progress line and no colour"},
		{"SOURCE_DATE_EPOCH", "the date in the footer of the pages acr man writes"},
	} {
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", e.name, roffText(e.text))
	}
	return b.String()
}

// manFiles lists the files acr reads and writes.
func manFiles() string {
	var b strings.Builder
	b.WriteString(".SH FILES\n")
	for _, f := range []struct{ name, text string }{
		{"./engine_state/", "the default state directory (--state-dir, ACR_STATE_DIR, ACR_ENGINE_STATE_DIR or CORE_ENGINE_STATE_DIR name another); one run per directory"},
		{"engine_state/manifest.json", "the commit point: names every checkpoint file and its hash"},
		{"engine_state/checkpoint/", "the checkpoint files: run state, goal, contract, environment, commitments, context"},
		{"engine_state/ledger/events.jsonl", "the hash-chained ledger of everything every cycle did; ledger/cycles.idx indexes it by cycle"},
		{"engine_state/sandbox/world/", "the world the loop observes and changes; sandbox/keys/ remembers every action executed"},
		{"engine_state/inbox/", "wake signals, answers to approval requests and stop requests waiting for the next cycle; inbox/rejected/ keeps files that did not decode"},
		{"engine_state/KILL", "the kill switch: while it exists, the next invocation stops the run before it observes or acts"},
		{"engine_state/lock", "the single-writer lock"},
		{"./acr.yaml", "the configuration file, if present (--config or ACR_CONFIG name another)"},
	} {
		fmt.Fprintf(&b, ".TP\n\\fB%s\\fR\n%s\n", f.name, roffText(f.text))
	}
	b.WriteString("docs/on-disk-format.md in the source describes every file.\n")
	return b.String()
}
