package sandbox

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

// rootWorld makes a real directory (not a sandbox copy) the world, with
// the state directory elsewhere, and returns the world and its directory.
func rootWorld(t *testing.T, spec world.Spec, files map[string]string) (*World, string) {
	t.Helper()
	w, dir, _ := rootWorldState(t, spec, files)
	return w, dir
}

// rootWorldState is rootWorld that also returns the state directory.
func rootWorldState(t *testing.T, spec world.Spec, files map[string]string) (w *World, dir, stateDir string) {
	t.Helper()
	dir = t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
	}
	spec.Schema, spec.Root = world.SpecSchema, dir
	require.NoError(t, spec.Validate())
	stateDir = t.TempDir()
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	w, err = Create(stateDir, spec, keys)
	require.NoError(t, err)
	w.Environ = os.LookupEnv
	t.Cleanup(func() { _ = w.Close() })
	return w, dir, stateDir
}

func TestRootWorldIsObservedAndChangedInPlace(t *testing.T) {
	spec := world.Spec{Checks: []world.Check{{ID: "typo", Kind: world.CheckAbsentText, Path: "README.md", Text: "teh",
		Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "teh", Replace: "the"}}}}}
	w, dir := rootWorld(t, spec, map[string]string{"README.md": "teh project\n", "src/a.go": "package a\n"})
	assert.Equal(t, dir, w.Dir())
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"README.md", "src/a.go"}, paths(obs))
	r, _ := obs.Check("typo")
	require.Equal(t, world.CheckFail, r.Status)

	a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "README.md", CheckID: "typo",
		ExpectSHA256: r.TargetSHA256, Find: "teh", Replace: "the"}
	in, out := prepareCommit(t, w, testKey("root-fix"), a)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	require.NotNil(t, in.Rollback)
	b, err := os.ReadFile(filepath.Join(dir, "README.md"))
	require.NoError(t, err)
	assert.Equal(t, "the project\n", string(b), "the fix lands in the directory itself")
	assert.NoDirExists(t, filepath.Join(dir, "sandbox"), "nothing of acr's is written into the project")
}

// A state directory inside the directory a run looks after is acr's own:
// never observed (its ledger grows every cycle) and never written by a fix.
func TestStateDirectoryInsideTheRootIsPrivate(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n"), 0o644))
	stateDir := filepath.Join(dir, ".acr")
	require.NoError(t, os.Mkdir(stateDir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(stateDir, "manifest.json"), []byte("{}"), 0o644))
	keys, err := disk.OpenOSDir(stateDir)
	require.NoError(t, err)
	spec := world.Spec{Schema: world.SpecSchema, Root: dir}
	w, err := Create(stateDir, spec, keys)
	require.NoError(t, err)
	defer w.Close()
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, []string{"main.go"}, paths(obs))
	_, _, err = w.Prepare(t.Context(), testKey("into-state"), world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: ".acr/manifest.json", Content: "x"})
	require.ErrorIs(t, err, ErrConfinement)

	_, err = Create(dir, world.Spec{Schema: world.SpecSchema, Root: dir}, keys)
	require.ErrorContains(t, err, "is the world itself")
}

