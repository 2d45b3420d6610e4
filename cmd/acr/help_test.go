package main

import (
	"bytes"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEveryCommandHasExamplesAndExitStatus walks the whole command tree,
// cobra's help command included: every command has examples, and its
// --help shows them and ends with the exit status table.
func TestEveryCommandHasExamplesAndExitStatus(t *testing.T) {
	root := newRootCommand(newApp(io.Discard, io.Discard))
	n := 0
	walkCommands(root, func(c *cobra.Command) {
		if c.Hidden {
			return
		}
		n++
		t.Run(c.CommandPath(), func(t *testing.T) {
			assert.NotEmpty(t, strings.TrimSpace(c.Example), "no Example")
			assert.Contains(t, c.Long, exitStatusHelp)

			var out bytes.Buffer
			args := append(strings.Fields(c.CommandPath())[1:], "--help")
			require.Equal(t, 0, newApp(&out, io.Discard).execute(t.Context(), args))
			help := out.String()
			assert.Contains(t, help, "\nExamples:\n")
			assert.True(t, strings.HasSuffix(help, exitStatusHelp+"\n"), "the help ends with the exit status table:\n%s", help)
			assert.Equal(t, 1, strings.Count(help, "EXIT STATUS"))
		})
	})
	assert.GreaterOrEqual(t, n, 20, "the walk found %d commands", n)
}

// TestExitStatusTableMatchesTheCodes keeps the help table and the exit
// codes of exit.go in step.
func TestExitStatusTableMatchesTheCodes(t *testing.T) {
	for _, code := range []int{exitOK, exitUsage, exitData, exitNoInput, exitInternal, exitIO, exitBusy} {
		assert.Regexp(t, `\n  `+strconv.Itoa(code)+` +\S`, exitStatusHelp)
	}
	assert.NotContains(t, exitStatusHelp, "\n  69 ", "69 is retired: a request that changes nothing exits 0")
}
