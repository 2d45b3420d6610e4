package runstore

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

func testOptions() Options {
	return Options{Clock: &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Revision: "test"}
}

// quickRun makes a quickstart run with a few cycles in a fresh directory.
func quickRun(t *testing.T, cycles int) string {
	t.Helper()
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, testOptions())
	require.NoError(t, err)
	if cycles > 0 {
		r, err := Open(t.Context(), dir, testOptions())
		require.NoError(t, err)
		_, err = r.Driver.Run(context.Background(), cycles, nil)
		require.NoError(t, err)
		require.NoError(t, r.Close())
	}
	return dir
}

// TestSymlinkedPartsAreRefused: a state directory whose manifest,
// checkpoint, ledger, sandbox or inbox is a symlink is refused by every
// way into it, naming the part, and nothing is written.
func TestSymlinkedPartsAreRefused(t *testing.T) {
	for _, part := range []string{"sandbox", "ledger", "checkpoint", "inbox", "manifest.json"} {
		t.Run(part, func(t *testing.T) {
			dir := quickRun(t, 1)
			p := filepath.Join(dir, part)
			if _, err := os.Stat(p); errors.Is(err, os.ErrNotExist) {
				require.NoError(t, os.Mkdir(p, 0o755))
			}
			elsewhere := filepath.Join(t.TempDir(), part)
			require.NoError(t, os.Rename(p, elsewhere))
			require.NoError(t, os.Symlink(elsewhere, p))
			before := treeOf(t, dir)
			for name, try := range map[string]func() error{
				"open":       func() error { _, err := Open(t.Context(), dir, testOptions()); return err },
				"read state": func() error { _, _, err := ReadState(dir); return err },
				"ledger":     func() error { _, err := RequireLedger(dir); return err },
				"init force": func() error {
					_, err := Init(t.Context(), dir, quickstart(t), "run:new", true, testOptions())
					return err
				},
				"rebuild": func() error { _, err := RebuildManifest(dir, testOptions()); return err },
			} {
				err := try()
				var ie *state.IntegrityError
				require.ErrorAs(t, err, &ie, name)
				assert.Equal(t, part, ie.File, name)
				assert.Contains(t, err.Error(), "symbolic link", name)
			}
			assert.Equal(t, before, treeOf(t, dir))
		})
	}
}

func TestWrongKindOfPartIsIntegrityError(t *testing.T) {
	dir := quickRun(t, 0)
	require.NoError(t, os.Rename(filepath.Join(dir, "manifest.json"), filepath.Join(t.TempDir(), "m")))
	require.NoError(t, os.Mkdir(filepath.Join(dir, "manifest.json"), 0o755))
	_, _, err := ReadState(dir)
	var ie *state.IntegrityError
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "integrity: manifest.json: is a directory, not a file", err.Error())

	dir = quickRun(t, 0)
	require.NoError(t, os.RemoveAll(filepath.Join(dir, "inbox")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "inbox"), nil, 0o644))
	_, err = Open(t.Context(), dir, testOptions())
	require.ErrorAs(t, err, &ie)
	assert.Equal(t, "integrity: inbox: is a regular file, not a directory", err.Error())
}

// TestStateDirThatIsAFile: --state-dir naming a regular file is a usage
// problem, reported as such by every way in, and the file is untouched.
func TestStateDirThatIsAFile(t *testing.T) {
	f := filepath.Join(t.TempDir(), "plain")
	require.NoError(t, os.WriteFile(f, []byte("x"), 0o644))
	for name, try := range map[string]func() error{
		"open":       func() error { _, err := Open(t.Context(), f, testOptions()); return err },
		"read state": func() error { _, _, err := ReadState(f); return err },
		"ledger":     func() error { _, err := RequireLedger(f); return err },
		"init":       func() error { _, err := Init(t.Context(), f, quickstart(t), "", false, testOptions()); return err },
	} {
		var nd *NotDirError
		require.ErrorAs(t, try(), &nd, name)
	}
	b, err := os.ReadFile(f)
	require.NoError(t, err)
	assert.Equal(t, "x", string(b))
}

