package sandbox

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

// poison replaces what a handoff carries with bytes no read of the file
// can give, so that a result holding them proves the handoff was taken,
// and a result without them proves the file was read.
func poison(h *handoff, data string) {
	h.data = []byte(data)
	h.sum = codec.FingerprintOf(h.data)
	h.size = int64(len(data))
}

// fileFact finds p in an observation.
func fileFact(obs world.Observation, p string) (world.FileFact, bool) {
	for _, f := range obs.Files {
		if f.Path == p {
			return f, true
		}
	}
	return world.FileFact{}, false
}

// changes are what may happen to the target between two reads; taken
// says whether the later reader may still use the earlier read.
var changes = []struct {
	name   string
	change func(t *testing.T, path string)
	taken  bool
}{
	{"nothing", func(*testing.T, string) {}, true},
	{"rewritten in place, same size", func(t *testing.T, path string) {
		require.NoError(t, os.WriteFile(path, []byte(strings.Replace(appSource, "debug", "DEBUG", 1)), 0o644))
	}, false},
	{"replaced by a rename", func(t *testing.T, path string) {
		require.NoError(t, os.WriteFile(path+".new", []byte(appSource), 0o644))
		require.NoError(t, os.Rename(path+".new", path))
	}, false},
	{"mode changed", func(t *testing.T, path string) { require.NoError(t, os.Chmod(path, 0o600)) }, false},
	{"times set back", func(t *testing.T, path string) {
		fi, err := os.Stat(path)
		require.NoError(t, err)
		require.NoError(t, os.Chtimes(path, fi.ModTime(), fi.ModTime()))
	}, false},
	{"hard link added", func(t *testing.T, path string) { require.NoError(t, os.Link(path, path+".link")) }, false},
	{"removed", func(t *testing.T, path string) { require.NoError(t, os.Remove(path)) }, false},
}

// The readback's read serves the next observation of its target only
// while the file is the one it read; any change shows.
func TestReadbackHandsOnToObserve(t *testing.T) {
	for _, tc := range changes {
		t.Run(tc.name, func(t *testing.T) {
			w, stateDir := newTestWorld(t, testSpec())
			_, err := w.Readback(t.Context(), world.Action{Operation: world.OpApplyPatch}, world.Outcome{Target: "src/app.go"})
			require.NoError(t, err)
			require.NotNil(t, w.toObserve)
			require.NotNil(t, w.toObserve.data, "a check judges src/app.go, so the bytes are kept")
			poison(w.toObserve, "package app // poisoned\n")
			tc.change(t, worldPath(stateDir, "src/app.go"))

			obs, err := w.Observe(t.Context())
			require.NoError(t, err)
			assert.Nil(t, w.toObserve, "a handoff serves one observation")
			fact, listed := fileFact(obs, "src/app.go")
			check, _ := obs.Check("no-debug")
			if tc.taken {
				assert.Equal(t, fp("package app // poisoned\n"), fact.SHA256)
				assert.Equal(t, world.CheckPass, check.Status, "the check judges the handed-over bytes")
				return
			}
			fresh, err := Open(stateDir, testSpec(), mustKeys(t, stateDir))
			require.NoError(t, err)
			defer fresh.Close()
			want, err := fresh.Observe(t.Context())
			require.NoError(t, err)
			assert.Equal(t, want, obs, "a changed file is read again")
			if listed {
				assert.NotEqual(t, fp("package app // poisoned\n"), fact.SHA256)
			}
		})
	}
}

// A file no check judges is handed on as its hash alone.
func TestReadbackHandsOnAHash(t *testing.T) {
	w, _ := newTestWorld(t, testSpec())
	_, err := w.Readback(t.Context(), world.Action{Operation: world.OpApplyPatch}, world.Outcome{Target: "docs/guide.txt"})
	require.NoError(t, err)
	require.NotNil(t, w.toObserve)
	assert.Nil(t, w.toObserve.data)
	w.toObserve.sum = fp("poisoned")
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	fact, ok := fileFact(obs, "docs/guide.txt")
	require.True(t, ok)
	assert.Equal(t, fp("poisoned"), fact.SHA256)
}

