// Package perf measures acr against the targets of the performance issue:
// costs that must not grow with history, an idle poll that costs nothing,
// and durable cycle throughput against the machine's own floor. Every
// figure is a ratio measured in the same run, on the same disk.
//
// Long histories are generated, not committed: Generate drives the real
// (pure) cycle over a world whose one file toggles between broken and
// fixed, and appends the ledger in large batches, so a million events take
// seconds rather than the hours of fsynced cycles. The result is an
// ordinary run: acr ledger verify and acr recover accept it, and acr step
// continues it.
package perf

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// Start is the clock reading generated runs begin at.
var start = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type fixedClock struct{}

func (fixedClock) Now() time.Time { return start }

// ToggleInputs is the world of generated histories: one README that the
// outside world breaks and the loop fixes, over and over.
func ToggleInputs() runstore.Inputs {
	return runstore.Inputs{
		Goal: intent.Goal{Schema: intent.Schema, ID: "perf", Mission: "keep the README free of typos", Success: intent.Success{AllChecksPass: true}},
		Contract: governance.Contract{Schema: governance.ContractSchema, ID: "perf", Authority: governance.Authority{ID: "op", Mode: governance.AuthProjectWrite},
			Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: "A2", CognitiveDepth: "D2"},
			Rules:       []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}}},
		Spec: world.Spec{Schema: world.SpecSchema, Files: map[string]string{"README.md": Broken},
			Checks: []world.Check{{ID: "typo", Summary: "README misspells 'the'", Kind: world.CheckAbsentText, Path: "README.md", Text: "teh ",
				Priority: 10, Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "teh ", Replace: "the "}}}}},
	}
}

// Broken and Fixed are the two states of the toggling README.
const (
	Broken = "# Project\n\nThis is teh project.\n"
	Fixed  = "# Project\n\nThis is the project.\n"
)

// Generated describes a generated run.
type Generated struct {
	Dir    string
	Cycles int64
	Events int64
	Bytes  int64
}

