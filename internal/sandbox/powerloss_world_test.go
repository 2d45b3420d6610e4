package sandbox

import (
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

// worldShadow keeps the journal of a World's changes to its tree, so that
// a test can ask what a power cut right now would leave of the world.
type worldShadow struct{ ops []WorldOp }

func (s *worldShadow) note(op WorldOp) { s.ops = append(s.ops, op) }

// shadowWorld is where the world of a sandbox copy lies in the model:
// "state" is the state directory, durable before Create runs.
const shadowWorld = "state/sandbox/world"

// durable replays the journal onto disk.Mem, whose rules are the power-loss
// model (file bytes durable at their fsync, directory entries at their
// directory's), cuts the power, and returns the world's files as they come
// back (temp files left out: they are swept at the next Open). ok is false
// when the world directory itself does not come back.
func (s *worldShadow) durable(t *testing.T) (files map[string]string, ok bool) {
	t.Helper()
	m := disk.NewMem()
	require.NoError(t, m.MkdirAll("state"))
	handles := map[string]disk.File{}
	for _, op := range s.ops {
		p := path.Join(shadowWorld, op.Path)
		switch op.Op {
		case "create":
			f, err := m.OpenAppend(p)
			require.NoError(t, err)
			handles[p] = f
		case "write":
			_, err := handles[p].Write(op.Data)
			require.NoError(t, err)
		case "sync":
			require.NoError(t, handles[p].Sync())
		case "rewrite":
			// A new file at the name in the model: what the spare held
			// before is never read, and is swept if a power cut brings
			// it back.
			require.NoError(t, m.Remove(p))
			f, err := m.OpenAppend(p)
			require.NoError(t, err)
			handles[p] = f
		case "rename":
			to := path.Join(shadowWorld, op.To)
			require.NoError(t, m.Rename(p, to))
			handles[to] = handles[p]
			delete(handles, p)
		case "exchange":
			// Three renames in the model between the same directory
			// fsyncs: a power cut keeps the directory as it was at the
			// last one, so no state in between can come back.
			to, aside := path.Join(shadowWorld, op.To), path.Join(shadowWorld, op.Path+".aside")
			require.NoError(t, m.Rename(to, aside))
			require.NoError(t, m.Rename(p, to))
			require.NoError(t, m.Rename(aside, p))
			handles[to], handles[p] = handles[p], handles[to]
		case "remove":
			require.NoError(t, m.Remove(p))
		case "mkdir":
			require.NoError(t, m.Mkdir(p))
		case "syncdir":
			require.NoError(t, m.SyncDir(p))
		default:
			t.Fatalf("unknown world op %q", op.Op)
		}
	}
	m.Crash()
	if _, err := m.Stat(shadowWorld); err != nil {
		return nil, false
	}
	files = map[string]string{}
	var walk func(dir string)
	walk = func(dir string) {
		ents, err := m.ReadDir(dir)
		require.NoError(t, err)
		for _, e := range ents {
			p := path.Join(dir, e.Name())
			if e.IsDir() {
				walk(p)
				continue
			}
			if strings.HasPrefix(e.Name(), tmpPrefix) {
				continue
			}
			b, err := m.ReadFile(p)
			require.NoError(t, err)
			files[strings.TrimPrefix(p, shadowWorld+"/")] = string(b)
		}
	}
	walk(shadowWorld)
	return files, true
}

// realFiles reads the world's files from disk.
func realFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	files := map[string]string{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil // temporary files and the spare hold no state
		}
		rel, _ := filepath.Rel(dir, p)
		files[filepath.ToSlash(rel)] = string(b)
		return nil
	}))
	return files
}

// TestWorldPowerLoss holds the world's own writes to the power-loss model:
// after Create and after each effect Commit reports done (the point after
// which the ledger may make its outcome durable), a power cut would leave
// exactly the world as it is on disk: the initial files, a patched file, a
// file created in new directories, a file removed. Without any one of the
// world's fsyncs (the temp file's, the directory's after a rename, a
// removal or a mkdir, Create's of the sandbox and state directories) some
// step comes back older or not at all; make fsync-mutants deletes each in
// turn and expects this test to fail.
//
// With DeferDirSyncs the point is Durable's return instead of Commit's,
// and before it the effect's rename must not yet count as durable: that
// is what obliges the driver to call Durable before it records the
// outcome.
func TestWorldPowerLoss(t *testing.T) {
	for _, deferred := range []bool{false, true} {
		t.Run(fmt.Sprintf("deferred=%v", deferred), func(t *testing.T) { testWorldPowerLoss(t, deferred) })
	}
}

