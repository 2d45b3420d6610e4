package dirstore

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

func storeBackends(t *testing.T, fn func(t *testing.T, fsys disk.FS)) {
	t.Helper()
	t.Run("os", func(t *testing.T) {
		d, err := disk.CreateOSDir(t.TempDir())
		require.NoError(t, err)
		fn(t, d)
	})
	t.Run("mem", func(t *testing.T) { fn(t, disk.NewMem()) })
}

func files(gen int) map[string][]byte {
	return map[string][]byte{
		"run_state": codec.MustMarshal(map[string]any{"cycle_seq": gen, "status": "RUNNING"}),
		"goal":      codec.MustMarshal(map[string]any{"statement": "keep it healthy"}),
	}
}

// commitGen commits on top of whatever is committed now.
func commitGen(t *testing.T, s *Store, gen int) storage.Manifest {
	t.Helper()
	prev, err := s.ReadManifest()
	if err != nil {
		require.ErrorIs(t, err, storage.ErrNoRun)
	}
	m, err := s.Commit(storage.Commit{Expect: prev.Generation, RunID: "run:t", CycleSeq: int64(gen), Revision: "test", Frontier: state.GenesisFrontier(), Files: files(gen)})
	require.NoError(t, err)
	return m
}

// A writer that loaded an older checkpoint stores nothing: the
// generation it expects is checked against the committed one.
func TestStaleCommitStoresNothing(t *testing.T) {
	fsys := disk.NewMem()
	s := NewStore(fsys)
	m1 := commitGen(t, s, 1)
	m2 := commitGen(t, s, 2)
	_, err := s.Commit(storage.Commit{Expect: m1.Generation, RunID: "run:t", CycleSeq: 3, Revision: "test", Frontier: state.GenesisFrontier(), Files: files(3)})
	require.ErrorIs(t, err, storage.ErrConflict)
	snap, err := s.Load()
	require.NoError(t, err)
	assert.Equal(t, m2, snap.Manifest)
}

func TestStoreRoundTripIsByteIdentical(t *testing.T) {
	storeBackends(t, func(t *testing.T, fsys disk.FS) {
		s := NewStore(fsys)
		_, err := s.Load()
		require.ErrorIs(t, err, storage.ErrNoRun)

		m1 := commitGen(t, s, 1)
		assert.Equal(t, int64(1), m1.Generation)
		snap, err := s.Load()
		require.NoError(t, err)
		assert.Equal(t, files(1), snap.Files)
		manifestBytes, err := fsys.ReadFile(ManifestName)
		require.NoError(t, err)

		// Re-save exactly what was loaded: every file, including the
		// manifest apart from its generation, comes back identical.
		before := map[string][]byte{}
		for _, fe := range snap.Manifest.Files {
			b, err := fsys.ReadFile(fe.Path)
			require.NoError(t, err)
			before[fe.Path] = b
		}
		m2, err := s.Commit(storage.Commit{Expect: snap.Manifest.Generation, RunID: snap.Manifest.RunID, CycleSeq: snap.Manifest.CycleSeq, Revision: snap.Manifest.WrittenAtRevision,
			Frontier: snap.Manifest.LedgerFrontier, Files: snap.Files})
		require.NoError(t, err)
		for p, b := range before {
			after, err := fsys.ReadFile(p)
			require.NoError(t, err)
			assert.Equal(t, b, after, p)
		}
		m2.Generation = m1.Generation
		m2.Checksum = m2.Sum()
		assert.Equal(t, manifestBytes, codec.MustMarshal(m2))

		// The manifest is canonical JSON.
		_, err = codec.ParseCanonical(manifestBytes)
		require.NoError(t, err)
	})
}

func TestStoreKeepsOnlyReferencedFiles(t *testing.T) {
	fsys := disk.NewMem()
	s := NewStore(fsys)
	for g := 1; g <= 5; g++ {
		commitGen(t, s, g)
	}
	require.NoError(t, fsys.WriteFile(CheckpointDir+"/.run_state.json123", []byte("stale temp")))
	m := commitGen(t, s, 6)
	entries, err := fsys.ReadDir(CheckpointDir)
	require.NoError(t, err)
	var names []string
	for _, e := range entries {
		names = append(names, CheckpointDir+"/"+e.Name())
	}
	var want []string
	for _, fe := range m.Files {
		want = append(want, fe.Path)
	}
	assert.ElementsMatch(t, want, names)
}

