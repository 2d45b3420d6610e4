package runstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/ledger"
)

// The replacement of a run by init --force, cut by a power loss before
// every single file system operation it makes (and right after it
// returned), always leaves either the old run in place, untouched, or the
// new run in place with the old one whole in the archive, once the next
// command has opened the directory.

func replaceOptions() Options { return Options{Clock: frozen{}, Revision: "t", CheckpointEvery: 2} }

// oldRun makes a run with some history on a fresh Mem.
func oldRun(t *testing.T) (*disk.Mem, string) {
	t.Helper()
	mem, root := disk.NewMem(), t.TempDir()
	_, err := InitOn(t.Context(), mem, root, powerInputs(), "run:old", replaceOptions())
	require.NoError(t, err)
	r, err := OpenOn(t.Context(), mem, root, replaceOptions(), nil)
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 3, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	return mem, root
}

func newInputs() Inputs {
	in := powerInputs()
	in.Goal.Mission = "the replacement"
	return in
}

type cutTrial struct {
	cut  int    // power is cut before the cut-th operation; 0: after the end
	skip string // an fsync group switched off during the replacement
}

// underCut runs op on mem with the trial's fsync group switched off and
// the power cut before its cut-th operation (op then stops there), and
// returns how many operations op made. groups, if not nil, collects the
// fsync groups seen.
func underCut(mem *disk.Mem, tr cutTrial, groups *[]string, op func()) (ops int) {
	mem.SkipSync(func(op disk.SyncOp) bool {
		g := syncGroup(op)
		if groups != nil && !slices.Contains(*groups, g) {
			*groups = append(*groups, g)
		}
		return g == tr.skip
	})
	mem.OnOp(func(disk.MemOp) {
		ops++
		if ops == tr.cut {
			panic(powerCut{})
		}
	})
	defer func() {
		mem.OnOp(nil)
		mem.SkipSync(nil)
		if p := recover(); p != nil {
			if _, ok := p.(powerCut); !ok {
				panic(p)
			}
		}
	}()
	op()
	return ops // also what a recovered cut returns: ops is the named result
}

// replaceTrial runs one replacement under a trial. It returns how many
// operations the replacement made and what, if anything, is wrong after
// the power loss and a reopen.
func replaceTrial(t *testing.T, tr cutTrial, groups *[]string) (int, string, error) {
	t.Helper()
	mem, root := oldRun(t)
	oldManifest, err := mem.ReadFile(dirstore.ManifestName)
	require.NoError(t, err)
	oldLedger, err := mem.ReadFile(ledger.FileName)
	require.NoError(t, err)

	var replaceErr error
	ops := underCut(mem, tr, groups, func() {
		_, replaceErr = ReplaceOn(t.Context(), mem, root, newInputs(), "run:new", replaceOptions())
	})
	finished := tr.cut == 0 || tr.cut > ops
	if finished && replaceErr != nil {
		return ops, "", fmt.Errorf("replace without a power cut: %w", replaceErr)
	}
	mem.Crash()

	r, err := OpenOn(t.Context(), mem, root, replaceOptions(), nil)
	if err != nil {
		return ops, "", fmt.Errorf("reopen after the power cut: %w", err)
	}
	runID := r.Driver.State().Run.RunID
	require.NoError(t, r.Close())
	if rep, err := ledger.Verify(mem, nil); err != nil || !rep.OK {
		return ops, runID, fmt.Errorf("ledger after reopen: %v %v", err, rep.Damage)
	}
	if ok, _ := disk.Exists(mem, stagingDir); ok {
		return ops, runID, errors.New("the staging directory is still there after reopen")
	}
	switch runID {
	case "run:old":
		if finished {
			return ops, runID, errors.New("the replacement returned success, but the old run is back after the power loss")
		}
		m, _ := mem.ReadFile(dirstore.ManifestName)
		l, _ := mem.ReadFile(ledger.FileName)
		if !bytes.Equal(m, oldManifest) || !bytes.Equal(l, oldLedger) {
			return ops, runID, errors.New("the old run is in place but changed")
		}
	case "run:new":
		es, err := mem.ReadDir(ArchiveDir)
		if err != nil || len(es) != 1 {
			return ops, runID, fmt.Errorf("want one archived run, found %d (%v)", len(es), err)
		}
		dir := ArchiveDir + "/" + es[0].Name()
		m, _ := mem.ReadFile(dir + "/" + dirstore.ManifestName)
		l, _ := mem.ReadFile(dir + "/" + ledger.FileName)
		if !bytes.Equal(m, oldManifest) || !bytes.Equal(l, oldLedger) {
			return ops, runID, fmt.Errorf("the archived run in %s is not the old run, whole", dir)
		}
	default:
		return ops, runID, fmt.Errorf("unexpected run %q after reopen", runID)
	}
	return ops, runID, nil
}

