package jsstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// The ledger's line format (internal/ledger/doc.go) is the body of every
// ledger message, byte for byte. Until internal/ledger exports its
// encoding and decoding, this file encodes with a copy of its
// encodeLine (TestLinesMatchLedger holds the copy to the original on the
// same events) and decodes through the ledger package itself, over an
// in-memory file, so that the strict checks a line passes are the file
// ledger's own. Wanted from internal/ledger:
//
//	func EncodeLine(seq int64, prev string, event []byte) (line []byte, hash string)
//	func DecodeLine(line []byte) (event.Record, error) // framing, own hash, strict event; Offset 0

// encodeLine frames event bytes into a complete line (with newline) that
// follows the line with hash prev, and returns the line and its hash: a
// copy of internal/ledger's encodeLine.
func encodeLine(seq int64, prev string, event []byte) ([]byte, string) {
	const hashPrefix = "sha256:"
	seqPart := `,"seq":` + strconv.FormatInt(seq, 10) + "}"
	h := sha256.New()
	h.Write([]byte(`{"chain":"`))
	h.Write([]byte(prev))
	h.Write([]byte(`","event":`))
	h.Write(event)
	h.Write([]byte(seqPart))
	own := hashPrefix + hex.EncodeToString(h.Sum(nil))

	buf := make([]byte, 0, len(`{"chain":"`)+len(prev)+len(`","event":`)+len(event)+len(`,"hash":"`)+len(own)+1+len(seqPart)+1)
	buf = append(buf, `{"chain":"`...)
	buf = append(buf, prev...)
	buf = append(buf, `","event":`...)
	buf = append(buf, event...)
	buf = append(buf, `,"hash":"`...)
	buf = append(buf, own...)
	buf = append(buf, '"')
	buf = append(buf, seqPart...)
	buf = append(buf, '\n')
	return buf, own
}

// encodeEvents frames events as the lines that follow front, as the file
// ledger's Append does, and returns the lines and their records (Offset
// left 0: the caller knows the stream sequences only once stored).
func encodeEvents(front state.Frontier, events []event.Event) ([][]byte, []event.Record, error) {
	lines := make([][]byte, 0, len(events))
	recs := make([]event.Record, 0, len(events))
	seq, prev := front.Seq, front.Hash
	for _, ev := range events {
		eb, ref, err := ev.Encode()
		if err != nil {
			return nil, nil, err
		}
		line, own := encodeLine(seq+1, prev, eb)
		lines = append(lines, line)
		recs = append(recs, event.Record{Seq: seq + 1, Chain: prev, Hash: own, Length: int64(len(line)), Ref: ref, Event: ev})
		seq, prev = seq+1, own
	}
	return lines, recs, nil
}

// decodeLines decodes ledger message bodies that follow from (its Seq
// and Hash), checking each line as the file ledger checks it (framing,
// own hash, strict event) and the chain across them. Offsets in the
// records are positions in the concatenated bodies; the caller replaces
// them with stream sequences.
func decodeLines(from state.Frontier, bodies [][]byte) ([]event.Record, error) {
	if len(bodies) == 0 {
		return nil, nil
	}
	var buf []byte
	for i, b := range bodies {
		if err := oneLine(b); err != nil {
			return nil, fmt.Errorf("%w: record %d after seq %d: %v", ledger.ErrCorrupt, i+1, from.Seq, err)
		}
		buf = append(buf, b...)
	}
	l, err := memLedger(buf)
	if err != nil {
		return nil, err
	}
	defer l.Close()
	recs, err := l.ReadRange(state.Frontier{Seq: from.Seq, Hash: from.Hash}, int64(len(buf)))
	if err != nil {
		return nil, fmt.Errorf("records after seq %d: %w", from.Seq, err)
	}
	return recs, nil
}

// decodeLine decodes one ledger message body, checked as decodeLines
// checks each, without a chain to check it against.
func decodeLine(b []byte) (event.Record, error) {
	if err := oneLine(b); err != nil {
		return event.Record{}, fmt.Errorf("%w: %v", ledger.ErrCorrupt, err)
	}
	mem, err := memFile(b)
	if err != nil {
		return event.Record{}, err
	}
	return ledger.ReadAt(mem, 0)
}

// oneLine checks that b is exactly one newline-terminated line.
func oneLine(b []byte) error {
	if len(b) == 0 || b[len(b)-1] != '\n' || bytes.IndexByte(b, '\n') != len(b)-1 {
		return fmt.Errorf("message body is not exactly one ledger line")
	}
	return nil
}

func memFile(b []byte) (*disk.Mem, error) {
	mem := disk.NewMem()
	if err := mem.MkdirAll(disk.Dir(ledger.FileName)); err != nil {
		return nil, err
	}
	if err := mem.WriteFile(ledger.FileName, b); err != nil {
		return nil, err
	}
	return mem, nil
}

func memLedger(b []byte) (*ledger.Ledger, error) {
	mem, err := memFile(b)
	if err != nil {
		return nil, err
	}
	return ledger.Open(mem)
}
