package sandbox

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

func TestConfinementRefusals(t *testing.T) {
	const victim = "original secret\n"
	symlink := func(target, link string) func(t *testing.T, stateDir, outside string) {
		return func(t *testing.T, stateDir, outside string) {
			if target == "OUTSIDE" {
				target = outside
			} else if target == "VICTIM" {
				target = filepath.Join(outside, "victim.txt")
			}
			p := worldPath(stateDir, link)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.Symlink(target, p))
		}
	}
	record := func(target string) func(string) world.Action {
		return func(string) world.Action {
			return world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: target, Content: "pwned\n"}
		}
	}
	patch := func(target, expect string) func(string) world.Action {
		return func(string) world.Action {
			return world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: target,
				ExpectSHA256: fp(expect), Find: "e", Replace: "pwned"}
		}
	}
	cases := []struct {
		name   string
		setup  func(t *testing.T, stateDir, outside string)
		action func(outside string) world.Action
	}{
		{name: "dot-dot", action: record("../escape.txt")},
		{name: "dot-dot below a directory", action: record("src/../../escape.txt")},
		{name: "absolute path", action: func(outside string) world.Action {
			return record(filepath.Join(outside, "abs.txt"))(outside)
		}},
		{name: "symlink pointing outside", setup: symlink("VICTIM", "out.txt"), action: patch("out.txt", victim)},
		{name: "record onto symlink pointing outside", setup: symlink("VICTIM", "out.txt"), action: record("out.txt")},
		{name: "symlink inside the root as write target", setup: symlink("src/app.go", "alias.go"), action: patch("alias.go", appSource)},
		{name: "record onto symlink inside the root", setup: symlink("README.md", "readme-link.md"), action: record("readme-link.md")},
		{name: "symlinked parent leading outside", setup: symlink("OUTSIDE", "outdir"), action: record("outdir/new.txt")},
		{name: "symlinked parent inside the root", setup: symlink("src", "srclink"), action: patch("srclink/app.go", appSource)},
		{name: "symlinked grandparent", setup: symlink("OUTSIDE", "a/b"), action: record("a/b/c/new.txt")},
		{name: "mark_issue through symlinked ISSUES.md", setup: symlink("VICTIM", world.IssuesFile), action: func(string) world.Action {
			return markIssue("x")
		}},
		{name: "run_validation through symlinked report dir", setup: symlink("OUTSIDE", world.ValidationDir), action: func(string) world.Action {
			return world.Action{Schema: world.ActionSchema, Operation: world.OpRunValidation, Checks: []string{"readme"}}
		}},
		{name: "excluded secrets/api.key", action: record("secrets/api.key")},
		{name: "excluded .env", action: record(".env")},
		{name: "excluded nested .env", action: record("config/.env")},
		{name: "excluded pem", action: record("certs/server.pem")},
		{name: "below an excluded directory", action: record("secrets/notes.txt")},
		{name: "excluded .git", action: record(".git/config")},
		{name: "reserved temp name", action: record("src/.acr-tmp-7")},
		{name: "inspect of an excluded file", setup: func(t *testing.T, stateDir, _ string) {
			writeWorld(t, stateDir, ".env", "TOKEN=1\n")
		}, action: func(string) world.Action {
			return world.Action{Schema: world.ActionSchema, Operation: world.OpInspect, Target: ".env"}
		}},
		{name: "inspect through a symlink", setup: symlink("VICTIM", "out.txt"), action: func(string) world.Action {
			return world.Action{Schema: world.ActionSchema, Operation: world.OpInspect, Target: "out.txt"}
		}},
	}
	ran := 0
	for _, tc := range cases {
		ran++
		t.Run(tc.name, func(t *testing.T) {
			w, stateDir := newTestWorld(t, testSpec())
			outside := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(outside, "victim.txt"), []byte(victim), 0o644))
			if tc.setup != nil {
				tc.setup(t, stateDir, outside)
			}
			beforeOutside := snapshot(t, outside)
			beforeWorld := snapshot(t, worldPath(stateDir, "."))
			key := testKey(tc.name)

			_, _, err := w.Execute(t.Context(), key, tc.action(outside))
			require.ErrorIs(t, err, ErrConfinement)

			assert.Equal(t, beforeOutside, snapshot(t, outside), "nothing outside the sandbox changes")
			assert.Equal(t, beforeWorld, snapshot(t, worldPath(stateDir, ".")), "nothing inside the world changes")
			_, found, err := w.Lookup(key)
			require.NoError(t, err)
			assert.False(t, found, "a refusal is not recorded")
			assert.Empty(t, tableKinds(t, osKeys(t, stateDir), key), "a refusal leaves no intent")
		})
	}
	require.Equal(t, len(cases), ran)
	require.NotZero(t, ran)
}

func TestCreateRefusesUnconfinedInitialFiles(t *testing.T) {
	for _, name := range []string{"../x.txt", "/etc/x.txt", ".env", "secrets/api.key"} {
		t.Run(name, func(t *testing.T) {
			stateDir := t.TempDir()
			keys, err := disk.OpenOSDir(stateDir)
			require.NoError(t, err)
			spec := testSpec()
			spec.Files[name] = "x"
			_, err = Create(stateDir, spec, keys)
			require.ErrorIs(t, err, ErrConfinement)
			_, err = os.Stat(filepath.Join(stateDir, filepath.FromSlash(WorldDir)))
			assert.ErrorIs(t, err, os.ErrNotExist, "a failed Create leaves no world behind")
		})
	}
}

func TestOpenRefusesSymlinkedWorld(t *testing.T) {
	stateDir := t.TempDir()
	elsewhere := t.TempDir()
	require.NoError(t, os.Mkdir(filepath.Join(stateDir, Dir), 0o755))
	require.NoError(t, os.Symlink(elsewhere, filepath.Join(stateDir, filepath.FromSlash(WorldDir))))
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	_, err = Open(stateDir, testSpec(), keys)
	require.Error(t, err)
}
