package main

import (
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
)

type approveOptions struct {
	verdict, ref, by, reason string
}

func newApproveCommand(a *app, verb string) *cobra.Command {
	short := "Approve a pending action request"
	long := `Approve the pending action request REF (the ref acr status prints). The
approval binds to that exact action: the next cycle re-runs governance with
the approval as evidence and executes the recorded action, not a new one.
It never takes the run lock.`
	if verb == "deny" {
		short = "Deny a pending action request"
		long = `Deny the pending action request REF. The next cycle records the refusal and
does not propose that action again. It never takes the run lock.`
	}
	cmd := &cobra.Command{
		Use:     verb + " REF",
		Short:   short,
		Long:    long,
		Example: "  acr " + verb + " areq:sha256:3f1c...   # as printed by acr status",
		Args:    exactArgs(1, "one REF"),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runApprove(a, approveOptions{verdict: verb, ref: args[0], by: a.v.GetString("by"), reason: a.v.GetString("reason")})
		},
	}
	cmd.Flags().String("by", "", "who decides (default: the OS user)")
	cmd.Flags().String("reason", "", "why")
	return cmd
}

func runApprove(a *app, o approveOptions) error {
	rs, err := a.readState()
	if err != nil {
		return err
	}
	var match []state.PendingApproval
	var known []string
	for _, p := range rs.State.Run.PendingApprovals {
		known = append(known, string(p.Ref))
		if string(p.Ref) == o.ref || (len(o.ref) >= 16 && strings.HasPrefix(string(p.Ref), o.ref)) {
			match = append(match, p)
		}
	}
	switch {
	case len(match) == 0 && len(known) == 0:
		return dataf("no pending approval with ref %s: the run is not waiting for any approval", o.ref)
	case len(match) == 0:
		return dataf("no pending approval with ref %s; pending: %s", o.ref, strings.Join(known, ", "))
	case len(match) > 1:
		return dataf("ref prefix %s matches %d pending approvals; give the full ref", o.ref, len(match))
	case match[0].Resolution != nil:
		return dataf("approval %s was already resolved (%s)", match[0].Ref, match[0].Resolution.Verdict)
	}
	p := match[0]
	fsys, err := disk.OpenOSDir(a.cfg.StateDir)
	if err != nil {
		return err
	}
	items, _, err := inbox.List(fsys)
	if err != nil {
		return err
	}
	for _, it := range items {
		if it.Kind == inbox.KindApproval && it.Approval.ActionRef == p.Ref {
			a.report(map[string]any{"queued": false, "already_queued": it.ID, "verdict": it.Approval.Verdict},
				"a resolution for %s is already queued (%s: %s)\n", p.Ref, it.ID, it.Approval.Verdict)
			a.next("acr run   (the next cycle consumes it)")
			return nil
		}
	}
	by := o.by
	if by == "" {
		by = osUser()
	}
	ap := &state.Approval{Schema: state.ApprovalSchema, ActionRef: p.Ref, Verdict: o.verdict, By: by, Reason: o.reason,
		CreatedAt: state.FormatTime(a.now().UTC().Truncate(time.Second))}
	if o.verdict == "approve" {
		ap.Verdict = "approve"
	}
	id, err := inbox.Write(fsys, ap)
	if err != nil {
		return err
	}
	a.report(map[string]any{"queued": true, "id": id, "ref": p.Ref, "verdict": ap.Verdict, "operation": p.Operation, "target": p.Target},
		"queued %s of %s %s (%s)\n", ap.Verdict, p.Operation, p.Target, p.Ref)
	if ap.Verdict == "approve" {
		a.next("acr run   (the next cycle executes exactly this action; a scheduled run does too)")
	} else {
		a.next("acr run   (the next cycle records the refusal; a scheduled run does too)")
	}
	return nil
}
