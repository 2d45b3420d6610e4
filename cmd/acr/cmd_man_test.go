package main

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestManPages generates the pages the way make man does and checks that
// there is one per command, each with the exit status as a real section.
func TestManPages(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	require.Equal(t, 0, newApp(&out, io.Discard).execute(t.Context(), []string{"man", "--dir", dir}))
	root := newRootCommand(newApp(io.Discard, io.Discard))
	root.InitDefaultHelpCmd()
	want := 0
	walkCommands(root, func(c *cobra.Command) {
		if c != root && !c.IsAvailableCommand() {
			return
		}
		want++
		name := strings.ReplaceAll(c.CommandPath(), " ", "-") + ".1"
		b, err := os.ReadFile(filepath.Join(dir, name))
		if !assert.NoError(t, err, "no page for %s", c.CommandPath()) {
			return
		}
		page := string(b)
		assert.Contains(t, page, ".SH NAME\n")
		assert.Contains(t, page, ".SH EXIT STATUS\n.TP\n\\fB0\\fR\n")
		assert.Contains(t, page, "\\fB75\\fR\nbusy: another invocation holds the run (its lock or lease), or wrote it first; retry later\n")
		assert.Less(t, strings.Index(page, ".SH EXIT STATUS"), strings.Index(page, ".SH EXAMPLE"))
		// ENVIRONMENT and FILES follow EXIT STATUS, in man-pages(7) order.
		env, files := strings.Index(page, "\n.SH ENVIRONMENT\n"), strings.Index(page, "\n.SH FILES\n")
		assert.Less(t, strings.Index(page, ".SH EXIT STATUS"), env)
		assert.Less(t, env, files)
		if ex := strings.Index(page, ".SH EXAMPLE"); ex >= 0 {
			assert.Less(t, files, ex)
		}
		assert.Contains(t, page, "\\fBACR_STATE_DIR\\fR, \\fBACR_ENGINE_STATE_DIR\\fR, \\fBCORE_ENGINE_STATE_DIR\\fR\n--state-dir: ")
		assert.Contains(t, page, "\\fBACR_CLOCK\\fR\n")
		assert.Contains(t, page, "\\fBengine_state/ledger/events.jsonl\\fR\n")
		assert.Contains(t, page, "\\fB./acr.yaml\\fR\n")
		// Each page names the variables of its own flags.
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name != "help" && f.Name != "version" {
				assert.Contains(t, page, "\\fB"+envNames(f.Name)[0]+"\\fR\n--"+f.Name+": ", c.CommandPath())
			}
		})
		assert.NotContains(t, page, "EXIT STATUS 0", "the table must not be run into a paragraph")
		assert.NotContains(t, page, "spf13/cobra", "no generator advertisement")
	})
	files, err := filepath.Glob(filepath.Join(dir, "*.1"))
	require.NoError(t, err)
	assert.Len(t, files, want)
	assert.Contains(t, out.String(), "wrote ")
}
