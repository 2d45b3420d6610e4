package sandbox

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

func TestCreateWritesInitialFiles(t *testing.T) {
	spec := testSpec()
	_, stateDir := newTestWorld(t, spec)
	for name, content := range spec.Files {
		assert.Equal(t, content, readWorld(t, stateDir, name))
	}
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	_, err = Create(stateDir, spec, keys)
	require.ErrorIs(t, err, ErrExists, "Create never adopts an existing world")
}

func TestOpenMissingWorld(t *testing.T) {
	stateDir := t.TempDir()
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	_, err = Open(stateDir, testSpec(), keys)
	require.ErrorIs(t, err, os.ErrNotExist)
}

func TestExecuteSameKeyTwiceHasOneEffect(t *testing.T) {
	spec := testSpec()
	w, stateDir := newTestWorld(t, spec)
	key := testKey("mark once")
	a := markIssue("debug flag\nleft on")

	first, reused, err := w.Execute(t.Context(), key, a)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, world.OutcomeCommitted, first.Status)
	assert.Equal(t, world.OutcomeSchema, first.Schema)
	assert.Equal(t, key, first.Key)
	assert.Equal(t, world.IssuesFile, first.Target)
	assert.Empty(t, first.BeforeSHA256, "ISSUES.md did not exist")
	content := readWorld(t, stateDir, world.IssuesFile)
	assert.Equal(t, "- ["+keyDigest(key)[:16]+"] no-debug: debug flag left on\n", content)
	assert.Equal(t, fp(content), first.AfterSHA256)
	require.NotNil(t, first.PostCheck)
	assert.Equal(t, world.CheckFail, first.PostCheck.Status, "marking an issue does not fix it")

	second, reused, err := w.Execute(t.Context(), key, a)
	require.NoError(t, err)
	assert.True(t, reused)
	assert.Equal(t, first, second)
	assert.Equal(t, 1, issueLines(t, stateDir, key))

	looked, found, err := w.Lookup(key)
	require.NoError(t, err)
	require.True(t, found)
	assert.Equal(t, first, looked)

	// Across a reopen, as after a restart.
	require.NoError(t, w.Close())
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	w2, err := Open(stateDir, spec, keys)
	require.NoError(t, err)
	defer w2.Close()
	third, reused, err := w2.Execute(t.Context(), key, a)
	require.NoError(t, err)
	assert.True(t, reused)
	assert.Equal(t, first, third)
	assert.Equal(t, 1, issueLines(t, stateDir, key))

	// Another key is another effect, appended after the first line.
	other := testKey("mark twice")
	_, reused, err = w2.Execute(t.Context(), other, a)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, 1, issueLines(t, stateDir, key))
	assert.Equal(t, 1, issueLines(t, stateDir, other))
	assert.Equal(t, 2, strings.Count(readWorld(t, stateDir, world.IssuesFile), "\n"))
}

func TestMarkIssueKeepsLinesSeparate(t *testing.T) {
	spec := testSpec()
	spec.Files[world.IssuesFile] = "# issues\n- an old one without newline"
	w, stateDir := newTestWorld(t, spec)
	key := testKey("after old")
	_, _, err := w.Execute(t.Context(), key, markIssue("note"))
	require.NoError(t, err)
	assert.Equal(t, "# issues\n- an old one without newline\n- ["+keyDigest(key)[:16]+"] no-debug: note\n", readWorld(t, stateDir, world.IssuesFile))
}

func TestKeyReusedForAnotherAction(t *testing.T) {
	w, _ := newTestWorld(t, testSpec())
	key := testKey("one action only")
	_, _, err := w.Execute(t.Context(), key, markIssue("x"))
	require.NoError(t, err)
	_, _, err = w.Execute(t.Context(), key, world.Action{Schema: world.ActionSchema, Operation: world.OpInspect, Target: "README.md"})
	require.ErrorIs(t, err, ErrKeyConflict)
}

func TestInvalidKeys(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	good := testKey("x")
	for _, key := range []string{"", "x", strings.TrimPrefix(good, keyPrefix), "idem:sha256:" + strings.ToUpper(keyDigest(good)),
		"idem:sha256:" + keyDigest(good)[:63], "idem:sha1:" + keyDigest(good), good + "/../x"} {
		_, _, err := w.Execute(t.Context(), key, world.Action{Operation: world.OpInspect, Target: "README.md"})
		require.Error(t, err, "key %q", key)
		_, _, err = w.Lookup(key)
		require.Error(t, err, "key %q", key)
	}
	entries, err := os.ReadDir(filepath.Join(stateDir, filepath.FromSlash(KeysDir)))
	require.NoError(t, err)
	assert.Empty(t, entries, "nothing recorded for invalid keys")
}

