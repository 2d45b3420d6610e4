package codec

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"strings"
)

// Ref is a content address: "<kind>:sha256:<64 lower-case hex>", the SHA-256
// of an object's canonical bytes. Two objects with the same ref are the same
// object, so refs can link records without copying them.
type Ref string

// Fingerprint is "sha256:<hex>" over some canonical bytes. It names a digest
// without claiming what kind of object it covers.
type Fingerprint string

const refAlgo = "sha256"

// Digest returns the lower-case hex SHA-256 of b.
func Digest(b []byte) string {
	sum := sha256.Sum256(b)
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:])
}

// FingerprintOf returns the fingerprint of exactly these bytes.
func FingerprintOf(b []byte) Fingerprint {
	return Fingerprint(refAlgo + ":" + Digest(b))
}

// MustFingerprintOf is FingerprintOf(MustMarshal(v)) without keeping the
// encoding: the bytes are hashed where they were built.
func MustFingerprintOf(v any) Fingerprint {
	if _, ok := v.(Value); !ok {
		if s, err := encodeScratch(v); err == nil {
			f := FingerprintOf(s.b)
			s.release()
			return f
		}
	}
	return FingerprintOf(MustMarshal(v))
}

// FingerprintReader returns the fingerprint of everything r yields and its
// length, reading through buf: a caller that only needs a file's digest
// need not hold the whole file in memory. It equals FingerprintOf of the
// same bytes.
func FingerprintReader(r io.Reader, buf []byte) (Fingerprint, int64, error) {
	h := sha256.New()
	// Hide a WriterTo (an *os.File has one), which would ignore buf and
	// allocate its own.
	n, err := io.CopyBuffer(h, struct{ io.Reader }{r}, buf)
	if err != nil {
		return "", n, err
	}
	return Fingerprint(refAlgo + ":" + hex.EncodeToString(h.Sum(nil))), n, nil
}

// FingerprintSum names a SHA-256 sum computed elsewhere (a stream hashed as
// it was copied) in the fingerprint form.
func FingerprintSum(sum []byte) Fingerprint {
	return Fingerprint(refAlgo + ":" + hex.EncodeToString(sum))
}

// NewRef returns the ref of an object whose canonical bytes are given.
// Hash the exact bytes that are stored: re-encoding first could hide a
// difference between what was hashed and what was written.
func NewRef(kind string, canonical []byte) Ref {
	return NewRefOfSum(kind, sha256.Sum256(canonical))
}

// NewRefOfSum is NewRef for a caller that hashed the canonical bytes
// itself (SHA-256), in pieces.
func NewRefOfSum(kind string, sum [sha256.Size]byte) Ref {
	// Built in one allocation: refs are made for every record of every
	// cycle, and concatenating pieces took three.
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	var b strings.Builder
	b.Grow(len(kind) + len(refAlgo) + 2 + len(h))
	b.WriteString(kind)
	b.WriteByte(':')
	b.WriteString(refAlgo)
	b.WriteByte(':')
	b.Write(h[:])
	return Ref(b.String())
}

// RefOf encodes v canonically and returns its ref and the bytes hashed.
func RefOf(kind string, v any) (Ref, []byte, error) {
	b, err := Marshal(v)
	if err != nil {
		return "", nil, fmt.Errorf("ref %s: %w", kind, err)
	}
	return NewRef(kind, b), b, nil
}

// MustRefOf is RefOf for values whose types cannot fail to encode.
func MustRefOf(kind string, v any) Ref {
	if _, ok := v.(Value); !ok {
		// Only the hash is wanted: the bytes are hashed where they were
		// built and never copied.
		if s, err := encodeScratch(v); err == nil {
			r := NewRef(kind, s.b)
			s.release()
			return r
		}
	}
	r, _, err := RefOf(kind, v)
	if err != nil {
		panic(err)
	}
	return r
}

// ParseRef checks that s is a well-formed ref and returns it.
func ParseRef(s string) (Ref, error) {
	kind, rest, ok := strings.Cut(s, ":")
	if !ok || !validKind(kind) {
		return "", fmt.Errorf("ref %q: want <kind>:sha256:<hex>", s)
	}
	algo, hexpart, ok := strings.Cut(rest, ":")
	if !ok || algo != refAlgo || !IsHex64(hexpart) {
		return "", fmt.Errorf("ref %q: want <kind>:sha256:<64 lower-case hex digits>", s)
	}
	return Ref(s), nil
}

// Kind returns the kind prefix of the ref ("" if malformed).
func (r Ref) Kind() string {
	kind, _, _ := strings.Cut(string(r), ":")
	return kind
}

// Hex returns the digest part of the ref.
func (r Ref) Hex() string {
	i := strings.LastIndexByte(string(r), ':')
	return string(r)[i+1:]
}

// Short returns a human-friendly abbreviation, "kind:1a2b3c4d5e6f".
func (r Ref) Short() string {
	h := r.Hex()
	if len(h) > 12 {
		h = h[:12]
	}
	return r.Kind() + ":" + h
}

func validKind(k string) bool {
	if k == "" || len(k) > 32 {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9' || i == 0) && (c != '-' && c != '_' || i == 0) {
			return false
		}
	}
	return true
}

// IsHex64 reports whether s is exactly 64 lower-case hex digits, the form
// of every digest acr writes. It looks each byte up in a table rather than
// branching on it: hex digits are random, so a branch per byte mispredicts
// about half the time, and ledger verification checks two digests per line.
func IsHex64[T ~string | ~[]byte](s T) bool {
	if len(s) != 64 {
		return false
	}
	ok := byte(1)
	for i := range 64 {
		ok &= lowerHexTable[s[i]]
	}
	return ok == 1
}

// lowerHexTable has a 1 at the index of each of 0-9 and a-f.
const lowerHexTable = "" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x01\x01\x01\x01\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x01\x01\x01\x01\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00" +
	"\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00"
