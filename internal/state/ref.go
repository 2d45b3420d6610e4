package state

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
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
	return hex.EncodeToString(sum[:])
}

// FingerprintOf returns the fingerprint of exactly these bytes.
func FingerprintOf(b []byte) Fingerprint {
	return Fingerprint(refAlgo + ":" + Digest(b))
}

// NewRef returns the ref of an object whose canonical bytes are given.
// Hash the exact bytes that are stored: re-encoding first could hide a
// difference between what was hashed and what was written.
func NewRef(kind string, canonical []byte) Ref {
	return Ref(kind + ":" + refAlgo + ":" + Digest(canonical))
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
	if !ok || algo != refAlgo || !isHex64(hexpart) {
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

func isHex64(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}