func TestMalformedActions(t *testing.T) {
	w, _ := newTestWorld(t, testSpec())
	cases := []world.Action{
		{Operation: "delete_everything", Target: "README.md"},
		{Operation: world.OpInspect, Target: "README.md", CheckID: "no-such-check"},
		{Operation: world.OpRunValidation, Checks: []string{"readme", "no-such-check"}},
		{Operation: world.OpApplyPatch, Target: "src/app.go", ExpectSHA256: fp(appSource)},
	}
	for i, a := range cases {
		key := testKey(fmt.Sprintf("malformed %d", i))
		_, _, err := w.Execute(t.Context(), key, a)
		require.Error(t, err, "%+v", a)
		_, found, err := w.Lookup(key)
		require.NoError(t, err)
		assert.False(t, found)
	}
}

func TestApplyLocalPatch(t *testing.T) {
	patch := func(expect codec.Fingerprint, find string) world.Action {
		return world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "src/app.go", CheckID: "no-debug",
			ExpectSHA256: expect, Find: find, Replace: "debug = false"}
	}
	t.Run("stale target", func(t *testing.T) {
		w, stateDir := newTestWorld(t, testSpec())
		out, reused, err := w.Execute(t.Context(), testKey("stale"), patch(fp("something older"), "debug = true"))
		require.NoError(t, err)
		assert.False(t, reused)
		assert.Equal(t, world.OutcomeStale, out.Status)
		assert.NotEmpty(t, out.Detail)
		assert.Equal(t, fp(appSource), out.BeforeSHA256)
		assert.Equal(t, out.BeforeSHA256, out.AfterSHA256)
		assert.Equal(t, appSource, readWorld(t, stateDir, "src/app.go"))
		_, found, err := w.Lookup(testKey("stale"))
		require.NoError(t, err)
		assert.True(t, found, "a stale outcome is recorded too")
	})
	t.Run("find absent", func(t *testing.T) {
		w, stateDir := newTestWorld(t, testSpec())
		out, _, err := w.Execute(t.Context(), testKey("absent"), patch(fp(appSource), "no such text"))
		require.NoError(t, err)
		assert.Equal(t, world.OutcomeNoChange, out.Status)
		assert.Equal(t, fp(appSource), out.AfterSHA256)
		assert.Equal(t, appSource, readWorld(t, stateDir, "src/app.go"))
	})
	t.Run("replace equal to find", func(t *testing.T) {
		w, _ := newTestWorld(t, testSpec())
		a := patch(fp(appSource), "debug = true")
		a.Replace = a.Find
		out, _, err := w.Execute(t.Context(), testKey("same"), a)
		require.NoError(t, err)
		assert.Equal(t, world.OutcomeNoChange, out.Status)
	})
	t.Run("committed", func(t *testing.T) {
		w, stateDir := newTestWorld(t, testSpec())
		out, reused, err := w.Execute(t.Context(), testKey("fix"), patch(fp(appSource), "debug = true"))
		require.NoError(t, err)
		assert.False(t, reused)
		want := strings.ReplaceAll(appSource, "debug = true", "debug = false")
		assert.Equal(t, world.OutcomeCommitted, out.Status)
		assert.Equal(t, fp(appSource), out.BeforeSHA256)
		assert.Equal(t, fp(want), out.AfterSHA256)
		assert.Equal(t, want, readWorld(t, stateDir, "src/app.go"))
		require.NotNil(t, out.PostCheck)
		assert.Equal(t, world.CheckPass, out.PostCheck.Status)
		assert.Equal(t, fp(want), out.PostCheck.TargetSHA256)
		assert.Equal(t, []recKind{kindIntent, kindOutcome}, tableKinds(t, osKeys(t, stateDir), testKey("fix")),
			"the intent before the effect, the outcome after it")
	})
	t.Run("missing target", func(t *testing.T) {
		w, _ := newTestWorld(t, testSpec())
		a := patch("", "debug = true")
		a.Target = "src/missing.go"
		out, _, err := w.Execute(t.Context(), testKey("missing"), a)
		require.NoError(t, err)
		assert.Equal(t, world.OutcomeFailed, out.Status)
	})
	t.Run("target is a directory", func(t *testing.T) {
		w, _ := newTestWorld(t, testSpec())
		a := patch("", "debug = true")
		a.Target = "src"
		out, _, err := w.Execute(t.Context(), testKey("dir"), a)
		require.NoError(t, err)
		assert.Equal(t, world.OutcomeFailed, out.Status)
		assert.Contains(t, out.Detail, "directory")
		_, found, err := w.Lookup(testKey("dir"))
		require.NoError(t, err)
		assert.True(t, found, "a failed outcome is recorded")
	})
}

