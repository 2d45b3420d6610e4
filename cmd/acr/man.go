package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
)

func newManCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "man --dir DIR",
		Short: "Write a man page for every command into DIR",
		Long: `Write one man page (section 1) per command into DIR, generated from the same
command tree as --help: acr.1, acr-run.1, acr-ledger-verify.1 and so on,
each with its description, options, examples, exit status and related
pages. make man writes them into man/. Set SOURCE_DATE_EPOCH for a
reproducible date in the page footers.`,
		Example: `  acr man --dir man && man -l man/acr-run.1
  sudo acr man --dir /usr/local/share/man/man1 && man acr-status`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir := a.v.GetString("dir")
			if dir == "" {
				return usagef("man needs --dir DIR (see acr man --help)")
			}
			n, err := writeManPages(cmd.Root(), dir)
			if err != nil {
				return err
			}
			a.report(map[string]any{"dir": dir, "pages": n}, "wrote %d man pages to %s\n", n, dir)
			return nil
		},
	}
	cmd.Flags().String("dir", "", "directory to write the pages into (created if missing)")
	return cmd
}

// writeManPages renders every available command's page. cobra's generator
// puts the long description under DESCRIPTION as markdown, where the exit
// status table would be run together into one paragraph; so the table is
// cut from the description and written as its own EXIT STATUS section,
// before the examples, where man-pages(7) puts it.
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
	page = page[:at+1] + manExitStatus() + page[at+1:]
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
