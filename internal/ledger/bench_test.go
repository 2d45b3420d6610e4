package ledger

import (
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
)

// benchLedger writes a ledger of about the given size whose events look
// like a cycle's: refs, reason codes and an object with nested facts.
func benchLedger(b *testing.B, size int64) (disk.FS, string) {
	dir := b.TempDir()
	fsys, err := disk.OpenOSDir(dir)
	if err != nil {
		b.Fatal(err)
	}
	l, err := Create(fsys)
	if err != nil {
		b.Fatal(err)
	}
	defer l.Close()
	for c := int64(1); l.Frontier().Offset < size; c++ {
		var evs []event.Event
		for i := range 15 {
			obj, _ := event.NewObject("fact", map[string]any{"cycle": c, "facts": []string{"README.md has a typo", fmt.Sprintf("check %d passed", i)},
				"target": "docs/guide/é.md", "sha256": codec.Digest([]byte{byte(i)})})
			evs = append(evs, event.Event{Type: "persistent.cycle.step", RunID: "run:bench", CycleSeq: c, At: "2026-01-01T00:00:00Z",
				Parents: []codec.Ref{obj.Ref}, Refs: map[string]codec.Ref{"observation": obj.Ref, "decision": obj.Ref},
				Reasons: []string{"agenda_selected", "direct_path"}, Object: obj})
		}
		if _, err := l.Append(evs); err != nil {
			b.Fatal(err)
		}
	}
	return fsys, filepath.Join(dir, filepath.FromSlash(FileName))
}

// BenchmarkVerify and BenchmarkVerifySHA256 run over the same bytes: the
// target is Verify's MB/s at half SHA-256's or better (docs/PERFORMANCE.md).
func BenchmarkVerify(b *testing.B) {
	fsys, path := benchLedger(b, 64<<20)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	for b.Loop() {
		rep, err := Verify(fsys, nil)
		if err != nil || !rep.OK {
			b.Fatal(err, rep.Damage)
		}
	}
}

func BenchmarkVerifySHA256(b *testing.B) {
	_, path := benchLedger(b, 64<<20)
	fi, err := os.Stat(path)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(fi.Size())
	buf := make([]byte, 1<<20)
	for b.Loop() {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		h := sha256.New()
		if _, err := io.CopyBuffer(h, f, buf); err != nil {
			b.Fatal(err)
		}
		f.Close()
	}
}

// BenchmarkWrite writes a cycle's batch of 15 sealed events (the kernel
// seals every event it emits) to an in-memory file: the framing, the
// chain's hashing and the batch's buffer, without the disk.
func BenchmarkWrite(b *testing.B) {
	l, err := Create(disk.NewMem())
	if err != nil {
		b.Fatal(err)
	}
	var evs []event.Event
	for i := range 15 {
		obj, _ := event.NewObject("fact", map[string]any{"cycle": 1, "facts": []string{"README.md has a typo", fmt.Sprintf("check %d passed", i)},
			"target": "docs/guide/é.md", "sha256": codec.Digest([]byte{byte(i)})})
		ev := event.Event{Type: "persistent.cycle.step", RunID: "run:bench", CycleSeq: 1, At: "2026-01-01T00:00:00Z",
			Refs: map[string]codec.Ref{"observation": obj.Ref}, Reasons: []string{"agenda_selected"}, Object: obj}
		if _, err := ev.Seal(); err != nil {
			b.Fatal(err)
		}
		evs = append(evs, ev)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.Write(evs); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifySealed is BenchmarkVerify over the same kind of ledger
// sealed into segments: bytes are the ledger's, so the MB/s compare.
func BenchmarkVerifySealed(b *testing.B) {
	fsys, _ := benchLedger(b, 64<<20)
	l, err := Open(fsys)
	if err != nil {
		b.Fatal(err)
	}
	if err := l.Seal(1); err != nil {
		b.Fatal(err)
	}
	size := l.Frontier().Offset
	l.Close()
	b.SetBytes(size)
	for b.Loop() {
		rep, err := Verify(fsys, nil)
		if err != nil || !rep.OK {
			b.Fatal(err, rep.Damage)
		}
	}
}

// BenchmarkCompressAhead appends 8 MiB of a cycle's batches and seals,
// with CompressAhead (the frames compressed on goroutines as the batches
// are written), against the same appends never sealed: the difference is
// what sealing costs per byte of ledger.
func BenchmarkCompressAhead(b *testing.B) {
	var evs []event.Event
	for i := range 15 {
		obj, _ := event.NewObject("fact", map[string]any{"cycle": 1, "facts": []string{"README.md has a typo", fmt.Sprintf("check %d passed", i)},
			"target": "docs/guide/é.md", "sha256": codec.Digest([]byte{byte(i)})})
		evs = append(evs, event.Event{Type: "persistent.cycle.step", RunID: "run:bench", CycleSeq: 1, At: "2026-01-01T00:00:00Z",
			Refs: map[string]codec.Ref{"observation": obj.Ref}, Reasons: []string{"agenda_selected"}, Object: obj})
	}
	for _, seal := range []bool{true, false} {
		b.Run(fmt.Sprintf("seal=%v", seal), func(b *testing.B) {
			b.SetBytes(8 << 20)
			b.ReportAllocs()
			for b.Loop() {
				l, err := Create(disk.NewMem())
				if err != nil {
					b.Fatal(err)
				}
				l.CompressAhead = seal
				for l.Frontier().Offset < 8<<20 {
					if _, err := l.Write(evs); err != nil {
						b.Fatal(err)
					}
				}
				if seal {
					if err := l.Seal(1); err != nil {
						b.Fatal(err)
					}
				}
				l.Close()
			}
		})
	}
}

// BenchmarkEncodeSegment compresses 32 MiB of ledger-like lines into one
// segment, as a seal of a long events.jsonl does (up to 64 MiB at once).
func BenchmarkEncodeSegment(b *testing.B) {
	enc, err := newEncoder()
	if err != nil {
		b.Fatal(err)
	}
	var lines []byte
	for i := 0; len(lines) < 32<<20; i++ {
		lines = fmt.Appendf(lines, `{"chain":"sha256:%064x","event":{"cycle_seq":%d,"type":"x"},"seq":%d}`+"\n", i, i/28, i)
	}
	b.SetBytes(int64(len(lines)))
	for b.Loop() {
		_ = encodeSegment(enc, 0, lines)
	}
}
