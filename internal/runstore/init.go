package runstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// Init never builds a run in place. It builds the new run complete in a
// staging directory beside the old one, and only then swaps it in:
//
//  1. Build: everything a run has (checkpoint, ledger, sandbox, inbox,
//     manifest last) is written durably under stagingDir, by the same code
//     that writes a run in place. A failure here removes the staging
//     directory and leaves the state directory as it was.
//  2. Decide: swapFile is written durably into the staging directory
//     (temp file, fsync, rename, fsync of the staging directory). It names
//     the archive directory the old run goes to. From this instant the swap
//     is going to happen: whoever takes the lock next finishes it.
//  3. Archive: each old part that the new run replaces is renamed into the
//     archive directory, the manifest first.
//  4. Install: each new part is renamed into place, the manifest last.
//  5. Clean up: the staging directory, now holding only swapFile, goes.
//
// Steps 3 to 5 are idempotent: a part still staged whose name is also
// taken at the top is the old one (install has not reached it); a part no
// longer staged was installed already. finishSwap redoes them after a
// crash, so at every instant the directory holds the old run, the new one,
// or a decided swap that the next locked command completes. Nothing of the
// old run is ever deleted.
//
// Steps 3 to 5 make no fsync of their own, on purpose: every rename is
// atomic, and as long as the removal of the staging directory is not
// durable neither is anything that depends on it, so a power loss at any
// point finds the swap record and the swap is redone. The renames become
// durable with the next fsync of the state directory (the next checkpoint
// commit at the latest). TestPowerLossDuringReplace cuts power before
// every single file system operation of a replacement and after the last.
const (
	stagingDir = ".acr-init"
	swapFile   = "swap.json"
	// ArchiveDir holds the runs that init --force replaced, one directory
	// each, named by the time of the replacement.
	ArchiveDir = "archive"
)

// swapRecord is the content of swapFile.
type swapRecord struct {
	Schema  string `json:"schema"`
	Archive string `json:"archive"`
}

const swapSchema = "acr.init-swap/v0.1"

// Created is what Init made.
type Created struct {
	State kernel.EngineState
	// Archive is the directory, relative to the state directory, that the
	// replaced run was moved to; empty when there was nothing to replace.
	Archive string
	// World is where this host sees the run's world (RunStore.Init sets
	// it).
	World string
}

// ErrRunExists: init found a run and was not told to replace it.
var ErrRunExists = errors.New("a run already exists in the state directory (use --force to replace it; the old run is archived)")

// RunExistsError is ErrRunExists with the directory and what is there.
type RunExistsError struct {
	Dir     string
	Damaged []string
}

func (e *RunExistsError) Error() string {
	if len(e.Damaged) > 0 {
		return fmt.Sprintf("%s holds a damaged run (no %s, but %v): acr init will not replace it without --force; "+
			"acr recover may rebuild it, and --force archives it under %s/", e.Dir, dirstore.ManifestName, e.Damaged, ArchiveDir)
	}
	return fmt.Sprintf("a run already exists in %s (acr init --force replaces it and archives the old one under %s/)", e.Dir, ArchiveDir)
}

// Unwrap lets errors.Is(err, ErrRunExists) match.
func (e *RunExistsError) Unwrap() error { return ErrRunExists }

