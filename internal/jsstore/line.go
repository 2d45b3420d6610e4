package jsstore

import (
	"bytes"
	"crypto/sha256"
	"fmt"

	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// The history's line format (internal/chain) is the body of every ledger
// message, byte for byte: encoded and decoded by the same code as a state
// directory's file, so that hashes, chains and `acr ledger verify` mean the
// same on both backends.

// encodeEvents frames events as the lines that follow front, as the file
// ledger's Append does, and returns the lines and their records (Offset
// left 0: the caller knows the stream sequences only once stored).
func encodeEvents(front state.Frontier, events []event.Event) ([][]byte, []event.Record, error) {
	lines := make([][]byte, 0, len(events))
	recs := make([]event.Record, 0, len(events))
	seq, prev := front.Seq, front.Hash
	h := sha256.New()
	for _, ev := range events {
		eb, ref, err := ev.Encode()
		if err != nil {
			return nil, nil, err
		}
		line, own := chain.AppendLine(make([]byte, 0, len(eb)+chain.MaxFraming), h, seq+1, prev, eb)
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
			return nil, fmt.Errorf("%w: record %d after seq %d: %v", storage.ErrCorrupt, i+1, from.Seq, err)
		}
		buf = append(buf, b...)
	}
	recs, err := chain.ReadRange(bytes.NewReader(buf), state.Frontier{Seq: from.Seq, Hash: from.Hash}, int64(len(buf)))
	if err != nil {
		return nil, fmt.Errorf("records after seq %d: %w", from.Seq, err)
	}
	return recs, nil
}

// decodeLine decodes one ledger message body, checked as decodeLines
// checks each, without a chain to check it against.
func decodeLine(b []byte) (event.Record, error) {
	if err := oneLine(b); err != nil {
		return event.Record{}, fmt.Errorf("%w: %v", storage.ErrCorrupt, err)
	}
	return chain.DecodeRecord(b, 0)
}

// oneLine checks that b is exactly one newline-terminated line.
func oneLine(b []byte) error {
	if len(b) == 0 || b[len(b)-1] != '\n' || bytes.IndexByte(b, '\n') != len(b)-1 {
		return fmt.Errorf("message body is not exactly one ledger line")
	}
	return nil
}
