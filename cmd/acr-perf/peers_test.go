package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const sampleSideBySide = `building...
dbos-go 3-step sqlite FULL: wall ms  A median 4000 (min 3900, max 4100)  B median 2000 (min 1900, max 2100)  A/B median 2 (min 1.9, max 2.1)  (5 pairs, load 1.0 1.0 1.0)
dbos-go 3-step sqlite FULL: acr throughput = 0.50x the peer's
langgraph.js 3-node sqlite durable: wall ms  A median 4000  B median 8000  A/B median 0.5
langgraph.js 3-node sqlite durable: acr throughput = 2.00x the peer's
acr: 31000 bytes on disk per cycle (1000 cycles)
acr: 3.10 fsyncs per cycle (init included)
`

func TestParseSideBySide(t *testing.T) {
	s, err := parseSideBySide(sampleSideBySide)
	require.NoError(t, err)
	require.Len(t, s.ratios, 2)
	assert.Equal(t, "dbos-go 3-step sqlite FULL", s.ratios[0].label)
	assert.InDelta(t, 0.5, s.ratios[0].throughput, 1e-9)
	assert.Contains(t, s.ratios[0].wall, "A median 4000")
	assert.InDelta(t, 2.0, s.ratios[1].throughput, 1e-9)
	assert.Equal(t, 31000.0, s.bytesPerCycle)
	assert.Equal(t, 1000, s.cycles)

	for name, out := range map[string]string{
		"no ratio": "acr: 31000 bytes on disk per cycle (1000 cycles)\n",
		"no bytes": "x: acr throughput = 1.00x the peer's\n",
		"empty":    "",
	} {
		_, err := parseSideBySide(out)
		assert.Error(t, err, name)
	}
}

func TestReadTimings(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	require.NoError(t, os.WriteFile(good, []byte(`{"schema":"acr.timings.v1","total_ms":3,"steps":[{"step":"begin","count":2,"total_ms":3,"mean_ms":1.5}]}`), 0o644))
	steps, err := readTimings(good)
	require.NoError(t, err)
	assert.Equal(t, []timedStep{{Step: "begin", Count: 2, TotalMS: 3, MeanMS: 1.5}}, steps)
	for name, body := range map[string]string{"empty.json": `{"schema":"acr.timings.v1","steps":[]}`, "other.json": `{"schema":"x","steps":[{"step":"a","count":1}]}`, "bad.json": `{`} {
		path := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(path, []byte(body), 0o644))
		_, err := readTimings(path)
		assert.Error(t, err, name)
	}
	_, err = readTimings(filepath.Join(dir, "missing.json"))
	assert.Error(t, err)
}

func TestParseStraceSummary(t *testing.T) {
	table := `% time     seconds  usecs/call     calls    errors syscall
------ ----------- ----------- --------- --------- ----------------
 90.00    1.000000         300      3100           fsync
 10.00    0.100000          10      5000        12 openat
  0.00    0.000000           0         4           fdatasync
------ ----------- ----------- --------- --------- ----------------
100.00    1.100000         100      8104        12 total
`
	c := parseStraceSummary(table)
	assert.Equal(t, 3100, c["fsync"])
	assert.Equal(t, 5000, c["openat"])
	assert.Equal(t, 4, c["fdatasync"])
}

func TestSectionSplicing(t *testing.T) {
	s, err := parseSideBySide(sampleSideBySide)
	require.NoError(t, err)
	q := queueRun{cpuPerCycle: 700 * time.Microsecond, sys: syscalls{fsyncs: 3.1, openats: 6}, straced: true, wall: 2500 * time.Millisecond,
		steps: []timedStep{{Step: "begin", Count: 1000, TotalMS: 400}, {Step: "decision-append", Count: 1000, TotalMS: 600}, {Step: "effect", Count: 1000, TotalMS: 1000}}}
	sec := renderPeers(s, q, sampleSideBySide, "2026-12-01", "1.0 1.0 1.0")
	assert.Contains(t, sec, "2000 ms of its 2500 ms were inside")
	assert.Contains(t, sec, "| `decision-append` | 0.600 ms | 30% | 1000 |")
	assert.Contains(t, sec, "| acr throughput vs dbos-go 3-step sqlite FULL | ≥ 1.3× | 0.50×")
	assert.Contains(t, sec, "| acr throughput vs langgraph.js 3-node sqlite durable | ≥ 3.0× | 2.00×")
	assert.Contains(t, sec, "| 31.0 KB | **missed** |")
	assert.Contains(t, sec, "| fsyncs per acting cycle (strace) | ≤ 3 | 3.10 | **missed** |")

	// Appended to a document without the section, replaced in one with it,
	// and what follows the section is kept both by bench-peers and by bench.
	doc := "# Performance\n\nrows\n"
	once := spliceSection(doc, peersBegin, peersEnd, sec)
	require.True(t, strings.HasPrefix(once, doc))
	withNotes := once + "\n## Notes\nhand-written\n"
	twice := spliceSection(withNotes, peersBegin, peersEnd, strings.Replace(sec, "0.50×", "0.90×", 1))
	assert.Contains(t, twice, "0.90×")
	assert.NotContains(t, twice, "0.50×")
	assert.Contains(t, twice, "hand-written")
	assert.Equal(t, 1, strings.Count(twice, peersBegin))
	tail := keptTail(twice)
	assert.True(t, strings.HasPrefix(tail, peersBegin))
	assert.Contains(t, tail, "hand-written")
	assert.Empty(t, keptTail(doc))
}
