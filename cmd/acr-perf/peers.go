package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// The side-by-side section of docs/PERFORMANCE.md lies between these two
// markers. make bench-peers rewrites what is between them; make bench
// rewrites the rest of the file and keeps everything from the first
// generated section (this one or the workers section) to the end, the
// hand-written analysis among them.
const (
	peersBegin = "<!-- peers:begin: written by make bench-peers, kept by make bench -->"
	peersEnd   = "<!-- peers:end -->"
)

// peerRatio is one line pair of side-by-side.sh: acr against one peer.
type peerRatio struct {
	label      string  // as the script names the peer
	wall       string  // the script's "wall ms" figures, verbatim
	throughput float64 // acr's throughput as a multiple of the peer's
}

// sideBySide is what side-by-side.sh printed, parsed.
type sideBySide struct {
	ratios        []peerRatio
	bytesPerCycle float64 // bytes in the state directory after the run, per cycle
	cycles        int
}

var (
	wallLine  = regexp.MustCompile(`^(.+): wall ms (.+)$`)
	ratioLine = regexp.MustCompile(`^(.+): acr throughput = ([0-9.]+)x the peer's$`)
	bytesLine = regexp.MustCompile(`^acr: ([0-9]+) bytes on disk per cycle \(([0-9]+) cycles\)$`)
)

// parseSideBySide reads side-by-side.sh's output. Lines it does not know
// are ignored (the script prints progress of npm and go build); a figure
// the section needs and the output lacks is an error, so that a broken
// run never writes a table with holes.
func parseSideBySide(out string) (sideBySide, error) {
	var s sideBySide
	walls := map[string]string{}
	for _, l := range strings.Split(out, "\n") {
		l = strings.TrimSpace(l)
		if m := ratioLine.FindStringSubmatch(l); m != nil {
			r, err := strconv.ParseFloat(m[2], 64)
			if err != nil {
				return s, fmt.Errorf("side-by-side: ratio %q: %w", m[2], err)
			}
			s.ratios = append(s.ratios, peerRatio{label: m[1], wall: walls[m[1]], throughput: r})
		} else if m := wallLine.FindStringSubmatch(l); m != nil {
			walls[m[1]] = m[2]
		} else if m := bytesLine.FindStringSubmatch(l); m != nil {
			s.bytesPerCycle, _ = strconv.ParseFloat(m[1], 64)
			s.cycles, _ = strconv.Atoi(m[2])
		}
	}
	if len(s.ratios) == 0 {
		return s, errors.New("side-by-side: no \"acr throughput\" line in its output")
	}
	if s.cycles == 0 {
		return s, errors.New("side-by-side: no \"bytes on disk per cycle\" line in its output")
	}
	return s, nil
}

// syscalls is what strace -c counted over one acr run.
type syscalls struct {
	fsyncs, openats float64 // per cycle
}

// parseStraceSummary reads strace -c's table and returns the calls of
// each named syscall.
func parseStraceSummary(table string) map[string]int {
	calls := map[string]int{}
	for _, l := range strings.Split(table, "\n") {
		f := strings.Fields(l)
		// % time, seconds, usecs/call, calls, [errors,] syscall
		if len(f) < 5 || strings.HasPrefix(f[0], "-") || f[0] == "%" {
			continue
		}
		n, err := strconv.Atoi(f[3])
		if err != nil {
			continue
		}
		calls[f[len(f)-1]] += n
	}
	return calls
}

// queueRun is acr's own side of the comparison measured in-process: one
// run of the same queue the script uses, timed by the kernel's rusage, and
// one more under strace. Both exclude acr init.
type queueRun struct {
	cpuPerCycle time.Duration
	wall        time.Duration
	sys         syscalls
	straced     bool
	steps       []timedStep // ACR_TIMINGS of the CPU run
}

// timedStep is one step of acr's ACR_TIMINGS report (docs/cli.md).
type timedStep struct {
	Step    string  `json:"step"`
	Count   int     `json:"count"`
	TotalMS float64 `json:"total_ms"`
	MeanMS  float64 `json:"mean_ms"`
}

