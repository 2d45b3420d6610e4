package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/diff"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// amendOptions are acr amend's flags: exactly one of the three files.
type amendOptions struct {
	Contract string `flag:"contract"`
	Env      string `flag:"env"`
	Goal     string `flag:"goal"`
	By       string `flag:"by"`
	Reason   string `flag:"reason"`
	signOptions
}

func newAmendCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "amend --contract FILE | --env FILE | --goal FILE",
		Short: "Propose a new version of the run's contract, environment or goal",
		Long: `Propose to replace one of the documents pinned when the run started. The
file is read and checked as acr init checks it (a bad file exits 65 naming
the file and the field, and nothing is queued); acr prints the unified diff
against the pinned version and queues the amendment in the run's inbox,
without the run lock.

The next cycle records it (amendment.proposed, with the diff); acr status
then lists it with the command that accepts it. A person accepts it with
acr approve REF (or refuses it with acr deny REF); a later cycle, never the
one that proposed it, replaces the pinned document (amendment.accepted)
and the cycle after runs under the new version. An amendment of a version
that is no longer pinned (another amendment was accepted first) is refused
as stale.

Raising a budget or an authority is an amendment of the contract, never a
wake signal. A run stopped on a hard budget, or because its contract lapsed
(valid_until) or was revoked, takes amendments: accepting one resumes it. A
run stopped by a person, or because its goal was met or failed for good,
does not: nothing is queued (exit 0, "effect": "none" with --json), and so
is an amendment identical to the pinned document. An environment amendment keeps the world the run looks
after (its root or files) and may change the rest (checks, evidence).

When the contract lists approvers, the amendment and the answer that
accepts it are both signed by approvers listed in the pinned contract:
changing the approvers themselves is an amendment like any other, so a key
counts only once an approver already listed has accepted the contract
that adds it.` + signHelp,
		Example: `  acr amend --contract contract-more-cycles.json
  acr run            # the cycle records the proposal
  acr status         # shows it, with the diff and the ref
  acr approve amd:sha256:...
  acr run            # the cycle accepts it; the next runs under it`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts amendOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runAmend(cmd.Context(), opts, a)
		},
	}
	f := cmd.Flags()
	f.String("contract", "", "the new contract (JSON)")
	f.String("env", "", "the new environment (JSON)")
	f.String("goal", "", "the new goal (JSON)")
	f.String("by", "", "who proposes it (default: the OS user)")
	f.String("reason", "", "why")
	addSignFlags(cmd)
	return cmd
}

// runAmend checks a new version of a pinned document and queues it.
func runAmend(_ context.Context, opts amendOptions, a *app) error {
	var target, path string
	n := 0
	for _, f := range []struct{ target, path string }{{state.AmendContract, opts.Contract}, {state.AmendEnvironment, opts.Env}, {state.AmendGoal, opts.Goal}} {
		if f.path != "" {
			target, path = f.target, f.path
			n++
		}
	}
	if n != 1 {
		return usagef("amend needs exactly one of --contract FILE, --env FILE, --goal FILE")
	}
	rs, err := a.readState()
	if err != nil {
		return err
	}
	run := rs.State.Run
	if err := opts.fill(&opts.By, &opts.Reason); err != nil {
		return err
	}
	doc, newRef, err := runstore.ReadAmendment(target, path, rs.State)
	if err != nil {
		return err
	}
	if !kernel.Amendable(&run) {
		return a.nothingQueued("the run is %s (%s): no cycle will take an amendment", run.Status, strings.Join(run.ReasonCodes, ", "))
	}
	old := kernel.PinnedRef(rs.State, target)
	if newRef == old {
		return a.nothingQueued("%s is the pinned %s (%s): nothing to amend", path, target, old.Short())
	}
	pinned, err := kernel.PinnedDocument(rs.State, target)
	if err != nil {
		return err
	}
	change, err := amendDiff(target, pinned, doc, old, newRef)
	if err != nil {
		return err
	}
	by := opts.By
	if by == "" {
		by = osUser()
	}
	am := &state.Amendment{Schema: state.AmendmentSchema, Target: target, Amends: old, Document: doc, Diff: change, By: by,
		Reason: opts.Reason, CreatedAt: state.FormatTime(a.now().UTC().Truncate(time.Second))}
	if done, err := a.sign(opts.signOptions, run.RunID, &rs.State.Contract, am, by); err != nil || done {
		return err
	}
	q, err := a.queue()
	if err != nil {
		return err
	}
	id, err := q.Put(am)
	if err != nil {
		return err
	}
	_, body, err := inbox.Seal(am)
	if err != nil {
		return err
	}
	ref := codec.NewRef("amd", body)
	if !a.cfg.JSON {
		a.printf("change:\n%s", indentLines(change, "  ", 0))
	}
	a.report(map[string]any{"effect": "queued", "queued": true, "id": id, "ref": ref, "target": target, "amends": old, "new_ref": newRef, "diff": change},
		"queued amendment %s of the %s (%s -> %s)\n", ref, target, old.Short(), newRef.Short())
	a.next("acr run   (the next cycle records the proposal; then acr approve " + string(ref) + ")")
	return nil
}