// Every way out of the root is refused, recorded, and never followed: a
// canary file outside the root is never read or written.
func TestRootConfinement(t *testing.T) {
	outside := t.TempDir()
	canary := filepath.Join(outside, "canary.txt")
	require.NoError(t, os.WriteFile(canary, []byte("canary teh\n"), 0o644))
	before, err := os.Stat(canary)
	require.NoError(t, err)

	spec := world.Spec{Checks: []world.Check{
		{ID: "via-link", Kind: world.CheckAbsentText, Path: "link.txt", Text: "teh"},
		{ID: "via-parent", Kind: world.CheckAbsentText, Path: "linkdir/canary.txt", Text: "teh"},
		{ID: "via-hardlink", Kind: world.CheckAbsentText, Path: "hard.txt", Text: "teh"},
		{ID: "via-fifo", Kind: world.CheckAbsentText, Path: "fifo", Text: "teh"},
	}}
	w, dir := rootWorld(t, spec, map[string]string{"ok.txt": "fine\n"})
	require.NoError(t, os.Symlink(canary, filepath.Join(dir, "link.txt")))
	require.NoError(t, os.Symlink(outside, filepath.Join(dir, "linkdir")))
	require.NoError(t, os.Link(canary, filepath.Join(dir, "hard.txt")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o644))
	require.NoError(t, os.Symlink("loop-b", filepath.Join(dir, "loop-a")))
	require.NoError(t, os.Symlink("loop-a", filepath.Join(dir, "loop-b")))

	done := make(chan world.Observation, 1)
	go func() {
		obs, err := w.Observe(t.Context())
		assert.NoError(t, err)
		done <- obs
	}()
	var obs world.Observation
	select {
	case obs = <-done:
	case <-time.After(30 * time.Second):
		t.Fatal("observation blocked (on the FIFO?)")
	}
	assert.Equal(t, []string{"ok.txt"}, paths(obs))
	var refused []string
	for _, r := range obs.Refused {
		refused = append(refused, r.Path+": "+r.Reason)
	}
	assert.Equal(t, []string{
		"fifo: not a regular file",
		"hard.txt: has other hard links; it may be a file outside the world",
		"link.txt: symlink; symlinks are not followed",
		"linkdir: symlink; symlinks are not followed",
		"loop-a: symlink; symlinks are not followed",
		"loop-b: symlink; symlinks are not followed",
	}, refused)
	for _, id := range []string{"via-link", "via-parent", "via-hardlink", "via-fifo"} {
		r, ok := obs.Check(id)
		require.True(t, ok)
		assert.Equal(t, world.CheckFail, r.Status, "%s: a check that cannot be verified does not pass", id)
	}

	for i, target := range []string{"link.txt", "linkdir/canary.txt", "hard.txt", "fifo", "loop-a/x", "../canary.txt", canary, "/etc/passwd"} {
		for _, a := range []world.Action{
			{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: target, Find: "teh", Replace: "the"},
			{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: target, Content: "overwritten\n"},
		} {
			key := testKey(target + string(a.Operation) + string(rune('a'+i)))
			in, prior, err := w.Prepare(t.Context(), key, a)
			if err == nil && prior == nil && in.Changes {
				_, _, err = w.Commit(t.Context(), key, a, in)
			}
			if err == nil {
				assert.NotEqual(t, world.OutcomeCommitted, in.Planned.Status, "%s on %s", a.Operation, target)
			}
		}
	}
	after, err := os.Stat(canary)
	require.NoError(t, err)
	b, err := os.ReadFile(canary)
	require.NoError(t, err)
	assert.Equal(t, "canary teh\n", string(b), "the canary is never written")
	assert.Equal(t, before.ModTime(), after.ModTime())
	st := after.Sys().(*syscall.Stat_t)
	assert.Equal(t, before.Sys().(*syscall.Stat_t).Ino, st.Ino)
}

// A world deep enough to make path matching slow is untrusted content:
// observation refuses what lies past max_depth, with the reason, quickly.
func TestDeepDirectoryChainIsBounded(t *testing.T) {
	w, dir := rootWorld(t, world.Spec{Exclude: []string{"**/node_modules/**"}}, nil)
	deep := dir
	for range 200 {
		deep = filepath.Join(deep, "d")
	}
	require.NoError(t, os.MkdirAll(deep, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(deep, "x.txt"), []byte("x"), 0o644))
	start := time.Now()
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Less(t, time.Since(start), 20*time.Second)
	require.Len(t, obs.Refused, 1)
	assert.Equal(t, strings.Repeat("d/", 64)+"d", obs.Refused[0].Path)
	assert.Contains(t, obs.Refused[0].Reason, "limits.max_depth")
}

