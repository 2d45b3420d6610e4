package perf

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/world"
)

// Proc is one timed process run.
type Proc struct {
	Wall   time.Duration
	CPU    time.Duration // user + system time of the process itself
	MaxRSS int64         // bytes
	// RSS is the resident set size (bytes) sampled every 2 ms while the
	// process ran, in order: it tells memory that grows with the run's
	// length from a passing excursion.
	RSS []int64
	Out string
}

// RSSTenths returns the median of the RSS samples in the first and in the
// last tenth of the run.
func (p Proc) RSSTenths() (first, last int64) {
	n := len(p.RSS) / 10
	if n == 0 {
		return 0, 0
	}
	med := func(xs []int64) int64 {
		s := slices.Clone(xs)
		slices.Sort(s)
		return s[len(s)/2]
	}
	return med(p.RSS[:n]), med(p.RSS[len(p.RSS)-n:])
}

// RunAcr runs the acr binary with args and reports its wall time and peak
// resident set size. The peak is read from /proc/<pid>/status (VmHWM) while
// the process runs: rusage's maxrss would include the parent's memory,
// because Go starts children with vfork.
func RunAcr(bin string, args ...string) (Proc, error) {
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "ACR_FAILPOINT=", "ACR_CLOCK=")
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	t := time.Now()
	if err := cmd.Start(); err != nil {
		return Proc{}, err
	}
	done := make(chan struct{})
	type mem struct {
		hwm int64
		rss []int64
	}
	sampled := make(chan mem, 1)
	go func() {
		var m mem
		status := fmt.Sprintf("/proc/%d/status", cmd.Process.Pid)
		for {
			if b, err := os.ReadFile(status); err == nil {
				if kb, ok := statusKB(b, "VmHWM:"); ok {
					m.hwm = max(m.hwm, kb*1024)
				}
				if kb, ok := statusKB(b, "VmRSS:"); ok && kb > 0 {
					m.rss = append(m.rss, kb*1024)
				}
			}
			select {
			case <-done:
				sampled <- m
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := cmd.Wait()
	close(done)
	m := <-sampled
	p := Proc{Wall: time.Since(t), Out: out.String(), MaxRSS: m.hwm, RSS: m.rss}
	if ps := cmd.ProcessState; ps != nil {
		p.CPU = ps.UserTime() + ps.SystemTime()
	}
	if err != nil {
		return p, fmt.Errorf("acr %v: %w\n%s", args, err, p.Out)
	}
	return p, nil
}

// statusKB reads a "Name:   123 kB" line of /proc/<pid>/status.
func statusKB(status []byte, name string) (int64, bool) {
	for l := range strings.SplitSeq(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, name); ok {
			var kb int64
			_, err := fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb, err == nil
		}
	}
	return 0, false
}

// Median returns the median of durations.
func Median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// Break makes a generated run's world need work again.
func Break(dir string) error {
	return os.WriteFile(filepath.Join(dir, "sandbox", "world", "README.md"), []byte(Broken), 0o644)
}

// StepTimes times acr step on two runs, alternating, each step having one
// piece of work to do; it returns the medians.
func StepTimes(bin, a, b string, trials int) (time.Duration, time.Duration, error) {
	var ta, tb []time.Duration
	for range trials {
		for _, x := range []struct {
			dir string
			ts  *[]time.Duration
		}{{a, &ta}, {b, &tb}} {
			if err := Break(x.dir); err != nil {
				return 0, 0, err
			}
			p, err := RunAcr(bin, "--state-dir", x.dir, "step", "--json")
			if err != nil {
				return 0, 0, err
			}
			if !strings.Contains(p.Out, `"executed":true`) {
				return 0, 0, fmt.Errorf("step on %s did not execute a cycle: %s", x.dir, p.Out)
			}
			*x.ts = append(*x.ts, p.Wall)
		}
	}
	return Median(ta), Median(tb), nil
}

// Snapshot records every file's path, size, mode time and content hash.
func Snapshot(dir string) (string, error) {
	var b strings.Builder
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		fmt.Fprintf(&b, "%s %d %d %s\n", p, info.Size(), info.ModTime().UnixNano(), info.Mode())
		if d.Type().IsRegular() {
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			fmt.Fprintf(&b, "%x\n", sha256.Sum256(data))
		}
		return nil
	})
	return b.String(), err
}

// IdleTimes times acr run on an idle run and acr version, alternating, and
// reports whether the idle runs left the directory untouched.
func IdleTimes(bin, dir string, trials int) (run, version time.Duration, untouched bool, err error) {
	for range 5 { // settle: run until nothing is eligible
		p, err := RunAcr(bin, "--state-dir", dir, "run", "--max-cycles", "100", "--json")
		if err != nil {
			return 0, 0, false, err
		}
		if strings.Contains(p.Out, `"cycles_executed":0`) {
			break
		}
	}
	before, err := Snapshot(dir)
	if err != nil {
		return 0, 0, false, err
	}
	var tr, tv []time.Duration
	for range trials {
		p, err := RunAcr(bin, "--state-dir", dir, "run", "--max-cycles", "10", "--json")
		if err != nil {
			return 0, 0, false, err
		}
		tr = append(tr, p.Wall)
		v, err := RunAcr(bin, "version")
		if err != nil {
			return 0, 0, false, err
		}
		tv = append(tv, v.Wall)
	}
	after, err := Snapshot(dir)
	return Median(tr), Median(tv), before == after, err
}

