package report

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/perf"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/scenario"
)

var (
	update    = flag.Bool("update", false, "rewrite the golden files in testdata/ (review the diff)")
	genCycles = flag.Int64("report.cycles", 2500, "cycles of the generated history TestGeneratedRun reads (100000 for the full-size check; generating it takes minutes)")
)

// runScenario runs a reference scenario and returns its state directory.
func runScenario(t *testing.T, name string) string {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", name))
	require.NoError(t, err)
	res, err := scenario.Run(sc, scenario.Options{Keep: true})
	require.NoError(t, err)
	require.True(t, res.Passed, "%v", res.Failures)
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(res.Dir)) })
	return res.Dir
}

// readRun builds the view of the run in dir, as acr report does.
func readRun(t testing.TB, dir string) *View {
	t.Helper()
	return readRunWith(t, dir, Options{Generator: "acr test"})
}

func readRunWith(t testing.TB, dir string, o Options) *View {
	t.Helper()
	st, _, err := runstore.ReadState(dir)
	require.NoError(t, err)
	fsys, err := disk.OpenOSDir(dir)
	require.NoError(t, err)
	v, err := Read(ledger.NewReader(fsys), HeadOf(st), o)
	require.NoError(t, err)
	return v
}

// TestReportGolden pins the page of the mixed 100-cycle scenario: approvals,
// commitments created, modified, suspended, resumed, completed and
// abandoned, compactions, a
// strategic review and two recoveries (run -update to rewrite it, then
// review the diff, in a browser too), lays the same run on a wall-clock
// axis, and loads the page in a real browser.
func TestReportGolden(t *testing.T) {
	t.Parallel()
	dir := runScenario(t, "p14-mixed-100")
	v := readRun(t, dir)
	var page bytes.Buffer
	require.NoError(t, Render(&page, v))
	golden(t, filepath.Join("testdata", "p14-mixed-100.html"), page.Bytes())

	html := page.String()
	for _, want := range []string{
		`id="timeline"`, `class="cycle disp-CONTINUE"`, `class="cycle disp-IDLE"`, `class="cycle disp-SLEEP"`, `class="cycle disp-WAIT_APPROVAL"`,
		`id="markers-compaction"`, `id="commitments"`, `class="mark ev-created"`, `class="mark ev-modified"`, `class="mark ev-abandoned"`, `class="span status-suspended"`,
		`id="approvals"`, `class="approval state-approved"`, `id="compactions"`, `class="compaction"`, `id="incidents"`,
		`id="budgets"`, `id="budget-cycles" class="budget budget-ok"`, `id="cycles"`, `id="c110" class="cycle-detail disp-IDLE"`,
		`<a href="#c53"><rect class="cycle disp-WAIT_APPROVAL"`,
		`id="decisions"`, `<a href="#c16"><rect class="cycle dec-DEFER"`, `<a href="#c53"><rect class="cycle dec-ESCALATE"`,
		`id="failing"`, `failing checks (now 0 of 11)`, `id="checks"`, `<tr class="check check-failing"><td><code>archive-index</code>`,
		// The marker row and the section count the same approvals.
		`<span class="label">approvals (1)</span>`, `<h2>Approvals (1)</h2>`,
	} {
		assert.Contains(t, html, want)
	}
	assert.Equal(t, int64(110), v.Cycles)
	assert.Equal(t, 110, strings.Count(html, `<rect class="cycle disp-`), "one bar per cycle")
	assert.Equal(t, 110, strings.Count(html, `<rect class="cycle dec-`), "and one decision per cycle")
	assert.Len(t, v.Checks, 13)
	assert.Equal(t, 110, strings.Count(html, `<details id="c`), "every cycle of a short run in detail")
	assert.Equal(t, int64(2), v.CompactionsN)
	require.Len(t, v.Approvals, 1)
	assert.Equal(t, "approved", v.Approvals[0].State)
	assert.Equal(t, "scenario", v.Approvals[0].By)
	assert.Len(t, v.Lanes, 4, "three standing commitments and one promoted")
	assert.Equal(t, int64(4), v.IncidentsN, "two recoveries, each started and completed")
	assertSelfContained(t, html)

	// On a wall-clock axis the 18 hours of the run are no longer evenly
	// spaced: the hours the run slept are wide, the bursts thin.
	tv := readRunWith(t, dir, Options{Generator: "acr test", TimeAxis: true})
	require.True(t, tv.TimeAxis)
	assert.Equal(t, []string{"2026-01-01T00:00:00Z", "2026-01-01T04:30:00Z", "2026-01-01T09:00:00Z", "2026-01-01T13:30:00Z", "2026-01-01T18:00:00Z"}, tv.Axis)
	widest, thin := 0.0, 0
	for _, b := range tv.Timeline.Bars {
		w, err := strconv.ParseFloat(b.W, 64)
		require.NoError(t, err)
		widest = max(widest, w)
		if w < 1 {
			thin++
		}
	}
	assert.Greater(t, widest, 100.0, "a wait of hours")
	assert.Greater(t, thin, 50, "cycles in bursts")
	page.Reset()
	require.NoError(t, Render(&page, tv))
	assert.Contains(t, page.String(), "The axis is the wall clock")

	t.Run("in a browser", func(t *testing.T) {
		inBrowser(t, v, `class="cycle disp-WAIT_APPROVAL"`, `class="approval state-approved"`, `class="mark ev-created"`)
	})
}