func TestObservationLimits(t *testing.T) {
	files := map[string]string{}
	for i := range 30 {
		files[filepath.Join("f", string(rune('a'+i%26))+strings.Repeat("x", i))] = "0123456789"
	}
	w, _ := rootWorld(t, world.Spec{Limits: &world.Limits{MaxEntries: 10}}, files)
	_, err := w.Observe(t.Context())
	require.ErrorContains(t, err, "limits.max_entries")

	w, _ = rootWorld(t, world.Spec{Limits: &world.Limits{MaxBytes: 100}}, files)
	_, err = w.Observe(t.Context())
	require.ErrorContains(t, err, "limits.max_bytes")
}

func commandCheck(id string, script string) world.Check {
	return world.Check{ID: id, Kind: world.CheckCommand, Argv: []string{"sh", "-c", script}, TimeoutSeconds: 5}
}

func TestCommandChecks(t *testing.T) {
	spec := world.Spec{Checks: []world.Check{
		commandCheck("pass", "echo all good"),
		commandCheck("warn", "echo 'lint: 2 issues'; exit 1"),
		commandCheck("crit", "echo broken >&2; exit 2"),
		commandCheck("cwd", "test -f marker.txt"),
	}}
	w, _ := rootWorld(t, spec, map[string]string{"marker.txt": "x"})
	obs, err := w.Observe(t.Context())
	require.NoError(t, err)
	want := map[string]world.CheckStatus{"pass": world.CheckPass, "warn": world.CheckFail, "crit": world.CheckFail, "cwd": world.CheckPass}
	for id, st := range want {
		r, ok := obs.Check(id)
		require.True(t, ok)
		assert.Equal(t, st, r.Status, id)
		require.NotNil(t, r.Command, id)
		assert.Zero(t, r.Command.DurationMS, "a check's duration is not part of what it observed")
	}
	r, _ := obs.Check("warn")
	assert.Equal(t, "exit 1 (warning): lint: 2 issues", r.Detail)
	assert.Equal(t, "lint: 2 issues\n", r.Command.Stdout)
	r, _ = obs.Check("crit")
	assert.Equal(t, "exit 2 (critical): broken", r.Detail)
	assert.Len(t, obs.Runs, 4)

	again, err := w.Observe(t.Context())
	require.NoError(t, err)
	assert.Equal(t, obs.Ref(), again.Ref(), "the same output on the same world is the same observation")
}

func TestCommandCheckFaults(t *testing.T) {
	cases := []struct {
		check  world.Check
		reason string
	}{
		{commandCheck("exit3", "exit 3"), "exit 3 is neither a pass"},
		{world.Check{ID: "slow", Kind: world.CheckCommand, Argv: []string{"sleep", "30"}, TimeoutSeconds: 1}, "timed out after 1 s"},
		{commandCheck("killed", "kill -9 $$"), "killed by signal"},
		{world.Check{ID: "missing", Kind: world.CheckCommand, Argv: []string{"acr-no-such-program"}}, "could not be started"},
	}
	for _, tc := range cases {
		w, _ := rootWorld(t, world.Spec{Checks: []world.Check{tc.check}}, nil)
		_, err := w.Observe(t.Context())
		var pf *world.ProviderFault
		require.True(t, errors.As(err, &pf), "%s: %v", tc.check.ID, err)
		assert.Equal(t, "check:"+tc.check.ID, pf.Source)
		assert.Contains(t, pf.Reason, tc.reason)
	}
}

// appendFix is a command fix that appends a line to log.txt: running it
// twice shows as two lines.
func appendFix(idempotent bool) world.Fix {
	return world.Fix{ID: "append", Operation: world.OpRunCommand, Argv: []string{"sh", "-c", "echo \"run $ACR_CYCLE\" >> log.txt"},
		Touches: []string{"log.txt"}, TimeoutSeconds: 5, Idempotent: idempotent}
}

func appendSpec(idempotent bool) world.Spec {
	return world.Spec{Checks: []world.Check{{ID: "logged", Kind: world.CheckCommand, Argv: []string{"sh", "-c", "grep -q run log.txt || exit 1"},
		TimeoutSeconds: 5, Fixes: []world.Fix{appendFix(idempotent)}}}}
}

