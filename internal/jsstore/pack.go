package jsstore

import (
	_ "embed" // the dictionary
	"fmt"
	"runtime"

	"github.com/klauspost/compress/zstd"
)

// hdrEncoding names how a ledger message's body or a checkpoint's
// document is compressed: "zstd-d1" (a zstd frame of the bytes made with
// acr's dictionary 1, what is written), "zstd" (a zstd frame without a
// dictionary, what the release before wrote); a message without it holds
// them as they are (what earlier releases wrote, and what is written when
// compressing would not make it smaller). The bytes once decompressed are
// the same either way, so hashes, chains, manifests and exports do not
// change.
const hdrEncoding = "Acr-Encoding"

// The compressions: encZstdDict is written, encZstd read.
const (
	encZstd     = "zstd"
	encZstdDict = "zstd-d1"
)

// dict1 is acr's zstd dictionary 1 (zstd.BuildDict, dictionary ID 1):
// built from the ledger lines, cycle by cycle, and the checkpoint
// documents of the reference scenarios (scenarios/, not the benchmark's
// queue runs; TestDictionary says how to build it again). Ledger lines
// and checkpoints are small JSON documents full of the same keys, schema
// names and reasons, which a frame alone cannot learn from the few
// kilobytes it holds: with the dictionary a cycle's ledger message is
// about 40% smaller (3.3 to 5.4 times smaller than its lines instead of
// 3.3 times), a checkpoint about 15%. A stored message needs the
// dictionary it names for as long as it is kept, so this file never
// changes: a better dictionary is dictionary 2, with an encoding of its
// own, and readers keep both.
//
//go:embed dict1.zdict
var dict1 []byte

// maxUnpacked bounds what one compressed body may decompress to, so a
// damaged or hostile frame cannot ask for unbounded memory. Nothing
// larger is written compressed (packer.pack), so the bound never refuses
// what this package wrote.
const maxUnpacked = 256 << 20

// packer compresses what a store writes and decompresses what it reads.
// Its encoder and decoder are safe for concurrent use (EncodeAll as
// many at once as the machine has processors, DecodeAll one at a time),
// so one serves a whole Store.
type packer struct {
	enc *zstd.Encoder
	dec *zstd.Decoder
	// limit is the most one body may decompress to (maxUnpacked).
	limit int
}

// newPacker builds a packer at zstd's fastest level: the bodies are
// ledger lines and checkpoint JSON, which the fastest level already
// shrinks about threefold, and a cycle pays the compression once per
// write.
func newPacker() (*packer, error) { return newPackerLimit(maxUnpacked) }

// newPackerLimit is newPacker with another decompression limit (tests
// lower it).
func newPackerLimit(limit int) (*packer, error) {
	procs := runtime.GOMAXPROCS(0)
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(procs),
		zstd.WithZeroFrames(true), zstd.WithEncoderCRC(true), zstd.WithEncoderDict(dict1))
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	// The decoder knows dictionary 1; a frame made without a dictionary
	// (encZstd) decodes as before.
	// One decode at a time: each may hold up to limit while it runs, so
	// a decoder per processor would multiply what a hostile store could
	// make a worker allocate.
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)),
		zstd.WithDecoderMaxWindow(uint64(limit)), zstd.WithDecoderDicts(dict1))
	if err != nil {
		return nil, fmt.Errorf("zstd decoder: %w", err)
	}
	return &packer{enc: enc, dec: dec, limit: limit}, nil
}

// pack returns b compressed and its Acr-Encoding, or b itself and ""
// when compressing does not make it smaller, or when b is larger than a
// reader decompresses (limit): a frame that every reader refuses would
// make a checkpoint or a ledger line written whole unreadable. Stored as
// it is, such a body is split into parts (a checkpoint) or refused by the
// server's payload limit (a ledger line, ErrTooLarge), as before
// compression.
func (p *packer) pack(b []byte) ([]byte, string) {
	if len(b) > p.limit {
		return b, ""
	}
	z := p.enc.EncodeAll(b, make([]byte, 0, len(b)/2))
	if len(z) >= len(b) {
		return b, ""
	}
	return z, encZstdDict
}

// unpack returns the bytes a body with Acr-Encoding enc holds.
func (p *packer) unpack(b []byte, enc string) ([]byte, error) {
	switch enc {
	case "":
		return b, nil
	case encZstd, encZstdDict:
		// Every body this package compressed is one frame that declares
		// its size (EncodeAll): a frame that declares none, or more than
		// limit, is refused before any memory is asked for it.
		var h zstd.Header
		if err := h.Decode(b); err != nil {
			return nil, fmt.Errorf("%s %s: %w", hdrEncoding, enc, err)
		}
		if !h.HasFCS || h.FrameContentSize > uint64(p.limit) {
			return nil, fmt.Errorf("%s %s: the frame declares no size, or more than %d bytes", hdrEncoding, enc, p.limit)
		}
		out, err := p.dec.DecodeAll(b, make([]byte, 0, h.FrameContentSize))
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", hdrEncoding, enc, err)
		}
		if uint64(len(out)) != h.FrameContentSize {
			return nil, fmt.Errorf("%s %s: %d bytes where the frame declares %d", hdrEncoding, enc, len(out), h.FrameContentSize)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unknown %s %q", hdrEncoding, enc)
	}
}

// HeaderEncoding is the header that names how a stored body is
// compressed (Acr-Encoding), for readers of a store's messages outside
// this package.
const HeaderEncoding = hdrEncoding

// Decoder decompresses the bodies of a store's messages for a reader
// outside this package (cmd/acr-perf taps a store's subjects): every
// encoding a store wrote, with the dictionaries they name.
type Decoder struct{ p *packer }

// NewDecoder returns a Decoder; it is safe for concurrent use.
func NewDecoder() (*Decoder, error) {
	p, err := newPacker()
	if err != nil {
		return nil, err
	}
	return &Decoder{p: p}, nil
}

// Decode returns the bytes a body stored with Acr-Encoding enc holds.
func (d *Decoder) Decode(enc string, b []byte) ([]byte, error) { return d.p.unpack(b, enc) }
