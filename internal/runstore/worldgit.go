package runstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/command"
	"github.com/acr-project/acr/internal/gitworld"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/world"
)

// A git world (world.Spec.Git) is a sandbox whose world directory
// (sandbox/world) is a clone of the remote, checked out at the head of
// the run's branch: the sandbox observes it and carries out effects in it
// as in a sandbox copy, and gitWorld makes each effect one commit pushed
// to the branch (package gitworld). The remote is the truth: the clone
// is this host's cache, and the sandbox's idempotency table is not kept
// across invocations (openGitWorld empties it), since whether an effect
// happened is asked of the remote, by its key, never of this host.

// errSettled stops gitworld.Apply when the sandbox settled the effect
// without a change to commit (failed, stale, no change): its outcome
// stands and nothing is pushed.
var errSettled = errors.New("settled without a commit")

// gitWorld is a git world as the driver sees it.
type gitWorld struct {
	*sandbox.World
	repo *gitworld.Repo

	mu sync.Mutex
	// head is what the last Observe looked at: the head an effect
	// prepared after it is carried out on.
	head world.GitHead
}

var _ kernel.World = (*gitWorld)(nil)

// gitEnviron is the environment of the git program in a run: what
// commands get (PATH, HOME, LANG and the spec's pass_env, so that ssh
// keys, agents and credential helpers work as they do for the person).
func gitEnviron(spec world.Spec, environ func(string) (string, bool)) []string {
	return command.Environment(environ, spec.PassEnv, nil)
}

// resetKeys removes the sandbox's idempotency table of a git world in
// stateDir: an interrupted effect is decided by the remote, and a record
// of it on this host would only keep the effect from being carried out
// again from a clean work tree.
func resetKeys(stateDir string) error {
	err := os.RemoveAll(filepath.Join(stateDir, filepath.FromSlash(sandbox.KeysDir)))
	if err == nil || errors.Is(err, fs.ErrNotExist) {
		err = os.MkdirAll(filepath.Join(stateDir, filepath.FromSlash(sandbox.KeysDir)), 0o755)
	}
	if err != nil {
		return fmt.Errorf("git world: reset the key table: %w", err)
	}
	return nil
}

// openGitWorld opens the clone in w's world directory and wraps w.
func openGitWorld(ctx context.Context, w *sandbox.World, spec world.Spec, environ func(string) (string, bool), failpoint func(string)) (*gitWorld, error) {
	repo, err := gitworld.Open(ctx, w.Dir(), *spec.Git, gitEnviron(spec, environ))
	if err != nil {
		return nil, err
	}
	repo.OnStage = failpoint
	return &gitWorld{World: w, repo: repo}, nil
}

// Observe implements kernel.World: the branch is fetched and its head
// checked out clean, the sandbox observes the work tree, and what the
// checks left there is discarded again, so that an effect is prepared on
// the head's own files. A remote that cannot be reached is a provider
// fault: the cycle does not happen.
func (g *gitWorld) Observe(ctx context.Context) (world.Observation, error) {
	h, err := g.repo.Sync(ctx)
	if err != nil {
		return world.Observation{}, g.fault(ctx, err)
	}
	obs, err := g.World.Observe(ctx)
	if err != nil {
		return obs, err
	}
	if err := g.repo.Checkout(ctx, h.Commit); err != nil {
		return world.Observation{}, g.fault(ctx, err)
	}
	g.mu.Lock()
	g.head = h
	g.mu.Unlock()
	obs.Git = &h
	return obs, nil
}

// fault makes a git failure a provider fault, unless acr itself is
// stopping (the driver tells that from ctx).
func (g *gitWorld) fault(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return err
	}
	return &world.ProviderFault{Source: "git", Reason: err.Error()}
}

// Prepare implements kernel.World: the sandbox's intent, carried out on
// the head the last observation looked at.
func (g *gitWorld) Prepare(ctx context.Context, key string, a world.Action) (world.Intent, *world.Outcome, error) {
	in, prior, err := g.World.Prepare(ctx, key, a)
	if err != nil || prior != nil {
		return in, prior, err
	}
	g.mu.Lock()
	h := g.head
	g.mu.Unlock()
	if h.Commit == "" {
		if h, err = g.repo.Fetch(ctx); err != nil {
			return world.Intent{}, nil, err
		}
	}
	in.Git = &h
	return in, nil, nil
}