func commandAction(f world.Fix, check string) world.Action {
	return world.Action{Schema: world.ActionSchema, Operation: world.OpRunCommand, CheckID: check, FixID: f.ID,
		Argv: f.Argv, Touches: f.Touches, TimeoutSeconds: f.TimeoutSeconds, Idempotent: f.Idempotent}
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	require.NoError(t, err)
	return strings.Count(string(b), "\n")
}

func TestRunCommandRunsOncePerKey(t *testing.T) {
	w, dir := rootWorld(t, appendSpec(false), map[string]string{"log.txt": ""})
	_, err := w.Observe(t.Context())
	require.NoError(t, err)
	a := commandAction(appendFix(false), "logged")
	key := testKey("append-once")
	in, prior, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	require.Nil(t, prior)
	require.True(t, in.Changes)
	require.NotNil(t, in.Rollback, "the touched files' pre-image is the bundle")
	assert.Equal(t, []world.FileImage{{Path: "log.txt", SHA256: fp(""), Content: ""}}, in.Rollback.Files)
	in.RunID, in.CycleSeq = "run-x", 7
	out, reused, err := w.Commit(t.Context(), key, a, in)
	require.NoError(t, err)
	assert.False(t, reused)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	require.NotNil(t, out.Command)
	assert.Equal(t, 0, out.Command.ExitCode)
	assert.Equal(t, []string{"log.txt"}, out.Changed)
	assert.Empty(t, out.Outside)
	assert.NotEqual(t, out.BeforeSHA256, out.AfterSHA256)
	b, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
	assert.Equal(t, "run 7\n", string(b), "the command gets ACR_CYCLE")

	for range 3 {
		again, reused, err := w.Commit(t.Context(), key, a, in)
		require.NoError(t, err)
		assert.True(t, reused)
		assert.Equal(t, out, again)
	}
	assert.Equal(t, 1, countLines(t, filepath.Join(dir, "log.txt")))

	rb, err := w.Readback(t.Context(), a, out)
	require.NoError(t, err)
	assert.Equal(t, out.AfterSHA256, rb.SHA256)
	assert.Equal(t, []string{"logged"}, rb.Passing)
}

func TestRunCommandOutsideItsTouches(t *testing.T) {
	f := world.Fix{ID: "sneaky", Operation: world.OpRunCommand, Argv: []string{"sh", "-c", "echo x >> a.txt; echo y > other.txt"}, Touches: []string{"a.txt"}}
	w, _ := rootWorld(t, world.Spec{Checks: []world.Check{{ID: "c", Kind: world.CheckFileExists, Path: "a.txt", Fixes: []world.Fix{f}}}}, map[string]string{"a.txt": ""})
	_, err := w.Observe(t.Context())
	require.NoError(t, err)
	_, out := prepareCommit(t, w, testKey("sneaky"), commandAction(f, "c"))
	assert.Equal(t, []string{"a.txt", "other.txt"}, out.Changed)
	assert.Equal(t, []string{"other.txt"}, out.Outside)
}

func TestRunCommandFailureIsAnOutcome(t *testing.T) {
	f := world.Fix{ID: "fails", Operation: world.OpRunCommand, Argv: []string{"sh", "-c", "echo nope >&2; exit 4"}, Touches: []string{"a.txt"}}
	w, _ := rootWorld(t, world.Spec{Checks: []world.Check{{ID: "c", Kind: world.CheckFileExists, Path: "a.txt", Fixes: []world.Fix{f}}}}, nil)
	_, out := prepareCommit(t, w, testKey("fails"), commandAction(f, "c"))
	assert.Equal(t, world.OutcomeFailed, out.Status)
	assert.Equal(t, "exit 4: nope", out.Detail)
}

