package runstore

import (
	"errors"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// History is a run's ledger as the commands that read it see it: audit
// (Cycle, CycleCompleted, Prologue), report (ScanLines), log (Cycle),
// replay --verify (ReadAll) and ledger verify (Verify, against the
// checkpoint's frontier, Expect). Each reader package names the part it
// needs as its own interface; this is their union, served by the file
// ledger (ledger.Reader) and by the JetStream backend. None of them takes
// a lock or writes.
type History interface {
	Cycle(cycle int64) ([]event.Record, error)
	CycleCompleted(cycle int64) (event.Record, error)
	Prologue() ([]event.Record, error)
	ScanLines(fn func(ledger.Line) error) error
	Scan(fn func(event.Record) error) error
	ReadAll() ([]event.Record, error)
	Verify(expect *state.Frontier) (ledger.Report, error)
	// Expect is the ledger frontier of the committed checkpoint, in the
	// terms Verify takes it, or nil when the run has no checkpoint (what
	// is left of a damaged run, an archived ledger).
	Expect() (*state.Frontier, error)
}

// dirHistory is the history of the run in a state directory.
type dirHistory struct {
	*ledger.Reader
	store *dirstore.Store
}

// Expect implements History.
func (h dirHistory) Expect() (*state.Frontier, error) {
	m, err := h.store.ReadManifest()
	if errors.Is(err, storage.ErrNoRun) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &m.LedgerFrontier, nil
}

// OpenHistory opens the ledger of the run in the state directory dir for
// reading, whether or not the rest of the run is intact (see
// RequireLedger). It never writes.
func OpenHistory(dir string) (History, error) {
	fsys, err := RequireLedger(dir)
	if err != nil {
		return nil, err
	}
	return dirHistory{Reader: ledger.NewReader(fsys), store: dirstore.NewStore(fsys)}, nil
}
