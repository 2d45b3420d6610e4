package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// TestExportImportNATS moves a run from a state directory into a
// JetStream store and from there into another state directory: every
// ledger verifies, the checkpoint's fingerprints are the source's, status
// and audit say the same on all three, the archive of each is the same
// file, and the run continued in each ends the same, byte for byte.
func TestExportImportNATS(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	store := srv.ClientURL() + "/exptest"
	nats := []string{"--store", store, "--run-id", "run:test"}
	ok := func(dir string, args ...string) string {
		t.Helper()
		code, out, errOut := acrIn(t, dir, args...)
		require.Equal(t, 0, code, "acr %v: %s%s", args, out, errOut)
		return out
	}
	q := quickstartOptions()
	src, mid, dst := t.TempDir(), t.TempDir(), t.TempDir()

	// A run in a state directory that waits for an approval, with the
	// answer and a wake signal queued in its inbox.
	ok(src, "init", "--goal", q.Goal, "--contract", q.Contract, "--env", q.Env, "--run-id", "run:test")
	ok(src, "run", "--max-cycles", "10")
	var st struct {
		Pending []struct {
			Ref string `json:"ref"`
		} `json:"pending_approvals"`
	}
	require.NoError(t, json.Unmarshal([]byte(ok(src, "--json", "status")), &st))
	require.Len(t, st.Pending, 1)
	ok(src, "approve", st.Pending[0].Ref, "--by", "test", "--reason", "fine")
	// The store's message TTL runs on the real clock, the run on the
	// frozen one: an expiry far ahead keeps the signal in the store.
	ok(src, "wake", "--signal", "manual_resume", "--by", "test", "--expires", "2099-01-01T00:00:00Z")

	files := t.TempDir()
	a1, a2, a3 := filepath.Join(files, "dir.acr"), filepath.Join(files, "nats.acr"), filepath.Join(files, "dir2.acr")
	out := ok(src, "export", "--output", a1)
	assert.Contains(t, out, "2 items waiting")

	// dir -> nats
	out = ok(mid, "--store", store, "import", a1)
	assert.Contains(t, out, "imported run run:test at cycle 3")
	assert.Contains(t, ok(mid, append(nats, "ledger", "verify")...), "ledger ok: 74 events")
	code, _, errOut := acrIn(t, mid, "--store", store, "import", a1)
	assert.Equal(t, exitData, code, "an import onto the run it made: %s", errOut)
	assert.Contains(t, errOut, "never replaces a run")

	// nats -> dir
	ok(mid, append(nats, "export", "--output", a2)...)
	ok(dst, "import", a2)
	ok(dst, "ledger", "verify")
	ok(dst, "export", "--output", a3)
	b1, b2, b3 := readFile(t, a1), readFile(t, a2), readFile(t, a3)
	assert.True(t, bytes.Equal(b1, b2), "the archive of the run in the store is the source's")
	assert.True(t, bytes.Equal(b1, b3), "the archive of the run moved back is the source's")

	var m1, m3 map[string]any
	require.NoError(t, json.Unmarshal(readFile(t, filepath.Join(src, "state", "manifest.json")), &m1))
	require.NoError(t, json.Unmarshal(readFile(t, filepath.Join(dst, "state", "manifest.json")), &m3))
	assert.Equal(t, m1["files"], m3["files"], "the checkpoint's fingerprints")
	assert.Equal(t, m1["ledger_frontier"], m3["ledger_frontier"])

	for _, args := range [][]string{{"status"}, {"audit", "3"}, {"log"}} {
		want := ok(src, args...)
		assert.Equal(t, want, ok(dst, args...), "acr %v on the run moved back", args)
		got := ok(mid, append(nats, args...)...)
		if args[0] == "status" {
			// Only the hints and where the world's files are name the store.
			got = strings.ReplaceAll(got, "acr --store "+store+" --run-id run:test ", "acr ")
			got = strings.ReplaceAll(got, "the environment's files, kept in the store "+store+" (each host that runs it keeps a copy)",
				"a sandbox copy of the environment's files")
		}
		assert.Equal(t, want, got, "acr %v on the run in the store", args)
	}

	// Each goes on alike: the approval and the wake signal are consumed,
	// the approved change made.
	ok(src, "run", "--max-cycles", "10")
	ok(mid, append(nats, "run", "--max-cycles", "10")...)
	ok(dst, "run", "--max-cycles", "10")
	for _, run := range []string{filepath.Join(src, "state"), filepath.Join(dst, "state"), filepath.Join(mid, "state", "runs", jetstream.Token("run:test"))} {
		cfg := readFile(t, filepath.Join(run, "sandbox", "world", "config", "app.ini"))
		assert.Contains(t, string(cfg), "debug = false", run)
	}
	ok(src, "export", "--output", a1)
	ok(mid, append(nats, "export", "--output", a2)...)
	ok(dst, "export", "--output", a3)
	b1, b2, b3 = readFile(t, a1), readFile(t, a2), readFile(t, a3)
	assert.True(t, bytes.Equal(b1, b2), "the run continued in the store is the run continued at the source")
	assert.True(t, bytes.Equal(b1, b3), "the run continued after the round trip is the run continued at the source")
	assert.Contains(t, ok(mid, append(nats, "ledger", "verify")...), "ledger ok")

	// A run whose world is a real directory stays with the host that sees
	// it: it is not imported into the store (64), and nothing is stored.
	proj, rootRun := t.TempDir(), t.TempDir()
	env := filepath.Join(proj, "env.json")
	require.NoError(t, os.WriteFile(env, []byte(`{"schema":"acr.environment/v0.1","root":".","checks":[]}`), 0o644))
	ok(rootRun, "init", "--goal", q.Goal, "--contract", q.Contract, "--env", env, "--run-id", "run:root")
	ok(rootRun, "export", "--output", filepath.Join(files, "root.acr"))
	code, _, errOut = acrIn(t, mid, "--store", store, "import", filepath.Join(files, "root.acr"))
	assert.Equal(t, exitUsage, code, errOut)
	assert.Contains(t, errOut, "root directory")
	code, _, _ = acrIn(t, mid, "--store", store, "--run-id", "run:root", "status")
	assert.Equal(t, exitNoInput, code, "no run:root in the store")

	// The run's world is in the store: a host that never ran the run
	// exports the same archive.
	ok(t.TempDir(), append(nats, "export", "--output", filepath.Join(files, "x.acr"))...)
	assert.True(t, bytes.Equal(b1, readFile(t, filepath.Join(files, "x.acr"))), "exported from another host")
}

func readFile(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	return b
}