// assertSelfContained: nothing on the page points outside it.
func assertSelfContained(t *testing.T, html string) {
	t.Helper()
	for _, bad := range []string{"http://", "https://", "src=", "<link", "@import", "url("} {
		assert.NotContains(t, html, bad)
	}
	assert.Contains(t, html, `content="default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'"`)
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file (run go test ./internal/report -update)")
	assert.Equal(t, string(want), string(got), path)
}

// TestReportReadsWhatTheLedgerSays: the report of every reference
// scenario agrees with the scenario runner's own counts, whatever the run
// did (sleep, deferral, stop, fault, recovery).
func TestReportReadsWhatTheLedgerSays(t *testing.T) {
	t.Parallel()
	var n atomic.Int64
	t.Run("each", func(t *testing.T) {
		for _, name := range []string{"p03-sleep-wake-resume", "p04-deferred-evidence", "p08-commitment-deadline", "p11-crash-after-commit", "p13-budget-stop", "p16-provider-fault"} {
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", name))
				require.NoError(t, err)
				res, err := scenario.Run(sc, scenario.Options{Keep: true})
				require.NoError(t, err)
				t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(res.Dir)) })
				v := readRun(t, res.Dir)
				assert.Equal(t, res.Cycles, v.Cycles)
				got := map[string]int{}
				for _, tot := range v.Totals {
					if tot.Count > 0 {
						got[tot.Disposition] = int(tot.Count)
					}
				}
				assert.Equal(t, res.DispositionCounts, got)
				w := &countingWriter{}
				require.NoError(t, Render(w, v))
				n.Add(1)
			})
		}
	})
	require.Equal(t, int64(6), n.Load())
}

