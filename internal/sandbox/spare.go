package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
)

// spareName is the spare file of the world's top directory: the inode the
// next replace of a file there writes into, and then swaps with the
// target. It carries the reserved temporary prefix, so observation, the
// mirror and names from specs never see it, and Open sweeps it.
//
// Why a spare: a replace by a new temporary file makes the file system
// allocate an inode and blocks for the new file, and the rename free the
// old file's, on every effect; the rename waits for that freeing. Swapping
// the target with a spare that already holds blocks (the target's
// previous inode) does neither. On the 1,000-item queue this took a tenth
// off a cycle's wall time and CPU (docs/PERFORMANCE.md, "A spare instead
// of a new file").
const spareName = tmpPrefix + "spare"

// spare is what a World knows of the spare of its top directory.
type spare struct {
	// live is set while the spare was made or swapped by this World, so
	// that it holds an old content of a target and nothing else; a spare
	// it did not make (left by a crash, or put there by someone else) is
	// never written into, only replaced.
	live bool
	// owner is the identity of a file this World creates (mode, user and
	// group), taken from the first spare it made: a spare that would give
	// the next target anything else (the previous target's own mode or
	// owner) is replaced by a new one, so that a replace leaves a target
	// as a new temporary file would.
	owner *fileOwner
	// unsupported is set once the file system refused to swap two names:
	// replace then renames, as it does below the top directory.
	unsupported bool
	// exchange, when set (tests), stands for the package's exchange.
	exchange func(dir *os.File, a, b string) error
}

func (s *spare) swap(dir *os.File, a, b string) error {
	if s.exchange != nil {
		return s.exchange(dir, a, b)
	}
	return exchange(dir, a, b)
}

type fileOwner struct {
	perm     fs.FileMode
	uid, gid uint32
}

func ownerOf(fi fs.FileInfo) (fileOwner, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return fileOwner{}, false
	}
	return fileOwner{perm: fi.Mode().Perm(), uid: st.Uid, gid: st.Gid}, true
}

// replaceBySwap is replace for an existing file p in the world's top
// directory: the content is written into the spare, which is truncated to
// it and fsynced, and then the spare and p swap names in one atomic step
// (renameat2 RENAME_EXCHANGE), so p's old inode becomes the spare for the
// next replace. The directory's fsync follows as after a rename. done is
// false when the swap is not used (this system has none, or no spare
// could be made): the caller then replaces by a temporary file. A file
// system that refuses the swap gets the written spare renamed onto p.
//
// Only the top directory: its handle (rootDir) is the directory root
// holds, which cannot be swapped for another while root is open. A handle
// on a subdirectory could be moved elsewhere between its opening and the
// swap, which a rename by name through root cannot.
func (w *World) replaceBySwap(p string, target fs.FileInfo, data []byte) (done bool, err error) {
	if w.spare.unsupported || !exchangeSupported {
		return false, nil
	}
	dir, err := w.topDir()
	if err != nil {
		return false, err
	}
	f, oldSize, err := w.openSpare(target)
	if err != nil {
		// No spare can be made here (something else holds the name):
		// a temporary file does the replace.
		return false, nil
	}
	if err := writeSyncClose(f, data, oldSize > int64(len(data))); err != nil {
		w.dropSpare()
		return false, fmt.Errorf("write %s: %w", p, err)
	}
	if err := w.proceed(); err != nil {
		w.dropSpare()
		return false, err
	}
	switch err := w.spare.swap(dir, spareName, p); {
	case errors.Is(err, errExchangeUnsupported), errors.Is(err, fs.ErrNotExist):
		// The spare holds the new content, fsynced: rename it onto p, as
		// a temporary file would be. A file system that cannot swap is
		// not asked again; a target removed since it was looked at is
		// made again, as a rename would.
		w.spare.live = false
		w.spare.unsupported = w.spare.unsupported || errors.Is(err, errExchangeUnsupported)
		if err := w.root.Rename(spareName, p); err != nil {
			w.dropSpare()
			return false, fmt.Errorf("rename onto %s: %w", p, err)
		}
		w.journal.note(WorldOp{Op: "rename", Path: spareName, To: p})
		return true, w.syncDirLast(".")
	case err != nil:
		w.dropSpare()
		return false, fmt.Errorf("swap onto %s: %w", p, err)
	}
	w.journal.note(WorldOp{Op: "exchange", Path: spareName, To: p})
	// What went into the spare must be the file the caller looked at: a
	// target replaced by someone else in between (by a directory, say)
	// is swapped back, and the effect fails rather than move it aside.
	if fi, err := w.root.Lstat(spareName); err != nil || !os.SameFile(fi, target) {
		if berr := w.spare.swap(dir, spareName, p); berr != nil {
			// Both names stay as they are: what was at p is at the
			// spare's name, and is not removed.
			w.spare.live = false
			return true, fmt.Errorf("%s changed while the effect was being committed, and swapping it back failed: what was there is now %s, which the next invocation removes, so move it back before then: %w", p, spareName, berr)
		}
		w.journal.note(WorldOp{Op: "exchange", Path: spareName, To: p})
		w.dropSpare()
		return true, failf("%s changed while the effect was being committed", p)
	}
	w.spare.live = true
	return true, w.syncDirLast(".")
}

