// Package dirstore is the directory backend of a run's checkpoint: the
// manifest as the single commit point over content-addressed checkpoint
// files, written in the order that leaves one complete checkpoint at every
// instant, and the single-writer run lock. It is the storage side: the
// pure packages (codec, state, the kernel's cycle) never import it.
package dirstore

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// Layout of the state directory owned by the store.
const (
	ManifestName  = "manifest.json"
	CheckpointDir = "checkpoint"
	LockName      = "lock"
)

// Store reads and atomically replaces the checkpoint in a state directory.
//
// Write ordering (see docs/on-disk-format.md): checkpoint files are
// content-addressed and immutable, so new ones are written beside the old
// ones (temp, fsync, rename) and the checkpoint directory is fsynced; only
// then is the manifest replaced (temp, fsync, rename, fsync of the state
// directory). A crash at any instant leaves either the old manifest, whose
// files are all still there, or the new one, whose files are all durable.
// Unreferenced files are removed afterwards.
type Store struct {
	fsys disk.FS
	// OnStage, when set, is called at named points of a commit
	// ("mid-checkpoint": data files durable, manifest not yet written). The
	// crash tests use it to kill the process there.
	OnStage func(stage string)
}

// NewStore returns a store over a state directory.
func NewStore(fsys disk.FS) *Store { return &Store{fsys: fsys} }

// Lock takes the single-writer run lock, failing at once with storage.ErrBusy if
// another invocation holds it.
func (s *Store) Lock() (disk.Unlocker, error) {
	u, err := s.fsys.Lock(LockName)
	if errors.Is(err, disk.ErrLocked) {
		return nil, storage.ErrBusy
	}
	if err != nil {
		return nil, fmt.Errorf("take run lock: %w", err)
	}
	return u, nil
}

// ReadManifest reads and strictly decodes the manifest. It returns storage.ErrNoRun
// when there is none.
func (s *Store) ReadManifest() (storage.Manifest, error) {
	var m storage.Manifest
	b, err := s.fsys.ReadFile(ManifestName)
	if errors.Is(err, fs.ErrNotExist) {
		return m, storage.ErrNoRun
	}
	if err != nil {
		return m, fmt.Errorf("read %s: %w", ManifestName, err)
	}
	if err := codec.UnmarshalExact(b, &m); err != nil {
		return m, &state.IntegrityError{File: ManifestName, Msg: err.Error()}
	}
	if m.Schema != storage.ManifestSchema {
		return m, &state.IntegrityError{File: ManifestName, Msg: fmt.Sprintf("field schema: want %q, found %q", storage.ManifestSchema, m.Schema)}
	}
	if m.Checksum != m.Sum() {
		return m, &state.IntegrityError{File: ManifestName, Msg: fmt.Sprintf("checksum %s does not match the content (%s)", m.Checksum, m.Sum())}
	}
	if m.SchemaVersion != storage.SchemaVersion {
		return m, &state.IntegrityError{File: ManifestName, Msg: fmt.Sprintf(
			"field schema_version: this acr reads version %d, the directory has version %d", storage.SchemaVersion, m.SchemaVersion)}
	}
	return m, nil
}

// Load reads the manifest and every file it names, checking each file's
// size and SHA-256 against the manifest.
func (s *Store) Load() (storage.Snapshot, error) {
	m, err := s.ReadManifest()
	if err != nil {
		return storage.Snapshot{}, err
	}
	snap := storage.Snapshot{Manifest: m, Files: make(map[string][]byte, len(m.Files))}
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		fe := m.Files[name]
		if !validCheckpointPath(fe.Path) {
			return storage.Snapshot{}, &state.IntegrityError{File: ManifestName, Msg: fmt.Sprintf("files.%s.path %q is not a checkpoint file", name, fe.Path)}
		}
		b, err := s.fsys.ReadFile(fe.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return storage.Snapshot{}, &state.IntegrityError{File: fe.Path, Msg: "file named by the manifest is missing"}
		}
		if err != nil {
			return storage.Snapshot{}, fmt.Errorf("read %s: %w", fe.Path, err)
		}
		if int64(len(b)) != fe.Size || codec.FingerprintOf(b) != fe.SHA256 {
			return storage.Snapshot{}, &state.IntegrityError{File: fe.Path, Msg: fmt.Sprintf(
				"content does not match the manifest (want %d bytes %s, found %d bytes %s)", fe.Size, fe.SHA256, len(b), codec.FingerprintOf(b))}
		}
		snap.Files[name] = b
	}
	return snap, nil
}