// Prepare plans on the bytes the observation judged while the file is the
// one they were read from, and on the file otherwise.
func TestObserveHandsOnToPrepare(t *testing.T) {
	const poisoned = "package app\nvar debug = true // poisoned\n"
	for _, tc := range changes {
		t.Run(tc.name, func(t *testing.T) {
			w, stateDir := newTestWorld(t, testSpec())
			_, err := w.Observe(t.Context())
			require.NoError(t, err)
			h := w.observed["src/app.go"]
			require.NotNil(t, h)
			poison(h, poisoned)
			tc.change(t, worldPath(stateDir, "src/app.go"))

			a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go",
				Find: "debug = true", Replace: "debug = false", ExpectSHA256: fp(poisoned)}
			in, prior, err := w.Prepare(t.Context(), testKey(tc.name), a)
			require.NoError(t, err)
			require.Nil(t, prior)
			if !tc.taken {
				assert.NotEqual(t, fp(poisoned), in.Planned.BeforeSHA256, "a changed file is read again")
				assert.False(t, in.Changes, "the file is not the one the action was derived from")
				return
			}
			require.True(t, in.Changes)
			assert.Equal(t, fp(poisoned), in.Planned.BeforeSHA256)
			// Commit reads the target itself: bytes other than the
			// intent's before-hash are never written over, and the
			// effect this World planned and never applied is stale.
			out, reused, err := w.Commit(t.Context(), testKey(tc.name), a, in)
			require.NoError(t, err)
			assert.False(t, reused)
			assert.Equal(t, world.OutcomeStale, out.Status)
			assert.Equal(t, fp(appSource), out.BeforeSHA256)
			assert.Equal(t, fp(appSource), out.AfterSHA256)
			got, err := os.ReadFile(worldPath(stateDir, "src/app.go"))
			require.NoError(t, err)
			assert.Equal(t, appSource, string(got))
		})
	}
}

// A cycle's reads, handed on, observe exactly what reading every file
// again observes, and a write by the World drops every handoff.
func TestHandoffsAcrossCycles(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	keys := mustKeys(t, stateDir)
	for i, fix := range []struct{ find, replace string }{{"debug = true", "debug = false"}, {"debug = false", "debug = true"}, {"debug = true", "debug = false"}} {
		obs, err := w.Observe(t.Context())
		require.NoError(t, err)
		fresh, err := Open(stateDir, testSpec(), keys)
		require.NoError(t, err)
		want, err := fresh.Observe(t.Context())
		require.NoError(t, err)
		require.NoError(t, fresh.Close())
		require.Equal(t, want, obs, "cycle %d", i)

		fact, _ := fileFact(obs, "src/app.go")
		a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go",
			Find: fix.find, Replace: fix.replace, ExpectSHA256: fact.SHA256}
		key := testKey(fix.find + string(rune('0'+i)))
		in, _, err := w.Prepare(t.Context(), key, a)
		require.NoError(t, err)
		require.True(t, in.Changes, "cycle %d", i)
		out, _, err := w.Commit(t.Context(), key, a, in)
		require.NoError(t, err)
		assert.Nil(t, w.observed, "the effect dropped the observation's handoffs")
		rb, err := w.Readback(t.Context(), a, out)
		require.NoError(t, err)
		assert.Equal(t, out.AfterSHA256, rb.SHA256)
	}
}

// A program the World runs may write any file, so a command check drops
// every handoff made before it ran.
func TestCommandCheckDropsHandoffs(t *testing.T) {
	spec := appendSpec(false)
	spec.Checks = append(spec.Checks, world.Check{ID: "pending", Kind: world.CheckAbsentText, Path: "log.txt", Text: "pending",
		Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "pending", Replace: "done"}}})
	w, _ := rootWorld(t, spec, map[string]string{"log.txt": "pending\n"})
	_, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Nil(t, w.observed, "the command check ran after the walk read log.txt")
	_, err = w.Readback(t.Context(), world.Action{Operation: world.OpApplyPatch, CheckID: "logged"}, world.Outcome{Target: "log.txt"})
	require.NoError(t, err)
	assert.Nil(t, w.toObserve, "the readback ran the command check after reading log.txt")

	// Without a command check both are made.
	w2, _ := rootWorld(t, world.Spec{Checks: spec.Checks[1:]}, map[string]string{"log.txt": "pending\n"})
	_, err = w2.Observe(t.Context())
	require.NoError(t, err)
	assert.NotNil(t, w2.observed["log.txt"])
	_, err = w2.Readback(t.Context(), world.Action{Operation: world.OpApplyPatch}, world.Outcome{Target: "log.txt"})
	require.NoError(t, err)
	assert.NotNil(t, w2.toObserve)
}

// A World that did not plan the effect (a new process after a crash)
// cannot know whether it happened: a third hash is for a person.
func TestCommitOfAnotherWorldsPlanIsUncertain(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go",
		Find: "debug = true", Replace: "debug = false", ExpectSHA256: fp(appSource)}
	in, _, err := w.Prepare(t.Context(), testKey("crash"), a)
	require.NoError(t, err)
	require.True(t, in.Changes)
	require.NoError(t, os.WriteFile(worldPath(stateDir, "src/app.go"), []byte("package app\n"), 0o644))
	next, err := Open(stateDir, testSpec(), mustKeys(t, stateDir))
	require.NoError(t, err)
	defer next.Close()
	_, _, err = next.Commit(t.Context(), testKey("crash"), a, in)
	require.ErrorIs(t, err, ErrUncertain)
}

func mustKeys(t *testing.T, stateDir string) disk.FS {
	t.Helper()
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	return keys
}
