package jsstore

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/chain"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// The history's line format (internal/chain) is what every ledger message
// carries, byte for byte: encoded and decoded by the same code as a state
// directory's file, so that hashes, chains and `acr ledger verify` mean the
// same on both backends.
//
// Ledger messages have two formats:
//
//   - packed (written since ledger format 2): the message has the header
//     Acr-Lines: n, and its body is n whole lines, one after another, as
//     they follow each other in a state directory's ledger file. One
//     append is as few messages as fit its lines (one, for any cycle's
//     records), each holding whole lines only. With Acr-Encoding: zstd
//     (pack.go) the body is those lines compressed.
//   - single (format 1, written by earlier releases): no Acr-Lines
//     header, and the body is exactly one line.
//
// Both are read everywhere, so a store written by an earlier release
// stays readable and appendable; its ledger simply changes format at the
// first append of this release.
const hdrLines = "Acr-Lines"

// maxLines bounds the Acr-Lines a reader accepts: a line is at least
// chain's minimum framing long, so no message under the server's payload
// limit holds more.
const maxLines = 1 << 20

// packLines groups an append's lines into message bodies of at most room
// bytes, whole lines only and in order, and says how many lines each
// holds. A line longer than room gets a message of its own (which the
// server then refuses: ErrTooLarge).
func packLines(lines [][]byte, room int) (bodies [][]byte, counts []int) {
	var cur []byte
	for _, l := range lines {
		if len(counts) > len(bodies) && len(cur)+len(l) > room {
			bodies, cur = append(bodies, cur), nil
		}
		if cur == nil {
			cur = make([]byte, 0, min(room, packSize(lines)))
			counts = append(counts, 0)
		}
		cur = append(cur, l...)
		counts[len(counts)-1]++
	}
	if len(counts) > len(bodies) {
		bodies = append(bodies, cur)
	}
	return bodies, counts
}

// linesHeaders gives each packed message its Acr-Lines header.
func linesHeaders(counts []int) []nats.Header {
	hdrs := make([]nats.Header, len(counts))
	for i, n := range counts {
		hdrs[i] = nats.Header{hdrLines: {strconv.Itoa(n)}}
	}
	return hdrs
}

// packSize is the total size of lines.
func packSize(lines [][]byte) int {
	n := 0
	for _, l := range lines {
		n += len(l)
	}
	return n
}

// splitMessage returns the ledger lines of a message body, aliasing it,
// given the message's Acr-Lines header ("" when it has none: format 1,
// exactly one line). Every line ends in its own newline and holds no
// other; the count must be the header's. It checks the framing of the
// message only; each line's own framing and hash are chain's to check.
func splitMessage(body []byte, lines string) ([][]byte, error) {
	want := 1
	if lines != "" {
		n, err := parseLines(lines)
		if err != nil {
			return nil, err
		}
		want = n
	}
	if len(body) == 0 || body[len(body)-1] != '\n' {
		return nil, fmt.Errorf("message body does not end a ledger line")
	}
	// Room for the lines the body can hold (each is at least a byte and
	// its newline), not for what the header claims.
	out := make([][]byte, 0, min(want, len(body)/2))
	for rest := body; len(rest) > 0; {
		i := bytes.IndexByte(rest, '\n')
		if i == 0 {
			return nil, fmt.Errorf("an empty line in a ledger message")
		}
		if len(out) == want {
			return nil, fmt.Errorf("message body holds more than the %d ledger line(s) its %s says", want, hdrLines)
		}
		out = append(out, rest[:i+1:i+1])
		rest = rest[i+1:]
	}
	if len(out) != want {
		return nil, fmt.Errorf("message body holds %d ledger line(s), its %s says %d", len(out), hdrLines, want)
	}
	return out, nil
}

// parseLines reads an Acr-Lines value: a decimal count from 1 to
// maxLines, without sign, spaces or leading zeros (one spelling per
// count).
func parseLines(s string) (int, error) {
	if s == "" || len(s) > 7 || s[0] == '0' {
		return 0, fmt.Errorf("bad %s %q", hdrLines, s)
	}
	n := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, fmt.Errorf("bad %s %q", hdrLines, s)
		}
		n = n*10 + int(s[i]-'0')
	}
	if n > maxLines {
		return 0, fmt.Errorf("bad %s %q: more than %d", hdrLines, s, maxLines)
	}
	return n, nil
}

