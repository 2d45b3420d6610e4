package sandbox

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Observe walks the world and reports what it holds: regular files sorted by
// path with their hash and size, every spec check evaluated, every evidence
// item's presence. The result depends only on the tree's content (and on
// what command checks print about it), so two calls on an unchanged world
// are equal and hash to the same ref.
//
// Excluded paths are counted, never opened; an excluded directory counts
// once and is not entered. Symlinks, special files and files with other
// hard links are counted as excluded too and listed as refused: following
// a link could read outside the world or read the same file under two
// names, a hard link may be a file that also lives outside it, and opening
// a FIFO could block the loop. Temporary files of an interrupted replace
// are not part of the world and are neither listed nor counted.
//
// The walk keeps to the spec's limits: a path deeper than max_depth is
// refused and not entered; more entries than max_entries or more bytes
// than max_bytes stop the observation with an error that says which limit
// to raise, since a world observed in part could not be judged.
func (w *World) Observe(ctx context.Context) (world.Observation, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	obs := world.Observation{
		Schema:   world.ObservationSchema,
		Files:    []world.FileFact{},
		Checks:   []world.CheckResult{},
		Evidence: []world.EvidenceFact{},
	}
	// The walk hands over the bytes of every file a check judges, so that
	// each is read once per observation and the checks judge the very
	// bytes whose hash the observation records.
	judged := map[string]bool{}
	for _, c := range w.spec.Checks {
		if k, ok := world.CheckKindOf(c.Kind); ok && k.OnFile {
			judged[c.Path] = true
		}
	}
	seen := make(map[string][]byte, len(judged))
	// The judged bytes are handed on to Prepare, and the last readback's
	// to this walk (see handoff).
	observed := make(map[string]*handoff, len(judged))
	wk := walker{w: w, obs: &obs, limits: w.spec.ObservationLimits(), handoff: w.toObserve, passOn: observed,
		kept: func(p string) bool { return judged[p] }, keep: func(p string, data []byte) { seen[p] = data }}
	w.dropHandoffs()
	if err := wk.dir(".", 0); err != nil {
		return world.Observation{}, fmt.Errorf("observe: %w", err)
	}
	w.observed = observed
	// Directory order puts "a/b" before "a.txt"; the contract is plain path order.
	slices.SortFunc(obs.Files, func(a, b world.FileFact) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(obs.Refused, func(a, b world.Refusal) int { return strings.Compare(a.Path, b.Path) })
	w.lastFiles = make(map[string]codec.Fingerprint, len(obs.Files))
	for _, f := range obs.Files {
		w.lastFiles[f.Path] = f.SHA256
	}
	for _, c := range w.spec.Checks {
		r, dur, err := w.evaluateSeen(ctx, c, seen)
		if err != nil {
			// The error names the check; the caller names the step.
			return world.Observation{}, err
		}
		obs.Checks = append(obs.Checks, r)
		if c.Kind == world.CheckCommand {
			obs.Runs = append(obs.Runs, world.CommandRun{Check: c.ID, DurationMS: dur})
		}
	}
	for _, e := range w.spec.Evidence {
		fact := world.EvidenceFact{ID: e.ID}
		if sum, ok := w.lastFiles[e.Path]; ok {
			fact.Present, fact.SHA256 = true, sum
			obs.Evidence = append(obs.Evidence, fact)
			continue
		}
		data, exists, err := w.readScratch(e.Path)
		if err != nil && !refused(err) {
			return world.Observation{}, fmt.Errorf("observe evidence %s: %w", e.ID, err)
		}
		if err == nil && exists {
			fact.Present, fact.SHA256 = true, codec.FingerprintOf(data)
		}
		obs.Evidence = append(obs.Evidence, fact)
	}
	return obs, nil
}

// walker is one observation's walk of the tree.
type walker struct {
	w       *World
	obs     *world.Observation
	limits  world.Limits
	entries int
	bytes   int64
	// match, when set, limits the files listed to those matching one of
	// these patterns (directories that cannot hold one are not entered).
	match []string
	// keep, when set, is handed the whole content of each listed file
	// that kept accepts (every listed file when kept is nil); the others
	// are hashed as they stream by.
	keep func(p string, data []byte)
	kept func(p string) bool
	// handoff, when set, is a read of one file the walk may list instead
	// of reading it again; passOn, when set, gets a handoff of every file
	// whose whole content the walk kept (see handoff).
	handoff *handoff
	passOn  map[string]*handoff
}

// pass records a kept file's content in passOn; fi is the file's stat
// from before its bytes were read.
func (wk *walker) pass(p string, fi fs.FileInfo, sum codec.Fingerprint, data []byte) {
	if wk.passOn == nil {
		return
	}
	if h := newHandoff(p, fi, sum, int64(len(data)), data); h != nil {
		wk.passOn[p] = h
	}
}

// whole reports whether the walk keeps the whole content of file p.
func (wk *walker) whole(p string) bool {
	return wk.keep != nil && (wk.kept == nil || wk.kept(p))
}

// count adds a listed file's size to the walk's total, against max_bytes.
func (wk *walker) count(size int64) error {
	wk.bytes += size
	if wk.bytes > wk.limits.MaxBytes {
		return fmt.Errorf("the world's files hold more than %d bytes (limits.max_bytes): exclude what acr need not look at, or raise the limit", wk.limits.MaxBytes)
	}
	return nil
}

// handedOver lists file p from the walk's handoff when p is still the
// file it was read from; done is false when the walk must read p itself.
func (wk *walker) handedOver(p string) (done bool, err error) {
	h := wk.handoff
	if h == nil || h.path != p {
		return false, nil
	}
	wk.handoff = nil
	whole := wk.whole(p)
	if whole && h.data == nil {
		return false, nil
	}
	fi, err := wk.w.root.Lstat(p)
	if err != nil || !h.takes(p, fi) || regularUnlinked(p, fi) != nil {
		return false, nil
	}
	if err := wk.count(h.size); err != nil {
		return true, err
	}
	if whole {
		wk.keep(p, h.content())
		wk.pass(p, fi, h.sum, h.content())
	}
	wk.obs.Files = append(wk.obs.Files, world.FileFact{Path: p, SHA256: h.sum, Size: h.size})
	return true, nil
}

// wants reports whether the walk lists file p, or may find such files
// below directory p.
func (wk *walker) wants(p string, dir bool) bool {
	if wk.match == nil {
		return true
	}
	for _, pat := range wk.match {
		if (!dir && world.MatchGlob(pat, p)) || (dir && world.MayOverlap(pat, p+"/**")) {
			return true
		}
	}
	return false
}

// refuse records a path observation will not read.
func (wk *walker) refuse(p, reason string) {
	wk.obs.Excluded++
	if len(wk.obs.Refused) < world.MaxRefusedListed {
		wk.obs.Refused = append(wk.obs.Refused, world.Refusal{Path: p, Reason: reason})
	}
}

// dir observes the directory p (depth: its number of segments).
func (wk *walker) dir(p string, depth int) error {
	f, err := wk.w.root.Open(p)
	if err != nil {
		return err
	}
	ents, err := f.ReadDir(-1)
	_ = f.Close()
	if err != nil {
		return fmt.Errorf("read directory %s: %w", p, err)
	}
	slices.SortFunc(ents, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	for _, d := range ents {
		name := d.Name()
		child := name
		if p != "." {
			child = p + "/" + name
		}
		if strings.HasPrefix(name, tmpPrefix) && d.Type().IsRegular() {
			continue
		}
		if wk.w.excluded(child) {
			wk.obs.Excluded++
			continue
		}
		wk.entries++
		if wk.entries > wk.limits.MaxEntries {
			return fmt.Errorf("the world holds more than %d files and directories (limits.max_entries): exclude what acr need not look at, or raise the limit", wk.limits.MaxEntries)
		}
		if depth+1 > wk.limits.MaxDepth {
			wk.refuse(child, fmt.Sprintf("deeper than %d directories (limits.max_depth)", wk.limits.MaxDepth))
			continue
		}
		switch t := d.Type(); {
		case t&fs.ModeSymlink != 0:
			wk.refuse(child, "symlink; symlinks are not followed")
		case t.IsDir():
			if !wk.wants(child, true) {
				continue
			}
			if err := wk.dir(child, depth+1); err != nil {
				return err
			}
		case !t.IsRegular():
			wk.refuse(child, "not a regular file")
		case wk.wants(child, false):
			if err := wk.file(child); err != nil {
				return err
			}
		}
	}
	return nil
}

// file hashes one regular file as it streams by.
func (wk *walker) file(p string) error {
	if done, err := wk.handedOver(p); done || err != nil {
		return err
	}
	f, fi, err := wk.w.openRegular(p)
	var bad *failure
	switch {
	case errors.As(err, &bad) || errors.Is(err, ErrConfinement):
		wk.refuse(p, refusalReason(err))
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return nil // gone since the directory was listed
	case err != nil:
		return fmt.Errorf("read %s: %w", p, err)
	}
	defer f.Close()
	if err := wk.count(fi.Size()); err != nil {
		return err
	}
	var sum codec.Fingerprint
	var size int64
	if wk.whole(p) {
		data, err := io.ReadAll(f)
		if err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
		sum, size = codec.FingerprintOf(data), int64(len(data))
		wk.keep(p, data)
		wk.pass(p, fi, sum, data)
	} else {
		if wk.w.hashBuf == nil {
			wk.w.hashBuf = make([]byte, 64<<10)
		}
		if sum, size, err = codec.FingerprintReader(f, wk.w.hashBuf); err != nil {
			return fmt.Errorf("read %s: %w", p, err)
		}
	}
	wk.obs.Files = append(wk.obs.Files, world.FileFact{Path: p, SHA256: sum, Size: size})
	return nil
}

// refusalReason is the part of a refusal that says why, without the path.
func refusalReason(err error) string {
	var f *failure
	if errors.As(err, &f) {
		return f.reason
	}
	msg := err.Error()
	if i := strings.LastIndex(msg, `" `); i >= 0 {
		return msg[i+2:]
	}
	return msg
}

// openRegular opens the world file p for reading, never blocking on a
// FIFO swapped in since the directory was listed, and checks what the open
// file is: a regular file with no other hard link. A file linked from
// elsewhere too may be a file outside the world, so it is refused.
func (w *World) openRegular(p string) (*os.File, fs.FileInfo, error) {
	f, err := w.root.OpenFile(p, os.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOFOLLOW, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, nil, refuse(p, "is a symlink; symlinks are not followed")
		}
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	if err := regularUnlinked(p, fi); err != nil {
		_ = f.Close()
		return nil, nil, err
	}
	return f, fi, nil
}

// regularUnlinked refuses anything but a regular file with one link.
func regularUnlinked(p string, fi fs.FileInfo) error {
	switch {
	case fi.IsDir():
		return failf("%s is a directory", p)
	case !fi.Mode().IsRegular():
		return failReason("not a regular file", "%s is not a regular file", p)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); ok && st.Nlink > 1 {
		return failReason("has other hard links; it may be a file outside the world", "%s has %d hard links; it may be a file outside the world, so acr neither reads nor writes it", p, st.Nlink)
	}
	return nil
}

// refused reports whether err is about the path rather than the machine:
// confinement or a data failure. Observation turns those into facts.
func refused(err error) bool {
	var f *failure
	return errors.Is(err, ErrConfinement) || errors.As(err, &f)
}

// evaluate runs one check against the world. A path the sandbox will not
// read makes the check fail with the reason as detail: a check that cannot
// be verified must not pass, and must not stop observation either. A
// command check that does not give a verdict (see evaluateCommand) is an
// error: the provider failed, the world said nothing.
func (w *World) evaluate(ctx context.Context, c world.Check) (world.CheckResult, error) {
	r, _, err := w.evaluateTimed(ctx, c)
	return r, err
}

// evaluateTimed is evaluate, with how long a command check ran (ms).
func (w *World) evaluateTimed(ctx context.Context, c world.Check) (world.CheckResult, int64, error) {
	if k, ok := world.CheckKindOf(c.Kind); ok && !k.OnFile {
		return w.evaluateCommand(ctx, c)
	}
	data, exists, err := w.readScratch(c.Path)
	if err != nil {
		if !refused(err) {
			return world.CheckResult{}, 0, fmt.Errorf("check %s: %w", c.ID, err)
		}
		return world.CheckResult{ID: c.ID, Status: world.CheckFail, Detail: err.Error()}, 0, nil
	}
	return world.Evaluate(c, data, exists), 0, nil
}

// evaluateSeen is evaluateTimed for a check whose file the observation's
// walk already read (seen holds those files' bytes); any other check reads
// for itself, which also gives a path the walk did not list (missing,
// refused, excluded) the same verdict and detail as ever.
func (w *World) evaluateSeen(ctx context.Context, c world.Check, seen map[string][]byte) (world.CheckResult, int64, error) {
	if k, ok := world.CheckKindOf(c.Kind); ok && k.OnFile {
		if data, ok := seen[c.Path]; ok {
			return world.Evaluate(c, data, true), 0, nil
		}
	}
	return w.evaluateTimed(ctx, c)
}

// checkByID finds a spec check.
func (w *World) checkByID(id string) (world.Check, bool) { return w.spec.CheckByID(id) }

// checksOn lists the checks about files a pattern set covers: the checks
// an effect on those files could make pass or fail.
func (w *World) checksOn(patterns []string) []world.Check {
	var out []world.Check
	for _, c := range w.spec.Checks {
		if c.Path != "" && world.MatchAny(patterns, c.Path) {
			out = append(out, c)
		}
	}
	return out
}
