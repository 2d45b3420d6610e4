package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Observe walks the world and reports what it holds: regular files sorted by
// path with their hash and size, every spec check evaluated, every evidence
// item's presence. The result depends only on the tree's content, so two
// calls on an unchanged world are equal and hash to the same ref.
//
// Excluded paths are counted, never opened; an excluded directory counts
// once and is not entered. Symlinks and special files are counted as
// excluded too: following a link could read outside the world or read the
// same file under two names, and opening a FIFO could block the loop.
// Temporary files of an interrupted replace are not part of the world and
// are neither listed nor counted.
func (w *World) Observe() (world.Observation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	obs := world.Observation{
		Schema:   world.ObservationSchema,
		Files:    []world.FileFact{},
		Checks:   []world.CheckResult{},
		Evidence: []world.EvidenceFact{},
	}
	err := fs.WalkDir(w.root.FS(), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if p == "." {
			return nil
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) && d.Type().IsRegular() {
			return nil
		}
		if w.excluded(p) {
			obs.Excluded++
			if d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			obs.Excluded++
			return nil
		}
		fp, size, err := w.fingerprint(p)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		obs.Files = append(obs.Files, world.FileFact{Path: p, SHA256: fp, Size: size})
		return nil
	})
	if err != nil {
		return world.Observation{}, fmt.Errorf("observe: %w", err)
	}
	// Walk order puts "a/b" before "a.txt"; the contract is plain path order.
	slices.SortFunc(obs.Files, func(a, b world.FileFact) int { return strings.Compare(a.Path, b.Path) })
	for _, c := range w.spec.Checks {
		r, err := w.evaluate(c)
		if err != nil {
			return world.Observation{}, fmt.Errorf("observe: %w", err)
		}
		obs.Checks = append(obs.Checks, r)
	}
	for _, e := range w.spec.Evidence {
		fact := world.EvidenceFact{ID: e.ID}
		data, exists, err := w.readScratch(e.Path)
		if err != nil && !refused(err) {
			return world.Observation{}, fmt.Errorf("observe evidence %s: %w", e.ID, err)
		}
		if err == nil && exists {
			fact.Present, fact.SHA256 = true, state.FingerprintOf(data)
		}
		obs.Evidence = append(obs.Evidence, fact)
	}
	return obs, nil
}

// fingerprint hashes the world file p as it streams by.
func (w *World) fingerprint(p string) (state.Fingerprint, int64, error) {
	f, err := w.root.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	if w.hashBuf == nil {
		w.hashBuf = make([]byte, 64<<10)
	}
	return state.FingerprintReader(f, w.hashBuf)
}

// refused reports whether err is about the path rather than the machine:
// confinement or a data failure. Observation turns those into facts.
func refused(err error) bool {
	var f *failure
	return errors.Is(err, ErrConfinement) || errors.As(err, &f)
}

// evaluate runs one check against the world. A path the sandbox will not
// read makes the check fail with the reason as detail: a check that cannot
// be verified must not pass, and must not stop observation either.
func (w *World) evaluate(c world.Check) (world.CheckResult, error) {
	data, exists, err := w.readScratch(c.Path)
	if err != nil {
		if !refused(err) {
			return world.CheckResult{}, fmt.Errorf("check %s: %w", c.ID, err)
		}
		return world.CheckResult{ID: c.ID, Status: world.CheckFail, Detail: err.Error()}, nil
	}
	return world.Evaluate(c, data, exists), nil
}

// checkByID finds a spec check.
func (w *World) checkByID(id string) (world.Check, bool) {
	for _, c := range w.spec.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return world.Check{}, false
}
