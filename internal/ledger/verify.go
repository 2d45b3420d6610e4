package ledger

import (
	"fmt"
	"io"

	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// Report is the result of walking the whole ledger (chain.Report).
type Report = chain.Report

// Verify walks the ledger's whole history, its sealed segments and
// events.jsonl (chain.Verify). When expect is set (the checkpoint's
// frontier), the line it names must be there with the same seq and hash.
func Verify(fsys disk.FS, expect *state.Frontier) (Report, error) {
	f, err := openLog(fsys, false)
	if err != nil {
		return Report{}, fmt.Errorf("open ledger: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return Report{}, fmt.Errorf("open ledger: %w", err)
	}
	sealed, err := f.sealedFrames()
	if err != nil {
		return Report{}, err
	}
	frames := make([]chain.Frame, len(sealed))
	for i, s := range sealed {
		frames[i] = chain.Frame{Start: s.start, Raw: s.raw, Load: s.load}
	}
	return chain.Verify(f, size, expect, frames)
}

// Scan calls fn for every committed record in order, checking the chain as
// it goes (chain.Scan). A torn last line is not reported (it was never
// committed); damage stops the scan with a *DamageError. It reads the
// whole file: use it for audits and analysis, never on the hot path.
func Scan(fsys disk.FS, fn func(event.Record) error) error {
	f, err := openLog(fsys, false)
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return err
	}
	return chain.Scan(io.NewSectionReader(f, 0, size), fn)
}

// ReadAll returns every committed record (see Scan).
func ReadAll(fsys disk.FS) ([]event.Record, error) {
	var out []event.Record
	err := Scan(fsys, func(r event.Record) error { out = append(out, r); return nil })
	return out, err
}
