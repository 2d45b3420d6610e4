package sandbox

import (
	"context"
	"fmt"
	"strings"

	"github.com/acr-project/acr/internal/command"
	"github.com/acr-project/acr/internal/diff"
	"github.com/acr-project/acr/internal/world"
)

// OpenReadOnly opens a run's world for reading only, for commands that
// show what an action would do (acr status, acr approve): unlike Open it
// sweeps no temporary files and has no idempotency table, so it writes
// nothing, and it works on a read-only copy of the state directory.
func OpenReadOnly(stateDir string, spec world.Spec) (*World, error) {
	return openWorld(stateDir, spec)
}

// previewDigest stands in for the idempotency key an action gets only
// when it runs; the few operations whose content names the key (an issue
// line's tag) show previewTag in its place.
const previewDigest = "0000000000000000000000000000000000000000000000000000000000000000"

// previewTag replaces the key's tag in a preview.
const previewTag = "[<idempotency key>]"

// Preview says what executing a would change, computed the way Prepare
// plans it and without touching anything: for an operation on one file,
// a unified diff of the target from its current content to the planned
// one (or why nothing would change); for a command, the command line,
// where it runs, what it may change and its time limit. A person reads it
// before approving a.
func (w *World) Preview(ctx context.Context, a world.Action) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a.Operation == world.OpRunCommand {
		return commandPreview(a, w.spec.Git != nil), nil
	}
	if a.OnSet() {
		return fmt.Sprintf("%s on the files matching %s\n", a.Operation, strings.Join(a.Touches, ", ")), nil
	}
	if err := w.validate(a); err != nil {
		return "", fmt.Errorf("preview %s: %w", a.Describe(), err)
	}
	target := resolveTarget(previewDigest, a)
	p, err := w.plan(ctx, "", previewDigest, a, target)
	if err != nil {
		return "", fmt.Errorf("preview %s: %w", a.Describe(), err)
	}
	if !p.write {
		why := p.out.Detail
		if why == "" {
			why = string(p.out.Status)
		}
		return fmt.Sprintf("%s %s would change nothing now: %s\n", a.Operation, target, why), nil
	}
	after := p.content
	if p.remove {
		after = nil
	}
	text := diff.Unified("a/"+target, "b/"+target, p.before, after)
	return strings.ReplaceAll(text, issueLineTag(previewDigest), previewTag), nil
}

// commandPreview is a run_command's preview: everything the action binds.
// In a git world (git) the command's effect is one commit, and after a
// crash the remote says whether it happened, so no person is asked.
func commandPreview(a world.Action, git bool) string {
	var b strings.Builder
	quoted := make([]string, len(a.Argv))
	for i, s := range a.Argv {
		quoted[i] = shellQuote(s)
	}
	fmt.Fprintf(&b, "runs      %s\n", strings.Join(quoted, " "))
	if git {
		b.WriteString("in        a clean work tree of the run's branch at the head its intent records, stdin closed, a scrubbed environment\n")
	} else {
		b.WriteString("in        the world's directory, stdin closed, a scrubbed environment\n")
	}
	if len(a.Touches) > 0 {
		fmt.Fprintf(&b, "may change %s\n", strings.Join(a.Touches, ", "))
	} else {
		b.WriteString("may change nothing it declares\n")
	}
	if a.TimeoutSeconds > 0 {
		fmt.Fprintf(&b, "time limit %d s\n", a.TimeoutSeconds)
	}
	switch {
	case git:
		b.WriteString("commits   what it changes, as one commit on the run's branch; after a crash the remote tells whether it ran\n")
	case !a.Idempotent:
		b.WriteString("not idempotent: if a crash interrupts it, a person decides whether it ran\n")
	}
	return b.String()
}

// shellQuote quotes s for a POSIX shell when it needs it, so that the
// command line shown is one a person can read and paste unambiguously.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r == '-' || r == '_' || r == '.' || r == '/' || r == '=' || r == ':' || r == ',' || r == '+' ||
			(r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z') || (r >= '0' && r <= '9'))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TryCommand runs a's command as Commit would (declared in exactly this
// form, a scrubbed environment with the spec's pass_env, its own process
// group, the action's time limit) but in dir, a throwaway copy of the
// world, so that a preview can show what it would change. It gets none
// of the ACR_IDEMPOTENCY_KEY, ACR_RUN_ID and ACR_CYCLE an effect gets:
// a trial is no effect. A command that cannot start is returned as
// command.ErrStart.
func (w *World) TryCommand(ctx context.Context, a world.Action, dir string) (command.Result, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a.Operation != world.OpRunCommand {
		return command.Result{}, fmt.Errorf("try %s: not a command", a.Describe())
	}
	if err := w.validateCommand(a); err != nil {
		return command.Result{}, fmt.Errorf("try %s: %w", a.Describe(), err)
	}
	return command.Run(ctx, command.Spec{Argv: a.Argv, Dir: dir, Env: w.env(nil), Timeout: timeout(a.TimeoutSeconds)})
}
