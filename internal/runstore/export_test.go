package runstore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// sameBytes asserts that two byte strings are equal, naming the first
// line where they differ (an archive or a ledger is too long to print).
func sameBytes(t *testing.T, want, got []byte, msg string) {
	t.Helper()
	if bytes.Equal(want, got) {
		return
	}
	wl, gl := bytes.Split(want, []byte("\n")), bytes.Split(got, []byte("\n"))
	for i := range min(len(wl), len(gl)) {
		if !bytes.Equal(wl[i], gl[i]) {
			t.Errorf("%s: line %d differs:\nwant %.300s\ngot  %.300s", msg, i+1, wl[i], gl[i])
			return
		}
	}
	t.Errorf("%s: %d lines, want %d", msg, len(gl), len(wl))
}

// exportBytes exports the run in dir and encodes the archive.
func exportBytes(t *testing.T, dir string) []byte {
	t.Helper()
	ex, err := ExportDir(dir)
	require.NoError(t, err)
	b, err := archive.Encode(ex.Run)
	require.NoError(t, err)
	return b
}

// TestExportImportDir: a run with a pending approval, an inbox item, and
// a world with a directory of its own, an executable file, an empty file
// and a symlink moves to a new state directory byte for byte; the
// archive of the import is the archive of the source; both continue
// alike.
func TestExportImportDir(t *testing.T) {
	src := quickRun(t, 10)
	world := filepath.Join(src, "sandbox", "world")
	require.NoError(t, os.MkdirAll(filepath.Join(world, "bin", "empty"), 0o750))
	require.NoError(t, os.WriteFile(filepath.Join(world, "bin", "run.sh"), []byte("#!/bin/sh\n"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(world, "bin", "zero"), nil, 0o600))
	require.NoError(t, os.Symlink("run.sh", filepath.Join(world, "bin", "link")))
	_, err := dirstore.Inbox{FS: mustFS(t, src)}.Write(&state.StopRequest{Schema: state.StopSchema, By: "t", Reason: "r", CreatedAt: "2026-01-01T01:00:00Z"})
	require.NoError(t, err)

	b := exportBytes(t, src)
	r, st, err := CheckArchive(b)
	require.NoError(t, err)
	require.Len(t, r.Inbox, 1)
	dst := filepath.Join(t.TempDir(), "new", "state")
	im, err := ImportDir(dst, r, st, testOptions())
	require.NoError(t, err)
	assert.Equal(t, r.Checkpoint.LedgerSeq, im.Records)

	sameBytes(t, b, exportBytes(t, dst), "the archive of the import is the archive of the source")
	for _, p := range []string{"ledger/events.jsonl", "sandbox/world/bin/run.sh", "sandbox/world/README.md"} {
		want, err := os.ReadFile(filepath.Join(src, p))
		require.NoError(t, err)
		got, err := os.ReadFile(filepath.Join(dst, p))
		require.NoError(t, err)
		assert.Equal(t, want, got, p)
	}
	fi, err := os.Stat(filepath.Join(dst, "sandbox", "world", "bin", "run.sh"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o755), fi.Mode().Perm())
	fi, err = os.Stat(filepath.Join(dst, "sandbox", "world", "bin", "empty"))
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o750), fi.Mode().Perm())
	target, err := os.Readlink(filepath.Join(dst, "sandbox", "world", "bin", "link"))
	require.NoError(t, err)
	assert.Equal(t, "run.sh", target)
	_, m1, err := ReadState(src)
	require.NoError(t, err)
	_, m2, err := ReadState(dst)
	require.NoError(t, err)
	assert.Equal(t, m1.Files, m2.Files, "the checkpoint's fingerprints")
	assert.Equal(t, m1.LedgerFrontier, m2.LedgerFrontier)
	assert.Equal(t, int64(1), m2.Generation)

	// Both continue alike: the stop request is consumed by the next cycle.
	for _, dir := range []string{src, dst} {
		run, err := Open(t.Context(), dir, testOptions())
		require.NoError(t, err)
		_, err = run.Driver.Run(context.Background(), 5, nil)
		require.NoError(t, err)
		require.NoError(t, run.Close())
	}
	a, err := os.ReadFile(filepath.Join(src, ledger.FileName))
	require.NoError(t, err)
	c, err := os.ReadFile(filepath.Join(dst, ledger.FileName))
	require.NoError(t, err)
	sameBytes(t, a, c, "the same ledger after the same cycles")

	// An import never replaces a run, and writes nothing when it refuses.
	before := treeOf(t, dst)
	_, err = ImportDir(dst, r, st, testOptions())
	assert.ErrorIs(t, err, ErrRunExists)
	var ie *ImportExistsError
	assert.ErrorAs(t, err, &ie)
	assert.Equal(t, before, treeOf(t, dst))
}

