package state

import "fmt"

// Frontier identifies the end of the ledger that a checkpoint has seen: the
// seq and hash of its last line and the file length up to and including
// that line. The ledger may be ahead of a checkpoint's frontier (a cycle was
// interrupted after its events were appended), never behind it.
type Frontier struct {
	Seq    int64  `json:"seq"`
	Hash   string `json:"hash"`
	Offset int64  `json:"offset"`
}

// GenesisHash is the chain value before the first ledger line.
const GenesisHash = "sha256:0000000000000000000000000000000000000000000000000000000000000000"

// GenesisFrontier is the frontier of an empty ledger.
func GenesisFrontier() Frontier { return Frontier{Seq: 0, Hash: GenesisHash, Offset: 0} }

// IntegrityError reports a checkpoint that cannot be trusted: a file whose
// bytes do not hash to what the manifest says, a manifest that does not
// parse, a missing file. Nothing is overwritten when it is returned.
type IntegrityError struct {
	File string
	Msg  string
}

func (e *IntegrityError) Error() string { return fmt.Sprintf("integrity: %s: %s", e.File, e.Msg) }
