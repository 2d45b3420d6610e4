package gitworld

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/acr-project/acr/internal/world"
)

// Attach returns the existing clone in dir without writing anything to
// it (Open sets its remote, and creates it when missing): for commands
// that only look, such as a preview, which may run on a read-only copy
// of the state directory.
func Attach(dir string, spec world.GitSpec, env []string) (*Repo, error) {
	if _, err := os.Stat(filepath.Join(dir, ".git")); err != nil {
		return nil, fmt.Errorf("attach git clone %s: %w", dir, err)
	}
	return &Repo{spec: spec, dir: dir, env: gitEnv(env)}, nil
}

// Peek makes a clone in dir of the run's branch as the remote holds it
// now, for a host that keeps no clone of the world and only looks (a
// preview). Unlike Fetch it writes nothing to the remote: a branch that
// does not exist yet is an error, not created.
func Peek(ctx context.Context, dir string, spec world.GitSpec, env []string) (*Repo, error) {
	r, err := Open(ctx, dir, spec, env)
	if err != nil {
		return nil, err
	}
	_, branch, err := r.remoteHeads(ctx)
	if err != nil {
		return nil, err
	}
	if branch == "" {
		return nil, fmt.Errorf("%w: the remote %s has no branch %s yet (the run's first observation makes it)", ErrGit, spec.Remote, spec.Branch)
	}
	if err := r.fetch(ctx, spec.Branch); err != nil {
		return nil, err
	}
	return r, nil
}

// Trial is what a change did when tried in a throwaway work tree: the
// head it was tried on, the tree it produced (the head's own when it
// changed nothing), the paths it made differ from that head (sorted) and
// the unified diff of them (git diff, binary files named only).
type Trial struct {
	Head    Head
	Tree    string
	Changed []string
	Diff    string
}

// Approved is the trial as an approval binds to it: the head, the tree
// and the changed paths, without the diff.
func (t Trial) Approved() world.GitTrial {
	return world.GitTrial{Head: t.Head.Commit, Tree: t.Tree, Changed: t.Changed}
}

// Try runs change in a throwaway clone checked out at the branch head as
// this clone last fetched it, and returns what it changed there. The
// throwaway clone shares this clone's objects (git clone --shared: it
// reads them, never writes them) and lives in a temporary directory that
// is removed before Try returns: nothing is committed or pushed, and the
// clone's work tree, refs and the remote are left as they were. A person
// reads the diff before approving the change it previews.
func (r *Repo) Try(ctx context.Context, change Change) (t Trial, err error) {
	head, err := r.head(ctx, tracking(r.spec.Branch))
	if err != nil {
		return Trial{}, fmt.Errorf("try: the branch %s as last fetched: %w", r.spec.Branch, err)
	}
	src, err := filepath.Abs(r.dir)
	if err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	tmp, err := os.MkdirTemp("", "acr-try-")
	if err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	defer func() {
		if rerr := os.RemoveAll(tmp); rerr != nil {
			err = errors.Join(err, fmt.Errorf("try: remove the throwaway clone: %w", rerr))
		}
	}()
	dir, err := filepath.Abs(filepath.Join(tmp, "work"))
	if err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	if _, err := r.git(ctx, "clone", "-q", "--shared", "--no-checkout", "--no-tags", src, dir); err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	// The throwaway clone has no remote acr could push to by mistake.
	tr := &Repo{spec: r.spec, dir: dir, env: r.env, Timeout: r.Timeout}
	if _, err := tr.git(ctx, "remote", "remove", "origin"); err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	if err := tr.Checkout(ctx, head.Commit); err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	if err := change(ctx, dir); err != nil {
		return Trial{}, err
	}
	changed, err := tr.Stage(ctx)
	if err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	t = Trial{Head: head, Tree: head.Tree, Changed: changed}
	if len(changed) == 0 {
		return t, nil
	}
	if t.Tree, err = tr.writeTree(ctx); err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	out, err := tr.git(ctx, "diff", "--cached", "--no-renames", "--no-color", "--no-ext-diff", "--no-textconv", "HEAD", "--")
	if err != nil {
		return Trial{}, fmt.Errorf("try: %w", err)
	}
	t.Diff = strings.ToValidUTF8(string(out), "\uFFFD")
	return t, nil
}
