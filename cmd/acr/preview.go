package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// statusDiffLines bounds the change acr status shows per pending action;
// acr approve shows it whole.
const statusDiffLines = 24

// preview says what the pending action p would change if approved now: a
// unified diff of its target from the world as it is (or its command
// line), computed by the store without writing anything (a JetStream
// store's world is read from the store: this host's own copy may be
// behind, or absent). In a git world a command fix is tried, and its
// trial is returned too: an approval binds to it (nil otherwise).
func (a *app) preview(ctx context.Context, st kernel.EngineState, p state.PendingApproval) (string, *world.GitTrial, error) {
	return a.previewOn(ctx, nil, st, p)
}

// previewOn is preview on the run rs (nil: the run the command line
// names).
func (a *app) previewOn(ctx context.Context, rs runstore.RunStore, st kernel.EngineState, p state.PendingApproval) (string, *world.GitTrial, error) {
	var act world.Action
	if err := codec.DecodeValue(p.Action, &act); err != nil {
		return "", nil, fmt.Errorf("pending action %s: %w", p.Ref, err)
	}
	if rs == nil {
		var err error
		if rs, err = a.run(ctx); err != nil {
			return "", nil, err
		}
	}
	return rs.Preview(ctx, st.Spec, act, os.LookupEnv)
}

// shownChange is what the report and the notification show of a pending
// action: for a git world's command fix, the trial governance ruled on
// when it asked (as acr status says it), then its change tried now. err
// says why the change cannot be shown; the text then holds the first part
// alone.
func (a *app) shownChange(ctx context.Context, rs runstore.RunStore, st kernel.EngineState, p state.PendingApproval) (string, error) {
	change, fresh, err := a.previewOn(ctx, rs, st, p)
	out := ruledTrial(p, fresh)
	if err != nil {
		return out, err
	}
	return out + change, nil
}

// gitCommand reports whether p is a command fix in a git world, whose
// approval binds to the tree its trial produced.
func gitCommand(st kernel.EngineState, p state.PendingApproval) bool {
	return st.Spec.Git != nil && st.Operations.Of(world.Operation(p.Operation)).Command
}

// indentLines indents every line of text by prefix, keeping at most max
// lines (0: all) and saying how many were left out.
func indentLines(text, prefix string, max int) string {
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	var b strings.Builder
	for i, l := range lines {
		if max > 0 && i == max {
			fmt.Fprintf(&b, "%s... %d more lines (acr approve shows the whole change)\n", prefix, len(lines)-max)
			break
		}
		b.WriteString(prefix + l + "\n")
	}
	return b.String()
}

// confirm asks a person at a terminal to confirm; it reports true only for
// an answer that starts with y. With no terminal on stdin it is not asked
// (scripts): the caller decides what that means.
func confirm(in io.Reader, out io.Writer, question string) bool {
	fmt.Fprintf(out, "%s [y/N] ", question)
	line, _ := bufio.NewReader(in).ReadString('\n')
	answer := strings.ToLower(strings.TrimSpace(line))
	return strings.HasPrefix(answer, "y")
}

// stdinTerminal reports whether stdin is a terminal a person answers at.
func (a *app) stdinTerminal() bool {
	w, ok := a.stdin.(io.Writer)
	if !ok {
		return false
	}
	isTerm, _ := a.term(w)
	return isTerm
}
