package sandbox

import (
	"os"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// TestEvidence: what a person is shown about an uncertain effect, for a
// file effect (its target, with the hash the effect was to leave) and for a
// command (each file its touches match, before and now).
func TestEvidence(t *testing.T) {
	t.Run("file effect", func(t *testing.T) {
		w, stateDir := newTestWorld(t, testSpec())
		a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
			ExpectSHA256: codec.FingerprintOf([]byte(appSource)), Find: "debug = true", Replace: "debug = false"}
		in, _, err := w.Prepare(t.Context(), testKey("evidence"), a)
		require.NoError(t, err)
		ev, err := w.Evidence(in)
		require.NoError(t, err)
		require.Len(t, ev, 1)
		assert.Equal(t, world.PathEvidence{Path: "src/app.go", Intent: in.Planned.BeforeSHA256, Planned: in.Planned.AfterSHA256,
			Now: in.Planned.BeforeSHA256, Status: world.PathUnchanged}, ev[0])

		writeWorld(t, stateDir, "src/app.go", "someone else was here\n")
		ev, err = w.Evidence(in)
		require.NoError(t, err)
		assert.Equal(t, world.PathChanged, ev[0].Status)
		assert.Equal(t, codec.FingerprintOf([]byte("someone else was here\n")), ev[0].Now)
		assert.Contains(t, ev[0].String(), "src/app.go changed (intent ")
		assert.Contains(t, ev[0].String(), ", the effect was to leave ")

		require.NoError(t, os.Remove(worldPath(stateDir, "src/app.go")))
		ev, err = w.Evidence(in)
		require.NoError(t, err)
		assert.Equal(t, world.PathMissing, ev[0].Status)
		assert.Empty(t, ev[0].Now)
	})
	t.Run("command", func(t *testing.T) {
		spec := testSpec()
		fix := world.Fix{ID: "bump", Operation: world.OpRunCommand, Argv: []string{"true"}, Touches: []string{"docs/**"}}
		spec.Checks[0].Fixes = append(spec.Checks[0].Fixes, fix)
		w, stateDir := newTestWorld(t, spec)
		in, _, err := w.Prepare(t.Context(), testKey("evidence-command"), world.CommandAction("no-debug", fix))
		require.NoError(t, err)
		writeWorld(t, stateDir, "docs/guide.txt", "guide, changed\n")
		writeWorld(t, stateDir, "docs/new.txt", "new\n")
		ev, err := w.Evidence(in)
		require.NoError(t, err)
		require.Len(t, ev, 2)
		assert.Equal(t, "docs/guide.txt", ev[0].Path)
		assert.Equal(t, world.PathChanged, ev[0].Status)
		assert.Equal(t, codec.FingerprintOf([]byte("guide\n")), ev[0].Intent)
		assert.Equal(t, "docs/new.txt", ev[1].Path)
		assert.Equal(t, world.PathChanged, ev[1].Status, "created since the intent")
		assert.Empty(t, ev[1].Intent)
	})
}
