package runstore

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Power loss is not kill -9: after SIGKILL the kernel still writes the
// page cache out, so a missing fsync never shows. These tests run the loop
// with its store, ledger and idempotency table on disk.Mem, which forgets
// every write not yet fsynced when it "loses power", crash it at every
// failpoint, and check that nothing is lost or done twice. Then they
// switch off each kind of fsync the loop makes, one at a time, and show
// that some crash notices.

func powerInputs() Inputs {
	var checks []world.Check
	files := map[string]string{}
	for i := range 4 {
		checks = append(checks, world.Check{ID: fmt.Sprintf("finding-%d", i), Summary: "needs a person", Kind: world.CheckFileExists,
			Path: fmt.Sprintf("reviews/%d.md", i), Priority: 50 - i})
	}
	for i := range 2 {
		p := fmt.Sprintf("docs/%d.md", i)
		files[p] = "teh text\n"
		checks = append(checks, world.Check{ID: fmt.Sprintf("typo-%d", i), Summary: "typo", Kind: world.CheckAbsentText, Path: p, Text: "teh ",
			Priority: 20 - i, Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "teh ", Replace: "the "}}})
	}
	return Inputs{
		Goal: intent.Goal{Schema: intent.Schema, ID: "power", Mission: "m", Success: intent.Success{AllChecksPass: true}},
		Contract: governance.Contract{Schema: governance.ContractSchema, ID: "c", Authority: governance.Authority{ID: "op", Mode: governance.AuthProjectWrite},
			Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: "A2", CognitiveDepth: "D2"},
			Rules:       []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}}},
		Spec: world.Spec{Schema: world.SpecSchema, Files: files, Checks: checks},
	}
}

type frozen struct{}

func (frozen) Now() time.Time { return time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) }

type powerCut struct{}

// trial is one run: an fsync group switched off (or none) and a crash at
// the nth arrival at a failpoint (or none).
type trial struct {
	skip      string
	failpoint string
	nth       int
}

type outcome struct {
	history, world string
	duplicates     int
}

var issueTag = regexp.MustCompile(`(?m)^- \[([0-9a-f]{16})\]`)

// syncGroup names the kind of fsync an operation is, so one kind can be
// switched off everywhere: hex digests are masked out of names.
func syncGroup(op disk.SyncOp) string {
	name := regexp.MustCompile(`[0-9a-f]{16,}`).ReplaceAllString(op.Name, "#")
	name = regexp.MustCompile(`/[0-9a-f]{2}(/|$)`).ReplaceAllString(name, "/##$1")
	if op.Dir {
		return "dir " + name
	}
	return "file " + name
}

// runTrial runs the power world to the end under a trial and reports what
// it ended with, or the problem it hit.
func runTrial(t *testing.T, tr trial, record *[]string) (outcome, error) {
	t.Helper()
	mem := disk.NewMem()
	root := t.TempDir()
	hits := 0
	fp := func(stage string) {
		if stage == tr.failpoint {
			hits++
			if hits == tr.nth {
				panic(powerCut{})
			}
		}
	}
	opt := Options{Clock: frozen{}, Revision: "t", CheckpointEvery: 2, Failpoint: fp}
	if _, err := InitOn(t.Context(), mem, root, powerInputs(), "run:power", opt); err != nil {
		return outcome{}, err
	}
	mem.SkipSync(func(op disk.SyncOp) bool {
		g := syncGroup(op)
		if record != nil && !slices.Contains(*record, g) {
			*record = append(*record, g)
		}
		return g == tr.skip
	})
	crashed := false
	runOnce := func() (cycles int, err error) {
		var r *Run
		defer func() {
			if p := recover(); p != nil {
				if _, ok := p.(powerCut); !ok {
					panic(p)
				}
				if r != nil {
					r.Abandon()
				}
				mem.Crash()
				crashed = true
				cycles, err = -1, nil
			}
		}()
		r, err = OpenOn(t.Context(), mem, root, opt, func(x *Run) { r = x })
		if err != nil {
			return 0, err
		}
		rep, err := r.Driver.Run(context.Background(), 100, nil)
		if cerr := r.Close(); err == nil {
			err = cerr
		}
		return rep.CyclesExecuted, err
	}
	for range 20 {
		n, err := runOnce()
		if err != nil {
			return outcome{}, fmt.Errorf("after crash=%t: %w", crashed, err)
		}
		if n == 0 {
			break
		}
	}
	if tr.failpoint != "" && !crashed {
		return outcome{}, errNotReached
	}
	rep, err := ledger.Verify(mem, nil)
	if err != nil || !rep.OK {
		return outcome{}, fmt.Errorf("ledger verify: %v %v", err, rep.Damage)
	}
	return summarise(t, mem, root)
}

