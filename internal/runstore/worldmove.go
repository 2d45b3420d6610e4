package runstore

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/jsstore"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/world"
)

// A run's world, for export and import: the sandbox world tree and the
// idempotency table, read from where a run keeps them and written where
// an imported run will keep them. Everything export and import do with a
// world goes through the two pairs below.

// movedWorld is a run's world as an archive carries it.
type movedWorld struct {
	// Tree is the sandbox world (empty for a world that is a real
	// directory: that is not part of the run).
	Tree []archive.Entry
	// Keys are the idempotency table's files.
	Keys []archive.File
}

// Modes of the entries of a world tree read from a JetStream store, which
// keeps files' bytes only: the modes the sandbox gives what it creates.
const (
	storedFileMode fs.FileMode = 0o644
	storedDirMode  fs.FileMode = 0o755
)

// readRemoteWorld reads the world of a run in a JetStream store: its tree
// from the store (files with storedFileMode, and their directories with
// storedDirMode: the store keeps no modes and no empty directories), its
// idempotency table from this host's copy (only commands record there,
// and a run in a store runs none). A run whose world an earlier release
// kept on the host that ran init is read from that host's copy, or is
// ErrNoWorld elsewhere.
func readRemoteWorld(m *Remote, spec world.Spec) (movedWorld, error) {
	if spec.Git != nil {
		// Its remote is the world; the store holds nothing of it.
		return movedWorld{}, nil
	}
	files, err := m.Run.World().Load()
	if errors.Is(err, jsstore.ErrNoWorld) {
		if _, err := os.Stat(filepath.Join(m.WorldDir, filepath.FromSlash(sandbox.WorldDir))); errors.Is(err, fs.ErrNotExist) {
			return movedWorld{}, fmt.Errorf("%w: run %s (created by an earlier acr, which kept its world on the host that ran acr init: export it there)", ErrNoWorld, m.Run.ID)
		}
		return readWorldDir(m.WorldDir, spec)
	}
	if err != nil {
		return movedWorld{}, err
	}
	keysOnly := spec
	keysOnly.Root = m.WorldDir // readWorldDir reads no tree for a root
	w, err := readWorldDir(m.WorldDir, keysOnly)
	if err != nil {
		return movedWorld{}, err
	}
	dirs := map[string]bool{}
	for p, b := range files {
		w.Tree = append(w.Tree, archive.Entry{Path: p, Type: archive.TypeFile, Mode: storedFileMode, Data: b})
		for d := path.Dir(p); d != "." && !dirs[d]; d = path.Dir(d) {
			dirs[d] = true
			w.Tree = append(w.Tree, archive.Entry{Path: d, Type: archive.TypeDir, Mode: storedDirMode})
		}
	}
	slices.SortFunc(w.Tree, func(a, b archive.Entry) int { return strings.Compare(a.Path, b.Path) })
	return w, nil
}

// writeRemoteWorld writes the world of a run being imported into a
// JetStream store: its files into the store (Seal, guarded by the run's
// ledger end, replacing what an import or init cut off before its
// checkpoint left there), and the tree and the idempotency table into
// this host's copy (Remote.WorldDir), built complete beside it and
// renamed into place. The store keeps files only: a tree with a symlink,
// or a file larger than one message, is refused before anything is
// written.
func writeRemoteWorld(m *Remote, spec world.Spec, w movedWorld) error {
	sw := m.Run.World()
	files := map[string][]byte{}
	for _, e := range w.Tree {
		switch e.Type {
		case archive.TypeSymlink:
			return fmt.Errorf("import world: %s is a symlink, which a nats:// store does not keep (a run's world there is files): remove it from the run's world, or import the run into a state directory", e.Path)
		case archive.TypeFile:
			if room := sw.Room(e.Path); len(e.Data) > room {
				return fmt.Errorf("import world: %s is %d bytes; a nats:// store keeps a file in one message, at most %d bytes of this one (the server's max_payload less headers)", e.Path, len(e.Data), room)
			}
			files[e.Path] = e.Data
		}
	}
	parent := filepath.Dir(m.WorldDir)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return fmt.Errorf("import world: %w", err)
	}
	tmp := filepath.Join(parent, ".import-"+filepath.Base(m.WorldDir))
	if err := os.RemoveAll(tmp); err != nil {
		return fmt.Errorf("import world: %w", err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return fmt.Errorf("import world: %w", err)
	}
	keys, err := disk.OpenOSDir(tmp)
	if err == nil {
		err = writeWorldDir(tmp, keys, spec, w)
	}
	if err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := os.RemoveAll(m.WorldDir); err != nil {
		return fmt.Errorf("import world: %w", err)
	}
	if err := os.Rename(tmp, m.WorldDir); err != nil {
		return fmt.Errorf("import world: %w", err)
	}
	if err := syncDirPath(parent); err != nil {
		return fmt.Errorf("import world: %w", err)
	}
	led, err := m.Run.OpenLedger()
	if err != nil {
		return err
	}
	if spec.Git != nil {
		return nil
	}
	if err := sw.Seal(files, led.Frontier().Offset); err != nil {
		return fmt.Errorf("import world: %w", err)
	}
	return nil
}

