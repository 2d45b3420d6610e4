package sandbox

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

const appSource = "package app\n\n// TODO: turn debugging off\nvar debug = true\n"

func testSpec() world.Spec {
	return world.Spec{
		Schema: world.SpecSchema,
		Files: map[string]string{
			"README.md":      "# demo\n",
			"src/app.go":     appSource,
			"docs/guide.txt": "guide\n",
		},
		Checks: []world.Check{
			{ID: "no-debug", Summary: "debugging is off", Kind: world.CheckAbsentText, Path: "src/app.go", Text: "debug = true", Priority: 10,
				Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "debug = true", Replace: "debug = false"}}},
			{ID: "readme", Summary: "a readme exists", Kind: world.CheckFileExists, Path: "README.md", Priority: 5},
			{ID: "license", Summary: "MIT licensed", Kind: world.CheckPresentText, Path: "LICENSE", Text: "MIT", Priority: 1,
				Fixes: []world.Fix{{Operation: world.OpRecordArtifact, Content: "MIT License\n"}}},
		},
		Evidence: []world.EvidenceSpec{{ID: "ci-report", Path: "reports/ci.txt"}},
	}
}

// newTestWorld creates a sandbox in a fresh state directory with the
// idempotency table on the real file system.
func newTestWorld(t *testing.T, spec world.Spec) (*World, string) {
	t.Helper()
	require.NoError(t, spec.Validate())
	stateDir := t.TempDir()
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	w, err := Create(stateDir, spec, keys)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	return w, stateDir
}

func worldPath(stateDir string, rel string) string {
	return filepath.Join(stateDir, filepath.FromSlash(WorldDir), filepath.FromSlash(rel))
}

func testKey(name string) string { return keyPrefix + codec.Digest([]byte(name)) }

func keyDigest(key string) string { return strings.TrimPrefix(key, keyPrefix) }

func fp(s string) codec.Fingerprint { return codec.FingerprintOf([]byte(s)) }

func readWorld(t *testing.T, stateDir, rel string) string {
	t.Helper()
	b, err := os.ReadFile(worldPath(stateDir, rel))
	require.NoError(t, err)
	return string(b)
}

func writeWorld(t *testing.T, stateDir, rel, content string) {
	t.Helper()
	p := worldPath(stateDir, rel)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// issueLines counts the ISSUES.md lines written under key.
func issueLines(t *testing.T, stateDir, key string) int {
	t.Helper()
	b, err := os.ReadFile(worldPath(stateDir, world.IssuesFile))
	if errors.Is(err, fs.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "- ["+keyDigest(key)[:16]+"]")
}

// snapshot describes a tree without following symlinks, so that tests can
// assert that nothing in it changed.
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "symlink -> " + target
		case d.IsDir():
			out[rel] = "dir"
		default:
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			out[rel] = string(b)
		}
		return nil
	})
	require.NoError(t, err)
	return out
}

// errCrash is what a test's OnStage panics with to stop Execute at a stage,
// the way a kill -9 would.
var errCrash = errors.New("simulated crash")

// crashAt runs Execute and stops it at stage by panicking from OnStage.
func crashAt(t *testing.T, w *World, stage, key string, a world.Action) {
	t.Helper()
	w.OnStage = func(s string) {
		if s == stage {
			panic(errCrash)
		}
	}
	defer func() { w.OnStage = nil }()
	var r any
	func() {
		defer func() { r = recover() }()
		_, _, _ = w.Execute(t.Context(), key, a)
	}()
	require.Equal(t, errCrash, r, "Execute must reach stage %s", stage)
}

func markIssue(note string) world.Action {
	return world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "no-debug", Note: note}
}

// tableKinds lists the kinds of record the table file in fsys holds for
// key, in the order they were appended (read from the file, not through a
// World, so that it sees what a restart would see).
func tableKinds(t *testing.T, fsys disk.FS, key string) []recKind {
	t.Helper()
	data, err := fsys.ReadFile(TableName)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	require.NoError(t, err)
	var kinds []recKind
	id := idOf(keyDigest(key))
	for _, line := range strings.SplitAfter(string(data), "\n") {
		l, err := parseLine([]byte(line))
		if err == nil && l.key == id {
			kinds = append(kinds, l.kind)
		}
	}
	return kinds
}

// osKeys is the disk.FS of a state directory on the real file system.
func osKeys(t *testing.T, stateDir string) disk.FS {
	t.Helper()
	fsys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	return fsys
}
