package storagetest

import (
	"fmt"
	"strings"
	"testing"
	"time"
)

// Benchmark measures the operations a cycle costs on a backend: an
// append of a 10-event batch and of a single event, a commit of a 50 KB checkpoint, a list of
// an inbox of 10 items. open returns a fresh run each time.
func Benchmark(b *testing.B, open func(tb testing.TB) Backend) {
	b.Run("Append10", func(b *testing.B) {
		be := open(b)
		evs := events("bench", 10, 1)
		size := 0
		for i := range evs {
			eb, _, _ := evs[i].Encode()
			size += len(eb)
		}
		b.SetBytes(int64(size))
		for b.Loop() {
			if _, err := be.Ledger.Append(evs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Append1", func(b *testing.B) {
		be := open(b)
		evs := events("bench", 1, 1)
		for b.Loop() {
			if _, err := be.Ledger.Append(evs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("Commit50KB", func(b *testing.B) {
		be := open(b)
		if _, err := be.Ledger.Append(events("bench", 1, 1)); err != nil {
			b.Fatal(err)
		}
		doc := []byte(`{"pad":"` + strings.Repeat("x", 50<<10) + `"}`)
		b.SetBytes(int64(len(doc)))
		gen := int64(0)
		for b.Loop() {
			c := commit(be, gen, map[string][]byte{"run_state": fmt.Appendf(nil, `{"gen":%d}`, gen), "memory": doc})
			m, err := be.Checkpoints.Commit(c)
			if err != nil {
				b.Fatal(err)
			}
			gen = m.Generation
		}
	})
	b.Run("List10", func(b *testing.B) {
		be := open(b)
		far := time.Now().UTC().Add(24 * time.Hour).Format(time.RFC3339)
		for i := range 10 {
			if _, err := be.Put(wake(fmt.Sprint("k", i), "2026-01-01T00:00:00Z", far)); err != nil {
				b.Fatal(err)
			}
		}
		for b.Loop() {
			items, _, err := be.Inbox.List()
			if err != nil || len(items) != 10 {
				b.Fatalf("list: %d items, %v", len(items), err)
			}
		}
	})
}