func validCheckpointPath(p string) bool {
	rest, ok := strings.CutPrefix(p, CheckpointDir+"/")
	return ok && rest != "" && !strings.ContainsAny(rest, "/\\") && !strings.HasPrefix(rest, ".")
}

// checkpointPath is the content-addressed file name of a checkpoint file.
func checkpointPath(name string, data []byte) string {
	return CheckpointDir + "/" + name + "." + codec.Digest(data)[:16] + ".json"
}

// storage.Commit makes a new checkpoint durable and returns its manifest. The caller
// must hold the run lock. An error leaves the previous checkpoint intact.
func (s *Store) Commit(c storage.Commit) (storage.Manifest, error) {
	prev, err := s.ReadManifest()
	if err != nil && !errors.Is(err, storage.ErrNoRun) {
		return storage.Manifest{}, err
	}
	if prev.Generation != c.Expect {
		// The run lock keeps a second writer out of a directory; this is
		// the check that would still refuse a stale one (and the one a
		// replicated backend relies on).
		return storage.Manifest{}, fmt.Errorf("commit checkpoint: %w: expected generation %d, found %d", storage.ErrConflict, c.Expect, prev.Generation)
	}
	if err := s.fsys.MkdirAll(CheckpointDir); err != nil {
		return storage.Manifest{}, fmt.Errorf("commit checkpoint: %w", err)
	}
	m := storage.Manifest{
		Schema: storage.ManifestSchema, SchemaVersion: storage.SchemaVersion, WrittenAtRevision: c.Revision,
		Generation: prev.Generation + 1, RunID: c.RunID, CycleSeq: c.CycleSeq,
		Files: make(map[string]storage.FileEntry, len(c.Files)), LedgerFrontier: c.Frontier,
	}
	wrote := false
	for _, name := range slices.Sorted(maps.Keys(c.Files)) {
		data := c.Files[name]
		p := checkpointPath(name, data)
		fe := storage.FileEntry{Path: p, SHA256: codec.FingerprintOf(data), Size: int64(len(data))}
		m.Files[name] = fe
		if old, ok := prev.Files[name]; ok && old == fe {
			continue // unchanged and already durable
		}
		if err := s.fsys.WriteFile(p, data); err != nil {
			return storage.Manifest{}, fmt.Errorf("commit checkpoint: write %s: %w", p, err)
		}
		wrote = true
	}
	if wrote {
		if err := s.fsys.SyncDir(CheckpointDir); err != nil {
			return storage.Manifest{}, fmt.Errorf("commit checkpoint: %w", err)
		}
	}
	if s.OnStage != nil {
		s.OnStage("mid-checkpoint")
	}
	m.Checksum = m.Sum()
	mb, err := codec.Marshal(m)
	if err != nil {
		return storage.Manifest{}, err
	}
	if err := disk.ReplaceFile(s.fsys, ManifestName, mb); err != nil {
		return storage.Manifest{}, fmt.Errorf("commit checkpoint: write %s: %w", ManifestName, err)
	}
	if err := s.Sweep(m); err != nil {
		return storage.Manifest{}, err
	}
	return m, nil
}

// Sweep removes what no manifest references: stale temp files left by a
// crash mid-write, and checkpoint files of older generations. The caller
// must hold the run lock.
func (s *Store) Sweep(m storage.Manifest) error {
	keep := map[string]bool{}
	for _, fe := range m.Files {
		keep[fe.Path] = true
	}
	for _, dir := range []string{".", CheckpointDir} {
		entries, err := s.fsys.ReadDir(dir)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("sweep %s: %w", dir, err)
		}
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			p := e.Name()
			if dir != "." {
				p = dir + "/" + p
			}
			stale := strings.HasPrefix(e.Name(), ".") // renameio temp files
			if dir == CheckpointDir && !keep[p] {
				stale = true
			}
			if !stale {
				continue
			}
			// No fsync of the removals: if they are lost, the files are
			// merely stale again and the next sweep removes them.
			if err := s.fsys.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("sweep %s: %w", p, err)
			}
		}
	}
	return nil
}