func testWorldPowerLoss(t *testing.T, deferred bool) {
	spec := testSpec()
	spec.Checks[2].Path = "legal/texts/LICENSE"
	require.NoError(t, spec.Validate())
	stateDir := t.TempDir()
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	var shadow worldShadow
	w, err := CreateJournaled(stateDir, spec, keys, shadow.note)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	w.DeferDirSyncs(deferred)
	worldDir := filepath.Join(stateDir, filepath.FromSlash(WorldDir))

	cutNow := func(step string) {
		t.Helper()
		got, ok := shadow.durable(t)
		require.True(t, ok, "%s: the world directory itself would be lost", step)
		assert.Equal(t, realFiles(t, worldDir), got, "%s: a power cut now leaves another world", step)
	}
	// settle is what the driver does once Commit returned: with deferred
	// directory fsyncs the world on disk is ahead of the durable one
	// until Durable returns.
	settle := func(step string) {
		t.Helper()
		if deferred {
			got, ok := shadow.durable(t)
			require.True(t, ok)
			assert.NotEqual(t, realFiles(t, worldDir), got, "%s: the effect is durable before Durable", step)
		}
		require.NoError(t, w.Durable())
	}
	cutNow("after create")
	assert.Equal(t, spec.Files, realFiles(t, worldDir))

	_, err = w.Observe(t.Context())
	require.NoError(t, err)
	commit := func(name string, a world.Action) world.Outcome {
		t.Helper()
		key := testKey(name)
		in, prior, err := w.Prepare(t.Context(), key, a)
		require.NoError(t, err)
		require.Nil(t, prior)
		out, _, err := w.Commit(t.Context(), key, a, in)
		require.NoError(t, err)
		require.Equal(t, world.OutcomeCommitted, out.Status, out.Detail)
		settle(name)
		return out
	}
	commit("patch", world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
		ExpectSHA256: fp(appSource), Find: "debug = true", Replace: "debug = false"})
	cutNow("after a patch")
	commit("artifact", world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "legal/texts/LICENSE", CheckID: "license",
		Content: "MIT License\n"})
	require.FileExists(t, filepath.Join(worldDir, "legal", "texts", "LICENSE"))
	cutNow("after a file in new directories")

	// A file in the top directory is replaced by swapping it with a spare
	// (replaceBySwap): the first replace makes the spare, the second
	// writes into the file's previous inode, and cuts it shorter.
	// The third time the file system refuses the swap, and the written
	// spare is renamed onto the file instead.
	for i, content := range []string{"# demo, longer than it was\n", "# d\n", "# demo once more\n"} {
		step := fmt.Sprintf("top-level replace %d", i+1)
		if i == 2 {
			w.spare.exchange = func(*os.File, string, string) error { return errExchangeUnsupported }
		}
		require.NoError(t, w.replace("README.md", []byte(content)))
		settle(step)
		cutNow("after a " + step)
	}
	var swaps []string
	for _, op := range shadow.ops {
		if op.Op == "exchange" || op.Op == "rewrite" || op.Op == "rename" && op.Path == spareName {
			swaps = append(swaps, op.Op+" "+op.Path+" "+op.To)
		}
	}
	assert.Equal(t, []string{"exchange " + spareName + " README.md", "rewrite " + spareName + " ", "exchange " + spareName + " README.md",
		"rewrite " + spareName + " ", "rename " + spareName + " README.md"}, swaps,
		"the top-level replaces went through the spare, the last one renamed")

	// The primitive that restores and rollbacks use to undo a created file.
	require.NoError(t, w.remove("legal/texts/LICENSE"))
	settle("removal")
	cutNow("after a removal")
}