// Init creates a new run in dir from validated inputs. An existing run (or
// what is left of a damaged one) is an error unless force is set; with
// force the old run is moved, whole, to archive/<time>/ inside dir once the
// new one is complete. A failure leaves dir as it was; if Init created dir,
// it removes it again.
func Init(ctx context.Context, dir string, in Inputs, runID string, force bool, opt Options) (Created, error) {
	if err := sandbox.CheckFiles(in.Spec.Files); err != nil {
		return Created{}, asValidation("environment", err)
	}
	if err := in.InForce(opt.Clock.Now()); err != nil {
		return Created{}, err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Created{}, err
	}
	fi, err := os.Stat(abs)
	switch {
	case err == nil && !fi.IsDir():
		return Created{}, &NotDirError{Path: dir}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return Created{}, fmt.Errorf("state directory %s: %w", dir, err)
	}
	if err == nil {
		if err := checkLayout(abs); err != nil {
			return Created{}, err
		}
		if !force {
			// Refuse before taking the lock: a busy run that exists is
			// still a run that exists.
			if ok, _ := existsPath(filepath.Join(abs, dirstore.ManifestName)); ok {
				return Created{}, &RunExistsError{Dir: abs}
			}
		}
	}
	made, err := mkdirAllRecorded(abs)
	if err != nil {
		return Created{}, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	hadLock, _ := existsPath(filepath.Join(abs, dirstore.LockName))
	// undo takes back what a failed init added around the run: the lock
	// file it created, if nothing else is there, and the directories it
	// created, if they are empty. A failed build has already removed its
	// staging directory.
	undo := func() {
		if !hadLock {
			if es, err := os.ReadDir(abs); err == nil && len(es) == 1 && es[0].Name() == dirstore.LockName {
				_ = os.Remove(filepath.Join(abs, dirstore.LockName))
			}
		}
		for _, d := range made { // deepest first; fails harmlessly if not empty
			_ = os.Remove(d)
		}
	}
	fsys, err := disk.OpenOSDir(abs)
	if err != nil {
		undo()
		return Created{}, err
	}
	c, err := initOn(ctx, store{fsys: fsys, root: abs}, in, runID, force, opt)
	if err != nil {
		undo()
		return Created{}, err
	}
	return c, nil
}

// mkdirAllRecorded creates dir and its missing parents, fsyncing the parent
// of each, and returns the directories it created, deepest first.
func mkdirAllRecorded(dir string) ([]string, error) {
	var made []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		made = append(made, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if len(made) == 0 {
		return nil, nil
	}
	if _, err := disk.CreateOSDir(dir); err != nil {
		return nil, err
	}
	return made, nil
}

// InitOn creates a run whose store, ledger, inbox and idempotency table
// live on fsys and whose sandbox world lives under worldRoot on the real
// file system. Tests use it with disk.Mem to model power loss; it follows
// the same build-beside-and-swap protocol as Init.
func InitOn(ctx context.Context, fsys disk.FS, worldRoot string, in Inputs, runID string, opt Options) (kernel.EngineState, error) {
	if err := in.InForce(opt.Clock.Now()); err != nil {
		return kernel.EngineState{}, err
	}
	c, err := initOn(ctx, store{fsys: fsys, root: worldRoot, world: worldFS(fsys, worldRoot)}, in, runID, false, opt)
	return c.State, err
}

// ReplaceOn is InitOn with force: it replaces (and archives) the run on
// fsys. Tests use it to cut power in the middle of a replacement.
func ReplaceOn(ctx context.Context, fsys disk.FS, worldRoot string, in Inputs, runID string, opt Options) (Created, error) {
	return initOn(ctx, store{fsys: fsys, root: worldRoot, world: worldFS(fsys, worldRoot)}, in, runID, true, opt)
}

// store is where a run lives: fsys holds the durable state; the sandbox
// world is under root on the real file system. When fsys is not that real
// directory (tests on disk.Mem), world is an FS on root that the swap
// moves the world tree in as well.
type store struct {
	fsys  disk.FS
	root  string
	world disk.FS
}

func worldFS(fsys disk.FS, root string) disk.FS {
	if o, ok := fsys.(*disk.OSDir); ok && o.Path() == root {
		return nil
	}
	w, err := disk.CreateOSDir(root)
	if err != nil {
		return nil
	}
	return w
}

// all returns the file systems a swap acts on.
func (s store) all() []disk.FS {
	if s.world == nil {
		return []disk.FS{s.fsys}
	}
	return []disk.FS{s.fsys, s.world}
}

func initOn(ctx context.Context, s store, in Inputs, runID string, force bool, opt Options) (Created, error) {
	unlock, err := dirstore.NewStore(s.fsys).Lock()
	if err != nil {
		return Created{}, err
	}
	defer unlock.Unlock()
	if err := finishSwap(s); err != nil {
		return Created{}, err
	}
	k, found, err := inspect(s.fsys)
	if err != nil {
		return Created{}, err
	}
	if !force {
		switch k {
		case kindRun:
			return Created{}, &RunExistsError{Dir: s.root}
		case kindDamaged:
			return Created{}, &RunExistsError{Dir: s.root, Damaged: found}
		}
	}
	st, err := build(ctx, s, in, runID, opt)
	if err != nil {
		return Created{}, err
	}
	archive, err := archiveName(s, opt)
	if err != nil {
		return Created{}, discard(s, err)
	}
	rec, err := codec.Marshal(swapRecord{Schema: swapSchema, Archive: archive})
	if err != nil {
		return Created{}, discard(s, err)
	}
	if err := disk.ReplaceFile(s.fsys, stagingDir+"/"+swapFile, rec); err != nil {
		return Created{}, discard(s, fmt.Errorf("init: %w", err))
	}
	if err := finishSwap(s); err != nil {
		return Created{}, err
	}
	return Created{State: st, Archive: archive}, nil
}

// build writes the complete new run into the staging directory.
func build(ctx context.Context, s store, in Inputs, runID string, opt Options) (kernel.EngineState, error) {
	for _, f := range s.all() {
		if err := f.RemoveAll(stagingDir); err != nil {
			return kernel.EngineState{}, fmt.Errorf("init: remove an unfinished earlier attempt: %w", err)
		}
		if err := f.MkdirAll(stagingDir); err != nil {
			return kernel.EngineState{}, fmt.Errorf("init: %w", err)
		}
	}
	sub := disk.Sub(s.fsys, stagingDir)
	if err := sub.MkdirAll(dirstore.InboxDir); err != nil {
		return kernel.EngineState{}, discard(s, fmt.Errorf("init: %w", err))
	}
	st, err := initParts(ctx, sub, filepath.Join(s.root, stagingDir), s.root, in, runID, opt)
	if err != nil {
		return kernel.EngineState{}, discard(s, err)
	}
	return st, nil
}

// discard removes the staging directory after a failed build and returns
// err: the state directory is as it was before. The removal is not
// fsynced: a staging directory without a swap record that comes back after
// a power loss is removed by the next init or open.
func discard(s store, err error) error {
	for _, f := range s.all() {
		_ = f.RemoveAll(stagingDir)
	}
	return err
}

// archiveName picks the directory the old run goes to, or "" when there
// is nothing to archive.
func archiveName(s store, opt Options) (string, error) {
	old := false
	for _, f := range s.all() {
		for _, p := range runParts {
			ok, err := disk.Exists(f, p)
			if err != nil {
				return "", err
			}
			old = old || ok
		}
	}
	if !old {
		return "", nil
	}
	clock := opt.Clock
	if clock == nil {
		clock = Clock{}
	}
	base := path.Join(ArchiveDir, clock.Now().UTC().Format("20060102T150405Z"))
	name := base
	for i := 2; ; i++ {
		taken := false
		for _, f := range s.all() {
			ok, err := disk.Exists(f, name)
			if err != nil {
				return "", err
			}
			taken = taken || ok
		}
		if !taken {
			return name, nil
		}
		name = base + "-" + strconv.Itoa(i)
	}
}

// finishSwap completes steps 3 to 5 of an init whose decision (swapFile)
// is durable, and removes a staging directory whose build never finished.
// The caller holds the run lock.
func finishSwap(s store) error {
	b, err := s.fsys.ReadFile(stagingDir + "/" + swapFile)
	if errors.Is(err, fs.ErrNotExist) {
		for _, f := range s.all() {
			if ok, err := disk.Exists(f, stagingDir); err != nil {
				return err
			} else if ok {
				if err := discard(s, nil); err != nil {
					return err
				}
				break
			}
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("finish init: %w", err)
	}
	var rec swapRecord
	if err := codec.UnmarshalCanonical(b, &rec); err != nil || rec.Schema != swapSchema {
		return &state.IntegrityError{File: stagingDir + "/" + swapFile, Msg: fmt.Sprintf("not a swap record: %v", err)}
	}
	for _, f := range s.all() {
		if err := swapOn(f, rec.Archive); err != nil {
			return fmt.Errorf("finish init: %w", err)
		}
	}
	for _, f := range s.all() {
		if err := f.RemoveAll(stagingDir); err != nil {
			return fmt.Errorf("finish init: %w", err)
		}
	}
	return nil
}

// swapOn archives the old parts that have a staged replacement and
// installs the staged parts, the manifest last, on one file system.
func swapOn(f disk.FS, archive string) error {
	for _, p := range runParts {
		inStage, err := disk.Exists(f, stagingDir+"/"+p)
		if err != nil {
			return err
		}
		atTop, err := disk.Exists(f, p)
		if err != nil {
			return err
		}
		if !inStage || !atTop {
			continue
		}
		if archive == "" {
			return &state.IntegrityError{File: p, Msg: "an interrupted init found it where the new run goes, and has no archive to move it to"}
		}
		if err := f.MkdirAll(archive); err != nil {
			return err
		}
		if err := f.Rename(p, archive+"/"+p); err != nil {
			return err
		}
	}
	for _, p := range slices.Concat(runParts[1:], []string{dirstore.ManifestName}) {
		if err := install(f, p); err != nil {
			return err
		}
	}
	return nil
}

func install(f disk.FS, p string) error {
	ok, err := disk.Exists(f, stagingDir+"/"+p)
	if err != nil || !ok {
		return err
	}
	return f.Rename(stagingDir+"/"+p, p)
}

// initParts writes a complete run onto fsys. The sandbox copy of the world
// is created under buildDir (the staging directory); a world that is a
// real directory (spec.Root) is not copied anywhere, and is observed as it
// will be seen from stateDir, the state directory the run will live in, so
// that the state directory is kept out of it the same way later.
func initParts(ctx context.Context, fsys disk.FS, buildDir, stateDir string, in Inputs, runID string, opt Options) (kernel.EngineState, error) {
	store := dirstore.NewStore(fsys)
	dir := buildDir
	if in.Spec.Root != "" {
		dir = stateDir
	}
	w, err := sandbox.Create(dir, in.Spec, fsys)
	if err != nil {
		return kernel.EngineState{}, fmt.Errorf("create sandbox: %w", err)
	}
	defer w.Close()
	w.Environ = opt.Environ
	var observer interface {
		Observe(context.Context) (world.Observation, error)
	} = w
	if in.Spec.Git != nil {
		gw, err := openGitWorld(ctx, w, in.Spec, opt.Environ, nil)
		if err != nil {
			return kernel.EngineState{}, fmt.Errorf("git world: %w", err)
		}
		observer = gw
	}
	obs, err := observer.Observe(ctx)
	if err != nil {
		return kernel.EngineState{}, fmt.Errorf("first observation: %w", err)
	}
	now := opt.Clock.Now()
	if runID == "" {
		runID = kernel.DefaultRunID(in.Goal, in.Contract, in.Spec, now)
	}
	st, evs, err := kernel.Init(kernel.Bootstrap{RunID: runID, Now: now, Goal: in.Goal, Contract: in.Contract, Spec: in.Spec, Observation: obs})
	if err != nil {
		return kernel.EngineState{}, err
	}
	led, err := ledger.Create(fsys)
	if err != nil {
		return kernel.EngineState{}, err
	}
	defer led.Close()
	if _, err := led.Append(evs); err != nil {
		return kernel.EngineState{}, err
	}
	files, err := st.Encode()
	if err != nil {
		return kernel.EngineState{}, err
	}
	if _, err := store.Commit(storage.Commit{RunID: runID, Revision: opt.Revision, Frontier: led.Frontier(), Files: files}); err != nil {
		return kernel.EngineState{}, err
	}
	return st, nil
}
