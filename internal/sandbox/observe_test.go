package sandbox

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

func paths(obs world.Observation) []string {
	out := make([]string, 0, len(obs.Files))
	for _, f := range obs.Files {
		out = append(out, f.Path)
	}
	return out
}

func TestObserveReportsFilesChecksEvidence(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, world.ObservationSchema, obs.Schema)
	assert.Equal(t, []world.FileFact{
		{Path: "README.md", SHA256: fp("# demo\n"), Size: 7},
		{Path: "docs/guide.txt", SHA256: fp("guide\n"), Size: 6},
		{Path: "src/app.go", SHA256: fp(appSource), Size: int64(len(appSource))},
	}, obs.Files)
	assert.Zero(t, obs.Excluded)

	noDebug, ok := obs.Check("no-debug")
	require.True(t, ok)
	assert.Equal(t, world.CheckFail, noDebug.Status)
	assert.Equal(t, fp(appSource), noDebug.TargetSHA256)
	readme, _ := obs.Check("readme")
	assert.Equal(t, world.CheckPass, readme.Status)
	license, _ := obs.Check("license")
	assert.Equal(t, world.CheckFail, license.Status)
	assert.Equal(t, "file is missing", license.Detail)
	assert.Equal(t, []string{"no-debug", "readme", "license"}, []string{obs.Checks[0].ID, obs.Checks[1].ID, obs.Checks[2].ID}, "spec order")
	assert.Equal(t, []world.EvidenceFact{{ID: "ci-report"}}, obs.Evidence)

	writeWorld(t, stateDir, "reports/ci.txt", "green\n")
	writeWorld(t, stateDir, "LICENSE", "MIT\n")
	writeWorld(t, stateDir, "a.txt", "sorts before a/ and after A\n")
	writeWorld(t, stateDir, "a/b.txt", "x\n")
	obs, err = w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []world.EvidenceFact{{ID: "ci-report", Present: true, SHA256: fp("green\n")}}, obs.Evidence)
	license, _ = obs.Check("license")
	assert.Equal(t, world.CheckPass, license.Status)
	assert.Equal(t, []string{"LICENSE", "README.md", "a.txt", "a/b.txt", "docs/guide.txt", "reports/ci.txt", "src/app.go"}, paths(obs))
}

func TestObserveIsDeterministic(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	writeWorld(t, stateDir, "z/y/x.txt", "deep\n")
	writeWorld(t, stateDir, ".env", "TOKEN=1\n")
	first, err := w.Observe(t.Context())
	require.NoError(t, err)
	second, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, first, second)
	assert.Equal(t, codec.MustMarshal(first), codec.MustMarshal(second))
	assert.Equal(t, first.Ref(), second.Ref())
}

func TestObserveNeverReadsExcludedPaths(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	writeWorld(t, stateDir, ".env", "TOKEN=1\n")
	writeWorld(t, stateDir, "id_rsa.key", "-----BEGIN-----\n")
	writeWorld(t, stateDir, ".git/config", "[core]\n")
	writeWorld(t, stateDir, ".git/HEAD", "ref: main\n")
	writeWorld(t, stateDir, "secrets/db.txt", "password\n") // below an excluded directory
	writeWorld(t, stateDir, "certs/server.pem", "cert\n")
	writeWorld(t, stateDir, "certs/README", "public\n")
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md", "certs/README", "docs/guide.txt", "src/app.go"}, paths(obs))
	// .env, id_rsa.key, .git (once, not entered), secrets (once), certs/server.pem
	assert.Equal(t, 5, obs.Excluded)
}

func TestObserveDoesNotFollowSymlinks(t *testing.T) {
	spec := testSpec()
	spec.Checks = append(spec.Checks,
		world.Check{ID: "via-link", Kind: world.CheckPresentText, Path: "link-out.txt", Text: "original"},
		world.Check{ID: "via-dirlink", Kind: world.CheckFileExists, Path: "dirlink/victim.txt"},
		world.Check{ID: "on-dir", Kind: world.CheckAbsentText, Path: "src", Text: "x"},
	)
	spec.Evidence = append(spec.Evidence, world.EvidenceSpec{ID: "linked", Path: "dirlink/victim.txt"})
	w, stateDir := newTestWorld(t, spec)
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, "victim.txt"), []byte("original secret\n"), 0o644))
	require.NoError(t, os.Symlink(filepath.Join(outside, "victim.txt"), worldPath(stateDir, "link-out.txt")))
	require.NoError(t, os.Symlink("README.md", worldPath(stateDir, "link-in.md")))
	require.NoError(t, os.Symlink(outside, worldPath(stateDir, "dirlink")))

	obs, err := w.Observe(t.Context())
	require.NoError(t, err, "a symlink does not abort observation")
	assert.Equal(t, []string{"README.md", "docs/guide.txt", "src/app.go"}, paths(obs))
	assert.Equal(t, 3, obs.Excluded, "each symlink counts as excluded")
	for _, id := range []string{"via-link", "via-dirlink"} {
		r, ok := obs.Check(id)
		require.True(t, ok)
		assert.Equal(t, world.CheckFail, r.Status, id)
		assert.Contains(t, r.Detail, "symlink", id)
		assert.Empty(t, r.TargetSHA256, id)
	}
	r, _ := obs.Check("on-dir")
	assert.Equal(t, world.CheckFail, r.Status, "a check that cannot be verified does not pass")
	assert.False(t, obs.EvidencePresent("linked"))
}

func TestObserveSkipsAndSweepsTempFiles(t *testing.T) {
	spec := testSpec()
	w, stateDir := newTestWorld(t, spec)
	before, err := w.Observe(t.Context())
	require.NoError(t, err)
	writeWorld(t, stateDir, "src/.acr-tmp-42", "half written")
	during, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, before, during, "a leftover temp file is not part of the world")

	require.NoError(t, w.Close())
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	w2, err := Open(stateDir, spec, keys)
	require.NoError(t, err)
	defer w2.Close()
	assert.NoFileExists(t, worldPath(stateDir, "src/.acr-tmp-42"), "Open sweeps stale temp files")
}

func TestObserveEmptyWorld(t *testing.T) {
	w, _ := newTestWorld(t, world.Spec{Schema: world.SpecSchema})
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, `{"checks":[],"evidence":[],"excluded":0,"files":[],"schema":"acr.observation/v0.1"}`, string(codec.MustMarshal(obs)))
}

// readScratch reuses one buffer: each read must return exactly the file's
// bytes, whether the buffer was larger or smaller before.
func TestReadScratchReturnsExactBytesAcrossReads(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	big := strings.Repeat("0123456789", 10_000)
	for _, content := range []string{"short", big, "", "mid-sized file\n", big + "tail"} {
		require.NoError(t, os.WriteFile(worldPath(dir, "scratch.txt"), []byte(content), 0o644))
		got, exists, err := w.readScratch("scratch.txt")
		require.NoError(t, err)
		assert.True(t, exists)
		assert.Equal(t, content, string(got))
	}
	got, exists, err := w.readScratch("missing.txt")
	require.NoError(t, err)
	assert.False(t, exists)
	assert.Empty(t, got)
}
