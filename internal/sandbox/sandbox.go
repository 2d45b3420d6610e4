package sandbox

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

// Layout inside the state directory. KeysDir is a disk.FS name (slash
// separated, relative to the state directory).
const (
	// Dir holds everything the sandbox owns.
	Dir = "sandbox"
	// WorldDir is the world tree, the only place actions can touch.
	WorldDir = "sandbox/world"
	// KeysDir is the idempotency table. It sits beside the world, not in
	// it, so no action can forge or erase a record.
	KeysDir = "sandbox/keys"
)

// tmpPrefix marks the temporary files of atomic replacement. The name is
// reserved: actions may not target it and observation does not see it, so a
// crash between create and rename leaves nothing the loop would react to.
const tmpPrefix = ".acr-tmp-"

// Stage names passed to World.OnStage, the points at which a crash is most
// informative for the idempotency protocol.
const (
	// StageBeforeActionCommit: the intent is durable (Execute's intent
	// record, or the caller's), and so is a command's started marker; the
	// effect has not been applied yet.
	StageBeforeActionCommit = "before-action-commit"
	// StageAfterActionCommit: the effect is done and its outcome is
	// recorded as far as the path records it (durably by Execute, as an
	// unsynced record for a command, not at all for a file effect of
	// Commit, whose caller records it).
	StageAfterActionCommit = "after-action-commit"
)

// Errors callers branch on.
var (
	// ErrConfinement marks a path the sandbox refuses to touch: outside the
	// world, through a symlink, excluded, or reserved.
	ErrConfinement = errors.New("path refused by sandbox confinement")
	// ErrUncertain means an interrupted execution left the target in a state
	// that is neither before nor after the effect, so whether the effect
	// happened cannot be decided without a person.
	ErrUncertain = errors.New("interrupted execution cannot be classified")
	// ErrKeyConflict means an idempotency key was presented with an action
	// other than the one it was first executed with.
	ErrKeyConflict = errors.New("idempotency key reused for a different action")
	// ErrExists means Create found a sandbox world already there.
	ErrExists = errors.New("sandbox world already exists")
)

// World is an open sandbox: the confined world tree and the idempotency
// table. Its methods may be called from several goroutines; they run one at
// a time.
type World struct {
	// OnStage, if set, is called with StageBeforeActionCommit and
	// StageAfterActionCommit during Execute. Tests use it to crash at the
	// exact points the protocol must survive; the kernel maps it onto its
	// failpoints. It must not call back into the World.
	OnStage func(stage string)

	// Environ reads acr's own environment, from which the programs that
	// commands run get PATH, HOME, LANG and the spec's pass_env (nil: they
	// get none of it). cmd/acr passes os.LookupEnv.
	Environ func(string) (string, bool)

	mu   sync.Mutex
	root *os.Root
	// dir is the world's directory, the working directory of commands.
	dir  string
	spec world.Spec
	keys disk.FS
	// private is a directory inside a real-directory world that belongs
	// to acr itself (the state directory), "" when there is none. It is
	// never observed, read or written as part of the world.
	private string
	// lastFiles are the files the last Observe saw, so that a command's
	// effect can be told file by file.
	lastFiles map[string]codec.Fingerprint
	tmpSeq    uint64
	// table is the idempotency table, read on first use.
	table keyTable
	// hashBuf is reused to fingerprint world files during observation,
	// which then costs no allocation per file however large it is.
	hashBuf []byte
	// scratch is readScratch's buffer.
	scratch []byte
	// prepared is the plan of the last Prepare, so that the Commit that
	// follows it need not compute the same new content again.
	prepared *preparedPlan
	// toObserve is what the last readback read, for the next Observe;
	// observed is what the last Observe judged, by path, for Prepare
	// (see handoff). Any write of the world (replace, remove, Mirror)
	// and any program the World runs (a command effect or check) drops
	// both.
	toObserve *handoff
	observed  map[string]*handoff
	// rootDir is the world's top directory, opened once for its fsyncs:
	// it is the directory root holds, which cannot be swapped for another
	// while root is open, so one handle serves every effect on a file
	// there (a handle on a subdirectory could outlive a replaced one, so
	// those are opened per fsync).
	rootDir *os.File
	// deferSyncs, inflight and syncErr: see DeferDirSyncs.
	deferSyncs bool
	inflight   *inflightSync
	syncErr    error
	// syncDirFile, when set (tests), stands for the fsync of a directory
	// left running.
	syncDirFile func(*os.File) error
	// spare: see replaceBySwap.
	spare spare
	// journal hears of every change to the world's tree (tests only).
	journal Journal
	// gate is set while a CommitWhen runs.
	gate *gate
}