func TestUndeclaredCommandIsRefused(t *testing.T) {
	w, _ := rootWorld(t, appendSpec(false), nil)
	a := commandAction(appendFix(false), "logged")
	a.Argv = []string{"sh", "-c", "rm -rf ."}
	_, _, err := w.Prepare(t.Context(), testKey("undeclared"), a)
	require.ErrorContains(t, err, "not a command fix the environment declares in this form")
	a.FixID = "nope"
	_, _, err = w.Prepare(t.Context(), testKey("undeclared2"), a)
	require.ErrorContains(t, err, "undeclared_command")
}

// crashDuringCommand prepares a command, then "dies" at the stage just
// before the program starts, leaving the started marker durable.
func crashDuringCommand(t *testing.T, w *World, key string, a world.Action) world.Intent {
	t.Helper()
	in, _, err := w.Prepare(t.Context(), key, a)
	require.NoError(t, err)
	w.OnStage = func(stage string) {
		if stage == StageBeforeActionCommit {
			panic("crash")
		}
	}
	func() {
		defer func() { require.Equal(t, "crash", recover()) }()
		_, _, _ = w.Commit(t.Context(), key, a, in)
	}()
	w.OnStage = nil
	return in
}

func TestInterruptedCommandRecovery(t *testing.T) {
	t.Run("not idempotent, check fails: a person decides", func(t *testing.T) {
		w, dir := rootWorld(t, appendSpec(false), map[string]string{"log.txt": ""})
		a := commandAction(appendFix(false), "logged")
		in := crashDuringCommand(t, w, testKey("x1"), a)
		_, _, err := w.Commit(t.Context(), testKey("x1"), a, in)
		require.ErrorIs(t, err, ErrUncertain)
		assert.Contains(t, err.Error(), "check logged still fails")
		assert.Equal(t, 0, countLines(t, filepath.Join(dir, "log.txt")), "never run twice silently")
	})
	t.Run("idempotent: run again", func(t *testing.T) {
		w, dir := rootWorld(t, appendSpec(true), map[string]string{"log.txt": ""})
		a := commandAction(appendFix(true), "logged")
		in := crashDuringCommand(t, w, testKey("x2"), a)
		out, reused, err := w.Commit(t.Context(), testKey("x2"), a, in)
		require.NoError(t, err)
		assert.False(t, reused)
		assert.Equal(t, world.OutcomeCommitted, out.Status)
		assert.Equal(t, 1, countLines(t, filepath.Join(dir, "log.txt")))
	})
	t.Run("the check passes: the effect is taken as done", func(t *testing.T) {
		w, dir := rootWorld(t, appendSpec(false), map[string]string{"log.txt": ""})
		a := commandAction(appendFix(false), "logged")
		in := crashDuringCommand(t, w, testKey("x3"), a)
		// The program did run before the crash.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "log.txt"), []byte("run 1\n"), 0o644))
		out, reused, err := w.Commit(t.Context(), testKey("x3"), a, in)
		require.NoError(t, err)
		assert.True(t, reused)
		assert.Contains(t, out.Detail, "recovered")
		require.NotNil(t, out.PostCheck)
		assert.Equal(t, world.CheckPass, out.PostCheck.Status)
		assert.Equal(t, 1, countLines(t, filepath.Join(dir, "log.txt")))
	})
}

func TestRestoreOfACommandsFiles(t *testing.T) {
	f := world.Fix{ID: "gen", Operation: world.OpRunCommand, Argv: []string{"sh", "-c", "echo changed > gen/a.txt; echo new > gen/b.txt"}, Touches: []string{"gen/**"}}
	w, dir := rootWorld(t, world.Spec{Checks: []world.Check{{ID: "c", Kind: world.CheckFileExists, Path: "gen/a.txt", Fixes: []world.Fix{f}}}},
		map[string]string{"gen/a.txt": "original\n", "keep.txt": "k\n"})
	_, err := w.Observe(t.Context())
	require.NoError(t, err)
	in, out := prepareCommit(t, w, testKey("gen"), commandAction(f, "c"))
	require.Equal(t, world.OutcomeCommitted, out.Status)
	restore := in.Rollback.RestoreAction("c", out.AfterSHA256)
	_, rout := prepareCommit(t, w, testKey("gen-undo"), restore)
	assert.Equal(t, world.OutcomeCommitted, rout.Status)
	assert.Equal(t, in.Planned.BeforeSHA256, rout.AfterSHA256)
	b, _ := os.ReadFile(filepath.Join(dir, "gen/a.txt"))
	assert.Equal(t, "original\n", string(b))
	assert.NoFileExists(t, filepath.Join(dir, "gen/b.txt"), "a file the command created is removed")
	assert.FileExists(t, filepath.Join(dir, "keep.txt"))
}