func TestRecordArtifact(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "LICENSE", CheckID: "license", Content: "MIT License\n"}

	out, _, err := w.Execute(t.Context(), testKey("create"), a)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Empty(t, out.BeforeSHA256)
	assert.Equal(t, fp("MIT License\n"), out.AfterSHA256)
	require.NotNil(t, out.PostCheck)
	assert.Equal(t, world.CheckPass, out.PostCheck.Status)

	out, _, err = w.Execute(t.Context(), testKey("identical"), a)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeNoChange, out.Status)

	other := a
	other.Content = "Apache License\n"
	out, _, err = w.Execute(t.Context(), testKey("other without expect"), other)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeStale, out.Status)
	assert.Equal(t, "MIT License\n", readWorld(t, stateDir, "LICENSE"))

	other.ExpectSHA256 = fp("MIT License\n")
	out, _, err = w.Execute(t.Context(), testKey("other with expect"), other)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Equal(t, "Apache License\n", readWorld(t, stateDir, "LICENSE"))
	assert.Equal(t, world.CheckFail, out.PostCheck.Status)

	nested := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "reports/2025/ci.txt", Content: "green\n"}
	out, _, err = w.Execute(t.Context(), testKey("nested"), nested)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Equal(t, "green\n", readWorld(t, stateDir, "reports/2025/ci.txt"))
}

func TestRunValidationWritesReport(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	key := testKey("validate")
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpRunValidation, Checks: []string{"readme", "no-debug", "license"}}
	out, reused, err := w.Execute(t.Context(), key, a)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	report := world.ValidationDir + "/" + keyDigest(key)[:16] + ".json"
	assert.Equal(t, report, out.Target)
	require.Len(t, out.Results, 3)
	assert.Equal(t, []string{"readme", "no-debug", "license"}, []string{out.Results[0].ID, out.Results[1].ID, out.Results[2].ID})
	assert.Equal(t, []world.CheckStatus{world.CheckPass, world.CheckFail, world.CheckFail},
		[]world.CheckStatus{out.Results[0].Status, out.Results[1].Status, out.Results[2].Status})

	raw := readWorld(t, stateDir, report)
	var decoded []world.CheckResult
	require.NoError(t, codec.UnmarshalCanonical([]byte(raw), &decoded))
	assert.Equal(t, out.Results, decoded)
	assert.Equal(t, fp(raw), out.AfterSHA256)

	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Contains(t, paths(obs), report, "the validation directory is observed like any other")

	again, reused, err := w.Execute(t.Context(), key, a)
	require.NoError(t, err)
	assert.True(t, reused)
	assert.Equal(t, out, again)
}

func TestInspectIsReadOnly(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	before := snapshot(t, worldPath(stateDir, "."))
	key := testKey("look")
	out, reused, err := w.Execute(t.Context(), key, world.Action{Schema: world.ActionSchema, Operation: world.OpInspect, Target: "src/app.go", CheckID: "no-debug"})
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, world.OutcomeNoChange, out.Status)
	assert.Equal(t, fp(appSource), out.BeforeSHA256)
	assert.Equal(t, fp(appSource), out.AfterSHA256)
	require.NotNil(t, out.PostCheck)
	assert.Equal(t, world.CheckFail, out.PostCheck.Status)
	assert.Equal(t, before, snapshot(t, worldPath(stateDir, ".")))
	_, found, err := w.Lookup(key)
	require.NoError(t, err)
	assert.True(t, found, "inspect is recorded")

	out, _, err = w.Execute(t.Context(), testKey("look at nothing"), world.Action{Schema: world.ActionSchema, Operation: world.OpInspect, Target: "nope.txt"})
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeNoChange, out.Status)
	assert.Empty(t, out.BeforeSHA256)
	assert.Empty(t, out.AfterSHA256)
	assert.Nil(t, out.PostCheck)
}

