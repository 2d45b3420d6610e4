// Package storage is the seam between a run and where it is kept: the
// checkpoint's commit record (the manifest), what a caller asks to commit,
// what a load gives back, and the errors every backend shares. It holds
// types only, no I/O, so that the pure core can name them without linking
// a file system or a lock.
package storage

import (
	"errors"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
)

// Manifest format.
const (
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
	LedgerFrontier    state.Frontier       `json:"ledger_frontier"`
	// Checksum is the fingerprint of the manifest's canonical bytes with
	// this field empty. Without it, a flipped digit (a generation, a cycle
	// number) would still be a valid manifest.
	Checksum codec.Fingerprint `json:"checksum"`
}

// Sum computes the manifest's self-checksum: the fingerprint of its
// canonical bytes with Checksum empty.
func (m Manifest) Sum() codec.Fingerprint {
	m.Checksum = ""
	return codec.FingerprintOf(codec.MustMarshal(m))
}

// FileEntry names one checkpoint file and pins its content.
type FileEntry struct {
	Path   string            `json:"path"`
	SHA256 codec.Fingerprint `json:"sha256"`
	Size   int64             `json:"size"`
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
	Frontier state.Frontier
	// Files maps logical names (such as "run_state") to canonical bytes.
	Files map[string][]byte
}