// TestPowerLossDuringReplace cuts power before each operation of a
// replacement in turn.
func TestPowerLossDuringReplace(t *testing.T) {
	total, runID, err := replaceTrial(t, cutTrial{}, nil)
	require.NoError(t, err)
	require.Equal(t, "run:new", runID)
	require.Greater(t, total, 20, "a replacement makes a few dozen operations")
	seen := map[string]int{}
	for cut := 1; cut <= total; cut++ {
		_, runID, err := replaceTrial(t, cutTrial{cut: cut}, nil)
		require.NoError(t, err, "power cut before operation %d of %d", cut, total)
		seen[runID]++
	}
	t.Logf("%d cut points: %v", total, seen)
	assert.Positive(t, seen["run:old"])
	assert.Positive(t, seen["run:new"])
}

// TestEveryReplaceFsyncIsNeeded switches off each kind of fsync a
// replacement makes, one at a time, and requires that some power cut then
// loses a run or leaves a wrong one.
func TestEveryReplaceFsyncIsNeeded(t *testing.T) {
	var groups []string
	total, _, err := replaceTrial(t, cutTrial{}, &groups)
	require.NoError(t, err)
	slices.Sort(groups)
	require.NotEmpty(t, groups)
	var blind []string
	for _, g := range groups {
		noticed := false
		for cut := 0; cut <= total && !noticed; cut++ {
			_, _, err := replaceTrial(t, cutTrial{cut: cut, skip: g}, nil)
			noticed = err != nil
		}
		if !noticed {
			blind = append(blind, g)
		}
	}
	t.Logf("fsync kinds of a replacement: %v", groups)
	require.Empty(t, blind, "these fsyncs can be switched off without any power cut noticing")
}

// faultFS fails the n-th mutating operation with EIO.
type faultFS struct {
	*disk.Mem
	n, at *int
}

func (f faultFS) fail(op string) error {
	*f.n++
	if *f.n == *f.at {
		return fmt.Errorf("%s: %w", op, syscall.EIO)
	}
	return nil
}

func (f faultFS) WriteFile(name string, data []byte) error {
	if err := f.fail("write " + name); err != nil {
		return err
	}
	return f.Mem.WriteFile(name, data)
}

func (f faultFS) MkdirAll(name string) error {
	if err := f.fail("mkdir " + name); err != nil {
		return err
	}
	return f.Mem.MkdirAll(name)
}

func (f faultFS) SyncDir(name string) error {
	if err := f.fail("fsync " + name); err != nil {
		return err
	}
	return f.Mem.SyncDir(name)
}

func (f faultFS) Rename(a, b string) error {
	if err := f.fail("rename " + a); err != nil {
		return err
	}
	return f.Mem.Rename(a, b)
}

func (f faultFS) OpenAppend(name string) (disk.File, error) {
	if err := f.fail("open " + name); err != nil {
		return nil, err
	}
	return f.Mem.OpenAppend(name)
}

// TestFailedReplaceLeavesOldRun: an error at any operation of the build
// (a full disk, an I/O error) returns the error and leaves the old run as
// it was, with no staging directory behind.
func TestFailedReplaceLeavesOldRun(t *testing.T) {
	failedBuilds := 0
	for at := 1; ; at++ {
		mem, root := oldRun(t)
		before := memTree(t, mem)
		n := 0
		fsys := faultFS{Mem: mem, n: &n, at: &at}
		_, err := ReplaceOn(t.Context(), fsys, root, newInputs(), "run:new", replaceOptions())
		if err == nil {
			require.Greater(t, failedBuilds, 10)
			return
		}
		require.ErrorIs(t, err, syscall.EIO)
		if ok, _ := disk.Exists(mem, stagingDir+"/"+swapFile); ok {
			// The failure hit after the decision: the swap is finished by
			// the next open, never undone.
			r, err := OpenOn(t.Context(), mem, root, replaceOptions(), nil)
			require.NoError(t, err)
			assert.Equal(t, "run:new", r.Driver.State().Run.RunID)
			require.NoError(t, r.Close())
			continue
		}
		failedBuilds++
		assert.Equal(t, before, memTree(t, mem), "failure at operation %d changed the state directory", at)
	}
}

// memTree lists every file on a Mem with its content, for comparisons.
func memTree(t *testing.T, m *disk.Mem) map[string]string {
	t.Helper()
	out := map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		es, err := m.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range es {
			p := e.Name()
			if dir != "." {
				p = dir + "/" + p
			}
			if e.IsDir() {
				out[p+"/"] = ""
				walk(p)
				continue
			}
			b, err := m.ReadFile(p)
			require.NoError(t, err)
			out[p] = string(b)
		}
	}
	walk(".")
	return out
}
