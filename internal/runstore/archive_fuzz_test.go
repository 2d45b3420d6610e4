package runstore

import (
	"bytes"
	"context"
	"testing"

	"github.com/acr-project/acr/internal/archive"
)

// FuzzCheckArchive: whatever bytes acr import is given, CheckArchive
// either accepts an archive whose run is consistent (its checkpoint of its
// run and cycle, written back as the same bytes) or refuses it with an
// error; it never panics. The seed is a real run's archive.
func FuzzCheckArchive(f *testing.F) {
	dir := f.TempDir()
	if _, err := Init(f.Context(), dir, quickstart(f), "run:fuzz", false, testOptions()); err != nil {
		f.Fatal(err)
	}
	r, err := Open(f.Context(), dir, testOptions())
	if err != nil {
		f.Fatal(err)
	}
	if _, err := r.Driver.Run(context.Background(), 3, nil); err != nil {
		f.Fatal(err)
	}
	if err := r.Close(); err != nil {
		f.Fatal(err)
	}
	ex, err := ExportDir(dir)
	if err != nil {
		f.Fatal(err)
	}
	b, err := archive.Encode(ex.Run)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Fuzz(func(t *testing.T, b []byte) {
		r, st, err := CheckArchive(b)
		if err != nil {
			return
		}
		if st.Run.RunID != r.RunID || st.Run.CycleSeq != r.Checkpoint.CycleSeq {
			t.Fatalf("accepted run %s cycle %d for an archive of %s cycle %d", st.Run.RunID, st.Run.CycleSeq, r.RunID, r.Checkpoint.CycleSeq)
		}
		enc, err := archive.Encode(r)
		if err != nil || !bytes.Equal(enc, b) {
			t.Fatalf("accepted an archive that does not encode back: %v", err)
		}
	})
}