// A command whose touched files are too large to carry as a pre-image has
// no rollback bundle: the kernel's controls then block it.
func TestNoBundleForLargeTouchedSets(t *testing.T) {
	f := world.Fix{ID: "big", Operation: world.OpRunCommand, Argv: []string{"true"}, Touches: []string{"big.txt"}}
	w, _ := rootWorld(t, world.Spec{Checks: []world.Check{{ID: "c", Kind: world.CheckFileExists, Path: "big.txt", Fixes: []world.Fix{f}}}},
		map[string]string{"big.txt": strings.Repeat("x", MaxRollbackBytes+1)})
	in, _, err := w.Prepare(t.Context(), testKey("big"), commandAction(f, "c"))
	require.NoError(t, err)
	assert.Nil(t, in.Rollback)
}

// TestCommandOutcomeRecordIsBoundToItsIntent: recovery reuses a command's
// recorded outcome only when the record is this intent's, starts from its
// before hash, agrees with the files as they are, and says what its own
// command result says. A record rewritten after the fact (canonical, with
// a valid line checksum) is never a silent verdict: whether the effect
// happened is for a person (ErrUncertain), and the program does not run
// again.
func TestCommandOutcomeRecordIsBoundToItsIntent(t *testing.T) {
	cases := []struct {
		name   string
		tamper func(t *testing.T, w *World, dir string, rec *outcomeRecord)
		why    string
	}{
		{"committed rewritten as failed", func(_ *testing.T, _ *World, _ string, rec *outcomeRecord) {
			rec.Outcome.Status = world.OutcomeFailed
		}, "its status is failed, its own command result says committed"},
		{"the outcome of another intent", func(_ *testing.T, _ *World, _ string, rec *outcomeRecord) {
			rec.IntentRef = intentRef(world.Intent{Schema: world.IntentSchema, Key: "other"})
		}, "it names intent"},
		{"a forged after hash", func(_ *testing.T, _ *World, _ string, rec *outcomeRecord) {
			rec.Outcome.AfterSHA256 = fp("forged")
		}, "its after hash is"},
		{"a forged before hash", func(_ *testing.T, _ *World, _ string, rec *outcomeRecord) {
			rec.Outcome.BeforeSHA256 = fp("forged")
		}, "its before hash is"},
		{"the files changed since", func(t *testing.T, _ *World, dir string, _ *outcomeRecord) {
			require.NoError(t, os.WriteFile(filepath.Join(dir, "log.txt"), []byte("edited by hand\n"), 0o644))
		}, "the files hash to"},
		{"fields no run gives", func(_ *testing.T, _ *World, _ string, rec *outcomeRecord) {
			rec.Outcome.Command = nil
		}, "do not describe a command"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w, dir := rootWorld(t, appendSpec(false), map[string]string{"log.txt": ""})
			_, err := w.Observe(t.Context())
			require.NoError(t, err)
			a := commandAction(appendFix(false), "logged")
			key := testKey("bound " + c.name)
			in, _, err := w.Prepare(t.Context(), key, a)
			require.NoError(t, err)
			out, _, err := w.Commit(t.Context(), key, a, in)
			require.NoError(t, err)
			require.Equal(t, world.OutcomeCommitted, out.Status)

			h := keyDigest(key)
			rec, ok, err := w.readOutcome(key, h, false)
			require.NoError(t, err)
			require.True(t, ok)
			assert.Equal(t, intentRef(in), rec.IntentRef, "the record names the intent it carried out")
			c.tamper(t, w, dir, &rec)
			_, err = w.appendRecord(h, kindOutcome, rec, true)
			require.NoError(t, err)

			_, _, err = w.Commit(t.Context(), key, a, in)
			require.ErrorIs(t, err, ErrUncertain)
			assert.Contains(t, err.Error(), c.why)
			assert.LessOrEqual(t, countLines(t, filepath.Join(dir, "log.txt")), 1, "the program never runs again")
		})
	}

	t.Run("a started marker of another intent", func(t *testing.T) {
		w, dir := rootWorld(t, appendSpec(true), map[string]string{"log.txt": ""})
		a := commandAction(appendFix(true), "logged")
		in := crashDuringCommand(t, w, testKey("marker"), a)
		other := in
		other.CycleSeq++
		_, _, err := w.Commit(t.Context(), testKey("marker"), a, other)
		require.ErrorIs(t, err, ErrUncertain)
		assert.Contains(t, err.Error(), "started marker")
		assert.Equal(t, 0, countLines(t, filepath.Join(dir, "log.txt")), "not run again, although idempotent")
	})
}