func TestNoRunNamesTheDirectory(t *testing.T) {
	for _, dir := range []string{filepath.Join(t.TempDir(), "absent"), t.TempDir()} {
		_, _, err := ReadState(dir)
		require.ErrorIs(t, err, storage.ErrNoRun)
		abs, _ := filepath.Abs(dir)
		assert.Equal(t, "no run in the state directory "+abs, err.Error())
		_, err = Open(t.Context(), dir, testOptions())
		require.ErrorIs(t, err, storage.ErrNoRun)
		assert.Contains(t, err.Error(), abs)
	}
}

// TestMissingManifestIsADamagedRun: without manifest.json a directory that
// holds a ledger and checkpoint files is a damaged run: reading it says so
// (not "no run"), init will not replace it without force, and
// RebuildManifest gives it back the manifest it had.
func TestMissingManifestIsADamagedRun(t *testing.T) {
	dir := quickRun(t, 3)
	mpath := filepath.Join(dir, dirstore.ManifestName)
	orig, err := os.ReadFile(mpath)
	require.NoError(t, err)
	var want storage.Manifest
	require.NoError(t, codec.UnmarshalCanonical(orig, &want))
	require.NoError(t, os.Remove(mpath))
	before := treeOf(t, dir)

	_, _, err = ReadState(dir)
	var de *DamagedError
	require.ErrorAs(t, err, &de)
	assert.False(t, errors.Is(err, storage.ErrNoRun), "a damaged run is not 'no run'")
	assert.Contains(t, err.Error(), "ledger/events.jsonl")
	assert.Contains(t, err.Error(), "9 checkpoint files")
	_, err = Open(t.Context(), dir, testOptions())
	require.ErrorAs(t, err, &de)
	_, err = Init(t.Context(), dir, quickstart(t), "run:other", false, testOptions())
	require.ErrorIs(t, err, ErrRunExists)
	assert.Contains(t, err.Error(), "damaged run")
	assert.Equal(t, before, treeOf(t, dir), "refusals write nothing")

	rb, err := RebuildManifest(dir, testOptions())
	require.NoError(t, err)
	require.NotNil(t, rb)
	assert.Equal(t, want.CycleSeq, rb.CycleSeq)
	assert.Equal(t, want.LedgerFrontier, rb.Frontier)
	assert.Empty(t, rb.Unused)
	st, m, err := ReadState(dir)
	require.NoError(t, err)
	assert.Equal(t, want.Files, m.Files)
	assert.Equal(t, want.RunID, m.RunID)
	assert.Equal(t, want.CycleSeq, st.Run.CycleSeq)

	r, err := Open(t.Context(), dir, testOptions())
	require.NoError(t, err)
	assert.False(t, r.Driver.Recovery().Recovered, "the rebuilt checkpoint is exactly where the ledger says")
	_, err = r.Driver.Run(context.Background(), 20, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())

	again, err := RebuildManifest(dir, testOptions())
	require.NoError(t, err)
	assert.Nil(t, again, "a run with a manifest needs no rebuild")
}

