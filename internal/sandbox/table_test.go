package sandbox

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

func inspectAction() world.Action {
	return world.Action{Schema: world.ActionSchema, Operation: world.OpInspect, Target: "README.md"}
}

func tablePath(stateDir string) string { return filepath.Join(stateDir, filepath.FromSlash(TableName)) }

// requireCleanTable checks that the table file scans without damage and
// without a torn tail.
func requireCleanTable(t *testing.T, stateDir string) scanResult {
	t.Helper()
	data, err := os.ReadFile(tablePath(stateDir))
	require.NoError(t, err)
	res, err := scanTable(bytes.NewReader(data), int64(len(data)), TableName)
	require.NoError(t, err)
	require.Equal(t, int64(len(data)), res.end, "no torn tail")
	return res
}

// TestTableAppendAndLookup: records appended by one World are found by it
// at once and by the next World after a restart; a key's records of
// different kinds are told apart.
func TestTableAppendAndLookup(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	keys := []string{testKey("one"), testKey("two"), testKey("three")}
	outs := map[string]world.Outcome{}
	for _, key := range keys {
		out, reused, err := w.Execute(t.Context(), key, inspectAction())
		require.NoError(t, err)
		require.False(t, reused)
		outs[key] = out
	}
	mark := testKey("mark")
	marked, _, err := w.Execute(t.Context(), mark, markIssue("x"))
	require.NoError(t, err)
	outs[mark] = marked
	check := func(w *World) {
		for key, want := range outs {
			got, found, err := w.Lookup(key)
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, want, got)
		}
		_, found, err := w.Lookup(testKey("absent"))
		require.NoError(t, err)
		assert.False(t, found)
	}
	check(w)
	check(reopen(t, w, stateDir, osKeys(t, stateDir)))
	res := requireCleanTable(t, stateDir)
	assert.Len(t, res.index, len(outs))
	assert.Equal(t, []recKind{kindIntent, kindOutcome}, tableKinds(t, osKeys(t, stateDir), mark))
}

// TestTornTableTail: a crash during an append tears the table's last line.
// The torn line is no record (its key is not found, its effect is decided
// by the intent and the world), nothing fails, and the next append cuts
// the tail off so that the table is whole again.
func TestTornTableTail(t *testing.T) {
	tears := []struct {
		name string
		tear func(data []byte, last int) []byte // last: where the last line starts
	}{
		{"cut mid-line", func(d []byte, last int) []byte { return d[:last+(len(d)-last)/2] }},
		{"cut before the newline", func(d []byte, _ int) []byte { return d[:len(d)-1] }},
		{"a byte flipped", func(d []byte, last int) []byte { return flip(d, last+(len(d)-last)/2) }},
		{"zeros where the line was", func(d []byte, last int) []byte { return append(d[:last:last], make([]byte, len(d)-last)...) }},
		{"zeros after it", func(d []byte, _ int) []byte { return append(d, make([]byte, 512)...) }},
	}
	ran := 0
	for _, tc := range tears {
		ran++
		t.Run(tc.name, func(t *testing.T) {
			w, stateDir := newTestWorld(t, testSpec())
			first := testKey("first")
			_, _, err := w.Execute(t.Context(), first, inspectAction())
			require.NoError(t, err)
			// An Execute interrupted after its outcome line was written,
			// then the outcome line torn: as if the crash came during
			// the outcome's append.
			key := testKey("torn")
			a := markIssue("torn")
			crashAt(t, w, StageAfterActionCommit, key, a)
			data, err := os.ReadFile(tablePath(stateDir))
			require.NoError(t, err)
			last := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
			require.NoError(t, os.WriteFile(tablePath(stateDir), tc.tear(data, last), 0o644))
			w = reopen(t, w, stateDir, osKeys(t, stateDir))

			_, found, err := w.Lookup(first)
			require.NoError(t, err, "a torn tail is not an error")
			assert.True(t, found)
			out, found, err := w.Lookup(key)
			require.NoError(t, err)
			if tc.name == "zeros after it" {
				// The outcome line itself is whole.
				assert.True(t, found)
				assert.Equal(t, world.OutcomeCommitted, out.Status)
			} else {
				assert.False(t, found, "a torn outcome line is no outcome")
			}

			again, _, err := w.Execute(t.Context(), key, a)
			require.NoError(t, err)
			assert.Equal(t, world.OutcomeCommitted, again.Status)
			assert.Equal(t, 1, issueLines(t, stateDir, key), "the intent and the world decide: applied once")
			_, _, err = w.Execute(t.Context(), testKey("after"), inspectAction())
			require.NoError(t, err)
			res := requireCleanTable(t, stateDir)
			assert.NotZero(t, slotOf(res.index, key, kindOutcome).n)
			assert.NotZero(t, slotOf(res.index, testKey("after"), kindOutcome).n)
		})
	}
	require.Equal(t, len(tears), ran)
}

