package state

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/disk"
)

// Layout of the state directory owned by the store.
const (
	ManifestName  = "manifest.json"
	CheckpointDir = "checkpoint"
	LockName      = "lock"

	// ManifestSchema names the manifest format.
	ManifestSchema = "acr.manifest/v0.1"
	// SchemaVersion is the on-disk format version this build reads and
	// writes. A directory written with a newer version is refused.
	SchemaVersion = 1
)

// Errors callers branch on.
var (
	// ErrNoRun: the state directory holds no run (no manifest).
	ErrNoRun = errors.New("no run in the state directory")
	// ErrBusy: another invocation holds the run lock.
	ErrBusy = errors.New("another acr invocation holds the run")
)

// IntegrityError reports a checkpoint that cannot be trusted: a file whose
// bytes do not hash to what the manifest says, a manifest that does not
// parse, a missing file. Nothing is overwritten when it is returned.
type IntegrityError struct {
	File string
	Msg  string
}

func (e *IntegrityError) Error() string { return fmt.Sprintf("integrity: %s: %s", e.File, e.Msg) }

// Manifest is the commit point of a checkpoint: it is written last, and a
// checkpoint exists exactly when a manifest names its files.
type Manifest struct {
	Schema            string               `json:"schema"`
	SchemaVersion     int                  `json:"schema_version"`
	WrittenAtRevision string               `json:"written_at_revision"`
	Generation        int64                `json:"generation"`
	RunID             string               `json:"run_id"`
	CycleSeq          int64                `json:"cycle_seq"`
	Files             map[string]FileEntry `json:"files"`
	LedgerFrontier    Frontier             `json:"ledger_frontier"`
	// Checksum is the fingerprint of the manifest's canonical bytes with
	// this field empty. Without it, a flipped digit (a generation, a cycle
	// number) would still be a valid manifest.
	Checksum Fingerprint `json:"checksum"`
}

// checksum computes the manifest's self-checksum.
func (m Manifest) checksum() Fingerprint {
	m.Checksum = ""
	return FingerprintOf(MustMarshal(m))
}

// FileEntry names one checkpoint file and pins its content.
type FileEntry struct {
	Path   string      `json:"path"`
	SHA256 Fingerprint `json:"sha256"`
	Size   int64       `json:"size"`
}

// Snapshot is a loaded, verified checkpoint.
type Snapshot struct {
	Manifest Manifest
	// Files maps each logical name to its verified canonical bytes.
	Files map[string][]byte
}

// Commit is what a caller asks the store to make durable.
type Commit struct {
	RunID    string
	CycleSeq int64
	Revision string
	Frontier Frontier
	// Files maps logical names (such as "run_state") to canonical bytes.
	Files map[string][]byte
}

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

// Lock takes the single-writer run lock, failing at once with ErrBusy if
// another invocation holds it.
func (s *Store) Lock() (disk.Unlocker, error) {
	u, err := s.fsys.Lock(LockName)
	if errors.Is(err, disk.ErrLocked) {
		return nil, ErrBusy
	}
	if err != nil {
		return nil, fmt.Errorf("take run lock: %w", err)
	}
	return u, nil
}

// ReadManifest reads and strictly decodes the manifest. It returns ErrNoRun
// when there is none.
func (s *Store) ReadManifest() (Manifest, error) {
	var m Manifest
	b, err := s.fsys.ReadFile(ManifestName)
	if errors.Is(err, fs.ErrNotExist) {
		return m, ErrNoRun
	}
	if err != nil {
		return m, fmt.Errorf("read %s: %w", ManifestName, err)
	}
	if err := UnmarshalExact(b, &m); err != nil {
		return m, &IntegrityError{File: ManifestName, Msg: err.Error()}
	}
	if m.Schema != ManifestSchema {
		return m, &IntegrityError{File: ManifestName, Msg: fmt.Sprintf("field schema: want %q, found %q", ManifestSchema, m.Schema)}
	}
	if m.Checksum != m.checksum() {
		return m, &IntegrityError{File: ManifestName, Msg: fmt.Sprintf("checksum %s does not match the content (%s)", m.Checksum, m.checksum())}
	}
	if m.SchemaVersion != SchemaVersion {
		return m, &IntegrityError{File: ManifestName, Msg: fmt.Sprintf(
			"field schema_version: this acr reads version %d, the directory has version %d", SchemaVersion, m.SchemaVersion)}
	}
	return m, nil
}

