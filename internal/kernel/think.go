package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// The cognition stage: the selected item's affordances, the compiled
// program, the self-dialogue (with the external proposer's reply when it
// was asked, propose.go), and the forever-loop guard.

// thinker is the cognition part of a cycle's builder: the selected item's
// affordances, program and self-dialogue, and the external proposer's
// request and reply (propose.go), up to the action request it hands the
// governor.
type thinker struct {
	s *EngineState
	*recorder
	*work
	*schedule
	*control
	*governor
	// thought is cognition's work on the item, kept across the
	// proposer's answer.
	thought *thinking
}

// think runs cognition on the selected item and takes its action request
// to governance.
func (b *thinker) think() {
	rs := &b.s.Run
	sel := *b.res.Selected
	b.item = sel.ItemID
	ci := slices.IndexFunc(b.s.Spec.Checks, func(c world.Check) bool { return c.ID == sel.CheckID })
	if ci < 0 {
		b.fail(fmt.Errorf("agenda selected unknown check %q", sel.CheckID))
		return
	}
	b.check = b.s.Spec.Checks[ci]
	result, _ := b.s.Environment.Check(b.check.ID)
	failed := map[string]bool{}
	for _, a := range rs.Attempts {
		if a.ItemID == b.item && a.Failures > 0 {
			failed[a.Fingerprint] = true
		}
	}
	routing := cognition.Routing{}
	if ov := b.s.Strategy.Overlay; ov != nil {
		routing = cognition.Routing{Ref: ov.Ref(), CritiqueFirst: ov.CritiqueFirst, SkipFailed: slices.Contains(ov.SkipFailedFixes, b.item)}
	}
	t := &thinking{result: result, routing: routing, failed: failed, commitmentID: sel.CommitmentID}
	t.draft = b.draftResult(result)
	t.affs = cognition.Retrieve(b.s.Operations, b.check, t.draft)
	if b.needsProposal(t.affs, failed) {
		t.prog = cognition.CompileProposal(b.cycle, b.item, b.check, t.affs, routing)
	} else {
		t.prog = cognition.Compile(b.cycle, b.item, b.check, t.affs, routing)
	}
	if b.exhausts("cognitive_operations", int64(cognition.Cost(t.prog))) {
		// A program's cost is known before it runs (a proposer's at least
		// its fixed steps): one that would go past the hard level does
		// not run, and no proposer is asked.
		b.block(controller.Distiller, "budget_cognitive_operations", b.resRef)
		b.conclude(state.Stopped, []string{"budget_limit", "budget_cognitive_operations"})
		return
	}
	t.progRef = b.record(event.ProgramCompiled, "cprog", t.prog, nil)
	b.rec.CognitiveProgramRef = t.progRef
	b.thought = t
	if t.prog.Proposer {
		// Stop here: the driver asks the proposer, Answer goes on.
		t.request = b.proposalRequest(result)
		t.requestRef = b.record(event.ProposalRequested, "preq", t.request, map[string]codec.Ref{"program": t.progRef})
		return
	}
	b.decide()
}

