package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/world"
)

// TestPreview: what an action would change is shown as a diff (or a
// command line), from the world as it is now, and nothing is written: not
// the target, not a temporary file, not the idempotency table.
func TestPreview(t *testing.T) {
	spec := testSpec()
	w, stateDir := newTestWorld(t, spec)
	require.NoError(t, w.Close())
	// A temporary file a crash left: Open would sweep it, a preview must not.
	stale := worldPath(stateDir, ".acr-tmp-7")
	require.NoError(t, os.WriteFile(stale, []byte("x"), 0o644))
	before := snapshot(t, stateDir)

	r, err := OpenReadOnly(stateDir, spec)
	require.NoError(t, err)
	defer r.Close()
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
		ExpectSHA256: fp(appSource), Find: "debug = true", Replace: "debug = false"}
	for _, c := range []struct {
		name string
		a    world.Action
		want string
	}{
		{"a patch", patch, "--- a/src/app.go\n+++ b/src/app.go\n@@ -1,4 +1,4 @@\n package app\n \n // TODO: turn debugging off\n-var debug = true\n+var debug = false\n"},
		{"a new file", world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "LICENSE", CheckID: "license", Content: "MIT License\n"},
			"--- a/LICENSE\n+++ b/LICENSE\n@@ -0,0 +1 @@\n+MIT License\n"},
		{"a stale target", func() world.Action { a := patch; a.ExpectSHA256 = fp("other"); return a }(),
			"apply_local_patch src/app.go would change nothing now: target changed since the action was derived"},
		{"an issue line", world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "readme", Note: "once"},
			previewTag},
		{"a command", world.Action{Schema: world.ActionSchema, Operation: world.OpRunCommand, Argv: []string{"gofmt", "-w", "my file.go"},
			Touches: []string{"**/*.go"}, TimeoutSeconds: 30},
			"runs      gofmt -w 'my file.go'\nin        the world's directory, stdin closed, a scrubbed environment\nmay change **/*.go\ntime limit 30 s\nnot idempotent"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := r.Preview(t.Context(), c.a)
			require.NoError(t, err)
			assert.Contains(t, got, c.want)
		})
	}
	assert.Equal(t, before, snapshot(t, stateDir), "a preview writes nothing")
	assert.FileExists(t, filepath.Join(filepath.Dir(stale), ".acr-tmp-7"))
}

// TestIntentCarriesTheDiff: the intent Prepare returns (and the kernel
// records before the effect) carries the change as a diff, cut at a line
// boundary past MaxDiffBytes.
func TestIntentCarriesTheDiff(t *testing.T) {
	spec := testSpec()
	w, _ := newTestWorld(t, spec)
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
		ExpectSHA256: fp(appSource), Find: "debug = true", Replace: "debug = false"}
	in, _, err := w.Prepare(t.Context(), testKey("diff"), patch)
	require.NoError(t, err)
	assert.Contains(t, in.Diff, "-var debug = true\n+var debug = false\n")

	var big strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&big, "line %d\n", i)
	}
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "big.txt", Content: big.String()}
	in, _, err = w.Prepare(t.Context(), testKey("big"), a)
	require.NoError(t, err)
	require.LessOrEqual(t, len(in.Diff), MaxDiffBytes+100)
	assert.Regexp(t, `\n\.\.\. \(diff cut here: \d+ more bytes\)\n$`, in.Diff)
}