// messageLines splits a stored ledger message (see splitMessage), its
// body decompressed first when its Acr-Encoding says so; a message that
// does not decompress or split is storage.ErrCorrupt.
func messageLines(p *packer, m jetstream.Record) ([][]byte, error) {
	body, err := p.unpack(m.Data, m.Header.Get(hdrEncoding))
	if err != nil {
		return nil, fmt.Errorf("%w: ledger message at stream sequence %d: %v", storage.ErrCorrupt, m.Seq, err)
	}
	lines, err := splitMessage(body, m.Header.Get(hdrLines))
	if err != nil {
		return nil, fmt.Errorf("%w: ledger message at stream sequence %d: %v", storage.ErrCorrupt, m.Seq, err)
	}
	return lines, nil
}

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

// decodeMessages decodes the ledger messages that follow from (its Seq,
// Hash and Offset), checking each line as the file ledger checks it
// (framing, own hash, strict event) and the chain across them. The
// message at from.Offset, if msgs starts with it, is the one that holds
// from's record: its lines up to and including from's are skipped (and
// from's own must be there, with from's hash). Each record's Offset is
// the stream sequence of the message that holds it.
func decodeMessages(p *packer, from state.Frontier, msgs []jetstream.Record) ([]event.Record, error) {
	var (
		buf  []byte
		seqs []int64
	)
	for i, m := range msgs {
		lines, err := messageLines(p, m)
		if err != nil {
			return nil, err
		}
		if i == 0 && from.Seq > 0 && int64(m.Seq) == from.Offset {
			if lines, err = linesAfter(lines, from); err != nil {
				return nil, fmt.Errorf("ledger message at stream sequence %d: %w", m.Seq, err)
			}
		}
		for _, l := range lines {
			buf = append(buf, l...)
			seqs = append(seqs, int64(m.Seq))
		}
	}
	if len(buf) == 0 {
		return nil, nil
	}
	recs, err := chain.ReadRange(bytes.NewReader(buf), state.Frontier{Seq: from.Seq, Hash: from.Hash}, int64(len(buf)))
	if err != nil {
		return nil, fmt.Errorf("records after seq %d: %w", from.Seq, err)
	}
	for i := range recs {
		recs[i].Offset = seqs[i]
	}
	return recs, nil
}

// linesAfter returns the lines that follow f's record among lines, which
// must hold it (f's seq with f's hash).
func linesAfter(lines [][]byte, f state.Frontier) ([][]byte, error) {
	for i, l := range lines {
		p, err := chain.ParseLine(l)
		if err != nil {
			return nil, fmt.Errorf("%w: line %d: %v", storage.ErrCorrupt, i+1, err)
		}
		if p.Seq == f.Seq {
			if p.Hash != f.Hash {
				return nil, fmt.Errorf("%w: seq %d has hash %s, not %s", storage.ErrCorrupt, f.Seq, p.Hash, f.Hash)
			}
			return lines[i+1:], nil
		}
	}
	return nil, fmt.Errorf("%w: no record seq %d in it", storage.ErrCorrupt, f.Seq)
}

// lastRecord decodes the last record of a stored ledger message, checked
// as decodeMessages checks each, without a chain to check it against.
func lastRecord(p *packer, m jetstream.Record) (event.Record, error) {
	lines, err := messageLines(p, m)
	if err != nil {
		return event.Record{}, err
	}
	return chain.DecodeRecord(lines[len(lines)-1], 0)
}

// recordIn decodes the record seq of a stored ledger message; ok is false
// when the message does not hold it.
func recordIn(p *packer, m jetstream.Record, seq int64) (rec event.Record, ok bool, err error) {
	lines, err := messageLines(p, m)
	if err != nil {
		return event.Record{}, false, err
	}
	for _, l := range lines {
		p, err := chain.ParseLine(l)
		if err != nil {
			return event.Record{}, false, fmt.Errorf("%w: ledger message at stream sequence %d: %v", storage.ErrCorrupt, m.Seq, err)
		}
		if p.Seq == seq {
			rec, err := chain.DecodeRecord(l, 0)
			return rec, err == nil, err
		}
	}
	return event.Record{}, false, nil
}