// readTimings reads the steps of an ACR_TIMINGS file.
func readTimings(path string) ([]timedStep, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("ACR_TIMINGS of the queue run: %w", err)
	}
	var r struct {
		Schema string      `json:"schema"`
		Steps  []timedStep `json:"steps"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("ACR_TIMINGS of the queue run: %w", err)
	}
	if r.Schema != "acr.timings.v1" || len(r.Steps) == 0 {
		return nil, fmt.Errorf("ACR_TIMINGS of the queue run: schema %q with %d steps", r.Schema, len(r.Steps))
	}
	return r.Steps, nil
}

// measureQueue runs the queue.sh inputs (written by side-by-side.sh under
// work) through bin twice: once for CPU, once under strace if present.
func measureQueue(bin, work string, n int) (queueRun, error) {
	in := filepath.Join(work, fmt.Sprintf("acr-queue-inputs-%d", n))
	fresh := func(dir string) error {
		os.RemoveAll(dir)
		cmd := exec.Command(bin, "init", "--goal", filepath.Join(in, "goal.json"), "--contract", filepath.Join(in, "contract.json"),
			"--env", filepath.Join(in, "env.json"), "--state-dir", dir)
		if b, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("acr init: %v\n%s", err, b)
		}
		return nil
	}
	var q queueRun
	dir := filepath.Join(work, "acr-perf-queue")
	defer os.RemoveAll(dir)
	if err := fresh(dir); err != nil {
		return q, err
	}
	timings := filepath.Join(work, "acr-perf-timings.json")
	defer os.Remove(timings)
	run := exec.Command(bin, "run", "--max-cycles", strconv.Itoa(n), "--state-dir", dir, "--json")
	run.Env = append(os.Environ(), "ACR_TIMINGS="+timings)
	start := time.Now()
	if b, err := run.CombinedOutput(); err != nil {
		return q, fmt.Errorf("acr run: %v\n%s", err, b)
	}
	q.wall = time.Since(start)
	st := run.ProcessState
	q.cpuPerCycle = (st.UserTime() + st.SystemTime()) / time.Duration(n)
	var err error
	if q.steps, err = readTimings(timings); err != nil {
		return q, err
	}
	if _, err := exec.LookPath("strace"); err != nil {
		return q, nil
	}
	if err := fresh(dir); err != nil {
		return q, err
	}
	var table bytes.Buffer
	cmd := exec.Command("strace", "-f", "-c", "-e", "trace=fsync,fdatasync,openat", bin, "run", "--max-cycles", strconv.Itoa(n), "--state-dir", dir, "--json")
	cmd.Stderr = &table
	cmd.Stdout = io.Discard
	if err := cmd.Run(); err != nil {
		return q, fmt.Errorf("strace acr run: %v\n%s", err, table.String())
	}
	calls := parseStraceSummary(table.String())
	q.sys = syscalls{fsyncs: float64(calls["fsync"]+calls["fdatasync"]) / float64(n), openats: float64(calls["openat"]) / float64(n)}
	q.straced = true
	return q, nil
}

// renderPeers is the section between the markers.
func renderPeers(s sideBySide, q queueRun, raw, date, load string) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("%s", peersBegin)
	p("## Side by side with DBOS Transact Go and LangGraph.js")
	p("")
	p("Measured by `make bench-peers` on %s (load average at start %s): `../shared/peers/side-by-side.sh` ran acr's", date, load)
	p("%d-item queue (one durable sandbox effect per cycle) and each peer's %d-cycle loop as whole processes, alternated,", s.cycles, s.cycles)
	p("and took the median of the per-pair ratios. The syscall and CPU rows come from one more run of the same queue (`acr run`")
	p("only, `acr init` excluded; the CPU run with `ACR_TIMINGS` on, about a dozen clock readings a cycle).")
	p("")
	p("| figure | goal | measured | |")
	p("| --- | --- | --- | --- |")
	goals := map[string]float64{"dbos": 1.3, "langgraph": 3.0}
	for _, r := range s.ratios {
		goal := 1.0
		for k, g := range goals {
			if strings.Contains(strings.ToLower(r.label), k) {
				goal = g
			}
		}
		p("| acr throughput vs %s | ≥ %.1f× | %.2f× (wall ms %s) | %s |", r.label, goal, r.throughput, r.wall, verdict(r.throughput >= goal))
	}
	kb := s.bytesPerCycle / 1000
	p("| bytes in the state directory per acting cycle | ≤ 8 KB | %.1f KB | %s |", kb, verdict(kb <= 8))
	if q.straced {
		p("| fsyncs per acting cycle (strace) | ≤ 3 | %.2f | %s |", q.sys.fsyncs, verdict(q.sys.fsyncs <= 3))
		p("| openat calls per acting cycle (strace) | ≤ 5 | %.2f | %s |", q.sys.openats, verdict(q.sys.openats <= 5))
	} else {
		p("| fsyncs and openat calls per acting cycle | ≤ 3, ≤ 5 | not counted: strace not installed | |")
	}
	cpu := q.cpuPerCycle
	p("| CPU per acting cycle (user + system) | ≤ 0.6 ms | %v | %s |", cpu.Round(time.Microsecond), verdict(cpu <= 600*time.Microsecond))
	p("")
	renderSteps(p, q, s.cycles)
	p("")
	p("<details><summary>side-by-side.sh output</summary>")
	p("")
	p("```")
	p("%s", strings.TrimRight(raw, "\n"))
	p("```")
	p("")
	p("</details>")
	p("%s", peersEnd)
	return b.String()
}