// Create makes sandbox/world under stateDir, which must exist, writes
// spec.Files into it durably, and returns the open World. It fails with
// ErrExists if the world directory is already there, so that an init can
// never silently adopt an old world. On failure the new world directory is
// removed again. A spec with a root names a directory that already is the
// world: Create then only checks it and makes the idempotency table.
func Create(stateDir string, spec world.Spec, keys disk.FS) (*World, error) {
	return CreateJournaled(stateDir, spec, keys, nil)
}

// CreateJournaled is Create, telling j of every change it makes to the
// world's tree and of every one the World makes later (see WorldOp).
func CreateJournaled(stateDir string, spec world.Spec, keys disk.FS, j Journal) (*World, error) {
	if err := requireDir(stateDir); err != nil {
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	if spec.Root != "" {
		if err := keys.MkdirAll(KeysDir); err != nil {
			return nil, fmt.Errorf("create sandbox: keys table: %w", err)
		}
		return OpenJournaled(stateDir, spec, keys, j)
	}
	sandboxDir := filepath.Join(stateDir, filepath.FromSlash(Dir))
	switch fi, err := os.Lstat(sandboxDir); {
	case errors.Is(err, fs.ErrNotExist):
		if err := os.Mkdir(sandboxDir, 0o755); err != nil {
			return nil, fmt.Errorf("create sandbox: %w", err)
		}
		j.note(WorldOp{Op: "mkdir", Path: ".."})
		if err := syncPath(stateDir, "../..", j); err != nil {
			return nil, fmt.Errorf("create sandbox: %w", err)
		}
	case err != nil:
		return nil, fmt.Errorf("create sandbox: %w", err)
	case !fi.IsDir():
		return nil, fmt.Errorf("create sandbox: %s is not a directory", sandboxDir)
	}
	worldDir := filepath.Join(stateDir, filepath.FromSlash(WorldDir))
	if err := os.Mkdir(worldDir, 0o755); err != nil {
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("create sandbox: %s: %w", worldDir, ErrExists)
		}
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	j.note(WorldOp{Op: "mkdir", Path: "."})
	w, err := populate(worldDir, spec, keys, j)
	if err != nil {
		// The directory is ours (Mkdir just succeeded); removing it keeps a
		// failed init from leaving a half-written world that Open would
		// accept later.
		_ = os.RemoveAll(worldDir)
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	if err := syncPath(sandboxDir, "..", j); err != nil {
		_ = w.Close()
		_ = os.RemoveAll(worldDir)
		return nil, fmt.Errorf("create sandbox: %w", err)
	}
	return w, nil
}

func populate(worldDir string, spec world.Spec, keys disk.FS, j Journal) (*World, error) {
	root, err := os.OpenRoot(worldDir)
	if err != nil {
		return nil, err
	}
	w := &World{root: root, dir: worldDir, spec: spec, keys: keys, table: keyTable{fs: keys}, journal: j}
	names := make([]string, 0, len(spec.Files))
	for name := range spec.Files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if err := w.checkWritable(name); err != nil {
			_ = root.Close()
			return nil, fmt.Errorf("initial file %s: %w", name, err)
		}
		if err := w.replace(name, []byte(spec.Files[name])); err != nil {
			_ = root.Close()
			return nil, fmt.Errorf("initial file %s: %w", name, err)
		}
	}
	if err := keys.MkdirAll(KeysDir); err != nil {
		_ = root.Close()
		return nil, fmt.Errorf("keys table: %w", err)
	}
	return w, nil
}

// Open opens the sandbox created earlier by Create in stateDir, or the
// directory a spec's root names. Temporary files left by a crash
// mid-replace are removed: they were never renamed onto anything, so they
// hold no state.
func Open(stateDir string, spec world.Spec, keys disk.FS) (*World, error) {
	return OpenJournaled(stateDir, spec, keys, nil)
}

// OpenJournaled is Open, telling j of every change the World makes to the
// world's tree (see WorldOp).
func OpenJournaled(stateDir string, spec world.Spec, keys disk.FS, j Journal) (*World, error) {
	w, err := openWorld(stateDir, spec)
	if err != nil {
		return nil, err
	}
	w.keys, w.table, w.journal = keys, keyTable{fs: keys}, j
	if err := w.sweepTemps(); err != nil {
		_ = w.root.Close()
		return nil, fmt.Errorf("open sandbox: %w", err)
	}
	return w, nil
}

// openWorld opens the world directory of the run in stateDir (or the
// spec's root) confined, without touching anything in it.
func openWorld(stateDir string, spec world.Spec) (*World, error) {
	worldDir := filepath.Join(stateDir, filepath.FromSlash(WorldDir))
	if spec.Root != "" {
		worldDir = spec.Root
	}
	if err := requireDir(worldDir); err != nil {
		return nil, fmt.Errorf("open world %s: %w", worldDir, err)
	}
	private, err := privateDir(worldDir, stateDir)
	if err != nil {
		return nil, fmt.Errorf("open world %s: %w", worldDir, err)
	}
	root, err := os.OpenRoot(worldDir)
	if err != nil {
		return nil, fmt.Errorf("open world %s: %w", worldDir, err)
	}
	return &World{root: root, dir: worldDir, spec: spec, private: private}, nil
}

// Close releases the world root and the idempotency table. The World must
// not be used afterwards.
func (w *World) Close() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	serr := w.awaitDirSync()
	w.closeSpare()
	terr := w.table.close()
	if w.rootDir != nil {
		_ = w.rootDir.Close()
		w.rootDir = nil
	}
	if err := w.root.Close(); err != nil {
		return fmt.Errorf("close sandbox: %w", err)
	}
	if err := errors.Join(serr, terr); err != nil {
		return fmt.Errorf("close sandbox: %w", err)
	}
	return nil
}