// Generate creates a run in dir and extends it until the ledger holds at
// least events events (or cycles cycles, whichever is given). Every cycle is
// derived by the real kernel; only the fsync per batch is amortised.
func Generate(ctx context.Context, dir string, events, cycles int64) (Generated, error) {
	opt := runstore.Options{Clock: fixedClock{}, Revision: "perf"}
	if _, err := runstore.Init(ctx, dir, ToggleInputs(), "run:perf", false, opt); err != nil {
		return Generated{}, err
	}
	fsys, err := disk.OpenOSDir(dir)
	if err != nil {
		return Generated{}, err
	}
	store := dirstore.NewStore(fsys)
	snap, err := store.Load()
	if err != nil {
		return Generated{}, err
	}
	st, err := kernel.Decode(snap.Files)
	if err != nil {
		return Generated{}, err
	}
	led, err := ledger.Open(fsys)
	if err != nil {
		return Generated{}, err
	}
	defer led.Close()
	ix, err := ledger.OpenIndex(fsys)
	if err != nil {
		return Generated{}, err
	}
	defer ix.Close()
	w, err := sandbox.Open(dir, st.Spec, fsys)
	if err != nil {
		return Generated{}, err
	}
	defer w.Close()
	readme := filepath.Join(dir, "sandbox", "world", "README.md")

	g := Generated{Dir: dir}
	now := start
	var batch []event.Event
	var starts []int // index in batch of each cycle's first event
	flush := func() error {
		recs, err := led.Append(batch)
		if err != nil {
			return err
		}
		for i, s := range starts {
			end := len(recs)
			if i+1 < len(starts) {
				end = starts[i+1]
			}
			last := recs[end-1]
			if err := ix.Add(ledger.IndexEntry{Cycle: recs[s].Event.CycleSeq, Start: recs[s].Offset, End: last.Offset + last.Length, FirstSeq: recs[s].Seq}); err != nil {
				return err
			}
		}
		g.Events = led.Frontier().Seq
		batch, starts = batch[:0], starts[:0]
		return nil
	}
	for (events > 0 && g.Events+int64(len(batch)) < events) || (cycles > 0 && g.Cycles < cycles) {
		now = now.Add(time.Minute)
		content := Broken
		if g.Cycles%2 == 1 {
			content = Fixed // the loop fixed it last cycle; next it idles
		}
		if err := os.WriteFile(readme, []byte(content), 0o644); err != nil {
			return g, err
		}
		obs, err := w.Observe(ctx)
		if err != nil {
			return g, err
		}
		p, err := kernel.Begin(st, kernel.Inputs{Now: now, Observation: obs})
		if err != nil {
			// Nothing eligible: the world did not change. Break it again.
			if err := os.WriteFile(readme, []byte(Broken), 0o644); err != nil {
				return g, err
			}
			continue
		}
		var settle kernel.Settlement
		if p.Effect != nil {
			fixed := codec.FingerprintOf([]byte(Fixed))
			settle.Outcome = &world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: world.OpApplyPatch, Target: "README.md",
				Status: world.OutcomeCommitted, BeforeSHA256: codec.FingerprintOf([]byte(Broken)), AfterSHA256: fixed,
				PostCheck: &world.CheckResult{ID: "typo", Status: world.CheckPass, TargetSHA256: fixed}}
			settle.Readback = &world.Readback{Schema: world.ReadbackSchema, Target: "README.md", SHA256: fixed, Passing: []string{"typo"}, Failing: []string{}}
			settle.Rollback = &world.RollbackBundle{Target: "README.md", Existed: true, Content: Broken, Before: settle.Outcome.BeforeSHA256, After: fixed}
		}
		r, err := kernel.Finish(p, settle)
		if err != nil {
			return g, err
		}
		starts = append(starts, len(batch))
		batch = append(batch, p.Events...)
		batch = append(batch, r.Events...)
		st = r.State
		g.Cycles++
		if len(batch) >= 20000 {
			if err := flush(); err != nil {
				return g, err
			}
		}
	}
	if len(batch) > 0 {
		if err := flush(); err != nil {
			return g, err
		}
	}
	// Leave the world as the last cycle saw it, then checkpoint.
	content := Broken
	if g.Cycles%2 == 0 {
		content = Fixed
	}
	if err := os.WriteFile(readme, []byte(content), 0o644); err != nil {
		return g, err
	}
	files, err := st.Encode()
	if err != nil {
		return g, err
	}
	if _, err := store.Commit(storage.Commit{Expect: snap.Manifest.Generation, RunID: st.Run.RunID, CycleSeq: st.Run.CycleSeq, Revision: "perf", Frontier: led.Frontier(), Files: files}); err != nil {
		return g, err
	}
	fi, err := os.Stat(filepath.Join(dir, filepath.FromSlash(ledger.FileName)))
	if err != nil {
		return g, err
	}
	g.Bytes = fi.Size()
	if g.Cycles == 0 {
		return g, fmt.Errorf("generate: no cycle was eligible")
	}
	return g, nil
}

// SealHistory seals a generated run's ledger into segments, as acr run
// seals a run's history, and returns the bytes its ledger directory takes
// on disk before and after. The next writer walks the whole chain once,
// as after any change to the ledger's files.
func SealHistory(dir string) (before, after int64, err error) {
	ldir := filepath.Join(dir, "ledger")
	if before, err = DirSize(ldir); err != nil {
		return 0, 0, err
	}
	fsys, err := disk.OpenOSDir(dir)
	if err != nil {
		return 0, 0, err
	}
	led, err := ledger.Open(fsys)
	if err != nil {
		return 0, 0, err
	}
	if err := led.Seal(1); err != nil {
		led.Close()
		return 0, 0, err
	}
	if err := led.Close(); err != nil {
		return 0, 0, err
	}
	after, err = DirSize(ldir)
	return before, after, err
}