// TestTableDamageIsNotRepaired: a damaged line with an intact one after it
// is no crash's doing; every look-up fails naming the file and offset,
// nothing runs, and the file is left as it is for a person.
func TestTableDamageIsNotRepaired(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	for _, name := range []string{"a", "b"} {
		_, _, err := w.Execute(t.Context(), testKey(name), inspectAction())
		require.NoError(t, err)
	}
	data, err := os.ReadFile(tablePath(stateDir))
	require.NoError(t, err)
	damaged := flip(data, 80)
	require.NoError(t, os.WriteFile(tablePath(stateDir), damaged, 0o644))
	w = reopen(t, w, stateDir, osKeys(t, stateDir))
	before := snapshot(t, worldPath(stateDir, "."))

	_, _, err = w.Lookup(testKey("b"))
	var d *DamageError
	require.ErrorAs(t, err, &d)
	assert.Equal(t, TableName, d.File)
	assert.Equal(t, int64(0), d.Offset)
	assert.Contains(t, err.Error(), "byte 0")
	_, _, err = w.Execute(t.Context(), testKey("c"), markIssue("c"))
	require.ErrorAs(t, err, &d, "nothing runs on a damaged table")
	_, _, err = w.Prepare(t.Context(), testKey("c"), markIssue("c"))
	require.ErrorAs(t, err, &d)
	assert.Equal(t, before, snapshot(t, worldPath(stateDir, ".")))
	got, err := os.ReadFile(tablePath(stateDir))
	require.NoError(t, err)
	assert.Equal(t, damaged, got, "not repaired")
}

// writeLegacy writes a record into the per-key layout of earlier releases.
func writeLegacy(t *testing.T, stateDir, key string, kind recKind, v any) {
	t.Helper()
	h := keyDigest(key)
	b, err := codec.Marshal(v)
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(stateDir, filepath.FromSlash(KeysDir), h[:2]), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stateDir, filepath.FromSlash(legacyName(h, kind))), b, 0o644))
}

// TestEarlierLayoutIsRead: a state directory from an earlier release keeps
// its per-key files; they are found where they are, new records go to the
// table, and the old files are never written.
func TestEarlierLayoutIsRead(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	require.NoError(t, w.Close())

	old := testKey("old")
	oldOut := world.Outcome{Schema: world.OutcomeSchema, Key: old, Operation: world.OpMarkIssue, Target: world.IssuesFile,
		Status: world.OutcomeCommitted, AfterSHA256: fp("x")}
	writeLegacy(t, stateDir, old, kindOutcome, outcomeRecord{Schema: OutcomeSchema, ActionRef: markIssue("old").Ref(), Outcome: oldOut})
	pending := testKey("pending")
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "reports/ci.txt", Content: "green\n"}
	writeLegacy(t, stateDir, pending, kindIntent, intentRecord{Schema: IntentSchema, Key: pending, Action: a, Target: a.Target, AfterSHA256: fp("green\n")})
	writeWorld(t, stateDir, a.Target, "green\n") // the effect had happened
	legacyBefore := snapshot(t, filepath.Join(stateDir, filepath.FromSlash(KeysDir), keyDigest(old)[:2]))

	w, err := Open(stateDir, testSpec(), osKeys(t, stateDir))
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })

	got, found, err := w.Lookup(old)
	require.NoError(t, err)
	require.True(t, found, "an old outcome is found")
	assert.Equal(t, oldOut, got)
	again, reused, err := w.Execute(t.Context(), old, markIssue("old"))
	require.NoError(t, err)
	assert.True(t, reused)
	assert.Equal(t, oldOut, again)
	assert.Equal(t, 0, issueLines(t, stateDir, old), "an old outcome is never applied again")

	out, reused, err := w.Execute(t.Context(), pending, a)
	require.NoError(t, err)
	assert.True(t, reused, "an old intent with the world in the after state: the effect happened")
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Equal(t, []recKind{kindOutcome}, tableKinds(t, osKeys(t, stateDir), pending), "the new outcome goes to the table")

	_, _, err = w.Execute(t.Context(), testKey("new"), inspectAction())
	require.NoError(t, err)
	assert.Equal(t, legacyBefore, snapshot(t, filepath.Join(stateDir, filepath.FromSlash(KeysDir), keyDigest(old)[:2])), "old files are not written")
	entries, err := os.ReadDir(filepath.Join(stateDir, filepath.FromSlash(KeysDir)))
	require.NoError(t, err)
	var files []string
	for _, e := range entries {
		if !e.IsDir() {
			files = append(files, e.Name())
		}
	}
	assert.Equal(t, []string{"table.log"}, files)

	// The table's record wins over an old file of the same key and kind.
	shadow := testKey("shadow")
	_, _, err = w.Execute(t.Context(), shadow, inspectAction())
	require.NoError(t, err)
	writeLegacy(t, stateDir, shadow, kindOutcome, outcomeRecord{Schema: OutcomeSchema, Outcome: world.Outcome{Schema: world.OutcomeSchema, Key: shadow,
		Operation: world.OpInspect, Target: "README.md", Status: world.OutcomeFailed}})
	w = reopen(t, w, stateDir, osKeys(t, stateDir))
	got, _, err = w.Lookup(shadow)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeNoChange, got.Status)
}

