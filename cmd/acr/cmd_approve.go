package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// approveOptions are acr approve's and acr deny's flags and argument.
type approveOptions struct {
	// Verdict is "approve" or "deny": which of the two commands runs.
	Verdict string
	// Ref is the request's ref, a prefix of it, or a prefix of its
	// digest alone (matchRequest).
	Ref    string
	By     string `flag:"by"`
	Reason string `flag:"reason"`
	// Yes approves without asking at a terminal (for scripts that run
	// with one).
	Yes bool `flag:"yes"`
	signOptions
}

func newApproveCommand(a *app, verb string) *cobra.Command {
	short := "Approve a pending action request"
	long := `Approve the pending action request REF (the ref acr status prints). The
approval binds to that exact action and to the cycle that asked: the next
cycle re-runs governance with the approval as evidence and executes the
recorded action, not a new one. It never takes the run lock.

Before it records anything it shows the change: a unified diff of the
target from the world as it is now (or, for a command, the exact command
line, what it may change and its time limit). At a terminal it then asks
for confirmation; --yes skips the question. Without a terminal on stdin
(cron, scripts) nothing is asked.

In a git world a command fix is tried first, in a throwaway clone at the
branch head, and the approval binds to what the trial produced: the head,
the tree and the changed paths go with the answer (and into its
signature). The effect then commits exactly that tree on that head, or
nothing: if the branch moved or the command gives other files, nothing is
pushed and the fix waits for approval again. A fix that cannot be tried
here cannot be approved (exit 65), unless the answer was signed by hand:
--signed binds to the trial in the statement, whose change --to-sign
showed.`
	if verb == "deny" {
		short = "Deny a pending action request"
		long = `Deny the pending action request REF. The next cycle records the refusal and
does not propose that action again. It never takes the run lock.`
	}
	long += `

REF may also name a pending amendment (amd:sha256:..., from acr amend, as
acr status lists it): acr shows its diff and queues the answer; a later
cycle than the one that proposed it replaces the pinned document (approve)
or records the refusal (deny).

REF is the whole ref, a prefix of it (areq:sha256:12a49e), or a prefix of
its digest alone (12a49e), at least 4 hex digits, naming one pending
request. A ref that names no pending request (malformed, unknown, already
answered and consumed, or the ref of an action governance refused) exits
65 and lists what is pending.

A request for an uncertain effect (an interrupted command or change whose
outcome recovery could not tell) shows, for each path the action may
touch, its hash in the intent and now. Approving it runs the action again;
acr resolve REF --ran records it as done instead, and acr resolve REF
--not-ran as not done.

Until a cycle consumes it, an answer can be replaced: acr deny REF after
acr approve REF (or the other way round) queues the new answer in place of
the old one; the cycle records both and acts on the last. Once consumed,
an answer is final, and it is consumed once for the life of the run. An
answer that would change nothing (the same answer already queued, a
stopped run) is not queued: acr says "nothing queued" and exits 0
("effect": "none" with --json).` + signHelp
	cmd := &cobra.Command{
		Use:     verb + " REF",
		Short:   short,
		Long:    long,
		Example: "  acr " + verb + " areq:sha256:3f1c...   # as printed by acr status",
		Args:    exactArgs(1, "one REF"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := approveOptions{Verdict: verb, Ref: args[0]}
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runApprove(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().String("by", "", "who decides (default: the OS user)")
	cmd.Flags().String("reason", "", "why")
	cmd.Flags().Bool("yes", false, "do not ask for confirmation at a terminal")
	addSignFlags(cmd)
	return cmd
}

// runApprove queues an answer to a pending approval request in the run's
// inbox, without the run lock.
func runApprove(ctx context.Context, opts approveOptions, a *app) error {
	rs, err := a.readState()
	if err != nil {
		return err
	}
	run := rs.State.Run
	if err := opts.fill(&opts.By, &opts.Reason); err != nil {
		return err
	}
	if run.Status == state.RunStopped && !kernel.Amendable(&run) {
		return a.nothingQueued("the run is stopped: no cycle will consume an answer to %s", opts.Ref)
	}
	req, err := matchRequest(opts.Ref, answerable(run), "request")
	if err != nil {
		return answeredAlready(run, opts.Ref, err)
	}
	if i := slices.IndexFunc(run.PendingAmendments, func(p state.PendingAmendment) bool { return p.Ref == req.Ref }); i >= 0 {
		return runAnswerAmendment(opts, a, rs.State, run.PendingAmendments[i])
	}
	if run.Status == state.RunStopped {
		return a.nothingQueued("the run is stopped: no cycle will consume an answer to %s", req.Ref)
	}
	i := slices.IndexFunc(run.PendingApprovals, func(p state.PendingApproval) bool { return p.Ref == req.Ref && p.Resolution == nil })
	p := run.PendingApprovals[i]
	q, ap, prev, dup, err := a.draftAnswer(opts, run, p.Ref, p.CycleSeq)
	if err != nil || dup != "" {
		if err == nil {
			err = a.nothingQueued("%s", dup)
		}
		return err
	}
	// Show the change before anything is recorded; a person at a terminal
	// confirms an approval of it. An approval of a git world's command
	// fix binds to the tree its trial produced (signed with it): the
	// effect commits exactly that tree on the head it was tried on, or
	// nothing.
	change, trial, perr := a.preview(ctx, rs.State, p)
	signed, err := opts.signedTrial()
	if err != nil {
		return err
	}
	// shown is what the person is shown: the change tried now, which an
	// approval binds to, or (signed by hand) the signed trial.
	shown := func() string {
		out := ruledTrial(p, trial)
		if perr != nil {
			return out + fmt.Sprintf("change: cannot be shown: %v\n", perr)
		}
		return out + "change:\n" + indentLines(change, "  ", 0)
	}
	switch {
	case ap.Verdict == state.VerdictApprove && signed != nil:
		// The second step of signing by hand binds to the trial the
		// person signed, whose change --to-sign showed, not to a trial
		// made now: a command whose output differs each run would
		// otherwise never match its statement. The effect commits
		// exactly the signed tree on its head, or nothing.
		ap.Trial = signed
		if !sameTrial(trial, signed) {
			shown = func() string { return signedTrialText(p, signed, trial, perr) }
		}
	case ap.Verdict == state.VerdictApprove && trial != nil:
		ap.Trial = trial
	}
	if ap.Verdict == state.VerdictApprove && ap.Trial == nil && gitCommand(rs.State, p) {
		// Nothing a person did not see is committed: without a trial
		// there is no tree to bind the approval to.
		return dataf("%s cannot be approved unseen: its change could not be tried on this host (%v); run acr approve where the run's clone is", p.Ref, perr)
	}
	if opts.ToSign != "" && !a.cfg.JSON {
		// The statement binds to this trial: show its change before the
		// person signs it, as the answer without signing would.
		a.printf("%s%s", incidentText(p), shown())
	}
	if done, err := a.sign(opts.signOptions, run.RunID, &rs.State.Contract, ap, ap.By); err != nil || done {
		return err
	}
	if !a.cfg.JSON {
		a.printf("%s%s", incidentText(p), shown())
	}
	if opts.Verdict == "approve" && !opts.Yes && !a.cfg.JSON && a.stdinTerminal() {
		if !confirm(a.stdin, a.stdout, "approve this change?") {
			return a.nothingQueued("not approved (acr deny %s refuses it)", p.Ref)
		}
	}
	id, err := q.Put(ap)
	if err != nil {
		return err
	}
	out := map[string]any{"effect": "queued", "queued": true, "id": id, "ref": p.Ref, "request_cycle": p.CycleSeq, "verdict": ap.Verdict,
		"operation": p.Operation, "target": p.Target}
	if perr == nil {
		out["change"] = change
	}
	if ap.Trial != nil {
		out["approved_tree"], out["approved_head"] = ap.Trial.Tree, ap.Trial.Head
	}
	if trial != nil {
		// The tree the change above gives, tried now: not the approved
		// one when a statement signed by hand binds to another.
		out["change_tree"], out["change_head"] = trial.Tree, trial.Head
	}
	if p.Incident() {
		out["idempotency_key"], out["evidence"] = p.Key, p.Evidence
	}
	text := fmt.Sprintf("queued %s of %s %s (%s, requested in cycle %d)\n", ap.Verdict, p.Operation, p.Target, p.Ref, p.CycleSeq)
	if ap.Trial != nil {
		text += fmt.Sprintf("bound to the tree %s on %s: exactly that tree is committed, or nothing\n", ap.Trial.Tree, ap.Trial.Head)
	}
	if prev != nil {
		out["replaces"] = prev.ID
		text = fmt.Sprintf("replaced the queued %s (%s) with %s of %s %s (%s, requested in cycle %d)\n",
			prev.Approval.Verdict, prev.ID, ap.Verdict, p.Operation, p.Target, p.Ref, p.CycleSeq)
	}
	a.report(out, "%s", text)
	if ap.Verdict == "approve" {
		a.next("acr run   (the next cycle executes exactly this action; a scheduled run does too)")
	} else {
		a.next("acr run   (the next cycle records the refusal; a scheduled run does too)")
	}
	return nil
}

// draftAnswer prepares the answer opts gives to the request ref asked in
// cycle (an action's approval, an uncertain effect or an amendment): the
// queue it goes into, the answer, and the queued answer it replaces (nil
// if none). When the same answer is already queued, nothing would change:
// dup says so, and nothing is to be queued.
func (a *app) draftAnswer(opts approveOptions, run state.RunState, ref codec.Ref, cycle int64) (q runstore.Queue, ap *state.Approval, prev *inbox.Item, dup string, err error) {
	q, err = a.queue()
	if err != nil {
		return nil, nil, nil, "", err
	}
	items, _, err := q.List()
	if err != nil {
		return nil, nil, nil, "", err
	}
	queued := slices.DeleteFunc(items, func(it inbox.Item) bool {
		return slices.Contains(run.InboxSeen, it.ID) || slices.Contains(run.AnswersConsumed, it.ID)
	})
	by := opts.By
	if by == "" {
		by = osUser()
	}
	ap = &state.Approval{Schema: state.ApprovalSchema, ActionRef: ref, RequestCycle: cycle, Verdict: opts.Verdict, By: by, Reason: opts.Reason,
		CreatedAt: state.FormatTime(a.now().UTC().Truncate(time.Second))}
	prev = inbox.Answer(queued, ref, cycle)
	if prev != nil {
		old := prev.Approval
		if old.Verdict == ap.Verdict && old.By == ap.By && old.Reason == ap.Reason {
			return nil, nil, nil, fmt.Sprintf("the same answer (%s by %s) to %s is already queued as %s", old.Verdict, old.By, ref, prev.ID), nil
		}
		// The answer not yet consumed is replaced, not deleted: the cycle
		// records both and acts on this one.
		ap.Replaces = prev.ID
	}
	return q, ap, prev, "", nil
}

// answerable lists the requests a person can answer now: the approvals
// not answered yet and the pending amendments.
func answerable(run state.RunState) []openRequest {
	var out []openRequest
	for _, p := range run.PendingApprovals {
		if p.Resolution == nil {
			out = append(out, openRequest{Ref: p.Ref, What: requestWhat(p)})
		}
	}
	for _, p := range run.PendingAmendments {
		out = append(out, openRequest{Ref: p.Ref, What: fmt.Sprintf("amendment of the %s, proposed in cycle %d", p.Target, p.CycleSeq)})
	}
	return out
}

// requestWhat describes a pending approval in a few words.
func requestWhat(p state.PendingApproval) string {
	return fmt.Sprintf("%s, requested in cycle %d: %s", pendingAction(p), p.CycleSeq, p.Reason)
}

// answeredAlready makes err, about a ref that names no pending request,
// say so when the ref names a request already answered and acted on: an
// answer cannot be taken back once a cycle has read it.
func answeredAlready(run state.RunState, arg string, err error) error {
	for _, p := range run.PendingApprovals {
		if r := p.Resolution; r != nil && (string(p.Ref) == arg || strings.HasPrefix(string(p.Ref), arg) && len(arg) > len("areq:sha256:")) {
			return dataf("%s was already answered (%s by %s) and that answer was consumed; an answer cannot be taken back once a cycle has read it: %w",
				p.Ref, r.Verdict, r.By, err)
		}
	}
	return err
}

// incidentText is what acr approve says first of an uncertain effect: that
// approving runs it again, and the evidence; "" for other requests.
func incidentText(p state.PendingApproval) string {
	if !p.Incident() {
		return ""
	}
	return fmt.Sprintf("uncertain effect (cycle %d, idempotency key %s); approving runs it again (acr resolve %s --ran records it as done instead):\n%s",
		p.CycleSeq, p.Key, p.Ref, indentLines(evidenceText(p), "  ", 0))
}

// sameTrial reports whether two trials are one change: the same head,
// tree and changed paths.
func sameTrial(a, b *world.GitTrial) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Head == b.Head && a.Tree == b.Tree && slices.Equal(a.Changed, b.Changed)
}

// signedTrialText is what acr approve --signed shows when the trial in the
// statement is not the change tried now (tried, nil when it could not be,
// then why in perr): the signed tree, which the answer binds to and whose
// change --to-sign showed, and how the change tried now differs. The
// change tried now is not shown: it is not what the answer approves.
func signedTrialText(p state.PendingApproval, signed, tried *world.GitTrial, perr error) string {
	out := ruledTrial(p, nil)
	out += fmt.Sprintf("signed:   tree %s on %s, changed %s (its change was shown when the statement was written): the answer binds to it\n", signed.Tree, signed.Head, changedList(signed.Changed))
	if tried == nil {
		return out + fmt.Sprintf("change:   cannot be tried on this host now (%v)\n", perr)
	}
	return out + fmt.Sprintf("differs:  tried again now, the change gives the tree %s on %s: if the run's command does too (or gives any tree but the signed one), nothing is committed and you are asked again\n", tried.Tree, tried.Head)
}
