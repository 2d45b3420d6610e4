package runstore

import (
	"context"
	"testing"
	"time"
)

// BenchmarkIdleInvocation is one idle `acr run` in process: open the run
// (lock, checkpoint, ledger tail, sandbox, recovery check), find nothing
// eligible, close. It is the cost cron pays on every tick of a resting
// loop; the whole-process ratio against `acr version` is in
// docs/PERFORMANCE.md.
func BenchmarkIdleInvocation(b *testing.B) {
	dir := b.TempDir()
	clock := &stepClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	opt := Options{Clock: clock, Revision: "bench"}
	if _, err := Init(b.Context(), dir, quickstart(b), "run:bench", false, opt); err != nil {
		b.Fatal(err)
	}
	r, err := Open(b.Context(), dir, opt)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := r.Driver.Run(context.Background(), 20, nil); err != nil {
		b.Fatal(err)
	}
	if err := r.Close(); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		r, err := Open(b.Context(), dir, opt)
		if err != nil {
			b.Fatal(err)
		}
		rep, err := r.Driver.Run(context.Background(), 20, nil)
		if err != nil || rep.CyclesExecuted != 0 {
			b.Fatal(err, rep)
		}
		if err := r.Close(); err != nil {
			b.Fatal(err)
		}
	}
}