// privateDir returns where the state directory lies inside the world, as a
// world path ("" when it lies elsewhere). A run that looks after the
// directory holding its own state must neither observe its ledger growing
// (every cycle would see a changed world) nor let a fix write into it.
func privateDir(worldDir, stateDir string) (string, error) {
	wd, err := filepath.EvalSymlinks(worldDir)
	if err != nil {
		return "", err
	}
	sd, err := filepath.EvalSymlinks(stateDir)
	if err != nil {
		return "", err
	}
	rel, err := filepath.Rel(wd, sd)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", nil
	}
	if rel == "." {
		return "", fmt.Errorf("the state directory %s is the world itself; put it elsewhere (--state-dir)", stateDir)
	}
	return filepath.ToSlash(rel), nil
}

// Dir returns the world's directory: the sandbox copy, or the directory
// a run looks after in place.
func (w *World) Dir() string { return w.dir }

// requireDir refuses a missing path, a non-directory, and a symlink: the
// world root itself must not be redirectable.
func requireDir(p string) error {
	fi, err := os.Lstat(p)
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		return fmt.Errorf("%s is a symlink", p)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%s is not a directory", p)
	}
	return nil
}

// sweepTemps removes leftover temporary files. Excluded directories and
// symlinks are not entered: the sandbox never writes there, so no temp file
// of ours can be inside. The removals are not fsynced: a temp file that a
// power loss brings back holds no state (it was never renamed onto
// anything) and is swept again by the next Open.
func (w *World) sweepTemps() error {
	return w.walkWorld(func(p string, d fs.DirEntry) error {
		if d.Type().IsRegular() && strings.HasPrefix(d.Name(), tmpPrefix) {
			if err := w.root.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("remove stale temp file %s: %w", p, err)
			}
			w.journal.note(WorldOp{Op: "remove", Path: p})
		}
		return nil
	})
}

