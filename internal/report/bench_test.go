package report

import (
	"flag"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/perf"
	"github.com/acr-project/acr/internal/runstore"
)

var benchCycles = flag.Int64("report.bench-cycles", 100_000, "cycles of the generated history BenchmarkReport100k reads")

// BenchmarkReport100k reads and renders the report of a generated
// 100,000-cycle history (about 1.5 million ledger events, 1.5 GB; the
// generation before the timer takes minutes). -report.bench-cycles sets
// another length for a quicker look.
func BenchmarkReport100k(b *testing.B) {
	dir := b.TempDir()
	g, err := perf.Generate(b.Context(), dir, 0, *benchCycles)
	require.NoError(b, err)
	st, _, err := runstore.ReadState(dir)
	require.NoError(b, err)
	fsys, err := disk.OpenOSDir(dir)
	require.NoError(b, err)
	var size int64
	b.ResetTimer()
	for b.Loop() {
		v, err := Read(ledger.NewReader(fsys), HeadOf(st), Options{Generator: "bench"})
		require.NoError(b, err)
		w := &countingWriter{}
		require.NoError(b, Render(w, v))
		size = w.n
	}
	b.ReportMetric(float64(size), "page-bytes")
	b.ReportMetric(float64(g.Bytes), "ledger-bytes")
	b.ReportMetric(float64(g.Cycles)*float64(b.N)/b.Elapsed().Seconds(), "cycles/s")
}

// countingWriter counts bytes and keeps none, so a test can check a page's
// size without holding it.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) {
	w.n += int64(len(p))
	return len(p), nil
}

var _ io.Writer = (*countingWriter)(nil)
