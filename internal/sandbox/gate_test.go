package sandbox

import (
	"errors"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/world"
)

// worldChanges are the journal's ops that change what the world shows; a
// temporary file's create, write and sync do not.
func worldChanges(ops []WorldOp) []WorldOp {
	var out []WorldOp
	for _, op := range ops {
		switch op.Op {
		case "create", "write", "sync":
		default:
			out = append(out, op)
		}
	}
	return out
}

// TestCommitWhenChangesTheWorldOnlyAfterReady: a gated Commit stages what
// the world does not show yet (the temporary file, written and fsynced)
// before it calls ready, and makes every change after: the rename, a
// directory, a removal.
func TestCommitWhenChangesTheWorldOnlyAfterReady(t *testing.T) {
	cases := []struct {
		name   string
		action world.Action
		staged bool // a temporary file is written before ready
	}{
		{"patch", world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
			Find: "debug = true", Replace: "debug = false", ExpectSHA256: fp(appSource)}, true},
		{"artifact in a new directory", world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "reports/new/license.txt",
			CheckID: "license", Content: "MIT\n"}, false},
		{"issue", world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "readme", Note: "once"}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, shadow, _ := deferredWorld(t)
			dir := w.Dir()
			key := testKey(c.name)
			in, prior, err := w.Prepare(t.Context(), key, c.action)
			require.NoError(t, err)
			require.Nil(t, prior)
			require.True(t, in.Changes)
			before := len(shadow.ops)
			readies := 0
			ready := func() error {
				readies++
				atReady := shadow.ops[before:]
				assert.Empty(t, worldChanges(atReady), "nothing the world shows changed before ready")
				staged := slices.ContainsFunc(atReady, func(op WorldOp) bool {
					return op.Op == "sync" && strings.HasPrefix(path.Base(op.Path), tmpPrefix)
				})
				assert.Equal(t, c.staged, staged, "the temporary file is written and fsynced while the intent's fsync runs")
				switch c.action.Operation {
				case world.OpApplyPatch:
					assert.Equal(t, appSource, readWorldAt(t, dir, c.action.Target))
				case world.OpRecordArtifact:
					_, err := os.Stat(filepath.Join(dir, filepath.FromSlash(c.action.Target)))
					assert.ErrorIs(t, err, os.ErrNotExist)
				}
				return nil
			}
			out, reused, err := w.CommitWhen(t.Context(), key, c.action, in, ready)
			require.NoError(t, err)
			assert.False(t, reused)
			assert.Equal(t, 1, readies)
			assert.Equal(t, world.OutcomeCommitted, out.Status)
			assert.Equal(t, in.Planned.AfterSHA256, fp(readWorldAt(t, dir, c.action.Target)))
			assert.NotEmpty(t, worldChanges(shadow.ops[before:]))
			require.NoError(t, w.Durable())
		})
	}
}

// TestCommitWhenLeavesTheWorldWhenReadyFails: when the intent cannot be
// made durable, the world is as it was, without a temporary file, and the
// effect is still there to make once.
func TestCommitWhenLeavesTheWorldWhenReadyFails(t *testing.T) {
	w, shadow, _ := deferredWorld(t)
	dir := w.Dir()
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
		Find: "debug = true", Replace: "debug = false", ExpectSHA256: fp(appSource)}
	key := testKey("ready-fails")
	in, _, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	before := len(shadow.ops)
	errDisk := errors.New("ledger fsync failed")
	_, _, err = w.CommitWhen(t.Context(), key, a, in, func() error { return errDisk })
	require.ErrorIs(t, err, errDisk)
	assert.Empty(t, worldChanges(shadow.ops[before:]), "the world did not change")
	assert.Equal(t, appSource, readWorldAt(t, dir, a.Target))
	ents, err := os.ReadDir(filepath.Join(dir, "src"))
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), tmpPrefix), "temporary file %s left behind", e.Name())
	}

	out, reused, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Equal(t, "package app\n\n// TODO: turn debugging off\nvar debug = false\n", readWorldAt(t, dir, a.Target))
}

// TestCommitWhenMarksBeforeActionCommitOnceReady: crash tests stop at
// StageBeforeActionCommit expecting the intent durable; in a gated Commit
// the mark comes after ready, and the after mark after both.
func TestCommitWhenMarksBeforeActionCommitOnceReady(t *testing.T) {
	w, _, _ := deferredWorld(t)
	var order []string
	w.OnStage = func(stage string) { order = append(order, stage) }
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "readme", Note: "once"}
	key := testKey("stages")
	in, _, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	_, _, err = w.CommitWhen(t.Context(), key, a, in, func() error { order = append(order, "ready"); return nil })
	require.NoError(t, err)
	assert.Equal(t, []string{"ready", StageBeforeActionCommit, StageAfterActionCommit}, order)
}

func readWorldAt(t *testing.T, worldDir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(worldDir, filepath.FromSlash(rel)))
	require.NoError(t, err)
	return string(b)
}