// TestRebuildPicksTheNewestRecordedCheckpoint: with files of an older
// checkpoint still around, and the ledger ahead of the newest checkpoint
// (cycles run since), the rebuild names the newest checkpoint, keeps the
// older files aside, and recovery rolls forward the rest.
func TestRebuildPicksTheNewestRecordedCheckpoint(t *testing.T) {
	dir := quickRun(t, 1)
	old := treeOf(t, filepath.Join(dir, dirstore.CheckpointDir))
	opt := testOptions()
	opt.CheckpointEvery = 100
	r, err := Open(t.Context(), dir, opt)
	require.NoError(t, err)
	_, err = r.Driver.Step(t.Context())
	require.NoError(t, err)
	require.NoError(t, r.Close()) // checkpoint of cycle 2
	m2, err := os.ReadFile(filepath.Join(dir, dirstore.ManifestName))
	require.NoError(t, err)
	for p, b := range old { // the older generation's files come back
		if !strings.HasSuffix(p, "/") {
			require.NoError(t, os.WriteFile(p, []byte(b), 0o644))
		}
	}
	require.NoError(t, os.Remove(filepath.Join(dir, dirstore.ManifestName)))

	rb, err := RebuildManifest(dir, opt)
	require.NoError(t, err)
	assert.EqualValues(t, 2, rb.CycleSeq)
	assert.NotEmpty(t, rb.Unused)
	assert.True(t, strings.HasPrefix(rb.Kept, ArchiveDir+"/"))
	for _, p := range rb.Unused {
		_, err := os.Stat(filepath.Join(dir, rb.Kept, filepath.Base(p)))
		assert.NoError(t, err, "unused file %s is kept", p)
	}
	var want, got storage.Manifest
	require.NoError(t, codec.UnmarshalCanonical(m2, &want))
	_, gotM, err := ReadState(dir)
	require.NoError(t, err)
	got = gotM
	assert.Equal(t, want.Files, got.Files)
	assert.Equal(t, want.LedgerFrontier, got.LedgerFrontier)
}

func TestRebuildRollsForwardCyclesBeyondTheCheckpoint(t *testing.T) {
	dir := quickRun(t, 0)
	opt := testOptions()
	opt.CheckpointEvery = 100
	r, err := Open(t.Context(), dir, opt)
	require.NoError(t, err)
	_, err = r.Driver.Step(t.Context())
	require.NoError(t, err)
	_, err = r.Driver.Step(t.Context())
	require.NoError(t, err)
	r.Abandon() // like a kill: the ledger holds two cycles the checkpoint does not
	require.NoError(t, os.Remove(filepath.Join(dir, dirstore.ManifestName)))

	rb, err := RebuildManifest(dir, opt)
	require.NoError(t, err)
	assert.EqualValues(t, 0, rb.CycleSeq)
	r, err = Open(t.Context(), dir, opt)
	require.NoError(t, err)
	rec := r.Driver.Recovery()
	require.NoError(t, r.Close())
	assert.True(t, rec.Recovered)
	assert.EqualValues(t, 2, rec.RecoveredToCycle)
}

func TestRebuildRefusesWhatItCannotTell(t *testing.T) {
	dir := quickRun(t, 2)
	require.NoError(t, os.Remove(filepath.Join(dir, dirstore.ManifestName)))
	require.NoError(t, os.Rename(filepath.Join(dir, "ledger", "events.jsonl"), filepath.Join(t.TempDir(), "l")))
	before := treeOf(t, dir)
	_, err := RebuildManifest(dir, testOptions())
	var ie *state.IntegrityError
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "cannot be rebuilt: the ledger is missing too")
	assert.Equal(t, before, treeOf(t, dir))

	dir = quickRun(t, 2)
	require.NoError(t, os.Remove(filepath.Join(dir, dirstore.ManifestName)))
	es, err := os.ReadDir(filepath.Join(dir, dirstore.CheckpointDir))
	require.NoError(t, err)
	for _, e := range es {
		if strings.HasPrefix(e.Name(), "run_state.") {
			require.NoError(t, os.Remove(filepath.Join(dir, dirstore.CheckpointDir, e.Name())))
		}
	}
	before = treeOf(t, dir)
	_, err = RebuildManifest(dir, testOptions())
	require.ErrorAs(t, err, &ie)
	assert.Contains(t, err.Error(), "no set of files in checkpoint/ forms a checkpoint that the ledger recorded")
	assert.Equal(t, before, treeOf(t, dir))
}

// treeOf records every entry below dir: files with their bytes,
// directories, and symlinks with their targets (not followed).
func treeOf(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch {
		case d.Type()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			out[p] = "-> " + target
			return err
		case d.IsDir():
			out[p+"/"] = ""
		default:
			b, err := os.ReadFile(p)
			out[p] = string(b)
			return err
		}
		return nil
	}))
	return out
}