// decide runs the self-dialogue over the compiled program (and the
// proposer's reply, when it was asked) and takes the action request, if
// any, to governance.
func (b *thinker) decide() {
	rs := &b.s.Run
	pol := b.s.Contract.Policy.Defaults()
	t := b.thought
	progRef := t.progRef
	result := t.result
	sit := cognition.Situation{Check: b.check, Result: t.draft, FailedPrint: t.failed, Spec: &b.s.Spec, Routing: t.routing, Operations: b.s.Operations}
	var dlg cognition.Dialogue
	var action *world.Action
	if t.reply != nil {
		if b.exhausts("cognitive_operations", int64(cognition.ReplyCost(*t.reply))) {
			// The reply fixes what weighing it costs: a reply too long for
			// the hard level is not weighed.
			b.block(controller.Distiller, "budget_cognitive_operations", b.resRef, progRef)
			b.conclude(state.Stopped, []string{"budget_limit", "budget_cognitive_operations"})
			return
		}
		dlg, action = cognition.RunProposal(t.prog, progRef, sit, *t.reply, b.reportAction(t))
		b.noteProposals(dlg, action)
	} else {
		dlg, action = cognition.Run(t.prog, progRef, sit)
	}
	if noted := b.reportNote(action, b.proposalWhy(t), result); noted != action {
		// The report says why and quotes the output (format 3): the
		// dialogue names the action governance weighs.
		action = noted
		dlg.ActionRef = action.Ref()
	}
	b.rec.DialogueRef = b.record(event.DialogueCompleted, "dlg", dlg, map[string]codec.Ref{"program": progRef}, dlg.Result)
	rs.Budget.CognitiveOperations += int64(dlg.Operations)
	depth := int64(1)
	if b.sum.StrategicReview {
		depth = 2
	}
	used := budget.Usage{Branches: int64(b.candidates), Cost: int64(dlg.Operations), RecursiveDepth: depth}
	if action == nil {
		// The distiller produced no Resultant: the controller does not
		// force one. A proposer that found nothing (or only actions the
		// critic rejected) is not asked again until the evidence changes.
		sp := state.Suppression{ItemID: b.item, Reason: "no_acceptable_remedy", Since: b.at}
		if t.reply != nil {
			sp.EvidenceRef = string(result.TargetSHA256)
		}
		b.suppress(sp)
		b.moveAs(controller.Distiller, controller.NoCycle, "no_acceptable_remedy", used, b.resRef, progRef, b.rec.DialogueRef)
		b.conclude(b.afterSetback(), []string{"no_action_request", dlg.Reason})
		return
	}
	if over := b.overBudget(used); over != "" {
		b.moveAs(controller.Distiller, controller.Blocked, "budget_"+over, used, b.resRef, progRef, b.rec.DialogueRef)
		b.suppress(state.Suppression{ItemID: b.item, Reason: "cycle_budget_" + over, Since: b.at, EvidenceRef: string(result.TargetSHA256)})
		b.conclude(b.afterSetback(), []string{"cycle_budget", "budget_" + over})
		return
	}

	// Forever-loop guard: the same remedy on the same evidence, again.
	b.fp, b.evidence = cognition.Fingerprint(*action), string(result.TargetSHA256)
	ai := slices.IndexFunc(rs.Attempts, func(a state.Attempt) bool {
		return a.ItemID == b.item && a.Fingerprint == b.fp && a.EvidenceRef == b.evidence
	})
	if ai >= 0 && rs.Attempts[ai].Count >= pol.RepeatLimit {
		// Stop rule: recursion that repeats without new evidence.
		b.emit(event.GuardTripped, nil, nil, "repeat_without_progress", b.item)
		b.moveAs(controller.Distiller, controller.Blocked, "repeat_without_progress", used, b.resRef, progRef, b.rec.DialogueRef)
		b.suppress(state.Suppression{ItemID: b.item, Fingerprint: b.fp, Reason: "repeat_without_progress", Since: b.at, EvidenceRef: b.evidence})
		b.conclude(b.afterSetback(), []string{"repeat_without_progress"})
		return
	}
	if ai < 0 {
		rs.Attempts = append(rs.Attempts, state.Attempt{ItemID: b.item, Fingerprint: b.fp, EvidenceRef: b.evidence})
		ai = len(rs.Attempts) - 1
	}
	rs.Attempts[ai].Count++
	rs.Attempts[ai].LastCycle = b.cycle
	rs.Attempts = boundAttempts(rs.Attempts, b.item)
	sortAttempts(rs.Attempts)
	b.moveAs(controller.Distiller, controller.Plan, "resultant_ready", used, b.resRef, progRef, b.rec.DialogueRef)
	b.govern(*action, nil, t.commitmentID)
}

// boundAttempts keeps only the most recent attempts of an item.
func boundAttempts(as []state.Attempt, item string) []state.Attempt {
	var mine []state.Attempt
	for _, a := range as {
		if a.ItemID == item {
			mine = append(mine, a)
		}
	}
	if len(mine) <= state.AttemptsKeptPerItem {
		return as
	}
	slices.SortFunc(mine, func(a, c state.Attempt) int { return int(c.LastCycle - a.LastCycle) })
	drop := mine[state.AttemptsKeptPerItem:]
	return slices.DeleteFunc(as, func(a state.Attempt) bool { return slices.Contains(drop, a) })
}

func sortAttempts(as []state.Attempt) {
	slices.SortFunc(as, func(a, c state.Attempt) int {
		return strings.Compare(a.ItemID+"\x00"+a.Fingerprint+"\x00"+a.EvidenceRef, c.ItemID+"\x00"+c.Fingerprint+"\x00"+c.EvidenceRef)
	})
}
