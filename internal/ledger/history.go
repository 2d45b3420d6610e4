package ledger

import (
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// The methods below make a Reader the file backend of what readers of a
// run's history (audit, report, acr log, acr replay --verify, acr ledger
// verify) ask of a ledger. Each reader names the few methods it needs as
// an interface of its own, so that a backend that keeps the ledger
// elsewhere (internal/jsstore) serves them as well, and the readers never
// open a file.

// Prologue returns the records before the first cycle (see Prologue).
func (r *Reader) Prologue() ([]event.Record, error) { return Prologue(r.fsys) }

// ScanLines calls fn for every committed line in order (see ScanLines).
func (r *Reader) ScanLines(fn func(Line) error) error { return ScanLines(r.fsys, fn) }

// Scan calls fn for every committed record in order (see Scan).
func (r *Reader) Scan(fn func(event.Record) error) error { return Scan(r.fsys, fn) }

// ReadAll returns every committed record (see ReadAll).
func (r *Reader) ReadAll() ([]event.Record, error) { return ReadAll(r.fsys) }

// Verify walks the whole chain (see Verify).
func (r *Reader) Verify(expect *state.Frontier) (Report, error) { return Verify(r.fsys, expect) }