var errNotReached = errors.New("failpoint not reached")

func summarise(t *testing.T, mem *disk.Mem, root string) (outcome, error) {
	h := sha256.New()
	err := ledger.Scan(mem, func(r event.Record) error {
		if r.Event.Type == event.CycleCompleted {
			h.Write([]byte(r.Event.Object.Ref + "\n"))
		}
		return nil
	})
	if err != nil {
		return outcome{}, err
	}
	out := outcome{history: hex.EncodeToString(h.Sum(nil))}
	issues, _ := os.ReadFile(filepath.Join(root, "sandbox", "world", world.IssuesFile))
	seen := map[string]int{}
	for _, m := range issueTag.FindAllStringSubmatch(string(issues), -1) {
		seen[m[1]]++
	}
	findings := strings.Count(string(issues), "finding-")
	for _, n := range seen {
		if n > 1 {
			out.duplicates++
		}
	}
	if findings > 4 {
		out.duplicates += findings - 4
	}
	wh := sha256.New()
	var paths []string
	_ = filepath.Walk(filepath.Join(root, "sandbox", "world"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		fmt.Fprintf(wh, "%s\x00", p[len(root):])
		wh.Write(b)
	}
	out.world = hex.EncodeToString(wh.Sum(nil))
	return out, nil
}

func crashPoints() []trial {
	var ts []trial
	for _, fp := range []string{"after-decision", "before-action-commit", "after-action-commit", "after-ledger-append", "mid-checkpoint", "after-checkpoint"} {
		for nth := 1; nth <= 4; nth++ {
			ts = append(ts, trial{failpoint: fp, nth: nth})
		}
	}
	return ts
}

// TestPowerLossAtEveryFailpoint: with every fsync in place, a power loss
// at any failpoint loses nothing and repeats nothing.
func TestPowerLossAtEveryFailpoint(t *testing.T) {
	want, err := runTrial(t, trial{}, nil)
	require.NoError(t, err)
	require.Zero(t, want.duplicates)
	crashes := 0
	for _, tr := range crashPoints() {
		got, err := runTrial(t, tr, nil)
		if errors.Is(err, errNotReached) {
			continue
		}
		require.NoError(t, err, "crash at %s #%d", tr.failpoint, tr.nth)
		require.Zero(t, got.duplicates, "crash at %s #%d: duplicate effect", tr.failpoint, tr.nth)
		require.Equal(t, want, got, "crash at %s #%d: outcome differs from the uninterrupted run", tr.failpoint, tr.nth)
		crashes++
	}
	require.Greater(t, crashes, 12, "too few crash points were reached")
}

// TestEveryFsyncIsNeeded switches off each kind of fsync the loop makes,
// one kind at a time, and requires that some power loss then breaks
// something: a lost or unloadable checkpoint, a broken ledger, an effect
// applied twice, or an outcome that differs from the uninterrupted run.
func TestEveryFsyncIsNeeded(t *testing.T) {
	var groups []string
	want, err := runTrial(t, trial{}, &groups)
	require.NoError(t, err)
	slices.Sort(groups)
	require.NotEmpty(t, groups)
	var blind []string
	for _, g := range groups {
		noticed := false
		for _, tr := range crashPoints() {
			tr.skip = g
			got, err := runTrial(t, tr, nil)
			if errors.Is(err, errNotReached) {
				continue
			}
			if err != nil || got != want {
				noticed = true
				break
			}
		}
		if !noticed {
			blind = append(blind, g)
		}
	}
	t.Logf("fsync kinds exercised: %v", groups)
	require.Empty(t, blind, "these fsyncs can be switched off without any power loss noticing")
}

func TestInboxWriteSurvivesPowerLoss(t *testing.T) {
	mem := disk.NewMem()
	require.NoError(t, mem.MkdirAll("."))
	id, err := writeItem(mem)
	require.NoError(t, err)
	mem.Crash()
	b, err := mem.ReadFile("inbox/" + id + ".json")
	require.NoError(t, err)
	require.True(t, bytes.Contains(b, []byte(`"source":"manual_resume"`)))
}

func writeItem(fsys disk.FS) (string, error) {
	return dirstore.Inbox{FS: fsys}.Write(&state.WakeSignal{Schema: state.WakeSignalSchema, Source: "manual_resume", DedupKey: "k", CreatedAt: "2026-01-01T00:00:00Z",
		ExpiresAt: "2026-01-02T00:00:00Z", By: "t"})
}
