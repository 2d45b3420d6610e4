package main

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/state"
)

// resolveOptions are acr resolve's flags and argument.
type resolveOptions struct {
	// Ref is the uncertain effect's ref (matchRequest's forms).
	Ref    string
	Ran    bool   `flag:"ran"`
	NotRan bool   `flag:"not-ran"`
	By     string `flag:"by"`
	Reason string `flag:"reason"`
	signOptions
}

func newResolveCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "resolve REF --ran | --not-ran",
		Short: "Say whether an uncertain effect happened",
		Long: `Answer an uncertain effect: an interrupted command or change whose outcome
recovery could not tell (acr status lists it as uncertain_effect, with each
path the action may touch: its hash in the intent and now, changed,
unchanged or missing). Each such incident has a ref of its own.

--ran records the effect as done, by you: nothing runs, the command never
starts again under that idempotency key, and the item is set aside until
its check passes or its evidence changes. --not-ran records that it did not
happen: the item goes back to the agenda, and doing it again goes through
governance as usual. (acr approve REF runs the action again at once; acr
deny REF sets the item aside.)

Like acr approve, it queues the answer in the run's inbox without the run
lock; the next cycle records it (sandbox.effect.resolved). A ref that names
no pending uncertain effect exits 65 and lists the ones pending; the same
answer already queued changes nothing (exit 0, nothing queued).` + signHelp,
		Example: `  acr status                       # shows the evidence and the ref
  acr resolve unc:sha256:3f1c... --ran --reason "counter.txt was bumped"
  acr resolve 3f1c9a --not-ran`,
		Args: exactArgs(1, "one REF"),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := resolveOptions{Ref: args[0]}
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			// What happened is said about one incident, by a person, never
			// by a default in the environment or acr.yaml.
			if (opts.Ran && !cmd.Flags().Changed("ran")) || (opts.NotRan && !cmd.Flags().Changed("not-ran")) {
				return usagef("--ran and --not-ran must be given on the command line, not through ACR_RAN, ACR_NOT_RAN or a configuration file")
			}
			return runResolve(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().Bool("ran", false, "the effect happened: record it as done, run nothing (command line only)")
	cmd.Flags().Bool("not-ran", false, "the effect did not happen: the item goes back to the agenda (command line only)")
	cmd.Flags().String("by", "", "who says so (default: the OS user)")
	cmd.Flags().String("reason", "", "why")
	addSignFlags(cmd)
	return cmd
}

// runResolve queues a person's word on an uncertain effect.
func runResolve(_ context.Context, opts resolveOptions, a *app) error {
	if opts.Ran == opts.NotRan {
		return usagef("resolve needs exactly one of --ran and --not-ran")
	}
	verdict := state.VerdictRan
	if opts.NotRan {
		verdict = state.VerdictNotRan
	}
	rs, err := a.readState()
	if err != nil {
		return err
	}
	run := rs.State.Run
	if run.Status == state.RunStopped {
		return a.nothingQueued("the run is stopped: no cycle will consume an answer to %s", opts.Ref)
	}
	if err := opts.fill(&opts.By, &opts.Reason); err != nil {
		return err
	}
	var open []openRequest
	for _, p := range run.PendingApprovals {
		if p.Resolution == nil && p.Incident() {
			open = append(open, openRequest{Ref: p.Ref, What: requestWhat(p)})
		}
	}
	req, err := matchRequest(opts.Ref, open, "uncertain effect")
	if err != nil {
		if other, oerr := matchRequest(opts.Ref, answerable(run), "request"); oerr == nil {
			return dataf("%s is not an uncertain effect: acr approve or acr deny answers it", other.Ref)
		}
		return answeredAlready(run, opts.Ref, err)
	}
	p := run.PendingApprovals[slices.IndexFunc(run.PendingApprovals, func(p state.PendingApproval) bool { return p.Ref == req.Ref })]
	q, ap, prev, dup, err := a.draftAnswer(approveOptions{Verdict: verdict, By: opts.By, Reason: opts.Reason}, run, p.Ref, p.CycleSeq)
	if err != nil || dup != "" {
		if err == nil {
			err = a.nothingQueued("%s", dup)
		}
		return err
	}
	if done, err := a.sign(opts.signOptions, run.RunID, &rs.State.Contract, ap, ap.By); err != nil || done {
		return err
	}
	if !a.cfg.JSON {
		a.printf("uncertain effect of %s (cycle %d, idempotency key %s):\n%s", pendingAction(p), p.CycleSeq, p.Key, indentLines(evidenceText(p), "  ", 0))
	}
	id, err := q.Put(ap)
	if err != nil {
		return err
	}
	out := map[string]any{"effect": "queued", "queued": true, "id": id, "ref": p.Ref, "request_cycle": p.CycleSeq, "verdict": ap.Verdict,
		"idempotency_key": p.Key, "evidence": p.Evidence}
	what := map[string]string{state.VerdictRan: "ran (recorded as done; nothing runs)", state.VerdictNotRan: "did not run (the item goes back to the agenda)"}[verdict]
	text := fmt.Sprintf("queued: the effect %s, for %s\n", what, p.Ref)
	if prev != nil {
		out["replaces"] = prev.ID
		text = fmt.Sprintf("replaced the queued %s (%s): the effect %s, for %s\n", prev.Approval.Verdict, prev.ID, what, p.Ref)
	}
	a.report(out, "%s", text)
	a.next("acr run   (the next cycle records it; a scheduled run does too)")
	return nil
}

// evidenceText lists what an uncertain effect's paths hold now against
// its intent, one path a line, and the world's reason.
func evidenceText(p state.PendingApproval) string {
	var b strings.Builder
	for _, e := range p.Evidence {
		b.WriteString(e.String() + "\n")
	}
	if len(p.Evidence) == 0 {
		b.WriteString("no path could be compared with the intent\n")
	}
	if p.Cause != "" {
		b.WriteString("why: " + p.Cause + "\n")
	}
	return b.String()
}