// TestStoreCrashAtEveryStage simulates a power loss at each point of a
// commit and checks that exactly one complete checkpoint, old or new, loads.
func TestStoreCrashAtEveryStage(t *testing.T) {
	type crashPoint struct {
		name  string
		setup func(m *disk.Mem, s *Store)
		want  int // generation expected after the crash
	}
	panicAt := func(s *Store) { s.OnStage = func(string) { panic("crash") } }
	points := []crashPoint{
		{"mid-checkpoint", func(m *disk.Mem, s *Store) { panicAt(s) }, 1},
		{"before the manifest is durable", func(m *disk.Mem, s *Store) {
			m.SkipSync(func(op disk.SyncOp) bool {
				if op.Dir && op.Name == "." {
					panic("crash")
				}
				return false
			})
		}, 1},
		{"after commit", func(m *disk.Mem, s *Store) {}, 2},
	}
	for _, p := range points {
		t.Run(p.name, func(t *testing.T) {
			m := disk.NewMem()
			s := NewStore(m)
			commitGen(t, s, 1)
			p.setup(m, s)
			func() {
				defer func() { _ = recover() }()
				_, _ = s.Commit(storage.Commit{Expect: 1, RunID: "run:t", CycleSeq: 2, Revision: "test", Frontier: state.GenesisFrontier(), Files: files(2)})
			}()
			m.Crash()
			m.SkipSync(nil)
			snap, err := NewStore(m).Load()
			require.NoError(t, err)
			assert.Equal(t, files(p.want), snap.Files)
		})
	}
}

// TestStoreEveryFsyncMatters switches off each fsync the store makes, one
// at a time, and power-fails the machine before each later fsync and at the
// end. With all fsyncs on, every crash leaves generation 1 or 2 complete;
// with any one off, some crash leaves a broken or lost checkpoint. So none
// of them is decorative, and the crash test would notice one going missing.
func TestStoreEveryFsyncMatters(t *testing.T) {
	probe := disk.NewMem()
	ps := NewStore(probe)
	commitGen(t, ps, 1)
	var ops []disk.SyncOp
	probe.SkipSync(func(op disk.SyncOp) bool { ops = append(ops, op); return false })
	commitGen(t, ps, 2)
	require.NotEmpty(t, ops)

	// outcome commits generation 2 with fsync skip (-1: none) switched off
	// and power-fails before fsync number crashAt (len(ops): after the
	// commit). It returns whether the state after reboot is acceptable.
	outcome := func(skip, crashAt int) bool {
		m := disk.NewMem()
		s := NewStore(m)
		commitGen(t, s, 1)
		n := 0
		m.SkipSync(func(op disk.SyncOp) bool {
			defer func() { n++ }()
			if n == crashAt {
				panic("power loss")
			}
			return n == skip
		})
		func() {
			defer func() { _ = recover() }()
			_, _ = s.Commit(storage.Commit{Expect: 1, RunID: "run:t", CycleSeq: 2, Revision: "test", Frontier: state.GenesisFrontier(), Files: files(2)})
		}()
		m.Crash()
		m.SkipSync(nil)
		snap, err := NewStore(m).Load()
		if err != nil {
			return false
		}
		if crashAt == len(ops) {
			return assert.ObjectsAreEqual(files(2), snap.Files)
		}
		return assert.ObjectsAreEqual(files(1), snap.Files) || assert.ObjectsAreEqual(files(2), snap.Files)
	}
	for crashAt := 0; crashAt <= len(ops); crashAt++ {
		require.True(t, outcome(-1, crashAt), "with every fsync, a crash before fsync %d broke the store", crashAt)
	}
	for skip := range ops {
		broken := false
		for crashAt := skip + 1; crashAt <= len(ops); crashAt++ {
			if !outcome(skip, crashAt) {
				broken = true
			}
		}
		assert.True(t, broken, "fsync %d (%+v) can be switched off without any crash noticing", skip, ops[skip])
	}
}

