package sandbox

import (
	"bytes"
	"fmt"
	"io/fs"
	"maps"
	"path"
	"slices"
	"strings"
)

// A sandbox copy can be the local copy (a cache) of a world whose truth
// is kept elsewhere, as the world of a run in a JetStream store is: Files
// reads the copy to upload it, Mirror brings it to the stored world, and
// PlannedSize lets the caller refuse an effect whose file the store could
// not keep, before it is made durable.

// Files returns the content of every file of the world that observation
// lists: regular files with one link, neither excluded nor the temporary
// files of an interrupted replace. Symlinks, special files and excluded
// paths are left out, as observation leaves them out. Not for a world
// that is a real directory (root): that one is not copied anywhere.
func (w *World) Files() (map[string][]byte, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.spec.Root != "" {
		return nil, fmt.Errorf("world files: the world is the directory %s, not a sandbox copy", w.spec.Root)
	}
	files := map[string][]byte{}
	err := w.walkWorld(func(p string, d fs.DirEntry) error {
		if !d.Type().IsRegular() || strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		data, exists, err := w.readFile(p)
		switch {
		case refused(err):
			return nil
		case err != nil:
			return fmt.Errorf("read %s: %w", p, err)
		case exists:
			files[p] = data
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("world files: %w", err)
	}
	return files, nil
}

// Mirror makes the world tree hold exactly files (world path: content):
// a file whose bytes differ, or that is missing, is replaced atomically;
// anything else in the tree (a file files does not have, a symlink, a
// special file, a directory left without files) is removed. Every change
// is made durable as the sandbox makes its effects durable. It returns the
// paths it wrote or removed, sorted. Not for a world that is a real
// directory (root): that one is nobody's copy.
//
// The paths of files must be world paths a sandbox copy can hold (the
// ones its effects and its initial files could have made): a path the
// sandbox refuses is an error, and the tree is then left in part
// mirrored, which the next Mirror finishes.
//
// The files Mirror writes go through the sandbox's replace and reach a
// World's journal as every write does; its removals do not (the journal
// has no removal of a directory tree): a copy that is mirrored is one
// whose truth is kept elsewhere and that is mirrored again at every open,
// so what a power loss leaves of it does not matter.
func (w *World) Mirror(files map[string][]byte) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prepared = nil
	if err := w.beforeChange(); err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	if w.spec.Root != "" {
		return nil, fmt.Errorf("mirror: the world is the directory %s, not a sandbox copy", w.spec.Root)
	}
	// dirs holds every directory a file of files needs.
	dirs := map[string]bool{}
	for p := range files {
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			dirs[d] = true
		}
	}
	var changed, extra []string
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case p == ".":
			return nil
		case d.IsDir() && dirs[p]:
			return nil
		case d.Type().IsRegular():
			if _, ok := files[p]; ok {
				return nil
			}
		}
		// Not part of the stored world: a file it does not have, a
		// directory none of its files needs, or something a world copy
		// never holds (a symlink, a special file).
		extra = append(extra, p)
		if d.IsDir() {
			return fs.SkipDir
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("mirror: %w", err)
	}
	for _, p := range extra {
		if err := w.root.RemoveAll(p); err != nil {
			return changed, fmt.Errorf("mirror: remove %s: %w", p, err)
		}
		if err := w.syncDir(path.Dir(p)); err != nil {
			return changed, fmt.Errorf("mirror: %w", err)
		}
		changed = append(changed, p)
	}
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if _, err := w.confine(p); err != nil {
			return changed, fmt.Errorf("mirror: %w", err)
		}
		have, exists, err := w.readFile(p)
		switch {
		case refused(err):
			// A file the sandbox will not read or replace (another
			// hard link to it): the stored bytes take its place.
			if err := w.root.RemoveAll(p); err != nil {
				return changed, fmt.Errorf("mirror: remove %s: %w", p, err)
			}
		case err != nil:
			return changed, fmt.Errorf("mirror: read %s: %w", p, err)
		case exists && bytes.Equal(have, files[p]):
			continue
		}
		if err := w.replace(p, files[p]); err != nil {
			return changed, fmt.Errorf("mirror: write %s: %w", p, err)
		}
		changed = append(changed, p)
	}
	slices.Sort(changed)
	return slices.Compact(changed), nil
}

// PlannedSize is how many bytes the target of the last Prepare of key
// will hold once its effect is applied (0 for a removal); ok is false
// when that Prepare planned no write to one file (nothing to change, an
// outcome already recorded, a command).
func (w *World) PlannedSize(key string) (size int64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pp := w.prepared
	if pp == nil || pp.key != key {
		return 0, false
	}
	if pp.plan.remove {
		return 0, true
	}
	return int64(len(pp.plan.content)), true
}
