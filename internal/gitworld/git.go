package gitworld

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/command"
	"github.com/acr-project/acr/internal/world"
)

// Stages Apply reports to Repo.OnStage, the points a crash must be
// survivable at.
const (
	// StageAfterCommit: the effect's commit exists in the local clone
	// and has not been pushed.
	StageAfterCommit = "git-after-commit"
	// StageAfterPush: the remote's branch holds the commit; the outcome
	// has not been returned (nor recorded) yet.
	StageAfterPush = "git-after-push"
)

// ErrGit is a git program that failed: it could not be started, timed
// out, or exited with an error that is not a refused push.
var ErrGit = errors.New("git failed")

// DefaultTimeout bounds one git program without a timeout of its own.
const DefaultTimeout = 10 * time.Minute

// maxOutput bounds what one git program's output keeps; logs and diffs
// acr reads are far smaller.
const maxOutput = 16 << 20

// Repo is a run's clone of its git world, the cache of one host. Its
// methods are not safe for concurrent use (a run has one writer).
type Repo struct {
	// OnStage, if set, is called at StageAfterCommit and StageAfterPush.
	// Tests use it to crash at the points the protocol must survive; the
	// shell maps it onto its failpoints.
	OnStage func(stage string)

	spec world.GitSpec
	dir  string
	env  []string
	// Timeout bounds each git program (0: DefaultTimeout).
	Timeout time.Duration
}

// Head is a commit and its tree: the world's state in a git world.
type Head = world.GitHead

// Open makes (or reopens) the clone of spec's remote in dir, a directory
// of the state directory that acr owns; dir is created when missing.
// env is the environment every git program gets (command.Environment
// with the spec's pass_env).
func Open(ctx context.Context, dir string, spec world.GitSpec, env []string) (*Repo, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("open git clone: %w", err)
	}
	r := &Repo{spec: spec, dir: dir, env: gitEnv(env)}
	if _, err := os.Stat(filepath.Join(dir, ".git")); errors.Is(err, os.ErrNotExist) {
		if _, err := r.git(ctx, "init", "-q"); err != nil {
			return nil, fmt.Errorf("open git clone: %w", err)
		}
	} else if err != nil {
		return nil, fmt.Errorf("open git clone: %w", err)
	} else if err := removeStaleLocks(filepath.Join(dir, ".git")); err != nil {
		return nil, fmt.Errorf("open git clone: %w", err)
	}
	// The remote is set on every open: the pinned spec names it, and a
	// clone must never follow a remote someone changed by hand.
	if _, err := r.git(ctx, "config", "remote.origin.url", spec.Remote); err != nil {
		return nil, fmt.Errorf("open git clone: %w", err)
	}
	return r, nil
}

