package runstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// The parts of a run at the top of a state directory. Init moves exactly
// these when it replaces a run; everything else there (the lock, the kill
// switch, archived runs) stays where it is.
var runParts = []string{dirstore.ManifestName, dirstore.CheckpointDir, "ledger", sandbox.Dir, dirstore.InboxDir}

// NotDirError means the state directory named is not a directory.
type NotDirError struct{ Path string }

func (e *NotDirError) Error() string {
	return fmt.Sprintf("state directory %s is not a directory (give --state-dir a directory, or a path that does not exist yet for acr init)", e.Path)
}

// NoRunError means a state directory holds no run. It names the directory
// looked in and matches storage.ErrNoRun.
type NoRunError struct{ Dir string }

func (e *NoRunError) Error() string { return fmt.Sprintf("no run in the state directory %s", e.Dir) }

// Unwrap lets errors.Is(err, storage.ErrNoRun) match.
func (e *NoRunError) Unwrap() error { return storage.ErrNoRun }

// DamagedError means a state directory holds what is left of a run (its
// ledger or checkpoint files) without the manifest that ties them
// together. It is an integrity failure, never "no run": init refuses it,
// status reports it, and recover rebuilds the manifest when it can.
type DamagedError struct {
	Dir   string
	Found []string
}

func (e *DamagedError) Error() string {
	return fmt.Sprintf("integrity: %s: missing from %s, which still holds %s: this is a damaged run, not an empty directory; "+
		"acr recover rebuilds the manifest from the checkpoint files and the ledger", dirstore.ManifestName, e.Dir, strings.Join(e.Found, " and "))
}

// InterruptedInitError means an acr init that replaces a run was cut off
// half-way through swapping the new run in. The next command that takes
// the lock (step, run, recover, init) finishes the swap.
type InterruptedInitError struct{ Dir string }

func (e *InterruptedInitError) Error() string {
	return fmt.Sprintf("integrity: %s: an acr init was interrupted while it moved the new run into place; "+
		"acr recover (or any acr step or run) finishes it", filepath.Join(e.Dir, stagingDir))
}

// checkLayout refuses a state directory whose parts are not what acr made
// them: a symlink in place of the manifest, the checkpoint, ledger, sandbox
// or inbox directory (acr would write through it to wherever it points),
// a directory where the manifest should be, a file where a directory
// should be. Missing parts are fine here; callers decide what they need.
func checkLayout(dir string) error {
	for _, name := range runParts {
		fi, err := os.Lstat(filepath.Join(dir, name))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("check state directory %s: %w", dir, err)
		}
		switch {
		case fi.Mode()&fs.ModeSymlink != 0:
			return &state.IntegrityError{File: name, Msg: "is a symbolic link; acr refuses to write a run through a link " +
				"(move the directory it points to into the state directory, or point --state-dir at a directory that holds the real one)"}
		case name == dirstore.ManifestName && !fi.Mode().IsRegular():
			return &state.IntegrityError{File: name, Msg: fmt.Sprintf("is a %s, not a file", kindOf(fi))}
		case name != dirstore.ManifestName && !fi.IsDir():
			return &state.IntegrityError{File: name, Msg: fmt.Sprintf("is a %s, not a directory", kindOf(fi))}
		}
	}
	return nil
}

func kindOf(fi fs.FileInfo) string {
	switch {
	case fi.IsDir():
		return "directory"
	case fi.Mode().IsRegular():
		return "regular file"
	}
	return "special file"
}

// OpenDir opens an existing state directory for reading after checking its
// layout (see checkLayout). A missing directory is a *NoRunError, a path
// that is not a directory a *NotDirError.
func OpenDir(dir string) (*disk.OSDir, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, &NoRunError{Dir: absPath(dir)}
	case err != nil:
		return nil, fmt.Errorf("open state directory %s: %w", dir, err)
	case !fi.IsDir():
		return nil, &NotDirError{Path: dir}
	}
	fsys, err := disk.OpenOSDir(dir)
	if err != nil {
		return nil, fmt.Errorf("open state directory %s: %w", dir, err)
	}
	if err := checkLayout(fsys.Path()); err != nil {
		return nil, err
	}
	return fsys, nil
}

// RequireRun opens a state directory that must hold a run: one with a
// manifest. Without one the error says which of the three cases it is:
// nothing there (*NoRunError), what is left of a damaged run
// (*DamagedError), or an interrupted init (*InterruptedInitError). It
// never writes.
func RequireRun(dir string) (*disk.OSDir, error) {
	fsys, err := OpenDir(dir)
	if err != nil {
		return nil, err
	}
	if err := requireManifest(fsys, fsys.Path()); err != nil {
		return nil, err
	}
	return fsys, nil
}

// RequireLedger opens a state directory for reading its ledger, the
// evidence, which is read whether or not the rest of the run is intact
// (a damaged run without its manifest, an archived run). It never writes.
func RequireLedger(dir string) (*disk.OSDir, error) {
	fsys, err := OpenDir(dir)
	if err != nil {
		return nil, err
	}
	ok, err := disk.Exists(fsys, ledger.FileName)
	if err != nil || ok {
		return fsys, err
	}
	if err := requireManifest(fsys, fsys.Path()); err != nil {
		return nil, err
	}
	return nil, &state.IntegrityError{File: ledger.FileName, Msg: "the ledger is missing"}
}

func requireManifest(fsys disk.FS, dir string) error {
	k, found, err := inspect(fsys)
	if err != nil {
		return err
	}
	switch k {
	case kindRun:
		return nil
	case kindDamaged:
		return &DamagedError{Dir: dir, Found: found}
	case kindStaged:
		return &InterruptedInitError{Dir: dir}
	}
	return &NoRunError{Dir: dir}
}

type dirKind int

const (
	kindNone    dirKind = iota // no run, nothing of one
	kindRun                    // a manifest
	kindDamaged                // a ledger or checkpoint files without a manifest
	kindStaged                 // an init interrupted while swapping a new run in
)

// inspect says what a state directory holds. Anything of a run other than
// its manifest (the ledger, checkpoint files) makes it a damaged run; a
// sandbox or inbox alone does not, since nothing there is history.
func inspect(fsys disk.FS) (dirKind, []string, error) {
	if ok, err := disk.Exists(fsys, stagingDir+"/"+swapFile); err != nil {
		return kindNone, nil, err
	} else if ok {
		return kindStaged, nil, nil
	}
	if ok, err := disk.Exists(fsys, dirstore.ManifestName); err != nil {
		return kindNone, nil, err
	} else if ok {
		return kindRun, nil, nil
	}
	var found []string
	if fi, err := fsys.Stat(ledger.FileName); err == nil {
		found = append(found, fmt.Sprintf("%s (%d bytes)", ledger.FileName, fi.Size()))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return kindNone, nil, err
	}
	if sealed, err := fsys.ReadDir(ledger.SealedDir); err == nil && len(sealed) > 0 {
		found = append(found, fmt.Sprintf("%d sealed ledger segment(s) in %s", len(sealed), ledger.SealedDir))
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return kindNone, nil, err
	}
	entries, err := fsys.ReadDir(dirstore.CheckpointDir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return kindNone, nil, err
	}
	n := 0
	for _, e := range entries {
		if !e.IsDir() && !strings.HasPrefix(e.Name(), ".") {
			n++
		}
	}
	if n > 0 {
		found = append(found, fmt.Sprintf("%d checkpoint files", n))
	}
	if len(found) > 0 {
		return kindDamaged, found, nil
	}
	return kindNone, nil, nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
