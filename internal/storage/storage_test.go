package storage

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
)

func manifest() Manifest {
	return Manifest{Schema: ManifestSchema, SchemaVersion: SchemaVersion, WrittenAtRevision: "acr test", Generation: 7,
		RunID: "run:persistent:test", CycleSeq: 5,
		Files: map[string]FileEntry{
			"goal":      {Path: "checkpoint/goal.0011.json", SHA256: codec.FingerprintOf([]byte("goal")), Size: 392},
			"run_state": {Path: "checkpoint/run_state.0022.json", SHA256: codec.FingerprintOf([]byte("run")), Size: 1024},
		},
		LedgerFrontier: state.Frontier{Seq: 82, Hash: state.GenesisHash, Offset: 86023}}
}

// TestManifestSumPinned: the checksum of a manifest is part of the format
// (directories and stores hold manifests checked by it), so the same
// manifest sums the same in every release.
func TestManifestSumPinned(t *testing.T) {
	m := manifest()
	assert.Equal(t, codec.Fingerprint("sha256:b9073ee38da3fabd1b44930dae55c09931a33c3eae52e6c9c746e451839aaebc"), m.Sum())
	b := sha256.Sum256(codec.MustMarshal(m))
	assert.Equal(t, codec.Fingerprint("sha256:"+hex.EncodeToString(b[:])), m.Sum(), "the sha256 of the canonical bytes with the checksum empty")
	assert.Equal(t, `{"checksum":"","cycle_seq":5,"files":{"goal":{"path":"checkpoint/goal.0011.json","sha256":"`+string(codec.FingerprintOf([]byte("goal")))+
		`","size":392},"run_state":{"path":"checkpoint/run_state.0022.json","sha256":"`+string(codec.FingerprintOf([]byte("run")))+
		`","size":1024}},"generation":7,"ledger_frontier":{"hash":"`+state.GenesisHash+`","offset":86023,"seq":82},`+
		`"run_id":"run:persistent:test","schema":"acr.manifest/v0.1","schema_version":1,"written_at_revision":"acr test"}`,
		string(codec.MustMarshal(m)), "the manifest's members are the on-disk format (docs/on-disk-format.md)")
}

// TestManifestSum: the checksum covers every member but itself, so a
// flipped digit anywhere is found, and a manifest carrying its checksum
// sums as it did without it.
func TestManifestSum(t *testing.T) {
	base := manifest()
	sum := base.Sum()
	withSum := base
	withSum.Checksum = sum
	assert.Equal(t, sum, withSum.Sum(), "the checksum is not part of what it sums")
	withSum.Checksum = "sha256:something else"
	assert.Equal(t, sum, withSum.Sum())
	assert.Equal(t, codec.Fingerprint("sha256:something else"), withSum.Checksum, "Sum leaves the manifest alone")

	changes := []struct {
		name   string
		change func(*Manifest)
	}{
		{"schema", func(m *Manifest) { m.Schema = "acr.manifest/v0.2" }},
		{"schema version", func(m *Manifest) { m.SchemaVersion = 2 }},
		{"revision", func(m *Manifest) { m.WrittenAtRevision = "acr other" }},
		{"generation", func(m *Manifest) { m.Generation = 8 }},
		{"run", func(m *Manifest) { m.RunID = "run:persistent:other" }},
		{"cycle", func(m *Manifest) { m.CycleSeq = 6 }},
		{"a file's path", func(m *Manifest) {
			m.Files["goal"] = FileEntry{Path: "checkpoint/goal.0012.json", SHA256: m.Files["goal"].SHA256, Size: 392}
		}},
		{"a file's hash", func(m *Manifest) {
			m.Files["goal"] = FileEntry{Path: m.Files["goal"].Path, SHA256: codec.FingerprintOf([]byte("other")), Size: 392}
		}},
		{"a file's size", func(m *Manifest) {
			m.Files["goal"] = FileEntry{Path: m.Files["goal"].Path, SHA256: m.Files["goal"].SHA256, Size: 393}
		}},
		{"a file more", func(m *Manifest) { m.Files["notified"] = FileEntry{Path: "checkpoint/notified.json"} }},
		{"a file less", func(m *Manifest) { delete(m.Files, "goal") }},
		{"the frontier's seq", func(m *Manifest) { m.LedgerFrontier.Seq = 83 }},
		{"the frontier's hash", func(m *Manifest) { m.LedgerFrontier.Hash = "sha256:" + codec.Digest([]byte("x")) }},
		{"the frontier's offset", func(m *Manifest) { m.LedgerFrontier.Offset = 86024 }},
	}
	for _, tc := range changes {
		t.Run(tc.name, func(t *testing.T) {
			m := manifest()
			tc.change(&m)
			assert.NotEqual(t, sum, m.Sum())
		})
	}
}

// TestErrors: the errors callers branch on are distinct and survive
// wrapping.
func TestErrors(t *testing.T) {
	all := []error{ErrNoRun, ErrBusy, ErrConflict}
	for i, e := range all {
		wrapped := fmt.Errorf("open run %s: %w", "x", e)
		for j, other := range all {
			require.Equal(t, i == j, errors.Is(wrapped, other), "%v is %v", e, other)
		}
	}
}