// amendDiff is the unified diff of two versions of a document, each
// pretty-printed from its canonical JSON.
func amendDiff(target string, pinned any, doc codec.Value, oldRef, newRef codec.Ref) (string, error) {
	ob, err := codec.Marshal(pinned)
	if err != nil {
		return "", err
	}
	pretty := func(b []byte) ([]byte, error) {
		var out bytes.Buffer
		if err := json.Indent(&out, b, "", "  "); err != nil {
			return nil, err
		}
		out.WriteByte('\n')
		return out.Bytes(), nil
	}
	from, err := pretty(ob)
	if err != nil {
		return "", err
	}
	to, err := pretty(doc.Encode())
	if err != nil {
		return "", err
	}
	return diff.Unified(target+"@"+oldRef.Short(), target+"@"+newRef.Short(), from, to), nil
}

// runAnswerAmendment queues an answer to a pending amendment (acr approve
// or acr deny of its ref), showing its diff first.
func runAnswerAmendment(opts approveOptions, a *app, s kernel.EngineState, p state.PendingAmendment) error {
	run := s.Run
	if !kernel.Amendable(&run) {
		return a.nothingQueued("the run is %s: no cycle will consume an answer to %s", run.Status, p.Ref)
	}
	q, ap, prev, dup, err := a.draftAnswer(opts, run, p.Ref, p.CycleSeq)
	if err != nil || dup != "" {
		if err == nil {
			err = a.nothingQueued("%s", dup)
		}
		return err
	}
	if done, err := a.sign(opts.signOptions, run.RunID, &s.Contract, ap, ap.By); err != nil || done {
		return err
	}
	if !a.cfg.JSON {
		a.printf("amendment of the %s (%s -> %s):\n%s", p.Target, p.Amends.Short(), p.NewRef.Short(), indentLines(p.Diff, "  ", 0))
	}
	if opts.Verdict == "approve" && !opts.Yes && !a.cfg.JSON && a.stdinTerminal() {
		if !confirm(a.stdin, a.stdout, "accept this amendment?") {
			return a.nothingQueued("not approved (acr deny %s refuses it)", p.Ref)
		}
	}
	id, err := q.Put(ap)
	if err != nil {
		return err
	}
	out := map[string]any{"effect": "queued", "queued": true, "id": id, "ref": p.Ref, "request_cycle": p.CycleSeq, "verdict": ap.Verdict,
		"target": p.Target, "amends": p.Amends, "new_ref": p.NewRef, "diff": p.Diff}
	text := fmt.Sprintf("queued %s of the amendment of the %s (%s, proposed in cycle %d)\n", ap.Verdict, p.Target, p.Ref, p.CycleSeq)
	if prev != nil {
		out["replaces"] = prev.ID
		text = fmt.Sprintf("replaced the queued %s (%s) with %s of the amendment of the %s (%s)\n", prev.Approval.Verdict, prev.ID, ap.Verdict, p.Target, p.Ref)
	}
	a.report(out, "%s", text)
	a.next("acr run   (the next cycle records the answer; after an approval the cycle after runs under the new version)")
	return nil
}