// renderSteps is where the CPU run's wall time went, step by step
// (ACR_TIMINGS), per cycle.
func renderSteps(p func(string, ...any), q queueRun, cycles int) {
	var total float64
	for _, st := range q.steps {
		total += st.TotalMS
	}
	p("Where that run's wall time went, step by step (`ACR_TIMINGS`, docs/cli.md): %.0f ms of its %.0f ms were inside",
		total, float64(q.wall)/float64(time.Millisecond))
	p("a cycle's steps (the rest is the process's start, opening the run, and the last checkpoint and seal).")
	p("")
	p("| step | per cycle | share | times entered |")
	p("| --- | --- | --- | --- |")
	for _, st := range q.steps {
		p("| `%s` | %.3f ms | %.0f%% | %d |", st.Step, st.TotalMS/float64(cycles), 100*st.TotalMS/total, st.Count)
	}
}

// spliceSection puts section in place of the one between the markers
// begin and end in doc, or appends it if doc has none.
func spliceSection(doc, begin, end, section string) string {
	i := strings.Index(doc, begin)
	j := strings.Index(doc, end)
	if i < 0 || j < i {
		return strings.TrimRight(doc, "\n") + "\n\n" + section
	}
	return doc[:i] + strings.TrimRight(section, "\n") + doc[j+len(end):]
}

// keptTail is the part of doc make bench keeps: from the first generated
// section (side by side, or workers) to the end, or nothing.
func keptTail(doc string) string {
	i := -1
	for _, m := range []string{peersBegin, workersBegin} {
		if k := strings.Index(doc, m); k >= 0 && (i < 0 || k < i) {
			i = k
		}
	}
	if i < 0 {
		return ""
	}
	return doc[i:]
}

// runPeers runs side-by-side.sh from peersDir against bin and writes its
// figures into out.
func runPeers(out, peersDir, bin, work string) error {
	if work == "" {
		work = filepath.Join(os.TempDir(), "acr-peers")
	}
	abs, err := filepath.Abs(bin)
	if err != nil {
		return err
	}
	load, _ := os.ReadFile("/proc/loadavg")
	loadAvg := strings.Join(strings.Fields(string(load))[:min(3, len(strings.Fields(string(load))))], " ")
	date := time.Now().UTC().Format("2006-01-02 15:04 UTC")
	var raw bytes.Buffer
	script := filepath.Join(peersDir, "side-by-side.sh")
	cmd := exec.Command(script)
	cmd.Env = append(os.Environ(), "ACR="+abs, "PEERS_WORK="+work)
	cmd.Stdout = io.MultiWriter(&raw, os.Stderr)
	cmd.Stderr = os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w", script, err)
	}
	s, err := parseSideBySide(raw.String())
	if err != nil {
		return err
	}
	fmt.Fprintln(os.Stderr, "measuring CPU and syscalls of one more queue run...")
	q, err := measureQueue(abs, work, s.cycles)
	if err != nil {
		return err
	}
	section := renderPeers(s, q, raw.String(), date, loadAvg)
	fmt.Print(section)
	doc, err := os.ReadFile(out)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	return os.WriteFile(out, []byte(spliceSection(string(doc), peersBegin, peersEnd, section)), 0o644)
}