// readWorldDir reads the world under base (a state directory, or a
// JetStream run's world directory): the tree of sandbox/world, unless the
// spec names a root, and the files of sandbox/keys. A file with other
// hard links or a special file is refused: it cannot be carried as it is.
// Temporary files a crash left (which the sandbox sweeps) are skipped.
func readWorldDir(base string, spec world.Spec) (movedWorld, error) {
	var w movedWorld
	// A git world's tree is the remote's branch: what moves with the run
	// is its coordinates (the pinned spec) and its head (the ledger).
	if spec.Root == "" && spec.Git == nil {
		top := filepath.Join(base, filepath.FromSlash(sandbox.WorldDir))
		err := walk(top, func(rel string, fi fs.FileInfo) error {
			e := archive.Entry{Path: rel, Mode: fi.Mode().Perm()}
			switch {
			case fi.Mode()&fs.ModeSymlink != 0:
				target, err := os.Readlink(filepath.Join(top, filepath.FromSlash(rel)))
				if err != nil {
					return err
				}
				e.Type, e.Mode, e.Data = archive.TypeSymlink, 0, []byte(target)
			case fi.IsDir():
				e.Type = archive.TypeDir
			default:
				if strings.HasPrefix(path.Base(rel), ".acr-tmp-") {
					return nil
				}
				b, err := readRegular(top, rel, fi)
				if err != nil {
					return err
				}
				e.Type, e.Data = archive.TypeFile, b
			}
			w.Tree = append(w.Tree, e)
			return nil
		})
		if err != nil {
			return movedWorld{}, fmt.Errorf("read world: %w", err)
		}
	}
	keys := filepath.Join(base, filepath.FromSlash(sandbox.KeysDir))
	err := walk(keys, func(rel string, fi fs.FileInfo) error {
		if fi.IsDir() || strings.HasPrefix(path.Base(rel), ".") {
			return nil
		}
		b, err := readRegular(keys, rel, fi)
		if err != nil {
			return err
		}
		w.Keys = append(w.Keys, archive.File{Path: rel, Data: b})
		return nil
	})
	if err != nil {
		return movedWorld{}, fmt.Errorf("read idempotency table: %w", err)
	}
	return w, nil
}

// walk calls fn for everything below top (not top itself), parents before
// children, with slash-separated paths relative to top; a missing top is
// an empty tree. Symlinks are reported, never followed.
func walk(top string, fn func(rel string, fi fs.FileInfo) error) error {
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == top {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(top, p)
		if err != nil {
			return err
		}
		return fn(filepath.ToSlash(rel), fi)
	})
	if errors.Is(err, fs.ErrNotExist) {
		if _, serr := os.Lstat(top); errors.Is(serr, fs.ErrNotExist) {
			return nil
		}
	}
	return err
}

// readRegular reads a regular file with one link.
func readRegular(top, rel string, fi fs.FileInfo) ([]byte, error) {
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%s is a %v, which acr export cannot carry: remove it from the world", rel, fi.Mode().Type())
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return nil, fmt.Errorf("%s has %d hard links, which acr export cannot carry: make it a file of its own", rel, st.Nlink)
	}
	return os.ReadFile(filepath.Join(top, filepath.FromSlash(rel)))
}