// walkWorld calls fn for every entry of the world tree that is not
// excluded (nor in acr's private directory), without entering excluded
// directories or following symlinks.
func (w *World) walkWorld(fn func(p string, d fs.DirEntry) error) error {
	return fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if w.excluded(p) {
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		return fn(p, d)
	})
}

// excluded reports whether p or any directory above it is excluded, or
// lies in acr's private directory. Observation never descends into an
// excluded directory, so a file below one is as invisible as an excluded
// file and must be treated the same way.
func (w *World) excluded(p string) bool {
	if w.private != "" && (p == w.private || strings.HasPrefix(p, w.private+"/")) {
		return true
	}
	return w.spec.Excluded(p)
}

func refuse(p string, format string, args ...any) error {
	return fmt.Errorf("%w: %q %s", ErrConfinement, p, fmt.Sprintf(format, args...))
}

// failure is a reason an operation cannot be carried out that lies in the
// world's data (a directory where a file should be), not in the machine. It
// becomes a recorded "failed" outcome instead of an error, so the kernel
// sees it as an answer and does not retry it forever.
type failure struct {
	detail string
	// reason is the detail without the path, for lists of refused paths.
	reason string
}

func (f *failure) Error() string { return f.detail }

func failf(format string, args ...any) error {
	d := fmt.Sprintf(format, args...)
	return &failure{detail: d, reason: d}
}

func failReason(reason, format string, args ...any) error {
	return &failure{detail: fmt.Sprintf(format, args...), reason: reason}
}

// confine validates a world path for any access.
func (w *World) confine(p string) (string, error) {
	clean, err := world.CleanPath(p)
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrConfinement, err)
	}
	if w.excluded(clean) {
		return "", refuse(clean, "is excluded from the sandbox")
	}
	if strings.HasPrefix(path.Base(clean), tmpPrefix) {
		return "", refuse(clean, "uses the reserved prefix %s", tmpPrefix)
	}
	return clean, nil
}

// readFile returns the content of a world file without following any
// symlink. A missing file (or a missing or non-directory parent) is
// exists=false. Symlinks are refused with ErrConfinement; a directory or
// special file is a *failure.
func (w *World) readFile(p string) (content []byte, exists bool, err error) {
	return w.read(p, false)
}

// ReadFile reads a world file for a provider outside the sandbox (the
// proposer), with the confinement of every world read: a refused path is
// an error wrapping ErrConfinement, a missing one exists=false.
func (w *World) ReadFile(p string) (content []byte, exists bool, err error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.readFile(p)
}

// readScratch is readFile into a buffer the World reuses: the content is
// valid until the next readScratch. Checks read the world several times a
// cycle and keep nothing of the bytes, so they need not allocate a copy
// of a large file each time.
func (w *World) readScratch(p string) (content []byte, exists bool, err error) {
	return w.read(p, true)
}

func (w *World) read(p string, scratch bool) (content []byte, exists bool, err error) {
	content, fi, err := w.readStat(p, scratch)
	return content, fi != nil, err
}

// readStat is read, also returning the lstat taken before the bytes were
// read (nil when the file does not exist), for a caller that hands the
// result on (see handoff).
func (w *World) readStat(p string, scratch bool) (content []byte, fi fs.FileInfo, err error) {
	p, fi, err = w.statTarget(p)
	if err != nil || fi == nil {
		return nil, nil, err
	}
	return w.readStated(p, fi, scratch)
}

// statTarget confines p and lstats it and its parents, refusing symlinks
// and anything but a regular file with one link. It returns the clean
// path, and fi nil when the file (or a parent directory) does not exist.
func (w *World) statTarget(p string) (clean string, fi fs.FileInfo, err error) {
	p, err = w.confine(p)
	if err != nil {
		return "", nil, err
	}
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		fi, err := w.root.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return p, nil, nil
		case err != nil:
			return p, nil, err
		case fi.Mode()&fs.ModeSymlink != 0:
			return p, nil, refuse(p, "has a symlinked parent %q; symlinks are not followed", dir)
		case !fi.IsDir():
			return p, nil, nil
		}
	}
	fi, err = w.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return p, nil, nil
	case err != nil:
		return p, nil, err
	case fi.Mode()&fs.ModeSymlink != 0:
		return p, nil, refuse(p, "is a symlink; symlinks are not followed")
	}
	if err := regularUnlinked(p, fi); err != nil {
		return p, nil, err
	}
	return p, fi, nil
}