// TestGeneratedRun reads a generated history longer than the timeline
// holds (2,500 cycles; -report.cycles=100000 for the full-size check) and
// checks the page without keeping it: its size against MaxPageBytes,
// and the elements counted as it streams past; then loads the bucketed
// page in a real browser.
func TestGeneratedRun(t *testing.T) {
	t.Parallel()
	if testing.Short() && *genCycles > 10_000 {
		t.Skip("long generated history in -short mode")
	}
	dir := filepath.Join(t.TempDir(), "state")
	g, err := perf.Generate(t.Context(), dir, 0, *genCycles)
	require.NoError(t, err)
	v := readRun(t, dir)
	assert.Equal(t, g.Cycles, v.Cycles)
	assert.Equal(t, g.Cycles/2, v.Totals[0].Count, "CONTINUE: every other cycle fixes the README")
	assert.Equal(t, g.Cycles-g.Cycles/2, v.Totals[1].Count, "IDLE: the others find nothing to do")
	assert.Greater(t, v.BucketWidth, int64(1))
	assert.LessOrEqual(t, len(v.Timeline.Bars), DefaultMaxBars)
	assert.Greater(t, len(v.Timeline.Bars), DefaultMaxBars/2)
	require.NotNil(t, v.Recent)
	assert.Len(t, v.Recent.Bars, DefaultRecent)
	assert.Equal(t, g.Cycles/50, v.CompactionsN, "compaction every 50 cycles")
	assert.Equal(t, g.Cycles, v.Budgets[0].Used)

	w := &matchWriter{needles: []string{`class="bucket"`, `<rect class="cycle disp-`, `<details id="c`, `id="recent"`, `class="compaction"`}}
	require.NoError(t, Render(w, v))
	t.Logf("%d cycles, %d ledger bytes: page %d bytes, %d bars %d cycles wide", g.Cycles, g.Bytes, w.n, len(v.Timeline.Bars), v.BucketWidth)
	assert.LessOrEqual(t, w.n, int64(MaxPageBytes))
	assert.Equal(t, len(v.Timeline.Bars), w.counts[0])
	assert.Equal(t, DefaultRecent, w.counts[1], "one bar per recent cycle")
	assert.Equal(t, len(v.Details), w.counts[2])
	assert.Equal(t, 1, w.counts[3])
	assert.Equal(t, int(min(v.CompactionsN, DefaultMaxCompactions)), w.counts[4])

	// The report never writes into the state directory.
	before := snapshotDir(t, dir)
	readRun(t, dir)
	assert.Equal(t, before, snapshotDir(t, dir))

	t.Run("in a browser", func(t *testing.T) {
		inBrowser(t, v, `class="bucket"`, `id="recent"`, fmt.Sprintf(`id="c%d"`, g.Cycles), `class="compaction"`)
	})
}

// matchWriter counts bytes and occurrences of needles as a page streams
// past, keeping only a needle's length of it.
type matchWriter struct {
	n       int64
	needles []string
	counts  []int
	tail    []byte
}

func (w *matchWriter) Write(p []byte) (int, error) {
	if w.counts == nil {
		w.counts = make([]int, len(w.needles))
	}
	w.n += int64(len(p))
	longest := 0
	for _, s := range w.needles {
		longest = max(longest, len(s))
	}
	buf := append(w.tail, p...)
	for i, s := range w.needles {
		// Count matches that end in the new bytes only.
		from := max(len(w.tail)-len(s)+1, 0)
		w.counts[i] += strings.Count(string(buf[from:]), s)
	}
	w.tail = append(w.tail[:0], buf[max(len(buf)-longest+1, 0):]...)
	return len(p), nil
}

// snapshotDir lists every file under dir with its size and modification time.
func snapshotDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%s %d %s", fi.Mode(), fi.Size(), fi.ModTime())
		return nil
	}))
	return out
}

// TestReadDamagedLedger: damage in the ledger stops the report with the
// ledger's own error, naming the line.
func TestReadDamagedLedger(t *testing.T) {
	t.Parallel()
	dir := runScenario(t, "p05-approval-escalation")
	st, _, err := runstore.ReadState(dir)
	require.NoError(t, err)
	path := filepath.Join(dir, "ledger", "events.jsonl")
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	i := bytes.Index(b, []byte(`"persistent.cycle.completed"`))
	require.Positive(t, i)
	b[i+5] ^= 0x01
	require.NoError(t, os.WriteFile(path, b, 0o644))
	fsys, err := disk.OpenOSDir(dir)
	require.NoError(t, err)
	_, err = Read(ledger.NewReader(fsys), HeadOf(st), Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "read ledger ledger/events.jsonl")
	assert.Contains(t, err.Error(), "line hash mismatch")
	assert.ErrorIs(t, err, ledger.ErrCorrupt, "acr report exits 65 on it, like every integrity error")
}