// openSpare opens the spare for writing from its start, with the size it
// had. It reuses the spare only when this World made it or swapped it in
// and it is still that: a regular file with one link, not the target,
// with the identity of a new file and no extended attributes (which a new
// file would not carry over either). Anything else at the name is removed
// and a new spare made.
func (w *World) openSpare(target fs.FileInfo) (worldFile, int64, error) {
	if w.spare.live {
		f, size, ok := w.reuseSpare(target)
		if ok {
			w.journal.note(WorldOp{Op: "rewrite", Path: spareName})
			return worldFile{File: f, name: spareName, journal: w.journal}, size, nil
		}
	}
	w.dropSpare()
	f, err := w.root.OpenFile(spareName, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return worldFile{}, 0, fmt.Errorf("create %s: %w", spareName, err)
	}
	w.journal.note(WorldOp{Op: "create", Path: spareName})
	if w.spare.owner == nil {
		if fi, err := f.Stat(); err == nil {
			if o, ok := ownerOf(fi); ok {
				w.spare.owner = &o
			}
		}
	}
	return worldFile{File: f, name: spareName, journal: w.journal}, 0, nil
}

func (w *World) reuseSpare(target fs.FileInfo) (*os.File, int64, bool) {
	named, err := w.root.Lstat(spareName)
	if err != nil || !named.Mode().IsRegular() || os.SameFile(named, target) || w.spare.owner == nil {
		return nil, 0, false
	}
	f, err := w.root.OpenFile(spareName, os.O_WRONLY, 0)
	if err != nil {
		return nil, 0, false
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, false
	}
	o, ok := ownerOf(fi)
	switch {
	case !ok, !os.SameFile(fi, named), regularUnlinked(spareName, fi) != nil,
		o != *w.spare.owner, hasXattrs(f):
		_ = f.Close()
		return nil, 0, false
	}
	return f, fi.Size(), true
}

// dropSpare removes the spare, if any (not fsynced: a spare a power loss
// brings back is swept by the next Open, and is never written into by a
// World that did not make it).
func (w *World) dropSpare() {
	w.spare.live = false
	if err := w.root.Remove(spareName); err == nil {
		w.journal.note(WorldOp{Op: "remove", Path: spareName})
	}
}

// topDir returns the handle on the world's top directory, opened once.
func (w *World) topDir() (*os.File, error) {
	if w.rootDir == nil {
		f, err := w.root.Open(".")
		if err != nil {
			return nil, fmt.Errorf("open the world's directory: %w", err)
		}
		w.rootDir = f
	}
	return w.rootDir, nil
}

// closeSpare removes the spare when the World closes, so that a world
// that is a person's directory is left without it.
func (w *World) closeSpare() {
	if w.spare.live {
		w.dropSpare()
	}
}