// CommitWhen is Commit once ready has returned (the intent is durable):
// nothing of the git world changes before. It shadows the sandbox's own
// CommitWhen, which would carry the effect out without a commit.
func (g *gitWorld) CommitWhen(ctx context.Context, key string, a world.Action, in world.Intent, ready func() error) (world.Outcome, bool, error) {
	if err := ready(); err != nil {
		return world.Outcome{}, false, err
	}
	return g.Commit(ctx, key, a, in)
}

// Commit implements kernel.World: the effect is carried out exactly once
// on the remote's branch. A commit carrying its key after the recorded
// head means it happened (reused, not pushed again); a branch that moved
// makes it stale (nothing pushed; the next observation sees the new
// head); otherwise the sandbox carries it out in a clean work tree at the
// recorded head and what it changed is pushed as one commit.
func (g *gitWorld) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	if in.Git == nil {
		return world.Outcome{}, false, fmt.Errorf("commit %s: the intent names no head of the git world", key)
	}
	var (
		out    world.Outcome
		reused bool
	)
	e := gitworld.Effect{Run: in.RunID, Cycle: in.CycleSeq, Intent: codec.MustRefOf("intent", in), Key: key, Head: in.Git.Commit,
		Subject: "acr: " + a.Describe()}
	if a.OnSet() {
		e.Touches = a.Touches
	}
	if ap := in.Approved; ap != nil {
		if ap.Head != in.Git.Commit {
			// The person approved the tree tried on another head: what
			// the command gives here was never shown, so nothing is
			// carried out (this intent never ran anywhere: its head is
			// its own). The next observation decides, and asks, again.
			out := world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, Target: in.Planned.Target, Status: world.OutcomeStale,
				Detail: "the branch " + g.repo.Spec().Branch + " is at " + short(in.Git.Commit) + ", not at " + short(ap.Head) +
					" where the approved tree " + ap.Tree + " was tried; nothing pushed", Git: in.Git}
			return out, false, nil
		}
		e.Tree, e.Changed = ap.Tree, ap.Changed
	}
	res, err := g.repo.Apply(ctx, e, func(ctx context.Context, _ string) error {
		var err error
		out, reused, err = g.World.Commit(ctx, key, a, in)
		if err == nil && out.Status != world.OutcomeCommitted {
			return errSettled
		}
		return err
	})
	switch {
	case errors.Is(err, errSettled):
		return out, reused, g.repo.Checkout(ctx, in.Git.Commit)
	case err != nil:
		return world.Outcome{}, false, fmt.Errorf("commit %s: %w", key, err)
	}
	head := res.Commit
	switch res.Status {
	case gitworld.Pushed:
		out.Git = &head
		if a.OnSet() {
			// What the commit changed, as git tells it: known even when
			// the sandbox did not observe the tree before the command
			// (a recovery carrying the effect out again).
			out.Changed, out.Outside = res.Changed, nil
		}
		return out, reused, nil
	case gitworld.Unchanged:
		out.Git = &head
		out.Status, out.Detail = world.OutcomeNoChange, "the effect left the branch's tree as it was; nothing to commit"
		return out, reused, nil
	case gitworld.Found:
		// Carried out by an earlier attempt: its commit is on the
		// branch. The work tree is put at it, for the readback.
		out = in.Planned
		out.Status, out.Detail, out.Git = world.OutcomeCommitted, "found on the branch by its key (commit "+short(head.Commit)+"); not pushed again", &head
		if err := g.repo.Checkout(ctx, head.Commit); err != nil {
			return world.Outcome{}, false, fmt.Errorf("commit %s: %w", key, err)
		}
		if a.OnSet() {
			// What the effect left is the found commit's: its changed
			// paths, and the hash of the files it may touch there (a
			// command's after-hash is known only once it ran).
			changed, err := g.repo.Changed(ctx, in.Git.Commit, head.Commit)
			if err != nil {
				return world.Outcome{}, false, fmt.Errorf("commit %s: %w", key, err)
			}
			rb, err := g.World.Readback(ctx, a, out)
			if err != nil {
				return world.Outcome{}, false, fmt.Errorf("commit %s: %w", key, err)
			}
			out.Changed, out.AfterSHA256 = changed, rb.SHA256
		}
		return out, true, nil
	case gitworld.Stale:
		out = world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, Target: in.Planned.Target, Status: world.OutcomeStale,
			Detail: "the branch " + g.repo.Spec().Branch + " moved from " + short(in.Git.Commit) + " to " + short(head.Commit) + "; nothing pushed", Git: &head}
		return out, false, g.repo.Checkout(ctx, head.Commit)
	case gitworld.Differs:
		detail := "the tree differs from the approved tree " + in.Approved.Tree + " (the command produced " + res.Tree + "); nothing pushed"
		if res.Tree == in.Approved.Tree {
			// The tree is the approved one, the paths the approval named
			// are not what it changes: governance ruled on other paths.
			detail = "the approval names paths (" + strings.Join(in.Approved.Changed, ", ") + ") other than those its tree changes (" +
				strings.Join(res.Changed, ", ") + "); nothing pushed"
		}
		out = world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, Target: in.Planned.Target, Status: world.OutcomeStale,
			Detail: detail, Changed: res.Changed, Git: &head}
		return out, false, nil
	case gitworld.Refused:
		out.Status, out.Changed, out.Outside, out.Git = world.OutcomeFailed, res.Changed, res.Outside, &head
		out.Detail = "the command changed paths outside its touches (" + strings.Join(res.Outside, ", ") + "); nothing committed"
		return out, false, nil
	}
	return world.Outcome{}, false, fmt.Errorf("commit %s: unknown git result %q", key, res.Status)
}