// removeStaleLocks removes the lock files (config.lock, index.lock,
// refs/.../x.lock and the like) that a git program killed with an earlier
// acr left in the clone's git directory: git never removes another
// program's lock, so one of them would make every later git that takes it
// fail ("could not lock config file ...: File exists") until a person
// deleted it. None of them can belong to a running program: Open is
// called with the run held on this host (the state directory's lock, or
// the cache lock of a store's run), git runs in the clone only under that
// hold, and every git acr starts is killed when acr dies (command.Run). The
// object directories are not walked: git's locks are not kept there,
// except in objects/info.
func removeStaleLocks(gitDir string) error {
	return filepath.WalkDir(gitDir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if d.IsDir() {
			if rel, _ := filepath.Rel(gitDir, filepath.Dir(p)); rel == "objects" && d.Name() != "info" {
				return fs.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasSuffix(d.Name(), ".lock") {
			return nil
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove the stale git lock %s: %w", p, err)
		}
		return nil
	})
}

// Dir is the clone's work tree, where checks and fixes run.
func (r *Repo) Dir() string { return r.dir }

// Spec returns the world's coordinates.
func (r *Repo) Spec() world.GitSpec { return r.spec }

// gitEnv adds what every git program acr runs needs to env: no prompt
// on a terminal, messages acr can parse.
func gitEnv(env []string) []string {
	out := slices.Clone(env)
	out = slices.DeleteFunc(out, func(kv string) bool {
		return strings.HasPrefix(kv, "GIT_TERMINAL_PROMPT=") || strings.HasPrefix(kv, "LC_ALL=")
	})
	return append(out, "GIT_TERMINAL_PROMPT=0", "LC_ALL=C")
}

// result is one git program's exit and output.
type result struct {
	exit   int
	stdout []byte
	stderr string
}

// run runs git with args in the clone; any exit is returned, and only a
// program that could not run or did not end on its own is an error.
func (r *Repo) run(ctx context.Context, args ...string) (result, error) {
	argv := append([]string{"git", "-c", "core.hooksPath=/dev/null", "-c", "commit.gpgSign=false",
		"-c", "core.autocrlf=false", "-c", "gc.auto=0", "-c", "user.name=acr", "-c", "user.email=acr@localhost"}, args...)
	res, err := command.Run(ctx, command.Spec{Argv: argv, Dir: r.dir, Env: r.env, Timeout: cmpDuration(r.Timeout, DefaultTimeout), MaxOutput: maxOutput})
	if err != nil {
		return result{}, fmt.Errorf("%w: git %s: %w", ErrGit, args[0], err)
	}
	if !res.Ended() {
		return result{}, fmt.Errorf("%w: git %s did not finish (timed out: %v, signal %q)", ErrGit, args[0], res.TimedOut, res.Signal)
	}
	return result{exit: res.ExitCode, stdout: res.StdoutRaw, stderr: res.Stderr}, nil
}

// git runs git and requires exit 0.
func (r *Repo) git(ctx context.Context, args ...string) ([]byte, error) {
	res, err := r.run(ctx, args...)
	if err != nil {
		return nil, err
	}
	if res.exit != 0 {
		return nil, fmt.Errorf("%w: git %s: exit %d: %s", ErrGit, args[0], res.exit, strings.TrimSpace(res.stderr))
	}
	return res.stdout, nil
}

func cmpDuration(d, def time.Duration) time.Duration {
	if d <= 0 {
		return def
	}
	return d
}

// tracking is the local ref that mirrors a branch of the remote.
func tracking(branch string) string { return "refs/remotes/origin/" + branch }

// remoteHeads asks the remote where base and the run's branch are ("" for
// a branch that does not exist).
func (r *Repo) remoteHeads(ctx context.Context) (base, branch string, err error) {
	out, err := r.git(ctx, "ls-remote", "origin", "refs/heads/"+r.spec.Base, "refs/heads/"+r.spec.Branch)
	if err != nil {
		return "", "", err
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		sha, ref, ok := strings.Cut(line, "\t")
		switch {
		case !ok:
		case ref == "refs/heads/"+r.spec.Base:
			base = sha
		case ref == "refs/heads/"+r.spec.Branch:
			branch = sha
		}
	}
	return base, branch, nil
}

// Fetch brings the run's branch from the remote, creating it from base
// first when it does not exist (the only write acr makes there besides
// effects; base itself is never written), and returns its head.
func (r *Repo) Fetch(ctx context.Context) (Head, error) {
	// The branch exists on every observation but the run's first, so it
	// is fetched straight away: one conversation with the remote instead
	// of two (an ls-remote first would cost a second ssh connection an
	// observation on a real remote). Only a failed fetch asks the remote
	// where the branches are.
	if err := r.fetch(ctx, r.spec.Branch); err == nil {
		return r.head(ctx, tracking(r.spec.Branch))
	}
	base, branch, err := r.remoteHeads(ctx)
	if err != nil {
		return Head{}, err
	}
	if branch == "" {
		if base == "" {
			return Head{}, fmt.Errorf("%w: the remote %s has neither branch %s nor its base %s", ErrGit, r.spec.Remote, r.spec.Branch, r.spec.Base)
		}
		if err := r.fetch(ctx, r.spec.Base); err != nil {
			return Head{}, err
		}
		// Created only if still absent (an empty lease): two hosts that
		// create it at once agree on base, and the loser's push is
		// refused harmlessly.
		if _, err := r.push(ctx, tracking(r.spec.Base), ""); err != nil {
			return Head{}, fmt.Errorf("create the branch %s from %s: %w", r.spec.Branch, r.spec.Base, err)
		}
	}
	// The branch is there now (made above, or by another host since the
	// first fetch, which may also have failed for a passing reason): a
	// second failure is the error.
	if err := r.fetch(ctx, r.spec.Branch); err != nil {
		return Head{}, err
	}
	return r.head(ctx, tracking(r.spec.Branch))
}

// fetch brings one branch of the remote into its tracking ref, forced:
// the remote is the truth, even when someone rewrote the branch.
func (r *Repo) fetch(ctx context.Context, branch string) error {
	_, err := r.git(ctx, "fetch", "-q", "--no-tags", "origin", "+refs/heads/"+branch+":"+tracking(branch))
	return err
}

// head resolves a revision to its commit and tree.
func (r *Repo) head(ctx context.Context, rev string) (Head, error) {
	out, err := r.git(ctx, "log", "-1", "--format=%H %T", rev, "--")
	if err != nil {
		return Head{}, err
	}
	f := strings.Fields(string(out))
	if len(f) != 2 {
		return Head{}, fmt.Errorf("%w: log %s: unexpected output %q", ErrGit, rev, out)
	}
	return Head{Commit: f[0], Tree: f[1]}, nil
}

// Checkout makes the work tree exactly the tree of commit: whatever a
// check, a fix or an interrupted attempt left there (changes, untracked
// and ignored files) is discarded.
func (r *Repo) Checkout(ctx context.Context, commit string) error {
	if _, err := r.git(ctx, "checkout", "-q", "--force", "--detach", commit, "--"); err != nil {
		return err
	}
	_, err := r.git(ctx, "clean", "-q", "-ffdx")
	return err
}

// Sync fetches the branch and checks its head out in the work tree, for
// the checks of an observation.
func (r *Repo) Sync(ctx context.Context) (Head, error) {
	h, err := r.Fetch(ctx)
	if err != nil {
		return Head{}, err
	}
	return h, r.Checkout(ctx, h.Commit)
}

// Find asks the remote's branch (as just fetched) for a commit after
// `after` whose Acr-Idempotency-Key trailer is key: the effect of key
// happened when there is one.
func (r *Repo) Find(ctx context.Context, after, key string) (Head, bool, error) {
	span := after + ".." + tracking(r.spec.Branch)
	if res, err := r.run(ctx, "cat-file", "-e", after+"^{commit}"); err != nil {
		return Head{}, false, err
	} else if res.exit != 0 {
		// The recorded head is gone (the branch was rewritten and the
		// clone is new): the key is unique, so the whole branch is
		// searched instead.
		span = tracking(r.spec.Branch)
	}
	out, err := r.git(ctx, "log", "-z", "--format=%H %T%x00%(trailers:key="+world.TrailerIdempotencyKey+",valueonly,separator=%x01)",
		span, "--")
	if err != nil {
		return Head{}, false, err
	}
	fields := bytes.Split(out, []byte{0})
	for i := 0; i+1 < len(fields); i += 2 {
		ids := strings.Fields(string(fields[i]))
		if len(ids) != 2 {
			continue
		}
		for _, v := range strings.Split(strings.TrimSpace(string(fields[i+1])), "\x01") {
			if strings.TrimSpace(v) == key {
				return Head{Commit: ids[0], Tree: ids[1]}, true, nil
			}
		}
	}
	return Head{}, false, nil
}

// Effect names one effect: what its commit's trailers carry, and the
// head its intent recorded, on which it is carried out.
type Effect struct {
	Run    string
	Cycle  int64
	Intent codec.Ref
	Key    string
	// Head is the branch head the intent recorded.
	Head string
	// Subject is the commit message's first line.
	Subject string
	// Touches are the path patterns the change may change (none: any
	// path). A change outside them is refused, not committed.
	Touches []string
	// Tree, when set, is the only tree the effect may commit (the tree a
	// person approved): a change that produces another is not committed
	// (Differs).
	Tree string
	// Changed, with Tree, is the paths the approval says that tree
	// changes, which governance ruled on: a change whose real paths are
	// others (an answer that named the right tree and the wrong paths) is
	// not committed either (Differs).
	Changed []string
}

// Message is the effect's commit message: its subject, then the
// trailers.
func (e Effect) Message() string {
	subject := strings.TrimSpace(strings.ReplaceAll(e.Subject, "\n", " "))
	if subject == "" {
		subject = "acr: effect " + e.Key
	}
	return fmt.Sprintf("%s\n\n%s: %s\n%s: %d\n%s: %s\n%s: %s\n", subject,
		world.TrailerRun, e.Run, world.TrailerCycle, e.Cycle, world.TrailerIntent, e.Intent, world.TrailerIdempotencyKey, e.Key)
}

// Status says how Apply ended.
type Status string

// The statuses of Apply.
const (
	// Pushed: the effect's commit is on the branch now, pushed by this call.
	Pushed Status = "pushed"
	// Found: a commit carrying the key was already on the branch (an
	// earlier attempt pushed it); nothing was pushed again.
	Found Status = "found"
	// Stale: the branch is no longer at the recorded head (before the
	// effect, or its push was refused): nothing was pushed.
	Stale Status = "stale"
	// Unchanged: the change left the tree as it was; nothing to commit.
	Unchanged Status = "unchanged"
	// Refused: the change reached paths outside the effect's touches;
	// nothing was committed (Result.Outside lists them).
	Refused Status = "refused"
	// Differs: the change produced a tree other than the effect's Tree
	// (Result.Tree); nothing was committed.
	Differs Status = "differs"
)

// Result is what Apply did: the commit now on the branch (Pushed,
// Found), the head found instead (Stale), and the paths the change made
// differ from the recorded head.
type Result struct {
	Status  Status
	Commit  Head
	Changed []string
	// Outside are the changed paths the effect's touches do not cover.
	Outside []string
	// Tree is the tree the change produced (set when it changed
	// something).
	Tree string
}

// Change changes the files of the work tree at dir; the commit records
// whatever it leaves. An error is the effect's failure: nothing is
// committed.
type Change func(ctx context.Context, dir string) error

// Apply carries out an effect exactly once on the remote's branch: it
// looks for the effect's key after the recorded head first (found: the
// effect is done), refuses a branch that moved (stale), and otherwise
// runs change in a clean work tree at the recorded head and pushes what
// it changed as one commit, if the branch is still at that head.
func (r *Repo) Apply(ctx context.Context, e Effect, change Change) (Result, error) {
	cur, err := r.Fetch(ctx)
	if err != nil {
		return Result{}, err
	}
	if h, ok, err := r.Find(ctx, e.Head, e.Key); err != nil || ok {
		return Result{Status: Found, Commit: h}, err
	}
	if cur.Commit != e.Head {
		return Result{Status: Stale, Commit: cur}, nil
	}
	if err := r.Checkout(ctx, e.Head); err != nil {
		return Result{}, err
	}
	if err := change(ctx, r.dir); err != nil {
		return Result{}, err
	}
	changed, err := r.Stage(ctx)
	if err != nil {
		return Result{}, err
	}
	if len(changed) == 0 {
		if e.Tree != "" && cur.Tree != e.Tree {
			return Result{Status: Differs, Commit: cur, Tree: cur.Tree}, nil
		}
		return Result{Status: Unchanged, Commit: cur}, nil
	}
	tree, err := r.writeTree(ctx)
	if err != nil {
		return Result{}, err
	}
	if outside := Outside(e.Touches, changed); len(outside) > 0 {
		if err := r.Checkout(ctx, e.Head); err != nil {
			return Result{}, err
		}
		return Result{Status: Refused, Commit: cur, Changed: changed, Outside: outside, Tree: tree}, nil
	}
	if e.Tree != "" && (tree != e.Tree || !slices.Equal(changed, sortedPaths(e.Changed))) {
		// Not the tree the person approved (a command that does not give
		// the same files twice): nothing the person did not see is
		// committed.
		if err := r.Checkout(ctx, e.Head); err != nil {
			return Result{}, err
		}
		return Result{Status: Differs, Commit: cur, Changed: changed, Tree: tree}, nil
	}
	if _, err := r.git(ctx, "commit", "-q", "--no-verify", "--allow-empty-message", "-m", e.Message()); err != nil {
		return Result{}, err
	}
	h, err := r.head(ctx, "HEAD")
	if err != nil {
		return Result{}, err
	}
	r.stage(StageAfterCommit)
	pushed, err := r.push(ctx, h.Commit, e.Head)
	if err != nil {
		return Result{}, err
	}
	if !pushed {
		// Someone moved the branch between the fetch and the push (or an
		// earlier attempt of this effect did, which a refetch tells).
		if _, err := r.Fetch(ctx); err != nil {
			return Result{}, err
		}
		if f, ok, err := r.Find(ctx, e.Head, e.Key); err != nil || ok {
			return Result{Status: Found, Commit: f, Changed: changed}, err
		}
		now, err := r.head(ctx, tracking(r.spec.Branch))
		return Result{Status: Stale, Commit: now, Changed: changed}, err
	}
	r.stage(StageAfterPush)
	return Result{Status: Pushed, Commit: h, Changed: changed, Tree: tree}, nil
}

func (r *Repo) stage(name string) {
	if r.OnStage != nil {
		r.OnStage(name)
	}
}

// Stage adds everything the work tree holds to the index and returns the
// paths that differ from HEAD, sorted.
func (r *Repo) Stage(ctx context.Context) ([]string, error) {
	if _, err := r.git(ctx, "add", "-A", "--", "."); err != nil {
		return nil, err
	}
	out, err := r.git(ctx, "diff", "--cached", "--name-only", "-z", "--no-renames", "HEAD", "--")
	if err != nil {
		return nil, err
	}
	return pathList(out), nil
}

// sortedPaths is paths sorted, as Stage returns them.
func sortedPaths(paths []string) []string {
	out := slices.Clone(paths)
	slices.Sort(out)
	return out
}

// writeTree writes the index as a tree object and returns its id: the
// tree a commit of the staged work tree gets.
func (r *Repo) writeTree(ctx context.Context) (string, error) {
	out, err := r.git(ctx, "write-tree")
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// Changed lists the paths that differ between two commits, sorted.
func (r *Repo) Changed(ctx context.Context, from, to string) ([]string, error) {
	out, err := r.git(ctx, "diff", "--name-only", "-z", "--no-renames", from, to, "--")
	if err != nil {
		return nil, err
	}
	return pathList(out), nil
}

// push pushes commit to the branch if the remote's branch is at expect
// ("": if it does not exist). A push the remote refuses because the
// branch is elsewhere returns false; any other failure is an error.
func (r *Repo) push(ctx context.Context, commit, expect string) (bool, error) {
	ref := "refs/heads/" + r.spec.Branch
	res, err := r.run(ctx, "push", "--porcelain", "--force-with-lease="+ref+":"+expect, "origin", commit+":"+ref)
	if err != nil {
		return false, err
	}
	if res.exit == 0 {
		return true, nil
	}
	for _, line := range strings.Split(string(res.stdout), "\n") {
		if strings.HasPrefix(line, "!") && strings.Contains(line, "[rejected]") {
			return false, nil
		}
	}
	return false, fmt.Errorf("%w: push to %s: exit %d: %s %s", ErrGit, r.spec.Branch, res.exit, strings.TrimSpace(string(res.stdout)), strings.TrimSpace(res.stderr))
}

// Outside returns the paths no pattern of touches matches (none when
// touches is empty: the change may touch anything).
func Outside(touches, paths []string) []string {
	if len(touches) == 0 {
		return nil
	}
	return world.Outside(touches, paths)
}

// pathList reads the NUL-separated path list `git diff --name-only -z`
// prints (NUL because a path may hold any other byte), sorted.
func pathList(out []byte) []string {
	var paths []string
	for _, p := range strings.Split(string(out), "\x00") {
		if p != "" {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	return paths
}
