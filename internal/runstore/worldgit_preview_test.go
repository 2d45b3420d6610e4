package runstore

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/gitworld/gittest"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/world"
)

// TestGitWorldPreviewShowsACommandsDiff: the preview of a run_command in
// a git world tries the command in a throwaway clone at the branch head
// and shows its diff, the paths outside its touches, or how it failed;
// the branch head, the clone's work tree and refs, and the remote are as
// they were afterwards.
func TestGitWorldPreviewShowsACommandsDiff(t *testing.T) {
	remote := gittest.BareRemote(t, "", map[string]string{"queue.txt": "d\n", "lower.txt": "aXb\nkeep\n"})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	in := gitInputs(t, remote, "acr/preview")
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, in, "run:preview", false, gitOptions(t))
	require.NoError(t, err)
	clone := filepath.Join(dir, filepath.FromSlash(sandbox.WorldDir))
	snapshot := func() []string {
		return []string{
			gitSh(t, remote, "show-ref"),
			gitSh(t, clone, "show-ref"),
			gitSh(t, clone, "rev-parse", "HEAD"),
			gitSh(t, clone, "status", "--porcelain", "--ignored"),
			gitSh(t, clone, "worktree", "list", "--porcelain"),
		}
	}
	before := snapshot()
	head := gitSh(t, remote, "rev-parse", "refs/heads/acr/preview")

	// The tree the sed fix gives on the head, made by hand: the trial
	// must name it, since an approval binds to it.
	scratch := t.TempDir()
	gitSh(t, scratch, "clone", "-q", "--branch", "acr/preview", remote, ".")
	gitSh(t, scratch, "config", "core.autocrlf", "false")
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "lower.txt"), []byte("axb\nkeep\n"), 0o644))
	gitSh(t, scratch, "add", "-A")
	fixed := gitSh(t, scratch, "write-tree")
	headTree := gitSh(t, remote, "rev-parse", "refs/heads/acr/preview^{tree}")

	for _, tc := range []struct {
		name    string
		argv    []string
		want    []string
		wantNot []string
		// tree is the tree the trial must name ("": not checked).
		tree    string
		changed []string
	}{
		{name: "diff", argv: []string{"sed", "-i", "s/X/x/g", "lower.txt"},
			want: []string{"runs      sed -i s/X/x/g lower.txt", "tried     on " + head[:12], "changes   lower.txt",
				"--- a/lower.txt", "+++ b/lower.txt", "-aXb", "+axb", " keep"},
			wantNot: []string{"would be refused", "would fail"}, tree: fixed, changed: []string{"lower.txt"}},
		{name: "outside touches", argv: []string{"sh", "-c", "sed -i s/X/x/g lower.txt && printf 'new\\n' > other.txt"},
			want: []string{"changes   lower.txt, other.txt", "would be refused: outside touches: other.txt", "+++ b/other.txt", "+new"}},
		{name: "fails", argv: []string{"sh", "-c", "echo boom >&2; exit 3"},
			want: []string{"would fail: exit 3", "its output:", "  boom", "nothing would be committed"}, wantNot: []string{"changes   "}},
		{name: "no change", argv: []string{"true"}, want: []string{"changes   nothing (exit 0)"}, tree: headTree},
		{name: "cannot start", argv: []string{"no-such-program-acr"}, want: []string{"would fail: could not be started"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := in.Spec
			spec.Checks = append([]world.Check(nil), in.Spec.Checks...)
			var c *world.Check
			for i := range spec.Checks {
				if spec.Checks[i].ID == "lower" {
					c = &spec.Checks[i]
				}
			}
			require.NotNil(t, c)
			c.Fixes = []world.Fix{c.Fixes[0]}
			c.Fixes[0].Argv = tc.argv
			act := world.CommandAction(c.ID, c.Fixes[0])
			text, trial, err := dirRun{dir: dir}.Preview(t.Context(), spec, act, gitOptions(t).Environ)
			require.NoError(t, err)
			require.NotNil(t, trial, "a command's trial is returned, for the approval to bind to")
			assert.Equal(t, head, trial.Head)
			assert.True(t, trial.Valid())
			if tc.tree != "" {
				assert.Equal(t, tc.tree, trial.Tree)
				assert.Equal(t, tc.changed, trial.Changed)
			}
			if len(trial.Changed) > 0 && !strings.Contains(text, "would") {
				assert.Contains(t, text, "tree      "+trial.Tree+": an approval binds to it")
			}
			for _, w := range tc.want {
				assert.Contains(t, text, w)
			}
			for _, w := range tc.wantNot {
				assert.NotContains(t, text, w)
			}
			assert.Equal(t, before, snapshot(), "the preview wrote nothing")
			assert.Equal(t, head, gitSh(t, remote, "rev-parse", "refs/heads/acr/preview"))
			left, err := filepath.Glob(filepath.Join(tmp, "acr-try-*"))
			require.NoError(t, err)
			assert.Empty(t, left, "the throwaway clone is removed")
		})
	}

	// A command the environment does not declare in this form is not run.
	act := world.CommandAction("lower", world.Fix{ID: "lower", Operation: world.OpRunCommand, Argv: []string{"sh", "-c", "touch pwned"}, Touches: []string{"lower.txt"}})
	_, _, err = dirRun{dir: dir}.Preview(t.Context(), in.Spec, act, gitOptions(t).Environ)
	require.Error(t, err)
	assert.Equal(t, before, snapshot())
}

