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
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// approveOptions are acr approve's and acr deny's flags and argument.
type approveOptions struct {
	// Verdict is "approve" or "deny": which of the two commands runs.
	Verdict string
	// Ref is the approval request's ref, or a prefix of 16 or more
	// characters.
	Ref    string
	By     string `flag:"by"`
	Reason string `flag:"reason"`
	// Yes approves without asking at a terminal (for scripts that run
	// with one).
	Yes bool `flag:"yes"`
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
(cron, scripts) nothing is asked.`
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

Until a cycle consumes it, an answer can be replaced: acr deny REF after
acr approve REF (or the other way round) queues the new answer in place of
the old one; the cycle records both and acts on the last. Once consumed,
an answer is final, and it is consumed once for the life of the run. An
answer that would change nothing (the request is not pending, the same
answer is already queued, the run is stopped) is not queued: acr says why
and exits 69.`
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
	if p, ok, err := pendingAmendment(run, opts.Ref); err != nil || ok {
		if err != nil {
			return err
		}
		return runAnswerAmendment(opts, a, run, p)
	}
	var match, answered []state.PendingApproval
	var known []string
	for _, p := range run.PendingApprovals {
		if string(p.Ref) != opts.Ref && (len(opts.Ref) < 16 || !strings.HasPrefix(string(p.Ref), opts.Ref)) {
			if p.Resolution == nil {
				known = append(known, string(p.Ref))
			}
			continue
		}
		if p.Resolution != nil {
			answered = append(answered, p)
			continue
		}
		match = append(match, p)
	}
	switch {
	case run.Status == state.RunStopped:
		return noEffectf("the run is stopped: no cycle will consume an answer to %s; nothing queued", opts.Ref)
	case len(match) > 1:
		return dataf("ref prefix %s matches %d pending approvals; give the full ref", opts.Ref, len(match))
	case len(match) == 0 && len(answered) > 0:
		r := answered[0].Resolution
		return noEffectf("approval %s was already answered (%s by %s) and that answer was consumed; an answer cannot be taken back once a cycle has read it",
			answered[0].Ref, r.Verdict, r.By)
	case len(match) == 0 && len(known) == 0:
		return noEffectf("no pending approval with ref %s: the run is not waiting for any approval (acr status shows what it waits for); nothing queued", opts.Ref)
	case len(match) == 0:
		return noEffectf("no pending approval with ref %s; pending: %s; nothing queued", opts.Ref, strings.Join(known, ", "))
	}
	p := match[0]
	q, ap, prev, err := a.draftAnswer(opts, run, p.Ref, p.CycleSeq)
	if err != nil {
		return err
	}
	// Show the change before anything is recorded; a person at a terminal
	// confirms an approval of it.
	change, perr := a.preview(ctx, rs.State, p)
	if !a.cfg.JSON {
		if perr != nil {
			a.printf("change: cannot be shown: %v\n", perr)
		} else {
			a.printf("change:\n%s", indentLines(change, "  ", 0))
		}
	}
	if opts.Verdict == "approve" && !opts.Yes && !a.cfg.JSON && a.stdinTerminal() {
		if !confirm(a.stdin, a.stdout, "approve this change?") {
			return noEffectf("not approved: nothing queued (acr deny %s refuses it)", p.Ref)
		}
	}
	id, err := q.Put(ap)
	if err != nil {
		return err
	}
	out := map[string]any{"queued": true, "id": id, "ref": p.Ref, "request_cycle": p.CycleSeq, "verdict": ap.Verdict,
		"operation": p.Operation, "target": p.Target}
	if perr == nil {
		out["change"] = change
	}
	text := fmt.Sprintf("queued %s of %s %s (%s, requested in cycle %d)\n", ap.Verdict, p.Operation, p.Target, p.Ref, p.CycleSeq)
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
// cycle (an action's approval or an amendment): the queue it goes into,
// the answer, and the queued answer it replaces (nil if none). The same
// answer already queued is a no-effect error: nothing would change.
func (a *app) draftAnswer(opts approveOptions, run state.RunState, ref codec.Ref, cycle int64) (runstore.Queue, *state.Approval, *inbox.Item, error) {
	q, err := a.queue()
	if err != nil {
		return nil, nil, nil, err
	}
	items, _, err := q.List()
	if err != nil {
		return nil, nil, nil, err
	}
	queued := slices.DeleteFunc(items, func(it inbox.Item) bool {
		return slices.Contains(run.InboxSeen, it.ID) || slices.Contains(run.AnswersConsumed, it.ID)
	})
	by := opts.By
	if by == "" {
		by = osUser()
	}
	ap := &state.Approval{Schema: state.ApprovalSchema, ActionRef: ref, RequestCycle: cycle, Verdict: opts.Verdict, By: by, Reason: opts.Reason,
		CreatedAt: state.FormatTime(a.now().UTC().Truncate(time.Second))}
	prev := inbox.Answer(queued, ref, cycle)
	if prev != nil {
		old := prev.Approval
		if old.Verdict == ap.Verdict && old.By == ap.By && old.Reason == ap.Reason {
			return nil, nil, nil, noEffectf("the same answer (%s by %s) to %s is already queued as %s; nothing queued", old.Verdict, old.By, ref, prev.ID)
		}
		// The answer not yet consumed is replaced, not deleted: the cycle
		// records both and acts on this one.
		ap.Replaces = prev.ID
	}
	return q, ap, prev, nil
}
