package main

import (
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// configured returns the command at path in a fresh command tree, with
// args parsed and the app configured as execute would leave it before
// the command runs.
func configured(t *testing.T, path []string, args ...string) (*app, *cobra.Command) {
	t.Helper()
	a := newApp(io.Discard, io.Discard)
	root := newRootCommand(a)
	cmd, _, err := root.Find(path)
	require.NoError(t, err)
	cmd.SetContext(t.Context())
	require.NoError(t, cmd.ParseFlags(args))
	require.NoError(t, a.configure(cmd))
	return a, cmd
}

// TestDecodeFlags: a command's flags reach its options struct with the
// precedence flag > ACR_* > acr.yaml > default, and read as viper's typed
// getters read them. Not parallel: it sets the environment.
func TestDecodeFlags(t *testing.T) {
	yaml := filepath.Join(t.TempDir(), "acr.yaml")
	require.NoError(t, os.WriteFile(yaml, []byte("max-cycles: 7\nreason: from the file\nby: true\npriority: 4\n"), 0o644))
	for _, tc := range []struct {
		name string
		env  map[string]string
		args []string
		want runOptions
	}{
		{name: "default", want: runOptions{MaxCycles: 10}},
		{name: "file", args: []string{"--config", yaml}, want: runOptions{MaxCycles: 7}},
		{name: "env over file", env: map[string]string{"ACR_MAX_CYCLES": "5"}, args: []string{"--config", yaml}, want: runOptions{MaxCycles: 5}},
		{name: "flag over env", env: map[string]string{"ACR_MAX_CYCLES": "5"}, args: []string{"--config", yaml, "--max-cycles", "3"},
			want: runOptions{MaxCycles: 3}},
		{name: "slate inputs", env: map[string]string{"ACR_GOAL": "g.json"}, args: []string{"--contract", "c.json", "--env", "e.json"},
			want: runOptions{MaxCycles: 10, Slate: slateOptions{Goal: "g.json", Contract: "c.json", Env: "e.json"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			a, cmd := configured(t, []string{"run"}, tc.args...)
			var got runOptions
			require.NoError(t, decodeFlags(cmd, a.v, &got))
			assert.Equal(t, tc.want, got)
		})
	}

	t.Run("wake", func(t *testing.T) {
		a, cmd := configured(t, []string{"wake"}, "--config", yaml, "--signal", "manual_resume")
		var got wakeOptions
		require.NoError(t, decodeFlags(cmd, a.v, &got))
		// by: true is the string "true", as GetString reads it (viper's
		// Unmarshal would make it "1").
		assert.Equal(t, wakeOptions{Source: "manual_resume", Priority: 4, By: "true", Reason: "from the file"}, got)
	})

	t.Run("global", func(t *testing.T) {
		t.Setenv("ACR_STATE_DIR", "/srv/loop")
		t.Setenv("ACR_CLOCK", testClock)
		a, _ := configured(t, []string{"status"}, "--config", yaml, "--json", "--checkpoint-every", "4")
		assert.Equal(t, config{ConfigFile: yaml, StateDir: "/srv/loop", Store: "dir:/srv/loop", StoreWait: "20s", JSON: true, LogLevel: "warn", CheckpointEvery: 4, SealBytes: 256 << 10, Clock: testClock}, a.cfg)
	})

	t.Run("a tag without a flag", func(t *testing.T) {
		a, cmd := configured(t, []string{"status"})
		var bad struct {
			X string `flag:"no-such-flag"`
		}
		assert.ErrorContains(t, decodeFlags(cmd, a.v, &bad), "acr status has no flag --no-such-flag")
		assert.ErrorContains(t, decodeFlags(cmd, a.v, bad), "not a pointer to a struct")
	})
}