// writeWorldDir writes w under base, which exists and holds no sandbox
// yet: the tree of sandbox/world (unless the spec names a root) on the
// real file system, every file and directory fsynced before the
// directory that holds it, and the idempotency table's files through
// keys (an FS whose sandbox/keys is base's, as the sandbox keeps its
// table), each made durable as that FS makes writes durable. Directory
// modes are set last, so that a read-only directory is still filled and
// fsynced (their change of mode is not). The tree is written with the OS,
// not through the sandbox's journal, so the world's power-loss model
// (sandbox TestWorldPowerLoss) does not cover it; the idempotency table is
// on keys, inside the run's (TestPowerLossDuringImport).
func writeWorldDir(base string, keys disk.FS, spec world.Spec, w movedWorld) error {
	fail := func(err error) error { return fmt.Errorf("write world: %w", err) }
	sb := filepath.Join(base, filepath.FromSlash(sandbox.Dir))
	if err := os.Mkdir(sb, 0o755); err != nil {
		return fail(err)
	}
	dirs := []string{base, sb}
	type dirMode struct {
		p    string
		mode fs.FileMode
	}
	var modes []dirMode
	switch {
	case spec.Git != nil:
		if len(w.Tree) > 0 {
			return fail(fmt.Errorf("the environment's world is %s, but the archive carries a world tree", spec.Git.Describe()))
		}
		// An empty clone: the first open fetches the branch.
		top := filepath.Join(base, filepath.FromSlash(sandbox.WorldDir))
		if err := os.Mkdir(top, 0o755); err != nil {
			return fail(err)
		}
		dirs = append(dirs, top)
	case spec.Root == "":
		top := filepath.Join(base, filepath.FromSlash(sandbox.WorldDir))
		if err := os.Mkdir(top, 0o755); err != nil {
			return fail(err)
		}
		dirs = append(dirs, top)
		for _, e := range w.Tree {
			p := filepath.Join(top, filepath.FromSlash(e.Path))
			switch e.Type {
			case archive.TypeDir:
				if err := os.Mkdir(p, 0o700); err != nil {
					return fail(err)
				}
				dirs = append(dirs, p)
				modes = append(modes, dirMode{p, e.Mode})
			case archive.TypeSymlink:
				if err := os.Symlink(string(e.Data), p); err != nil {
					return fail(err)
				}
			case archive.TypeFile:
				if err := writeSynced(p, e.Data, e.Mode); err != nil {
					return fail(err)
				}
			}
		}
	case len(w.Tree) > 0:
		return fail(fmt.Errorf("the environment's world is the directory %s, but the archive carries a world tree", spec.Root))
	}
	// Deepest first: each directory's entries, then the entry naming it.
	slices.SortStableFunc(dirs, func(a, b string) int {
		return strings.Count(b, string(filepath.Separator)) - strings.Count(a, string(filepath.Separator))
	})
	for _, d := range dirs {
		if err := syncDirPath(d); err != nil {
			return fail(err)
		}
	}
	for i := len(modes) - 1; i >= 0; i-- {
		if err := os.Chmod(modes[i].p, modes[i].mode); err != nil {
			return fail(err)
		}
	}
	if err := keys.MkdirAll(sandbox.KeysDir); err != nil {
		return fail(err)
	}
	var keyDirs []string
	for _, f := range w.Keys {
		p := sandbox.KeysDir + "/" + f.Path
		d := disk.Dir(p)
		if !slices.Contains(keyDirs, d) {
			if err := keys.MkdirAll(d); err != nil {
				return fail(err)
			}
			keyDirs = append(keyDirs, d)
		}
		if err := keys.WriteFile(p, f.Data); err != nil {
			return fail(err)
		}
	}
	for _, d := range keyDirs {
		if err := keys.SyncDir(d); err != nil {
			return fail(err)
		}
	}
	return nil
}

// writeSynced creates a new file with data and mode, durably (the entry
// naming it is made durable by its directory's fsync).
func writeSynced(p string, data []byte, mode fs.FileMode) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// syncDirPath fsyncs a directory.
func syncDirPath(p string) error {
	d, err := os.Open(p)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
