// Package storage is the seam between a run and where it is kept: the
// checkpoint's commit record (the manifest), what a caller asks to commit,
// what a load gives back, and the errors every backend shares. It holds
// types only, no I/O, so that the pure core can name them without linking
// a file system or a lock.
package storage

import (
	"errors"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/inbox"
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
	// ErrCorrupt: a run's history is damaged somewhere other than a torn
	// tail. Every store's history shares the one line format (package
	// chain), and so this error.
	ErrCorrupt = errors.New("ledger is corrupt")
	// ErrBehind: a history ends before a checkpoint's frontier: history
	// the checkpoint relies on is missing.
	ErrBehind = errors.New("ledger is behind the checkpoint")
	// ErrPoisoned: an earlier append's outcome is unknown (it failed part
	// way, or a server did not answer); the handle must not be used again:
	// reopen the run to read what the history really holds.
	ErrPoisoned = errors.New("ledger handle unusable after a failed append")
	// ErrExists: a history was to be created where one is already.
	ErrExists = errors.New("ledger already exists")
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
	return codec.MustFingerprintOf(m)
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
	// Expect is the generation of the checkpoint the writer loaded (0 for
	// a run's first): the commit is refused if another one came since.
	Expect   int64
	RunID    string
	CycleSeq int64
	Revision string
	Frontier state.Frontier
	// Files maps logical names (such as "run_state") to canonical bytes.
	Files map[string][]byte
}

// ErrConflict means a write was refused because what it was based on is no
// longer current: another writer committed a newer checkpoint or appended
// to the ledger first. Nothing of the refused write is stored.
var ErrConflict = errors.New("a newer write won: nothing stored")

// Checkpoints is where a run's checkpoint is kept.
type Checkpoints interface {
	// Load returns the committed checkpoint, verified; ErrNoRun when
	// there is none.
	Load() (Snapshot, error)
	// Commit makes c the checkpoint, atomically, provided the committed
	// one is still generation c.Expect (ErrConflict otherwise: a stale
	// writer stores nothing). It returns the new manifest.
	Commit(c Commit) (Manifest, error)
}

// Ledger is a run's append-only, hash-chained history. Positions are
// frontiers: the seq and chain hash of a record (a backend may keep its own
// position in Frontier.Offset; callers only hand frontiers back).
type Ledger interface {
	// Frontier is the position of the last record.
	Frontier() state.Frontier
	// CheckFrontier confirms that the ledger holds the record a checkpoint
	// recorded as its frontier (not behind it, the same record there).
	CheckFrontier(state.Frontier) error
	// Repair makes the ledger end at its last complete record, if a crash
	// left a partial one, and says what it cut (nil when nothing). A
	// backend whose appends are atomic never has anything to cut.
	Repair() (*Repair, error)
	// Append makes events durable after the frontier, in order, before it
	// returns. The driver appends a cycle's last batch together with the
	// next cycle's first, so a backend is asked for one durable append per
	// acting cycle.
	Append(events []event.Event) ([]event.Record, error)
	// After returns the records after position from, in order.
	After(from state.Frontier) ([]event.Record, error)
}

// SplitLedger is what a Ledger whose durable append can be made in two
// steps offers besides: Write puts a batch after the frontier, Sync makes
// everything written durable. Between them the driver may run Sync on
// another goroutine while the world writes its own file, and asks nothing
// else of the ledger until that Sync has returned. A backend whose
// appends are one request to a server has no use for it.
type SplitLedger interface {
	Write(events []event.Event) ([]event.Record, error)
	Sync() error
}

// JointCommitter is what a backend offers whose ledger and checkpoints
// can be written in one atomic step: AppendAndCommit appends events after
// the ledger's frontier and commits c at the ledger's end after them (its
// Frontier is set there, whatever c holds), all stored or none, guarded as
// an Append and a Commit are. The driver uses it for the checkpoint that
// follows a held batch: one write instead of two, and no moment in which
// the ledger holds a cycle's last records and the checkpoint does not yet.
type JointCommitter interface {
	AppendAndCommit(events []event.Event, c Commit) (Manifest, error)
}

// Sealer is what a Ledger that keeps its history in local files may
// offer: Seal moves committed history into compressed segments once the
// uncompressed part holds minBytes. It changes where the bytes are kept,
// never what they are.
type Sealer interface {
	Seal(minBytes int64) error
}

// Repair is what Ledger.Repair cut: where, how many bytes, and their hash
// (the bytes themselves stay with the backend, for people).
type Repair struct {
	At     int64             `json:"offset"`
	Length int64             `json:"length"`
	SHA256 codec.Fingerprint `json:"sha256"`
}

// Inbox is where wake signals, answers and stop requests wait for a cycle.
type Inbox interface {
	// List returns the items waiting, oldest first, and the ones that
	// could not be decoded.
	List() ([]inbox.Item, []inbox.Rejected, error)
	// Consumed tells the inbox that a durable checkpoint records these
	// items as consumed: the inbox may drop them.
	Consumed(ids []string) error
	// Quarantine puts an item that could not be decoded aside, kept for
	// the operator.
	Quarantine(name string) error
}
