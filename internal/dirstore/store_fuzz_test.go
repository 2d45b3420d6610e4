package dirstore

import (
	"testing"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/storage"
)

// FuzzReadManifest: whatever bytes sit in manifest.json, reading them
// either fails with an error or yields a manifest whose checksum and
// schema hold; it never panics and never accepts a manifest whose
// checksum does not match its content.
func FuzzReadManifest(f *testing.F) {
	m := storage.Manifest{Schema: storage.ManifestSchema, SchemaVersion: storage.SchemaVersion, RunID: "run:x", Files: map[string]storage.FileEntry{}}
	m.Checksum = m.Sum()
	f.Add(codec.MustMarshal(m))
	f.Add([]byte(`{}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		fsys := disk.NewMem()
		if err := fsys.WriteFile(ManifestName, b); err != nil {
			t.Fatalf("the in-memory file system refused a write: %v", err)
		}
		got, err := NewStore(fsys).ReadManifest()
		if err != nil {
			return
		}
		if got.Checksum != got.Sum() || got.Schema != storage.ManifestSchema || got.SchemaVersion != storage.SchemaVersion {
			t.Fatalf("accepted a manifest that does not hold: %+v", got)
		}
	})
}
