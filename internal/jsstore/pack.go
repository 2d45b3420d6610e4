package jsstore

import (
	"fmt"

	"github.com/klauspost/compress/zstd"
)

// hdrEncoding names how a ledger message's body or a checkpoint's
// document is compressed: "zstd" (a zstd frame of the bytes); a message
// without it holds them as they are (what earlier releases wrote, and
// what is written when compressing would not make it smaller). The bytes
// once decompressed are the same either way, so hashes, chains, manifests
// and exports do not change.
const hdrEncoding = "Acr-Encoding"

// encZstd is the one compression written.
const encZstd = "zstd"

// maxUnpacked bounds what one compressed body may decompress to, so a
// damaged or hostile frame cannot ask for unbounded memory. Nothing
// larger is written compressed (packer.pack), so the bound never refuses
// what this package wrote.
const maxUnpacked = 256 << 20

// packer compresses what a store writes and decompresses what it reads.
// Its encoder and decoder are safe for concurrent use (EncodeAll,
// DecodeAll), so one serves a whole Store.
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
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest), zstd.WithEncoderConcurrency(1),
		zstd.WithZeroFrames(true), zstd.WithEncoderCRC(true))
	if err != nil {
		return nil, fmt.Errorf("zstd encoder: %w", err)
	}
	dec, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(uint64(limit)),
		zstd.WithDecoderMaxWindow(uint64(limit)))
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
	return z, encZstd
}

// unpack returns the bytes a body with Acr-Encoding enc holds.
func (p *packer) unpack(b []byte, enc string) ([]byte, error) {
	switch enc {
	case "":
		return b, nil
	case encZstd:
		out, err := p.dec.DecodeAll(b, nil)
		if err != nil {
			return nil, fmt.Errorf("%s %s: %w", hdrEncoding, enc, err)
		}
		return out, nil
	default:
		return nil, fmt.Errorf("unknown %s %q", hdrEncoding, enc)
	}
}