// readStated reads the file statTarget found at p (fi is its lstat).
func (w *World) readStated(p string, fi fs.FileInfo, scratch bool) ([]byte, fs.FileInfo, error) {
	var data []byte
	var err error
	if scratch {
		data, err = w.readInto(p, fi.Size())
	} else {
		data, err = w.root.ReadFile(p)
	}
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	return data, fi, nil
}

// readObserved is readFile for Prepare: the bytes the last observation
// judged, when the file still has the identity it had when they were read
// (see handoff), else the file's bytes as read now.
func (w *World) readObserved(p string) (content []byte, exists bool, err error) {
	p, fi, err := w.statTarget(p)
	if err != nil || fi == nil {
		return nil, false, err
	}
	if h := w.observed[p]; h != nil && h.data != nil && h.takes(p, fi) {
		return h.content(), true, nil
	}
	content, fi, err = w.readStated(p, fi, false)
	return content, fi != nil, err
}

// readInto reads p into w.scratch, growing it as needed; size is what Lstat
// said, a hint only (the file may change while it is read).
func (w *World) readInto(p string, size int64) ([]byte, error) {
	f, err := w.root.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	buf := slices.Grow(w.scratch[:0], int(size)+512)
	for {
		if len(buf) == cap(buf) {
			buf = slices.Grow(buf, cap(buf))
		}
		n, err := f.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if errors.Is(err, io.EOF) {
			w.scratch = buf
			return buf, nil
		}
		if err != nil {
			return nil, err
		}
	}
}

// checkWritable refuses a write target before anything is computed, so that
// a refused action leaves no trace, not even an intent record.
func (w *World) checkWritable(p string) error {
	p, err := w.confine(p)
	if err != nil {
		return err
	}
	parts := strings.Split(p, "/")
	for i := 1; i < len(parts); i++ {
		dir := strings.Join(parts[:i], "/")
		fi, err := w.root.Lstat(dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return nil // created on write; nothing below can be a symlink
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return refuse(p, "has a symlinked parent %q; writes never go through symlinks", dir)
		case !fi.IsDir():
			return failf("parent %s of %s is not a directory", dir, p)
		}
	}
	fi, err := w.root.Lstat(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case fi.Mode()&fs.ModeSymlink != 0:
		return refuse(p, "is a symlink; writes never go through symlinks")
	}
	return regularUnlinked(p, fi)
}

// mkdirs creates the missing directories of dir one component at a time,
// refusing symlinks on the way, and fsyncs each new entry's parent so the
// file about to be renamed into it has a durable path.
func (w *World) mkdirs(dir string) error {
	if dir == "." {
		return nil
	}
	parts := strings.Split(dir, "/")
	for i := 1; i <= len(parts); i++ {
		p := strings.Join(parts[:i], "/")
		fi, err := w.root.Lstat(p)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			if err := w.proceed(); err != nil {
				return err
			}
			if err := w.root.Mkdir(p, 0o755); err != nil {
				return err
			}
			w.journal.note(WorldOp{Op: "mkdir", Path: p})
			if err := w.syncDir(path.Dir(p)); err != nil {
				return err
			}
		case err != nil:
			return err
		case fi.Mode()&fs.ModeSymlink != 0:
			return refuse(dir, "has a symlinked component %q; writes never go through symlinks", p)
		case !fi.IsDir():
			return failf("parent %s is not a directory", p)
		}
	}
	return nil
}

// syncDir fsyncs the world directory dir (relative to the root).
func (w *World) syncDir(dir string) error { return w.fsyncDir(dir, false) }

// syncDirLast is syncDir for the last fsync of an effect, the one
// DeferDirSyncs may leave running.
func (w *World) syncDirLast(dir string) error { return w.fsyncDir(dir, w.deferSyncs) }