// cancelWhen returns a context cancelled once path exists: the moment a
// program shows it is running.
func cancelWhen(t *testing.T, path string) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for ctx.Err() == nil {
			if _, err := os.Stat(path); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	return ctx
}

// TestCancelledProgramsLeaveNoVerdict: when acr stops (SIGTERM cancels the
// context) the program it runs is killed, and what it was killed for is not
// judged. A cancelled check is an error, not a provider fault or a fail; a
// cancelled fix records no outcome, so the next Commit recovers it as after
// a kill.
func TestCancelledProgramsLeaveNoVerdict(t *testing.T) {
	t.Run("a check", func(t *testing.T) {
		spec := world.Spec{Checks: []world.Check{{ID: "slow", Kind: world.CheckCommand, Argv: []string{"sh", "-c", "touch started; sleep 300"}, TimeoutSeconds: 120}}}
		w, dir := rootWorld(t, spec, nil)
		_, err := w.Observe(cancelWhen(t, filepath.Join(dir, "started")))
		require.ErrorIs(t, err, context.Canceled)
		var pf *world.ProviderFault
		assert.False(t, errors.As(err, &pf), "a cancelled check is not a provider fault: %v", err)
	})
	t.Run("a fix, then recovered", func(t *testing.T) {
		f := world.Fix{ID: "append", Operation: world.OpRunCommand, Argv: []string{"sh", "-c", "echo run >> log.txt; touch started; sleep 300"},
			Touches: []string{"log.txt", "started"}, TimeoutSeconds: 120}
		spec := world.Spec{Checks: []world.Check{{ID: "logged", Kind: world.CheckCommand, Argv: []string{"sh", "-c", "grep -q run log.txt || exit 1"},
			TimeoutSeconds: 5, Fixes: []world.Fix{f}}}}
		w, dir := rootWorld(t, spec, map[string]string{"log.txt": ""})
		_, err := w.Observe(t.Context())
		require.NoError(t, err)
		a := commandAction(f, "logged")
		key := testKey("cancelled")
		in, _, err := w.Prepare(t.Context(), key, a)
		require.NoError(t, err)
		_, _, err = w.Commit(cancelWhen(t, filepath.Join(dir, "started")), key, a, in)
		require.ErrorIs(t, err, context.Canceled)
		_, found, err := w.Lookup(key)
		require.NoError(t, err)
		assert.False(t, found, "an outcome was recorded for a program killed because acr stopped")

		out, reused, err := w.Commit(t.Context(), key, a, in)
		require.NoError(t, err)
		assert.True(t, reused)
		assert.Contains(t, out.Detail, "recovered")
		assert.Equal(t, 1, countLines(t, filepath.Join(dir, "log.txt")), "the program ran once")
	})
}