func TestStoreIntegrityErrors(t *testing.T) {
	cases := []struct {
		name   string
		damage func(t *testing.T, fsys disk.FS, m storage.Manifest)
		file   string
	}{
		{"flipped checkpoint byte", func(t *testing.T, fsys disk.FS, m storage.Manifest) {
			p := m.Files["goal"].Path
			b, _ := fsys.ReadFile(p)
			b[3] ^= 0x20
			require.NoError(t, fsys.WriteFile(p, b))
		}, "checkpoint/goal."},
		{"missing checkpoint file", func(t *testing.T, fsys disk.FS, m storage.Manifest) {
			require.NoError(t, fsys.Remove(m.Files["run_state"].Path))
		}, "checkpoint/run_state."},
		{"manifest not JSON", func(t *testing.T, fsys disk.FS, m storage.Manifest) {
			require.NoError(t, fsys.WriteFile(ManifestName, []byte("{not json")))
		}, ManifestName},
		{"manifest unknown field", func(t *testing.T, fsys disk.FS, m storage.Manifest) {
			b, _ := fsys.ReadFile(ManifestName)
			b = append([]byte(`{"aaa":1,`), b[1:]...)
			require.NoError(t, fsys.WriteFile(ManifestName, b))
		}, ManifestName},
		{"manifest path escapes", func(t *testing.T, fsys disk.FS, m storage.Manifest) {
			fe := m.Files["goal"]
			fe.Path = "../goal.json"
			m.Files["goal"] = fe
			m.Checksum = m.Sum()
			require.NoError(t, fsys.WriteFile(ManifestName, codec.MustMarshal(m)))
		}, ManifestName},
		{"newer schema version", func(t *testing.T, fsys disk.FS, m storage.Manifest) {
			m.SchemaVersion = storage.SchemaVersion + 1
			m.Checksum = m.Sum()
			require.NoError(t, fsys.WriteFile(ManifestName, codec.MustMarshal(m)))
		}, ManifestName},
		{"manifest digit flipped", func(t *testing.T, fsys disk.FS, m storage.Manifest) {
			m.Generation++
			require.NoError(t, fsys.WriteFile(ManifestName, codec.MustMarshal(m)))
		}, ManifestName},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fsys := disk.NewMem()
			s := NewStore(fsys)
			m := commitGen(t, s, 1)
			c.damage(t, fsys, m)
			_, err := s.Load()
			var ie *state.IntegrityError
			require.True(t, errors.As(err, &ie), "want state.IntegrityError, got %v", err)
			assert.Contains(t, ie.File, c.file)
		})
	}
}

func TestStoreLock(t *testing.T) {
	storeBackends(t, func(t *testing.T, fsys disk.FS) {
		s := NewStore(fsys)
		u, err := s.Lock()
		require.NoError(t, err)
		_, err = NewStore(fsys).Lock()
		require.ErrorIs(t, err, storage.ErrBusy)
		require.NoError(t, u.Unlock())
		u2, err := s.Lock()
		require.NoError(t, err)
		require.NoError(t, u2.Unlock())
	})
}

// TestStoreDetectsEveryByteFlip flips every byte of the manifest and of
// each checkpoint file in turn: every flip is reported as an integrity
// error (or, for the manifest, a not-canonical or checksum error), never
// loaded as a valid checkpoint.
func TestStoreDetectsEveryByteFlip(t *testing.T) {
	fsys := disk.NewMem()
	s := NewStore(fsys)
	m := commitGen(t, s, 1)
	paths := []string{ManifestName}
	for _, fe := range m.Files {
		paths = append(paths, fe.Path)
	}
	flips := 0
	for _, p := range paths {
		orig, err := fsys.ReadFile(p)
		require.NoError(t, err)
		for i := range orig {
			for _, mask := range []byte{0x01, 0x20} {
				b := append([]byte(nil), orig...)
				b[i] ^= mask
				require.NoError(t, fsys.WriteFile(p, b))
				_, err := s.Load()
				var ie *state.IntegrityError
				require.True(t, errors.As(err, &ie), "%s byte %d ^%#x loaded: %v", p, i, mask, err)
				flips++
			}
		}
		require.NoError(t, fsys.WriteFile(p, orig))
	}
	_, err := s.Load()
	require.NoError(t, err)
	require.Greater(t, flips, 500)
}
