package kernel

import (
	"fmt"
	"strings"

	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// What a person is told (ledger format 3 on): an issue the run reports
// (mark_issue, in ISSUES.md) says why it is reported and quotes the
// check's failing output, so that the person need not dig in the ledger.

// maxExcerptLines and maxExcerptWidth bound the output an issue quotes.
const (
	maxExcerptLines = 12
	maxExcerptWidth = 160
)

// reportNote returns action with its note saying why the item is reported
// (why) and quoting what the check's result r shows (its Quote lines),
// when the run records in format 3 or later and the action is a report;
// otherwise action as it is.
func (b *thinker) reportNote(action *world.Action, why string, r world.CheckResult) *world.Action {
	if action == nil || !b.s.Operations.Of(action.Operation).Reports || b.s.Run.Format() < state.LedgerFormat3 {
		return action
	}
	a := *action
	if why == "" {
		why = failureWords(r)
	}
	if why != "" {
		a.Note += " (" + why + ")"
	}
	a.Quote = excerpt(r)
	return &a
}

// failureWords says in a few words how a check fails: a command's exit
// code, a file check's detail.
func failureWords(r world.CheckResult) string {
	if cr := r.Command; cr != nil {
		return fmt.Sprintf("exit %d", cr.ExitCode)
	}
	return r.Detail
}

// excerpt is the start of what a failing command check printed (stderr,
// then stdout), its non-empty lines cut to a readable width.
func excerpt(r world.CheckResult) []string {
	cr := r.Command
	if cr == nil || r.Status == world.CheckPass {
		return nil
	}
	var out []string
	for _, text := range []string{cr.Stderr, cr.Stdout} {
		for _, l := range strings.Split(text, "\n") {
			l = strings.TrimRight(l, " \t\r")
			if strings.TrimSpace(l) == "" {
				continue
			}
			if len(l) > maxExcerptWidth {
				l = strings.ToValidUTF8(l[:maxExcerptWidth], "") + "…"
			}
			if len(out) == maxExcerptLines {
				return append(out, "…")
			}
			out = append(out, l)
		}
	}
	return out
}

// proposalWhy says why a proposer's reply left the item to be reported:
// it proposed nothing, or what it proposed could not be taken.
func (b *thinker) proposalWhy(t *thinking) string {
	if t.reply == nil {
		return ""
	}
	acts := t.reply.Proposal.Actions
	if len(acts) == 0 {
		return "the proposer found nothing to do"
	}
	for i, pa := range acts {
		var fact cognition.TargetFact
		if i < len(t.reply.Targets) {
			fact = t.reply.Targets[i]
		}
		a, problem := cognition.DraftProposed(b.proposalSituation(), pa, fact)
		if problem != "" {
			return fmt.Sprintf("the proposer's %s was not taken: %s", b.s.Operations.Describe(a), strings.ReplaceAll(problem, "_", " "))
		}
	}
	return "nothing the proposer proposed was taken"
}

// A person's denial (ledger format 3 on) is kept for the proposer: who
// denied what and why, shown under the request's attempts the next time
// the proposer is asked about the item. That is when the item comes up
// again: its evidence changes, or a wake signal arrives (a person telling
// the run to look again); without a proposer a wake does not bring it
// back, since the same declared fix would be asked about again.

// noteDenial remembers a person's denial of action (d refused it on the
// approval's deny).
func (b *work) noteDenial(action world.Action, approval *state.Approval, d governance.Decision) {
	if approval == nil || approval.Verdict != state.VerdictDeny || len(d.ReasonCodes) == 0 || d.ReasonCodes[0] != "operator_denied" ||
		b.s.Run.Format() < state.LedgerFormat3 {
		return
	}
	b.rememberProposed(state.ProposedAttempt{ItemID: b.item, Fingerprint: b.fp, Action: b.s.Operations.Describe(action), Cycle: b.cycle,
		Result: "denied", DeniedBy: approval.By, Reason: approval.Reason})
}

// wokenAfterDenial reports whether a wake signal this cycle brings back an
// item set aside because a person denied its action, for the proposer to
// be asked again.
func (b *work) wokenAfterDenial(sp state.Suppression) bool {
	return sp.Reason == "refused_operator_denied" && len(b.signals) > 0 && b.s.Contract.Proposer != nil &&
		b.s.Run.Format() >= state.LedgerFormat3
}