// TestNATSGitPreview: on a nats:// store the preview of a git world's
// command fix is tried on the host's own clone, or, on a host that keeps
// none (it never ran the run), on a clone fetched for the preview alone
// and removed afterwards; both show the same diff and name the same head
// and tree, the remote and the first host's clone are left as they were,
// and the second host's state directory gets no clone.
func TestNATSGitPreview(t *testing.T) {
	rs := startStore(t)
	remote := gittest.BareRemote(t, "", map[string]string{"queue.txt": "d\n", "lower.txt": "aXb\nkeep\n"})
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	const id = "run:nats-preview"
	in := gitInputs(t, remote, "acr/nats-preview")
	hostA, hostB := t.TempDir(), t.TempDir()
	a := rs.on(t, hostA, id)
	_, err := a.Init(t.Context(), in, gitOptions(t))
	require.NoError(t, err)
	head := gitSh(t, remote, "rev-parse", "refs/heads/acr/nats-preview")
	headTree := gitSh(t, remote, "rev-parse", "refs/heads/acr/nats-preview^{tree}")
	scratch := t.TempDir()
	gitSh(t, scratch, "clone", "-q", "--branch", "acr/nats-preview", remote, ".")
	require.NoError(t, os.WriteFile(filepath.Join(scratch, "lower.txt"), []byte("axb\nkeep\n"), 0o644))
	gitSh(t, scratch, "add", "-A")
	fixed := gitSh(t, scratch, "write-tree")
	require.NotEqual(t, headTree, fixed)

	var act world.Action
	for _, c := range in.Spec.Checks {
		if c.ID == "lower" {
			act = world.CommandAction(c.ID, c.Fixes[0])
		}
	}
	require.NotEmpty(t, act.Argv)
	cloneA := filepath.Join(a.WorldDir, filepath.FromSlash(sandbox.WorldDir))
	snapshot := func() []string {
		return []string{gitSh(t, remote, "show-ref"), gitSh(t, cloneA, "show-ref"), gitSh(t, cloneA, "rev-parse", "HEAD"),
			gitSh(t, cloneA, "status", "--porcelain", "--ignored")}
	}
	before := snapshot()

	var texts []string
	for _, host := range []string{hostA, hostB} {
		text, trial, err := natsRun{m: rs.on(t, host, id), ctx: t.Context()}.Preview(t.Context(), in.Spec, act, gitOptions(t).Environ)
		require.NoError(t, err, "host %s", host)
		require.NotNil(t, trial)
		assert.Equal(t, world.GitTrial{Head: head, Tree: fixed, Changed: []string{"lower.txt"}}, *trial)
		assert.Contains(t, text, "tried     on "+head[:12])
		assert.Contains(t, text, "-aXb\n+axb\n keep\n")
		assert.Contains(t, text, "tree      "+fixed+": an approval binds to it")
		texts = append(texts, text)
		assert.Equal(t, before, snapshot(), "the preview wrote nothing")
		left, err := os.ReadDir(tmp)
		require.NoError(t, err)
		assert.Empty(t, left, "no temporary clone is left")
	}
	assert.Equal(t, texts[0], texts[1])
	_, err = os.Stat(filepath.Join(rs.on(t, hostB, id).WorldDir, filepath.FromSlash(sandbox.WorldDir)))
	assert.ErrorIs(t, err, os.ErrNotExist, "the host that never ran the run keeps no clone")
	r, err := rs.s.Run(t.Context(), id)
	require.NoError(t, err)
	_, err = r.World().Load()
	assert.ErrorContains(t, err, "the store holds no world for the run", "the store holds nothing of a git world")
}