// TestExportRefusesARunNotAtRest: a ledger beyond the checkpoint (a cycle
// cut off) or with a torn last line is not exported until recovered; a
// ledger that does not verify is refused as damaged.
func TestExportRefusesARunNotAtRest(t *testing.T) {
	dir := quickRun(t, 2)
	f, err := os.OpenFile(filepath.Join(dir, ledger.FileName), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.WriteString(`{"chain":"sha256:`)
	require.NoError(t, err)
	require.NoError(t, f.Close())
	_, err = ExportDir(dir)
	assert.ErrorIs(t, err, ErrNotAtRest)
	assert.ErrorContains(t, err, "torn line")

	run, err := Open(t.Context(), dir, testOptions())
	require.NoError(t, err, "acr recover repairs the torn line")
	require.NoError(t, run.Close())
	_, err = ExportDir(dir)
	require.NoError(t, err, "recovered, it exports")

	b, err := os.ReadFile(filepath.Join(dir, ledger.FileName))
	require.NoError(t, err)
	b[len(b)/2] ^= 1
	require.NoError(t, os.WriteFile(filepath.Join(dir, ledger.FileName), b, 0o644))
	_, err = ExportDir(dir)
	assert.ErrorIs(t, err, ledger.ErrCorrupt)
}

// TestImportCutOffLeavesNothingOrTheRun: a crash while the run is built
// in the staging directory leaves no run (the next command clears the
// staging directory); a crash after the swap was decided leaves the run,
// which the next command that takes the lock puts in place.
func TestImportCutOffLeavesNothingOrTheRun(t *testing.T) {
	r, st, err := CheckArchive(exportBytes(t, quickRun(t, 3)))
	require.NoError(t, err)

	built := t.TempDir()
	fsys := mustFS(t, built)
	require.NoError(t, buildImport(store{fsys: fsys, root: built}, r, st, testOptions()))
	_, _, err = ReadState(built)
	assert.ErrorIs(t, err, storage.ErrNoRun, "built but not decided: no run")
	_, err = Open(t.Context(), built, testOptions())
	assert.ErrorIs(t, err, storage.ErrNoRun)
	assert.NoDirExists(t, filepath.Join(built, stagingDir), "the next command clears it")

	decided := t.TempDir()
	fsys = mustFS(t, decided)
	s := store{fsys: fsys, root: decided}
	require.NoError(t, buildImport(s, r, st, testOptions()))
	rec, err := codec.Marshal(swapRecord{Schema: swapSchema})
	require.NoError(t, err)
	require.NoError(t, fsys.WriteFile(stagingDir+"/"+swapFile, rec))
	run, err := Open(t.Context(), decided, testOptions())
	require.NoError(t, err, "decided: the next command finishes the swap")
	assert.Equal(t, r.Checkpoint.CycleSeq, run.Driver.State().Run.CycleSeq)
	require.NoError(t, run.Close())
}

// TestImportRemoteResumes: the records an import cut off before its
// checkpoint left in a JetStream store are taken up by the same import
// run again; records that are not the archive's make the run damaged,
// and the import refuses it.
func TestImportRemoteResumes(t *testing.T) {
	srv := natstest.Start(t)
	url := srv.ClientURL() + "/exp"
	r, st, err := CheckArchive(exportBytes(t, quickRun(t, 4)))
	require.NoError(t, err)
	m, err := Dial(t.Context(), url, Connection{}, "run:test", t.TempDir())
	require.NoError(t, err)
	defer m.Close()

	recs, err := archiveRecords(r.Ledger)
	require.NoError(t, err)
	led, err := m.Run.OpenLedger()
	require.NoError(t, err)
	var evs []event.Event
	for _, rec := range recs[:5] {
		evs = append(evs, rec.Event)
	}
	_, err = led.Append(evs)
	require.NoError(t, err)
	_, _, err = m.ReadState()
	assert.ErrorIs(t, err, storage.ErrNoRun, "records without a checkpoint are no run")

	im, err := m.Import(t.Context(), r, st, storage.Holder{Name: "test"})
	require.NoError(t, err)
	assert.Equal(t, int64(5), im.Resumed)
	ex, err := m.Export(t.Context(), storage.Holder{Name: "test"})
	require.NoError(t, err)
	b, err := archive.Encode(ex.Run)
	require.NoError(t, err)
	want, err := archive.Encode(r)
	require.NoError(t, err)
	sameBytes(t, want, b, "the run in the store is the archive's")

	_, err = m.Import(t.Context(), r, st, storage.Holder{Name: "test"})
	assert.ErrorIs(t, err, ErrRunExists)

	// Records beyond the checkpoint (a cycle a worker's death cut off):
	// not at rest, not exported.
	led, err = m.Run.OpenLedger()
	require.NoError(t, err)
	_, err = led.Append([]event.Event{{Type: event.RecoveryStarted, RunID: "run:test", At: "2026-01-01T00:00:00Z"}})
	require.NoError(t, err)
	_, err = m.Export(t.Context(), storage.Holder{Name: "test"})
	assert.ErrorIs(t, err, ErrNotAtRest)
	assert.ErrorContains(t, err, "the ledger goes on past the checkpoint's seq")

	other, err := Dial(t.Context(), url, Connection{}, "run:other", t.TempDir())
	require.NoError(t, err)
	defer other.Close()
	led, err = other.Run.OpenLedger()
	require.NoError(t, err)
	_, err = led.Append([]event.Event{{Type: event.RecoveryStarted, RunID: "run:other", At: "2026-01-01T00:00:00Z"}})
	require.NoError(t, err)
	r.RunID = "run:other"
	_, err = other.Import(t.Context(), r, st, storage.Holder{Name: "test"})
	var ie *ImportExistsError
	require.True(t, errors.As(err, &ie), "%v", err)
	assert.Contains(t, ie.Damaged, "not this archive's")
}