func short(commit string) string { return commit[:min(12, len(commit))] }

// previewGitFresh is previewGit on a host that keeps no clone of the
// run's world (a host that never ran the run, on a nats:// store): the
// branch is fetched, as the remote holds it now, into a temporary
// directory removed before it returns. Nothing is written to the remote
// or to this host's state directory.
func previewGitFresh(ctx context.Context, spec world.Spec, a world.Action, environ func(string) (string, bool)) (text string, trial *world.GitTrial, err error) {
	tmp, err := os.MkdirTemp("", "acr-preview-")
	if err != nil {
		return "", nil, fmt.Errorf("preview %s: %w", a.Describe(), err)
	}
	defer func() {
		if rerr := os.RemoveAll(tmp); rerr != nil {
			err = errors.Join(err, fmt.Errorf("preview: remove the temporary clone: %w", rerr))
		}
	}()
	if _, err := gitworld.Peek(ctx, filepath.Join(tmp, filepath.FromSlash(sandbox.WorldDir)), *spec.Git, gitEnviron(spec, environ)); err != nil {
		return "", nil, fmt.Errorf("preview %s: this host has no clone of %s, and fetching one failed: %w", a.Describe(), spec.Git.Describe(), err)
	}
	w, err := sandbox.OpenReadOnly(tmp, spec)
	if err != nil {
		return "", nil, err
	}
	defer w.Close()
	return previewGit(ctx, w, spec, a, environ)
}

// previewExcerptLines bounds the output a failed trial shows.
const previewExcerptLines = 20

