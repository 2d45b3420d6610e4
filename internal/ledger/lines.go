package ledger

import (
	"fmt"
	"io"

	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/disk"
)

// Line is a committed ledger line as ScanLines hands it out
// (chain.Line).
type Line = chain.Line

// ScanLines calls fn for every committed line of the ledger in order,
// without decoding their events (chain.ScanLines): for readers of a long
// history that look at only some events, such as a report. Memory stays
// constant in the length of the ledger.
func ScanLines(fsys disk.FS, fn func(Line) error) error {
	f, err := openLog(fsys, false)
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	defer f.Close()
	size, err := f.Size()
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	return chain.ScanLines(io.NewSectionReader(f, 0, size), fn)
}
