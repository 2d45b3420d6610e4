package jetstream

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
)

// Names derives every stream, bucket and subject name of one store from its
// prefix, so that several stores can share a NATS account.
//
// The prefix is one subject token of letters, digits, '-' and '_'. It is
// used as it is in subjects and, with '-' and a suffix, as stream and
// bucket names (KV buckets become streams named KV_<bucket>).
type Names struct {
	Prefix string
}

// DefaultPrefix is the prefix of a store URL without one.
const DefaultPrefix = "acr"

// Validate reports whether the prefix is usable in subjects and names.
func (n Names) Validate() error {
	if n.Prefix == "" || len(n.Prefix) > 32 {
		return fmt.Errorf("store prefix %q: want 1 to 32 characters", n.Prefix)
	}
	for i := 0; i < len(n.Prefix); i++ {
		if !plain(n.Prefix[i]) {
			return fmt.Errorf("store prefix %q: want letters, digits, '-' and '_'", n.Prefix)
		}
	}
	return nil
}

// RunsStream is the stream that holds every run's ledger and checkpoint.
func (n Names) RunsStream() string { return n.Prefix + "-runs" }

// InboxStream is the stream that holds every run's inbox.
func (n Names) InboxStream() string { return n.Prefix + "-inbox" }

// CheckpointBucket is the KV bucket of checkpoints (the KV design; the
// recommended design keeps the checkpoint in RunsStream).
func (n Names) CheckpointBucket() string { return n.Prefix + "-ckpt" }

// IdempotencyBucket is the KV bucket of idempotency records.
func (n Names) IdempotencyBucket() string { return n.Prefix + "-idem" }

// LeaseBucket is the KV bucket of run leases.
func (n Names) LeaseBucket() string { return n.Prefix + "-lease" }

// LedgerSubject is the subject of run's ledger records: <prefix>.ledger.<run>.
func (n Names) LedgerSubject(run string) string { return n.Prefix + ".ledger." + Token(run) }

// CheckpointSubject is the subject of run's checkpoint parts: <prefix>.ckpt.<run>.
func (n Names) CheckpointSubject(run string) string { return n.Prefix + ".ckpt." + Token(run) }

// StatusSubject is the subject of run's status, a small summary written
// with each checkpoint for listing runs: <prefix>.status.<run>.
func (n Names) StatusSubject(run string) string { return n.Prefix + ".status." + Token(run) }

// InboxSubject is the subject of run's inbox items: <prefix>.inbox.<run>.
func (n Names) InboxSubject(run string) string { return n.Prefix + ".inbox." + Token(run) }

// QuarantineSubject is the subject of run's quarantined inbox items:
// <prefix>.quarantine.<run>.
func (n Names) QuarantineSubject(run string) string { return n.Prefix + ".quarantine." + Token(run) }

// WorldSubject is the subject of the file at path in run's world:
// <prefix>.world.<run>.<32 hex digits>, the first 128 bits of the
// SHA-256 of the path. A hash keeps every subject short and one token
// whatever the path (world paths may be 3 KiB long, and escaped three
// times that); the message carries the path itself in Acr-Path.
func (n Names) WorldSubject(run, path string) string {
	return n.Prefix + ".world." + Token(run) + "." + worldKey(path)
}

// WorldHeadSubject is the subject of run's world head, the world's
// fencing token: <prefix>.world.<run>.head. Every write of the world
// moves it (see Worlds).
func (n Names) WorldHeadSubject(run string) string {
	return n.Prefix + ".world." + Token(run) + "." + worldHead
}

// WorldFilter matches every subject of run's world, its files and its
// head: <prefix>.world.<run>.*.
func (n Names) WorldFilter(run string) string { return n.Prefix + ".world." + Token(run) + ".*" }

// worldHead is the last token of a world's head subject; a file's token
// is 32 hex digits, so the two never meet.
const worldHead = "head"

// worldKey is the last token of the subject of the world file at path.
func worldKey(path string) string {
	sum := sha256.Sum256([]byte(path))
	return hex.EncodeToString(sum[:16])
}

// plain reports whether c needs no escaping in a subject token, a stream
// name and a KV key.
func plain(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_'
}

const hexDigits = "0123456789ABCDEF"

// Token encodes s as one subject token that is also a valid KV key: bytes
// other than letters, digits, '-' and '_' become '=' and two upper-case hex
// digits. acr's default run ids ("run:persistent:<hex>") contain ':', which
// subjects allow but KV keys do not, hence one encoding for both. The
// encoding is injective ('=' itself is escaped), so ParseToken inverts it.
func Token(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xf])
	}
	return b.String()
}

// errBadToken is returned for a string Token never produces.
var errBadToken = errors.New("not an encoded token")

// ParseToken inverts Token.
func ParseToken(tok string) (string, error) {
	var b strings.Builder
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		if plain(c) {
			b.WriteByte(c)
			continue
		}
		if c != '=' || i+2 >= len(tok) {
			return "", fmt.Errorf("token %q: %w", tok, errBadToken)
		}
		hi, lo := strings.IndexByte(hexDigits, tok[i+1]), strings.IndexByte(hexDigits, tok[i+2])
		if hi < 0 || lo < 0 {
			return "", fmt.Errorf("token %q: %w", tok, errBadToken)
		}
		v := byte(hi<<4 | lo)
		if plain(v) {
			return "", fmt.Errorf("token %q: %w", tok, errBadToken)
		}
		b.WriteByte(v)
		i += 2
	}
	return b.String(), nil
}