func TestLookupAmongManyKeys(t *testing.T) {
	w, stateDir := newTestWorld(t, testSpec())
	const n = 300
	keys := make([]string, n)
	for i := range keys {
		keys[i] = testKey(fmt.Sprintf("many %d", i))
		_, _, err := w.Execute(t.Context(), keys[i], world.Action{Schema: world.ActionSchema, Operation: world.OpInspect, Target: "README.md"})
		require.NoError(t, err)
	}
	check := func(w *World) {
		for _, key := range keys {
			out, found, err := w.Lookup(key)
			require.NoError(t, err)
			require.True(t, found)
			assert.Equal(t, key, out.Key)
		}
		_, found, err := w.Lookup(testKey("never executed"))
		require.NoError(t, err)
		assert.False(t, found)
	}
	check(w)
	check(reopen(t, w, stateDir, osKeys(t, stateDir)))
	entries, err := os.ReadDir(filepath.Join(stateDir, filepath.FromSlash(KeysDir)))
	require.NoError(t, err)
	require.Len(t, entries, 1, "one table file, no file or directory per key")
	assert.Equal(t, path.Base(TableName), entries[0].Name())
	assert.Equal(t, n, countLines(t, filepath.Join(stateDir, filepath.FromSlash(TableName))), "an inspect records its outcome only")
}

func TestApplyPatchOccurrences(t *testing.T) {
	spec := world.Spec{Schema: world.SpecSchema, Files: map[string]string{"queue.txt": "pending\npending\npending\n"},
		Checks: []world.Check{{ID: "queue", Summary: "queue", Kind: world.CheckAbsentText, Path: "queue.txt", Text: "pending", Priority: 1}}}
	w, dir := newTestWorld(t, spec)
	cur := fp("pending\npending\npending\n")
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "queue.txt", CheckID: "queue",
		ExpectSHA256: cur, Find: "pending", Replace: "done", Occurrences: 1}
	out, _, err := w.Execute(t.Context(), testKey("queue-1"), a)
	require.NoError(t, err)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Equal(t, "done\npending\npending\n", readWorld(t, dir, "queue.txt"))
	require.NotNil(t, out.PostCheck)
	assert.Equal(t, world.CheckFail, out.PostCheck.Status, "two items are still pending")
}

// TestCommitRecordsNothingForAFileEffect: in the kernel's path the
// caller's ledger records the outcome of a file effect, and the durable
// intent and the target's hash rebuild it after a crash, so Commit appends
// nothing to the table; committing again finds the after state and
// reuses it, without applying the effect twice.
func TestCommitRecordsNothingForAFileEffect(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	key := testKey("no-cache")
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "readme", Note: "once"}
	in, prior, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	require.Nil(t, prior)
	require.True(t, in.Changes)
	out, reused, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, 1, issueLines(t, dir, key))
	assert.NoFileExists(t, filepath.Join(dir, filepath.FromSlash(TableName)), "nothing recorded, no table file made")

	w = reopen(t, w, dir, osKeys(t, dir))
	again, reused, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	assert.True(t, reused, "the world holds the after state: the effect happened")
	assert.Equal(t, out, again, "the rebuilt outcome equals the first, field for field")
	assert.Equal(t, 1, issueLines(t, dir, key), "never applied twice")
}

// TestCommitSurvivesATornEarlierCacheRecord: earlier releases wrote
// Commit's outcome record as a cache file, without fsync. One torn by a
// crash counts as absent, and the intent and the world decide.
func TestCommitSurvivesATornEarlierCacheRecord(t *testing.T) {
	w, dir := newTestWorld(t, testSpec())
	key := testKey("torn-cache")
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "readme", Note: "once"}
	in, _, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	out, _, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)

	// What an earlier release would have left: its cache record, torn.
	h := keyDigest(key)
	rec, err := codec.Marshal(outcomeRecord{Schema: OutcomeSchema, ActionRef: a.Ref(), Outcome: out})
	require.NoError(t, err)
	require.NoError(t, os.MkdirAll(filepath.Join(dir, filepath.FromSlash(KeysDir), h[:2]), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, filepath.FromSlash(legacyName(h, kindOutcome))), rec[:len(rec)/2], 0o644))

	w = reopen(t, w, dir, osKeys(t, dir))
	_, prior, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	assert.Nil(t, prior, "a torn cache record is no outcome")
	again, reused, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	assert.True(t, reused, "the world holds the after state: the effect happened")
	assert.Equal(t, out.AfterSHA256, again.AfterSHA256)
	assert.Equal(t, 1, issueLines(t, dir, key), "never applied twice")

	_, _, err = w.Lookup(key)
	require.Error(t, err, "Lookup, like Execute, trusts only an intact record")
}
