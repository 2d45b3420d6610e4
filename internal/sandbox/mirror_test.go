package sandbox

import (
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/world"
)

// tree lists everything under a world directory: files with their
// content, directories as "/", anything else by its type.
func tree(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == root {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		switch {
		case d.IsDir():
			out[rel] = "/"
		case d.Type().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		default:
			out[rel] = d.Type().String()
		}
		return nil
	}))
	return out
}

// Mirror brings a world copy to exactly the files it is given, whatever
// the copy holds: it writes what differs or is missing, removes the rest,
// follows no link, and is a no-op the second time.
func TestMirror(t *testing.T) {
	stored := map[string]string{"README.md": "# demo\n", "src/app.go": appSource, "docs/guide.txt": "guide v2\n", "empty": ""}
	for _, tc := range []struct {
		name string
		// damage changes the copy (made from testSpec) before Mirror.
		damage  func(t *testing.T, dir, outside string)
		changed []string
	}{
		{"only the stored changes", func(*testing.T, string, string) {}, []string{"docs/guide.txt", "empty"}},
		{"files and directories the store does not have", func(t *testing.T, dir, _ string) {
			writeWorld(t, dir, "extra.txt", "x")
			writeWorld(t, dir, "old/deep/file", "x")
			require.NoError(t, os.MkdirAll(worldPath(dir, "hollow/inside"), 0o755))
		}, []string{"docs/guide.txt", "empty", "extra.txt", "hollow", "old"}},
		{"a missing file and a changed one", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Remove(worldPath(dir, "README.md")))
			writeWorld(t, dir, "src/app.go", "changed here, never stored")
		}, []string{"README.md", "docs/guide.txt", "empty", "src/app.go"}},
		{"same size, other bytes", func(t *testing.T, dir, _ string) {
			writeWorld(t, dir, "src/app.go", strings.Replace(appSource, "true", "TRUE", 1))
		}, []string{"docs/guide.txt", "empty", "src/app.go"}},
		{"a directory where a file is stored, a file where a directory is", func(t *testing.T, dir, _ string) {
			require.NoError(t, os.Remove(worldPath(dir, "README.md")))
			writeWorld(t, dir, "README.md/x", "x")
			require.NoError(t, os.RemoveAll(worldPath(dir, "docs")))
			writeWorld(t, dir, "docs", "a file")
		}, []string{"README.md", "docs", "docs/guide.txt", "empty"}},
		{"symlinks out of the world, as a file and as a parent", func(t *testing.T, dir, outside string) {
			require.NoError(t, os.Remove(worldPath(dir, "README.md")))
			require.NoError(t, os.Symlink(filepath.Join(outside, "secret"), worldPath(dir, "README.md")))
			require.NoError(t, os.RemoveAll(worldPath(dir, "src")))
			require.NoError(t, os.Symlink(outside, worldPath(dir, "src")))
		}, []string{"README.md", "docs/guide.txt", "empty", "src", "src/app.go"}},
		{"a hard link to a file elsewhere", func(t *testing.T, dir, outside string) {
			require.NoError(t, os.Remove(worldPath(dir, "README.md")))
			require.NoError(t, os.Link(filepath.Join(outside, "secret"), worldPath(dir, "README.md")))
		}, []string{"README.md", "docs/guide.txt", "empty"}},
		{"temporary files of a replace cut short", func(t *testing.T, dir, _ string) {
			writeWorld(t, dir, "src/"+tmpPrefix+"7", "half")
		}, []string{"docs/guide.txt", "empty", "src/" + tmpPrefix + "7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, dir := newTestWorld(t, testSpec())
			outside := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(outside, "secret"), []byte("secret"), 0o644))
			require.NoError(t, os.WriteFile(filepath.Join(outside, "app.go"), []byte("outside"), 0o644))
			tc.damage(t, dir, outside)
			files := map[string][]byte{}
			for p, s := range stored {
				files[p] = []byte(s)
			}
			changed, err := w.Mirror(files)
			require.NoError(t, err)
			assert.Equal(t, tc.changed, changed)
			want := maps.Clone(stored)
			want["src"], want["docs"] = "/", "/"
			assert.Equal(t, want, tree(t, worldPath(dir, ".")))
			assert.Equal(t, map[string]string{"secret": "secret", "app.go": "outside"}, tree(t, outside), "nothing outside the world is touched")
			changed, err = w.Mirror(files)
			require.NoError(t, err)
			assert.Empty(t, changed, "a second mirror changes nothing")
			obs, err := w.Observe(t.Context())
			require.NoError(t, err)
			assert.Len(t, obs.Files, len(stored))
		})
	}
}

// Files reads what observation lists, and nothing else.
func TestFiles(t *testing.T) {
	spec := testSpec()
	spec.Exclude = []string{"private/**"}
	w, dir := newTestWorld(t, spec)
	writeWorld(t, dir, "private/key", "k")
	writeWorld(t, dir, "src/"+tmpPrefix+"1", "half")
	require.NoError(t, os.Symlink(filepath.Join(dir, "elsewhere"), worldPath(dir, "link")))
	files, err := w.Files()
	require.NoError(t, err)
	got := map[string]string{}
	for p, b := range files {
		got[p] = string(b)
	}
	assert.Equal(t, spec.Files, got)
}

// PlannedSize is the size the last Prepare's write leaves, for its key
// only.
func TestPlannedSize(t *testing.T) {
	w, _ := newTestWorld(t, testSpec())
	key := testKey("patch")
	in, prior, err := w.Prepare(t.Context(), key, world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", Find: "debug = true", Replace: "debug = false", ExpectSHA256: fp(appSource)})
	require.NoError(t, err)
	require.Nil(t, prior)
	require.True(t, in.Changes)
	size, ok := w.PlannedSize(key)
	assert.True(t, ok)
	assert.Equal(t, int64(len(strings.Replace(appSource, "debug = true", "debug = false", 1))), size)
	_, ok = w.PlannedSize(testKey("other"))
	assert.False(t, ok)
}