// TestEarlierStartedMarkerIsRead: a command interrupted under an earlier
// release left its started marker in a per-key file; the recovery rules
// apply to it as to a marker in the table.
func TestEarlierStartedMarkerIsRead(t *testing.T) {
	spec := appendSpec(false)
	w, dir, stateDir := rootWorldState(t, spec, map[string]string{"log.txt": ""})
	a := commandAction(appendFix(false), "logged")
	key := testKey("old-started")
	in, _, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	writeLegacy(t, stateDir, key, kindStarted, startedRecord{Schema: StartedSchema, Key: key, ActionRef: a.Ref()})

	spec.Schema, spec.Root = world.SpecSchema, dir
	w, err = Open(stateDir, spec, osKeys(t, stateDir))
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	w.Environ = os.LookupEnv
	_, _, err = w.Commit(t.Context(), key, a, in)
	require.ErrorIs(t, err, ErrUncertain, "the marker says it may have run")
	assert.Equal(t, 0, countLines(t, filepath.Join(dir, "log.txt")), "never run twice silently")
}

// countingFS counts the reads and writes that reach the idempotency
// table's directory.
type countingFS struct {
	disk.FS
	mu  sync.Mutex
	ops []string
}

func (c *countingFS) note(op, name string) {
	if name == KeysDir || strings.HasPrefix(name, KeysDir+"/") {
		c.mu.Lock()
		c.ops = append(c.ops, op+" "+name)
		c.mu.Unlock()
	}
}

func (c *countingFS) take() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	ops := c.ops
	c.ops = nil
	return ops
}

func (c *countingFS) ReadFile(name string) ([]byte, error) {
	c.note("readfile", name)
	return c.FS.ReadFile(name)
}

func (c *countingFS) Stat(name string) (fs.FileInfo, error) {
	c.note("stat", name)
	return c.FS.Stat(name)
}

func (c *countingFS) ReadDir(name string) ([]fs.DirEntry, error) {
	c.note("readdir", name)
	return c.FS.ReadDir(name)
}

func (c *countingFS) Open(name string) (disk.File, error) {
	c.note("open", name)
	return c.FS.Open(name)
}

func (c *countingFS) OpenAppend(name string) (disk.File, error) {
	c.note("openappend", name)
	return c.FS.OpenAppend(name)
}

func (c *countingFS) WriteFile(name string, data []byte) error {
	c.note("writefile", name)
	return c.FS.WriteFile(name, data)
}

func (c *countingFS) WriteCache(name string, data []byte) error {
	c.note("writecache", name)
	return c.FS.WriteCache(name, data)
}

func (c *countingFS) MkdirAll(name string) error {
	c.note("mkdir", name)
	return c.FS.MkdirAll(name)
}

func (c *countingFS) SyncDir(name string) error {
	c.note("syncdir", name)
	return c.FS.SyncDir(name)
}

// TestTableFileAccesses pins down what the table costs in file
// operations: nothing for a World that does not act, one open and one
// directory listing for the first look-up, then nothing per key in the
// kernel's path for a file effect, and one append (with one fsync) per
// record otherwise. No file or directory is ever made per key.
func TestTableFileAccesses(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	_, _, err := w.Execute(t.Context(), testKey("seed"), inspectAction()) // a table that exists
	require.NoError(t, err)
	require.NoError(t, w.Close())
	cfs := &countingFS{FS: osKeys(t, stateDir)}
	w, err = Open(stateDir, testSpec(), cfs)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })

	_, err = w.Observe(t.Context())
	require.NoError(t, err)
	assert.Empty(t, cfs.take(), "opening and observing do not touch the table")

	for i := range 3 {
		key := testKey(fmt.Sprintf("kernel-%d", i))
		a := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "readme", Note: fmt.Sprint(i)}
		in, prior, err := w.Prepare(t.Context(), key, a)
		require.NoError(t, err)
		require.Nil(t, prior)
		_, _, err = w.Commit(t.Context(), key, a, in)
		require.NoError(t, err)
		want := []string(nil)
		if i == 0 {
			want = []string{"open " + TableName, "readdir " + KeysDir}
		}
		assert.Equal(t, want, cfs.take(), "cycle %d: a file effect in the kernel's path", i)
	}

	_, _, err = w.Execute(t.Context(), testKey("exec-1"), markIssue("e1"))
	require.NoError(t, err)
	assert.Equal(t, []string{"openappend " + TableName, "syncdir " + KeysDir}, cfs.take(),
		"the first append opens the table for appending and fsyncs its directory once")
	_, _, err = w.Execute(t.Context(), testKey("exec-2"), markIssue("e2"))
	require.NoError(t, err)
	assert.Empty(t, cfs.take(), "later appends go to the open file")
	for i := range 50 {
		_, found, err := w.Lookup(testKey(fmt.Sprintf("kernel-%d", i%3)))
		require.NoError(t, err)
		assert.False(t, found)
	}
	assert.Empty(t, cfs.take(), "a look-up opens nothing")
}

