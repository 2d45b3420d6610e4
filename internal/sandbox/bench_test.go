package sandbox

import (
	"fmt"
	"testing"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

// seededWorld is a world on the real file system whose table holds n
// outcome records, opened afresh so that nothing of it is in memory yet.
func seededWorld(b *testing.B, n int) (*World, []string) {
	b.Helper()
	stateDir := b.TempDir()
	fsys, err := disk.OpenOSDir(stateDir)
	if err != nil {
		b.Fatal(err)
	}
	spec := world.Spec{Schema: world.SpecSchema, Files: map[string]string{"a.txt": "x\n"}}
	w, err := Create(stateDir, spec, fsys)
	if err != nil {
		b.Fatal(err)
	}
	keys, err := SeedOutcomes(w, n)
	if err != nil {
		b.Fatal(err)
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	w, err = Open(stateDir, spec, fsys)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = w.Close() })
	return w, keys
}

// BenchmarkLookup is a look-up of a recorded key in tables of 100 and
// 100000 keys, once the index is built: the two must cost the same (the
// make bench row "idempotency lookup with 100000 recorded keys vs 100").
func BenchmarkLookup(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			w, keys := seededWorld(b, n)
			if _, _, err := w.Lookup(keys[0]); err != nil { // builds the index
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				if _, ok, err := w.Lookup(keys[(i*7919)%len(keys)]); err != nil || !ok {
					b.Fatal("lookup failed", err)
				}
			}
		})
	}
}

// BenchmarkTableLoad is the first look-up of a World: the one sequential
// read of the table that builds the index, paid once by an invocation
// that acts (and never by one that does not).
func BenchmarkTableLoad(b *testing.B) {
	for _, n := range []int{100, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			w, keys := seededWorld(b, n)
			b.ReportAllocs()
			for b.Loop() {
				w.table.close()
				w.table = keyTable{fs: w.keys}
				if _, ok, err := w.Lookup(keys[len(keys)/2]); err != nil || !ok {
					b.Fatal("lookup failed", err)
				}
			}
		})
	}
}
