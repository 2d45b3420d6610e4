package runstore

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
)

// worldShows hashes the world's files as a reader sees them, temporary
// files left out (they are not part of what the world shows).
func worldShows(t *testing.T, root string) string {
	h := sha256.New()
	var paths []string
	_ = filepath.Walk(filepath.Join(root, "sandbox", "world"), func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.HasPrefix(info.Name(), ".acr-tmp-") {
			paths = append(paths, p)
		}
		return nil
	})
	sort.Strings(paths)
	for _, p := range paths {
		b, _ := os.ReadFile(p)
		h.Write([]byte(p + "\x00"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// TestTheWorldWaitsForTheIntentsFsync: the ledger's fsync of a cycle's
// decision and intent runs while the world stages the effect, and the
// world changes only after it returned. Every ledger fsync here is made
// slow, and the world must show the same files from its start to its end.
func TestTheWorldWaitsForTheIntentsFsync(t *testing.T) {
	mem := disk.NewMem()
	root := t.TempDir()
	opt := Options{Clock: frozen{}, Revision: "t", CheckpointEvery: 64}
	_, err := InitOn(t.Context(), mem, root, powerInputs(), "run:overlap", opt)
	require.NoError(t, err)
	var mu sync.Mutex
	syncs, changed := 0, 0
	mem.OnOp(func(op disk.MemOp) {
		if op.Op != "sync" || !strings.HasSuffix(op.Name, "events.jsonl") {
			return
		}
		before := worldShows(t, root)
		time.Sleep(20 * time.Millisecond) // time enough for a rename that does not wait
		mu.Lock()
		defer mu.Unlock()
		syncs++
		if worldShows(t, root) != before {
			changed++
		}
	})
	r, err := OpenOn(t.Context(), mem, root, opt, nil)
	require.NoError(t, err)
	rep, err := r.Driver.Run(context.Background(), 100, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	mu.Lock()
	defer mu.Unlock()
	assert.Positive(t, rep.CyclesExecuted)
	assert.Greater(t, syncs, 2)
	assert.Zero(t, changed, "the world changed while a ledger fsync was running")
	b, err := os.ReadFile(filepath.Join(root, "sandbox", "world", "docs", "0.md"))
	require.NoError(t, err)
	assert.Equal(t, "the text\n", string(b), "the effects were made")
}