func (w *World) fsyncDir(dir string, background bool) error {
	if err := w.awaitDirSync(); err != nil {
		return err
	}
	var f *os.File
	closeAfter := false
	if dir == "." {
		var err error
		if f, err = w.topDir(); err != nil {
			return err
		}
	} else {
		var err error
		if f, err = w.root.Open(dir); err != nil {
			return err
		}
		closeAfter = true
	}
	if background {
		w.startDirSync(dir, f, closeAfter)
		return nil
	}
	if err := disk.Fsync(f); err != nil {
		if closeAfter {
			_ = f.Close()
		}
		return fmt.Errorf("fsync world dir %s: %w", dir, err)
	}
	w.journal.note(WorldOp{Op: "syncdir", Path: dir})
	if closeAfter {
		return f.Close()
	}
	return nil
}

// replace atomically gives the world file p the content data: temp file in
// the same directory, write, fsync, rename, fsync the directory. The caller
// has passed p through checkWritable; the checks are repeated on the way
// down because the tree may have changed since.
func (w *World) replace(p string, data []byte) error {
	// The temporary file changes nothing the world shows, so a gated
	// Commit writes it before its intent is durable (see CommitWhen);
	// proceed comes before the directory is made or the rename.
	if err := w.beforeStaging(); err != nil {
		return err
	}
	dir := path.Dir(p)
	if err := w.mkdirs(dir); err != nil {
		return err
	}
	if fi, err := w.root.Lstat(p); err == nil {
		if fi.Mode()&fs.ModeSymlink != 0 {
			return refuse(p, "is a symlink; writes never go through symlinks")
		}
		if err := regularUnlinked(p, fi); err != nil {
			return err
		}
		if dir == "." {
			if done, err := w.replaceBySwap(p, fi, data); done || err != nil {
				return err
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	tmp, f, err := w.createTemp(dir)
	if err != nil {
		return err
	}
	if err := writeSyncClose(f, data, false); err != nil {
		_ = w.root.Remove(tmp)
		return fmt.Errorf("write %s: %w", p, err)
	}
	if err := w.proceed(); err != nil {
		_ = w.root.Remove(tmp)
		return err
	}
	if err := w.root.Rename(tmp, p); err != nil {
		_ = w.root.Remove(tmp)
		return fmt.Errorf("rename onto %s: %w", p, err)
	}
	w.journal.note(WorldOp{Op: "rename", Path: tmp, To: p})
	return w.syncDirLast(dir)
}

// remove deletes the world file p (restoring its absence) and fsyncs its
// directory. Like replace, it never acts through a symlink.
func (w *World) remove(p string) error {
	if err := w.beforeChange(); err != nil {
		return err
	}
	fi, err := w.root.Lstat(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if !fi.Mode().IsRegular() {
		return refuse(p, "is not a regular file; only files the run created are removed")
	}
	if err := w.root.Remove(p); err != nil {
		return fmt.Errorf("remove %s: %w", p, err)
	}
	w.journal.note(WorldOp{Op: "remove", Path: p})
	return w.syncDirLast(path.Dir(p))
}

// createTemp creates a fresh temp file with O_EXCL. Names come from a
// counter rather than randomness; O_EXCL makes a collision with a stale file
// harmless.
func (w *World) createTemp(dir string) (string, worldFile, error) {
	for range 1000 {
		w.tmpSeq++
		name := path.Join(dir, tmpPrefix+strconv.FormatUint(w.tmpSeq, 10))
		f, err := w.root.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		if err != nil {
			return "", worldFile{}, fmt.Errorf("create temp file in %s: %w", dir, err)
		}
		w.journal.note(WorldOp{Op: "create", Path: name})
		return name, worldFile{File: f, name: name, journal: w.journal}, nil
	}
	return "", worldFile{}, fmt.Errorf("create temp file in %s: too many stale temp files", dir)
}

// writeSyncClose writes data at f's offset, cuts the file after it when
// cut is set (a spare that held more), fsyncs and closes it.
func writeSyncClose(f worldFile, data []byte, cut bool) error {
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if cut {
		if err := f.Truncate(int64(len(data))); err != nil {
			_ = f.Close()
			return err
		}
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return fmt.Errorf("fsync: %w", err)
	}
	return f.Close()
}