// QueueInputs is a run with n pieces of work: a queue file with n pending
// items, each cycle draining one with one durable sandbox effect.
func QueueInputs(n int) runstore.Inputs {
	return runstore.Inputs{
		Goal: intent.Goal{Schema: intent.Schema, ID: "queue", Mission: "drain the queue", Success: intent.Success{AllChecksPass: true}},
		Contract: governance.Contract{Schema: governance.ContractSchema, ID: "queue", Authority: governance.Authority{ID: "op", Mode: governance.AuthProjectWrite},
			Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: "A2", CognitiveDepth: "D2"},
			Rules:       []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}},
			Budgets:     budget.Run{Cycles: budget.Limit{Hard: int64(n) + 10}}},
		Spec: world.Spec{Schema: world.SpecSchema, Files: map[string]string{"queue.txt": strings.Repeat("p\n", n)},
			Checks: []world.Check{{ID: "queue", Summary: "items pending", Kind: world.CheckAbsentText, Path: "queue.txt", Text: "p", Priority: 10,
				Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "p", Replace: "d", Occurrences: 1}}}}},
	}
}

// InitQueue creates a queue run in dir.
func InitQueue(ctx context.Context, dir string, n int) error {
	_, err := runstore.Init(ctx, dir, QueueInputs(n), "run:queue", false, runstore.Options{Clock: fixedClock{}, Revision: "perf"})
	return err
}

// Floor measures the machine's durable floor in dir: per cycle, one
// fsynced ledger append and one atomic file replace (temp, fsync, rename,
// fsync of the directory). It returns cycles per second.
func Floor(dir string, cycles int) (float64, error) {
	d, err := disk.CreateOSDir(dir)
	if err != nil {
		return 0, err
	}
	f, err := d.OpenAppend("ledger")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	line := []byte(strings.Repeat("x", 2000) + "\n")
	cp := []byte(strings.Repeat("y", 2000))
	t := time.Now()
	for range cycles {
		if _, err := f.Write(line); err != nil {
			return 0, err
		}
		if err := f.Sync(); err != nil {
			return 0, err
		}
		if err := disk.ReplaceFile(d, "checkpoint.json", cp); err != nil {
			return 0, err
		}
	}
	return float64(cycles) / time.Since(t).Seconds(), nil
}

// DirSize sums the sizes of the files below dir.
func DirSize(dir string) (int64, error) {
	var n int64
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	})
	return n, err
}

// VerifyVsSHA256 measures ledger verify throughput and plain SHA-256 over
// the same file, in bytes per second.
func VerifyVsSHA256(dir string) (verify, sha float64, err error) {
	fsys, err := disk.OpenOSDir(dir)
	if err != nil {
		return 0, 0, err
	}
	p := filepath.Join(dir, filepath.FromSlash(ledger.FileName))
	fi, err := os.Stat(p)
	if err != nil {
		return 0, 0, err
	}
	size := float64(fi.Size())
	var bestV, bestS time.Duration
	for range 3 {
		t := time.Now()
		rep, err := ledger.Verify(fsys, nil)
		if err != nil || !rep.OK {
			return 0, 0, fmt.Errorf("verify: %v %v", err, rep.Damage)
		}
		if d := time.Since(t); bestV == 0 || d < bestV {
			bestV = d
		}
		t = time.Now()
		f, err := os.Open(p)
		if err != nil {
			return 0, 0, err
		}
		h := sha256.New()
		if _, err := io.CopyBuffer(h, f, make([]byte, 1<<20)); err != nil {
			f.Close()
			return 0, 0, err
		}
		f.Close()
		if d := time.Since(t); bestS == 0 || d < bestS {
			bestS = d
		}
	}
	return size / bestV.Seconds(), size / bestS.Seconds(), nil
}

// VerifyRate measures ledger verify throughput over the ledger's bytes,
// wherever they are kept (a sealed ledger is read through its segments),
// in bytes per second: the best of three.
func VerifyRate(dir string) (float64, error) {
	fsys, err := disk.OpenOSDir(dir)
	if err != nil {
		return 0, err
	}
	var best time.Duration
	var size int64
	for range 3 {
		t := time.Now()
		rep, err := ledger.Verify(fsys, nil)
		if err != nil || !rep.OK {
			return 0, fmt.Errorf("verify: %v %v", err, rep.Damage)
		}
		if d := time.Since(t); best == 0 || d < best {
			best = d
		}
		size = rep.Frontier.Offset
	}
	return float64(size) / best.Seconds(), nil
}

// QueueFiles are the paths of a queue run's input files, as acr init
// takes them (--goal, --contract, --env).
type QueueFiles struct {
	Goal, Contract, Env string
}

// WriteQueueFiles writes the inputs of QueueInputs(n) into dir as the three
// JSON files acr init reads, so that whole-process benchmarks create queue
// runs with the real command. cycles is the contract's hard cycle budget
// (QueueInputs gives n+10), more for a run that is woken many times.
func WriteQueueFiles(dir string, n int, cycles int64) (QueueFiles, error) {
	in := QueueInputs(n)
	in.Contract.Budgets.Cycles.Hard = cycles
	f := QueueFiles{Goal: filepath.Join(dir, "goal.json"), Contract: filepath.Join(dir, "contract.json"), Env: filepath.Join(dir, "env.json")}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return f, fmt.Errorf("queue files: %w", err)
	}
	for path, doc := range map[string]any{f.Goal: in.Goal, f.Contract: in.Contract, f.Env: in.Spec} {
		b, err := json.MarshalIndent(doc, "", "  ")
		if err != nil {
			return f, fmt.Errorf("queue files: encode %s: %w", filepath.Base(path), err)
		}
		if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
			return f, fmt.Errorf("queue files: %w", err)
		}
	}
	return f, nil
}