// TestGitWorldCommitsOnlyTheApprovedTree: the git world carries out a
// command fix whose intent carries an approved trial only on the trial's
// head, and commits only the trial's tree: the tree the preview named is
// committed on that head; an approval of another head (the branch moved
// since) or of another tree (the command gives other files) pushes
// nothing and gives a stale outcome that says why.
func TestGitWorldCommitsOnlyTheApprovedTree(t *testing.T) {
	ctx := t.Context()
	remote := gittest.BareRemote(t, "", map[string]string{"queue.txt": "d\n", "lower.txt": "aXb\nkeep\n"})
	in := gitInputs(t, remote, "acr/bound")
	dir := t.TempDir()
	_, err := Init(ctx, dir, in, "run:bound", false, gitOptions(t))
	require.NoError(t, err)
	var act world.Action
	for _, c := range in.Spec.Checks {
		if c.ID == "lower" {
			act = world.CommandAction(c.ID, c.Fixes[0])
		}
	}
	_, trial, err := dirRun{dir: dir}.Preview(ctx, in.Spec, act, gitOptions(t).Environ)
	require.NoError(t, err)
	require.NotNil(t, trial)
	branch := func() string { return gitSh(t, remote, "rev-parse", "refs/heads/acr/bound") }

	r, err := Open(ctx, dir, gitOptions(t))
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	w := r.Driver.World
	commit := func(key string, approved world.GitTrial) world.Outcome {
		t.Helper()
		_, err := w.Observe(ctx)
		require.NoError(t, err)
		intent, prior, err := w.Prepare(ctx, key, act)
		require.NoError(t, err)
		require.Nil(t, prior)
		require.NotNil(t, intent.Git)
		intent.RunID, intent.CycleSeq, intent.Approved = "run:bound", 7, &approved
		out, _, err := w.Commit(ctx, key, act, intent)
		require.NoError(t, err)
		return out
	}

	// Another tree than the one approved: nothing pushed.
	before := branch()
	other := *trial
	other.Tree = strings.Repeat("3", len(trial.Tree))
	out := commit("idem:sha256:"+strings.Repeat("a", 64), other)
	assert.Equal(t, world.OutcomeStale, out.Status)
	assert.Equal(t, "the tree differs from the approved tree "+other.Tree+" (the command produced "+trial.Tree+"); nothing pushed", out.Detail)
	assert.Equal(t, before, branch())

	// The approved tree, with other paths than those it changes (an
	// answer made by hand: governance ruled on paths the commit would
	// not have): nothing pushed.
	other = *trial
	other.Changed = []string{"elsewhere.txt"}
	out = commit("idem:sha256:"+strings.Repeat("d", 64), other)
	assert.Equal(t, world.OutcomeStale, out.Status)
	assert.Contains(t, out.Detail, "the approval names paths (elsewhere.txt) other than those its tree changes")
	assert.Equal(t, before, branch())

	// Approved on another head than the branch's now: nothing carried out.
	other = *trial
	other.Head = strings.Repeat("4", len(trial.Head))
	out = commit("idem:sha256:"+strings.Repeat("b", 64), other)
	assert.Equal(t, world.OutcomeStale, out.Status)
	assert.Contains(t, out.Detail, "not at "+other.Head[:12]+" where the approved tree "+trial.Tree+" was tried; nothing pushed")
	assert.Equal(t, before, branch())
	assert.Empty(t, gittest.Keys(t, remote, "acr/bound"))

	// The tree the preview named, on its head: committed, exactly.
	out = commit("idem:sha256:"+strings.Repeat("c", 64), *trial)
	assert.Equal(t, world.OutcomeCommitted, out.Status)
	assert.Equal(t, trial.Tree, gitSh(t, remote, "rev-parse", "refs/heads/acr/bound^{tree}"))
	assert.Equal(t, trial.Head, gitSh(t, remote, "rev-parse", "refs/heads/acr/bound^"))
	assert.Equal(t, map[string]int{"idem:sha256:" + strings.Repeat("c", 64): 1}, gittest.Keys(t, remote, "acr/bound"))
}