// Load reads the manifest and every file it names, checking each file's
// size and SHA-256 against the manifest.
func (s *Store) Load() (Snapshot, error) {
	m, err := s.ReadManifest()
	if err != nil {
		return Snapshot{}, err
	}
	snap := Snapshot{Manifest: m, Files: make(map[string][]byte, len(m.Files))}
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		fe := m.Files[name]
		if !validCheckpointPath(fe.Path) {
			return Snapshot{}, &IntegrityError{File: ManifestName, Msg: fmt.Sprintf("files.%s.path %q is not a checkpoint file", name, fe.Path)}
		}
		b, err := s.fsys.ReadFile(fe.Path)
		if errors.Is(err, fs.ErrNotExist) {
			return Snapshot{}, &IntegrityError{File: fe.Path, Msg: "file named by the manifest is missing"}
		}
		if err != nil {
			return Snapshot{}, fmt.Errorf("read %s: %w", fe.Path, err)
		}
		if int64(len(b)) != fe.Size || FingerprintOf(b) != fe.SHA256 {
			return Snapshot{}, &IntegrityError{File: fe.Path, Msg: fmt.Sprintf(
				"content does not match the manifest (want %d bytes %s, found %d bytes %s)", fe.Size, fe.SHA256, len(b), FingerprintOf(b))}
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
	return CheckpointDir + "/" + name + "." + Digest(data)[:16] + ".json"
}

// Commit makes a new checkpoint durable and returns its manifest. The caller
// must hold the run lock. An error leaves the previous checkpoint intact.
func (s *Store) Commit(c Commit) (Manifest, error) {
	prev, err := s.ReadManifest()
	if err != nil && !errors.Is(err, ErrNoRun) {
		return Manifest{}, err
	}
	if err := s.fsys.MkdirAll(CheckpointDir); err != nil {
		return Manifest{}, fmt.Errorf("commit checkpoint: %w", err)
	}
	m := Manifest{
		Schema: ManifestSchema, SchemaVersion: SchemaVersion, WrittenAtRevision: c.Revision,
		Generation: prev.Generation + 1, RunID: c.RunID, CycleSeq: c.CycleSeq,
		Files: make(map[string]FileEntry, len(c.Files)), LedgerFrontier: c.Frontier,
	}
	wrote := false
	for _, name := range slices.Sorted(maps.Keys(c.Files)) {
		data := c.Files[name]
		p := checkpointPath(name, data)
		fe := FileEntry{Path: p, SHA256: FingerprintOf(data), Size: int64(len(data))}
		m.Files[name] = fe
		if old, ok := prev.Files[name]; ok && old == fe {
			continue // unchanged and already durable
		}
		if err := s.fsys.WriteFile(p, data); err != nil {
			return Manifest{}, fmt.Errorf("commit checkpoint: write %s: %w", p, err)
		}
		wrote = true
	}
	if wrote {
		if err := s.fsys.SyncDir(CheckpointDir); err != nil {
			return Manifest{}, fmt.Errorf("commit checkpoint: %w", err)
		}
	}
	if s.OnStage != nil {
		s.OnStage("mid-checkpoint")
	}
	m.Checksum = m.checksum()
	mb, err := Marshal(m)
	if err != nil {
		return Manifest{}, err
	}
	if err := disk.ReplaceFile(s.fsys, ManifestName, mb); err != nil {
		return Manifest{}, fmt.Errorf("commit checkpoint: write %s: %w", ManifestName, err)
	}
	if err := s.Sweep(m); err != nil {
		return Manifest{}, err
	}
	return m, nil
}

// Sweep removes what no manifest references: stale temp files left by a
// crash mid-write, and checkpoint files of older generations. The caller
// must hold the run lock.
func (s *Store) Sweep(m Manifest) error {
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
