package runstore

import (
	"bytes"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// An import into a state directory, cut by a power loss or a kill -9
// before every single file system operation it makes (and right after it
// returned), leaves either no run or the archive's run, whole, once the
// next command has opened the directory; once import has returned, the
// run is there even for the commands that read it without the lock.

// importCut is a cutTrial that can also be a kill -9, which loses nothing
// written, instead of a power loss.
type importCut struct {
	cutTrial
	kill bool
}

// importArchive is a run with history, an inbox item and an idempotency
// table of both layouts, ready to import.
func importArchive(t *testing.T) (archive.Run, kernel.EngineState) {
	t.Helper()
	dir := quickRun(t, 3)
	_, err := dirstore.Inbox{FS: mustFS(t, dir)}.Write(&state.StopRequest{Schema: state.StopSchema, By: "t", CreatedAt: "2026-01-01T01:00:00Z"})
	require.NoError(t, err)
	ex, err := ExportDir(dir)
	require.NoError(t, err)
	r := ex.Run
	r.Keys = []archive.File{{Path: "table.log", Data: []byte("{\"a\":1}\n")}, {Path: "ab/ab01.json", Data: []byte("{}")}}
	return r, ex.State
}

// importTrial imports r onto a fresh Mem under a trial; it returns how
// many operations the import made and what is wrong after the power loss
// and a reopen, if anything; found says whether the run is there.
func importTrial(t *testing.T, r archive.Run, st kernel.EngineState, tr importCut, groups *[]string) (ops int, found bool, err error) {
	t.Helper()
	mem, root := disk.NewMem(), t.TempDir()
	var importErr error
	ops = underCut(mem, tr.cutTrial, groups, func() {
		importErr = ImportOn(mem, root, r, st, replaceOptions())
	})
	finished := tr.cut == 0 || tr.cut > ops
	if finished && importErr != nil {
		return ops, false, fmt.Errorf("import without a power cut: %w", importErr)
	}
	if !tr.kill {
		mem.Crash()
	}

	if finished {
		// The readers (status, log) take no lock and finish nothing.
		if k, _, err := inspect(mem); err != nil || k != kindRun {
			return ops, false, fmt.Errorf("import returned, but after the power loss the directory holds no run a reader sees (kind %d, %v)", k, err)
		}
	}
	run, err := OpenOn(t.Context(), mem, root, replaceOptions(), nil)
	if errors.Is(err, storage.ErrNoRun) {
		if finished {
			return ops, false, errors.New("import returned, but after the power loss there is no run")
		}
		if ok, _ := disk.Exists(mem, stagingDir); ok {
			return ops, false, errors.New("no run, and the staging directory is still there after reopen")
		}
		return ops, false, nil
	}
	if err != nil {
		return ops, false, fmt.Errorf("reopen after the power cut: %w", err)
	}
	require.NoError(t, run.Close())
	return ops, true, sameRun(mem, root, r)
}

// sameRun checks that the run on mem (and its world under root) is the
// archive's, byte for byte.
func sameRun(mem *disk.Mem, root string, r archive.Run) error {
	if l, _ := mem.ReadFile(ledger.FileName); !bytes.HasPrefix(l, r.Ledger) {
		return errors.New("the ledger is not the archive's")
	}
	snap, err := dirstore.NewStore(mem).Load()
	if err != nil {
		return err
	}
	if !maps.EqualFunc(snap.Files, r.Checkpoint.Files, bytes.Equal) {
		return errors.New("the checkpoint files are not the archive's")
	}
	for _, it := range r.Inbox {
		if b, err := mem.ReadFile(dirstore.InboxDir + "/" + it.ID + ".json"); err != nil || !bytes.Equal(b, it.Body) {
			return fmt.Errorf("inbox item %s: %v", it.ID, err)
		}
	}
	for _, f := range r.Keys {
		if b, err := mem.ReadFile(sandbox.KeysDir + "/" + f.Path); err != nil || !bytes.Equal(b, f.Data) {
			return fmt.Errorf("idempotency file %s: %v", f.Path, err)
		}
	}
	for _, e := range r.World {
		if e.Type != archive.TypeFile {
			continue
		}
		if b, err := os.ReadFile(filepath.Join(root, sandbox.WorldDir, e.Path)); err != nil || !bytes.Equal(b, e.Data) {
			return fmt.Errorf("world file %s: %v", e.Path, err)
		}
	}
	return nil
}

// TestPowerLossDuringImport cuts power before each operation of an import
// in turn.
func TestPowerLossDuringImport(t *testing.T) {
	r, st := importArchive(t)
	total, found, err := importTrial(t, r, st, importCut{}, nil)
	require.NoError(t, err)
	require.True(t, found)
	require.Greater(t, total, 20, "an import makes a few dozen operations")
	for _, kill := range []bool{false, true} {
		seen := map[bool]int{}
		for cut := 1; cut <= total; cut++ {
			_, found, err := importTrial(t, r, st, importCut{cutTrial{cut: cut}, kill}, nil)
			require.NoError(t, err, "cut (kill -9: %t) before operation %d of %d", kill, cut, total)
			seen[found]++
		}
		t.Logf("kill -9 %t, %d cut points: run there after %d, no run after %d", kill, total, seen[true], seen[false])
		assert.Positive(t, seen[true])
		assert.Positive(t, seen[false])
	}
}

// TestEveryImportFsyncIsNeeded switches off each kind of fsync an import
// makes, one at a time, and requires that some power cut then loses the
// run or leaves a wrong one. One kind is not needed, and it is not the
// import's: the staging directory's (the manifest's commit there, and the
// swap record's). Unlike init, an import ends with an fsync of the state
// directory that makes the whole swap durable at once, and nothing of it
// is durable before, so a power cut finds the swap either not begun or
// done; the swap record is there for a kill -9 half-way through the swap
// (TestPowerLossDuringImport), which loses nothing written.
func TestEveryImportFsyncIsNeeded(t *testing.T) {
	r, st := importArchive(t)
	var groups []string
	total, _, err := importTrial(t, r, st, importCut{}, &groups)
	require.NoError(t, err)
	slices.Sort(groups)
	require.NotEmpty(t, groups)
	groups = slices.DeleteFunc(groups, func(g string) bool { return g == "dir "+stagingDir })
	var blind []string
	for _, g := range groups {
		noticed := false
		for cut := 0; cut <= total && !noticed; cut++ {
			_, _, err := importTrial(t, r, st, importCut{cutTrial: cutTrial{cut: cut, skip: g}}, nil)
			noticed = err != nil
		}
		if !noticed {
			blind = append(blind, g)
		}
	}
	t.Logf("fsync kinds of an import: %v", groups)
	require.Empty(t, blind, "these fsyncs can be switched off without any power cut noticing")
}