// TestConcurrentLookups: Lookup takes the World's lock, so look-ups from
// several goroutines and an Execute share the index safely (run with
// -race).
func TestConcurrentLookups(t *testing.T) {
	w, _ := newTestWorld(t, testSpec())
	keys, err := SeedOutcomes(w, 200)
	require.NoError(t, err)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				if _, ok, err := w.Lookup(keys[(i*7+g)%len(keys)]); err != nil || !ok {
					errs <- fmt.Errorf("lookup: %v %v", ok, err)
					return
				}
			}
		}()
	}
	for i := range 20 {
		_, _, err := w.Execute(t.Context(), testKey(fmt.Sprintf("concurrent-%d", i)), inspectAction())
		require.NoError(t, err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// TestTableDirectoryMissing: a table directory missing (a state directory
// assembled by hand) is made by the first append, not an error.
func TestTableDirectoryMissing(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	require.NoError(t, os.Remove(filepath.Join(stateDir, filepath.FromSlash(KeysDir))))
	_, found, err := w.Lookup(testKey("x"))
	require.NoError(t, err)
	assert.False(t, found)
	_, _, err = w.Execute(t.Context(), testKey("x"), inspectAction())
	require.NoError(t, err)
	_, found, err = w.Lookup(testKey("x"))
	require.NoError(t, err)
	assert.True(t, found)
	requireCleanTable(t, stateDir)
}

// TestNonCanonicalRecordIsRefused: a line whose checksum holds but whose
// record is not in canonical form was not written by acr; decoding it
// fails, naming the table, rather than trusting it.
func TestNonCanonicalRecordIsRefused(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	key := testKey("hand made")
	rec := `{"schema":"` + OutcomeSchema + `","outcome":{"schema":"` + world.OutcomeSchema + `","idempotency_key":"` + key +
		`","operation":"inspect","target":"README.md","status":"no_change"},"action_ref":""}` // keys out of order
	require.NoError(t, os.WriteFile(tablePath(stateDir), encodeLine(keyDigest(key), kindOutcome, []byte(rec)), 0o644))
	_, _, err := w.Lookup(key)
	require.Error(t, err)
	assert.Contains(t, err.Error(), TableName)
	_, _, err = w.Execute(t.Context(), key, inspectAction())
	require.Error(t, err)
}

// TestPowerLossKeepsTheStartedMarker: a command's started marker is
// durable before the program starts, so a power loss right after the
// start still finds it, and a command that is not idempotent is not run
// again behind a person's back. Its outcome, appended without fsync, may
// be lost: the marker then stands in for it.
func TestPowerLossKeepsTheStartedMarker(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "log.txt"), nil, 0o644))
	spec := appendSpec(false)
	spec.Schema, spec.Root = world.SpecSchema, dir
	require.NoError(t, spec.Validate())
	stateDir := t.TempDir()
	mem := disk.NewMem()
	w, err := Create(stateDir, spec, mem)
	require.NoError(t, err)
	w.Environ = os.LookupEnv
	a := commandAction(appendFix(false), "logged")

	// Started, then the power goes before the program ran.
	in := crashDuringCommand(t, w, testKey("cut"), a)
	mem.Crash()
	require.NoError(t, w.Close())
	w, err = Open(stateDir, spec, mem)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	w.Environ = os.LookupEnv
	_, _, err = w.Commit(t.Context(), testKey("cut"), a, in)
	require.ErrorIs(t, err, ErrUncertain, "the durable marker says the command may have run")

	// Run to the end, then the power goes: the unsynced outcome is lost,
	// the marker is not, and the check (which now passes) decides.
	key := testKey("ran")
	in, _, err = w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	out, _, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	require.Equal(t, world.OutcomeCommitted, out.Status)
	mem.Crash()
	require.NoError(t, w.Close())
	w, err = Open(stateDir, spec, mem)
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Close() })
	w.Environ = os.LookupEnv
	again, reused, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	assert.True(t, reused)
	assert.Contains(t, again.Detail, "recovered")
	assert.Equal(t, 1, countLines(t, filepath.Join(dir, "log.txt")), "run once")
}