// previewGit is a git world's preview: the sandbox's, and for a
// run_command what the command changes when it is tried now, in a
// throwaway clone at the branch head as this host's clone last fetched
// it (gitworld.Repo.Try): its unified diff, the changed paths its
// touches do not cover, or how it failed. Nothing is committed or pushed
// and the clone is not written, so it works on a read-only state
// directory. The trial is returned with the text: an approval carries
// it, and binds to its tree (world.GitTrial).
func previewGit(ctx context.Context, w *sandbox.World, spec world.Spec, a world.Action, environ func(string) (string, bool)) (string, *world.GitTrial, error) {
	text, err := w.Preview(ctx, a)
	if err != nil || !(world.Catalog{}).Of(a.Operation).Command {
		return text, nil, err
	}
	repo, err := gitworld.Attach(w.Dir(), *spec.Git, gitEnviron(spec, environ))
	if err != nil {
		return "", nil, fmt.Errorf("preview %s: %w", a.Describe(), err)
	}
	w.Environ = environ
	trial, res, runErr, err := tryCommand(ctx, w, repo, a)
	if err != nil {
		return "", nil, fmt.Errorf("preview %s: %w", a.Describe(), err)
	}
	// The trial binds an approval even when the command failed: the effect
	// then commits nothing unless it gives, on that head, this tree.
	approved := trial.Approved()
	var b strings.Builder
	b.WriteString(text)
	fmt.Fprintf(&b, "tried     on %s (the branch head as this host last fetched it), in a throwaway clone: nothing committed or pushed\n", short(trial.Head.Commit))
	cr := res.CommandResult
	switch {
	case runErr != nil:
		fmt.Fprintf(&b, "would fail: could not be started: %v\n", runErr)
		return b.String(), &approved, nil
	case cr.TimedOut:
		fmt.Fprintf(&b, "would fail: timed out after %d s; its process group was killed\n", world.Timeout(a.TimeoutSeconds))
	case cr.Signal != "":
		fmt.Fprintf(&b, "would fail: killed by signal %s\n", cr.Signal)
	case cr.ExitCode != 0:
		fmt.Fprintf(&b, "would fail: exit %d\n", cr.ExitCode)
	}
	if !cr.Ended() || cr.ExitCode != 0 {
		out := strings.TrimSpace(cr.Stderr + "\n" + cr.Stdout)
		if out != "" {
			b.WriteString("its output:\n")
			lines := strings.Split(out, "\n")
			if len(lines) > previewExcerptLines {
				lines = append(lines[:previewExcerptLines], fmt.Sprintf("... %d more lines", len(lines)-previewExcerptLines))
			}
			for _, l := range lines {
				b.WriteString("  " + l + "\n")
			}
		}
		b.WriteString("nothing would be committed\n")
		return b.String(), &approved, nil
	}
	if len(trial.Changed) == 0 {
		b.WriteString("changes   nothing (exit 0): nothing would be committed\n")
		return b.String(), &approved, nil
	}
	fmt.Fprintf(&b, "changes   %s\n", strings.Join(trial.Changed, ", "))
	if outside := gitworld.Outside(a.Touches, trial.Changed); len(outside) > 0 {
		fmt.Fprintf(&b, "would be refused: outside touches: %s; nothing would be committed\n", strings.Join(outside, ", "))
	} else {
		fmt.Fprintf(&b, "tree      %s: an approval binds to it; exactly this tree is committed on %s, or nothing\n", trial.Tree, short(trial.Head.Commit))
	}
	b.WriteString(trial.Diff)
	if !strings.HasSuffix(trial.Diff, "\n") {
		b.WriteString("\n")
	}
	return b.String(), &approved, nil
}

// tryCommand runs a's command as an effect would, but in a throwaway
// clone of repo at the branch head as repo last fetched it
// (gitworld.Repo.Try): nothing is committed or pushed. runErr is a
// command that could not be started; err is any other failure.
func tryCommand(ctx context.Context, w *sandbox.World, repo *gitworld.Repo, a world.Action) (trial gitworld.Trial, res command.Result, runErr, err error) {
	trial, err = repo.Try(ctx, func(ctx context.Context, dir string) error {
		res, runErr = w.TryCommand(ctx, a, dir)
		if runErr != nil && !errors.Is(runErr, command.ErrStart) {
			return runErr
		}
		return nil
	})
	return trial, res, runErr, err
}

// Try implements kernel.Trier: a command fix is tried before governance
// rules on it, in a throwaway clone at the head the last observation
// fetched, through the one runner with the environment a real run gives
// it. The cycle records what it changed; governance rules on that. A
// command that fails (cannot start, exits other than 0, is killed or
// times out) is a trial that failed, not an error.
func (g *gitWorld) Try(ctx context.Context, a world.Action) (world.CommandTried, error) {
	trial, res, runErr, err := tryCommand(ctx, g.World, g.repo, a)
	if err != nil {
		return world.CommandTried{}, g.fault(ctx, fmt.Errorf("try %s: %w", a.Describe(), err))
	}
	return world.CommandTried{Head: trial.Head.Commit, Tree: trial.Tree, Changed: trial.Changed, Failure: trialFailure(a, res, runErr)}, nil
}

var _ kernel.Trier = (*gitWorld)(nil)

// trialFailure says how a tried command failed, "" when it exited 0.
func trialFailure(a world.Action, res command.Result, runErr error) string {
	cr := res.CommandResult
	switch {
	case runErr != nil:
		return "could not be started: " + runErr.Error()
	case cr.TimedOut:
		return fmt.Sprintf("timed out after %d s", world.Timeout(a.TimeoutSeconds))
	case cr.Signal != "":
		return "killed by signal " + cr.Signal
	case cr.ExitCode != 0:
		return fmt.Sprintf("exit %d", cr.ExitCode)
	case !cr.Ended():
		return "did not end"
	}
	return ""
}
