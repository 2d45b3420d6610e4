package kernel

import (
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Amendments (docs/operations.md, "Changing a run"): the goal, contract
// and environment are pinned when a run starts, and only a person changes
// them, in two steps that two different cycles take:
//
//   - acr amend queues an amendment: the new document and the ref of the
//     pinned version it amends. The cycle that consumes it checks it and
//     records amendment.proposed with its diff and a pending amendment;
//     the Guard records that this cycle amended (AmendIntent).
//   - acr approve REF (or deny) queues an answer. A later cycle consumes
//     it: the Guard refuses an acceptance in the cycle that proposed
//     (AcceptIntent), an amendment of a version no longer pinned is
//     refused as stale, and an accepted one replaces the pinned document
//     (amendment.accepted, old and new refs). The accepting cycle ends
//     there; the next runs under the new version, and from then on every
//     persistent.cycle.started names the versions it runs under.
//
// While an amendment waits for its answer, the pinned version rules, but
// an action the loop would take on its own that the answer decides is
// not taken (context.go, contested): the source authority for it is
// unresolved.
//
// A run stopped on a hard budget takes amendments and their answers, and
// an accepted one resumes it: raising a budget is an amendment.

// PinnedRef is the ref of the version of target (state.AmendContract,
// AmendGoal or AmendEnvironment) the run has pinned now.
func PinnedRef(s EngineState, target string) codec.Ref {
	switch target {
	case state.AmendContract:
		return codec.MustRefOf(kindContract, s.Contract)
	case state.AmendGoal:
		return codec.MustRefOf(kindGoal, s.Goal)
	case state.AmendEnvironment:
		return codec.MustRefOf(kindSpec, s.Spec)
	}
	return ""
}

// PinnedDocument is the pinned version of target.
func PinnedDocument(s EngineState, target string) (any, error) {
	switch target {
	case state.AmendContract:
		return s.Contract, nil
	case state.AmendGoal:
		return s.Goal, nil
	case state.AmendEnvironment:
		return s.Spec, nil
	}
	return nil, fmt.Errorf("amendment: unknown target %q (want contract, environment or goal)", target)
}

// amended is a checked amendment's new document, decoded.
type amended struct {
	contract governance.Contract
	goal     intent.Goal
	spec     world.Spec
	ref      codec.Ref
}

// CheckAmendment decodes an amendment's document strictly and validates
// it as acr init would, against the rest of the pinned state: a goal
// against the pinned environment, an environment against the pinned goal
// and contract, a contract against the pinned environment (the evidence
// its rules require must be declared; a check of a world of declared
// files must name a file it has). An environment keeps the world it names
// (its root or files): the world a run looks after does not change under
// it. It returns the new version's ref.
func CheckAmendment(s EngineState, a state.Amendment) (codec.Ref, error) {
	n, err := checkAmendment(s, a, true)
	return n.ref, err
}

// checkAmendment is CheckAmendment; references says whether the
// documents' references to each other are resolved too. A cycle resolves
// them from ledger format 3 on: a run of an earlier format replays the
// amendments it accepted without them.
func checkAmendment(s EngineState, a state.Amendment, references bool) (amended, error) {
	var n amended
	doc := a.Document.Encode()
	var err error
	switch a.Target {
	case state.AmendContract:
		if err = codec.UnmarshalCanonical(doc, &n.contract); err == nil {
			err = n.contract.ValidateFor(s.Operations)
		}
		if err == nil && references {
			err = n.contract.CheckEnvironment(&s.Spec)
		}
		n.ref = codec.MustRefOf(kindContract, n.contract)
	case state.AmendGoal:
		if err = codec.UnmarshalCanonical(doc, &n.goal); err == nil {
			err = n.goal.Validate(&s.Spec)
		}
		n.ref = codec.MustRefOf(kindGoal, n.goal)
	case state.AmendEnvironment:
		if err = codec.UnmarshalCanonical(doc, &n.spec); err == nil {
			err = n.spec.ValidateFor(s.Operations)
		}
		if err == nil {
			err = s.Goal.CheckEnvironment(&n.spec)
		}
		if err == nil && (n.spec.Root != s.Spec.Root || !maps.Equal(n.spec.Files, s.Spec.Files)) {
			err = &codec.FieldError{Path: "root", Err: errors.New("an amendment cannot change the world a run looks after (root and files stay as pinned)")}
		}
		if err == nil && !sameGit(n.spec.Git, s.Spec.Git) {
			err = &codec.FieldError{Path: "git", Err: errors.New("an amendment cannot change the world a run looks after (git stays as pinned)")}
		}
		if err == nil && references {
			err = s.Contract.CheckEnvironment(&n.spec)
		}
		if err == nil && references && !n.spec.Backing().FilesMayAppear {
			// A directory world is not looked at here (the kernel reads
			// no disk): only a world of declared files is known.
			if u := n.spec.UnresolvedPaths(n.spec.Declares); len(u) > 0 {
				err = u[0]
			}
		}
		n.ref = codec.MustRefOf(kindSpec, n.spec)
	default:
		err = &codec.FieldError{Path: "target", Err: fmt.Errorf("unknown target %q (want contract, environment or goal)", a.Target)}
	}
	return n, err
}

// amendable reports whether a stopped run takes amendments: one stopped
// on a hard budget does (raising the budget resumes it), and so does one
// stopped because its contract lapsed or was revoked (a new contract
// resumes it); one stopped by a person, because its goal was met, or
// because it failed for good, does not.
func amendable(rs *state.RunState) bool {
	return rs.Status != state.RunStopped || slices.Contains(rs.ReasonCodes, "budget_limit") ||
		slices.Contains(rs.ReasonCodes, "contract_invalidated")
}

// Amendable reports whether the run takes amendments now.
func Amendable(rs *state.RunState) bool { return rs.Status != state.RunFaulted && amendable(rs) }

// amendsRun reports whether an inbox item is an amendment or an answer to
// a pending one: what wakes a run stopped on a budget.
func amendsRun(rs *state.RunState, it inbox.Item) bool {
	switch it.Kind {
	case inbox.KindAmendment:
		return true
	case inbox.KindApproval:
		return slices.ContainsFunc(rs.PendingAmendments, func(p state.PendingAmendment) bool { return p.Ref == it.Approval.ActionRef })
	}
	return false
}

// proposeAmendment takes up an amendment from the inbox: checked, not
// stale, not a no-op, it becomes a pending amendment.
func (b *builder) proposeAmendment(it inbox.Item, refs map[string]codec.Ref) {
	rs := &b.s.Run
	a := *it.Amendment
	refs["amends"] = a.Amends
	n, err := checkAmendment(b.s, a, b.s.Run.Format() >= state.LedgerFormat3)
	newRef := n.ref
	switch {
	case err != nil:
		b.emit(event.AmendmentRefused, nil, refs, "invalid_document", "target_"+a.Target)
		return
	case a.Amends != PinnedRef(b.s, a.Target):
		b.emit(event.AmendmentRefused, nil, refs, "stale", "target_"+a.Target)
		return
	case newRef == a.Amends:
		b.emit(event.AmendmentRefused, nil, refs, "no_change", "target_"+a.Target)
		return
	}
	var signer *state.Signer
	if c := &b.s.Contract; c.Signed() {
		// Proposing is signed too: an amendment of a run whose contract
		// lists approvers comes from one of them.
		var why string
		if signer, why = inbox.CheckSignature(rs.RunID, &a, c.KeyOwner); why != "" {
			b.withSigner(event.AmendmentRefused, signer, refs, why, "target_"+a.Target)
			return
		}
	}
	ref := refs["item"]
	refs["new"] = newRef
	b.guard.AmendIntent(ref)
	p := state.PendingAmendment{Ref: ref, Target: a.Target, Amends: a.Amends, NewRef: newRef, Document: a.Document, Diff: a.Diff,
		By: a.By, CycleSeq: b.cycle, CreatedAt: a.CreatedAt, Signer: signer}
	rs.PendingAmendments = append(rs.PendingAmendments, p)
	b.record(event.AmendmentProposed, "amdp", p, refs, "target_"+a.Target)
}

// answerAmendment consumes a person's answer to the pending amendment i.
func (b *builder) answerAmendment(i int, a state.Approval, refs map[string]codec.Ref, replacedBy codec.Ref, chk answerCheck) {
	rs := &b.s.Run
	p := rs.PendingAmendments[i]
	refs["amendment"] = p.Ref
	by := controller.Operator
	if role, ok := loopRole(a.By); ok {
		by = role
	}
	if err := b.guard.AcceptIntent(p.Ref, by); err != nil {
		// Made in this cycle, or answered by a role of the loop: the
		// amendment stays pending for a person in a later cycle.
		b.refused(err)
		b.emit(event.ApprovalIgnored, nil, refs, "amendment_acceptance_refused", "by_"+by.String())
		return
	}
	if chk.why != "" {
		// Checked against the pinned contract: a key an amendment would
		// add counts only once that amendment is accepted.
		b.withSigner(event.ApprovalIgnored, chk.signer, refs, chk.why)
		return
	}
	if replacedBy != "" {
		refs["replaced_by"] = replacedBy
		b.emit(event.ApprovalIgnored, nil, refs, "replaced_by_later_answer")
		return
	}
	rs.PendingAmendments = slices.Delete(rs.PendingAmendments, i, i+1)
	refs["old"], refs["new"] = p.Amends, p.NewRef
	if a.Verdict != "approve" {
		b.withSigner(event.AmendmentRefused, chk.signer, refs, "denied", "target_"+p.Target)
		return
	}
	n, err := checkAmendment(b.s, state.Amendment{Target: p.Target, Document: p.Document}, b.s.Run.Format() >= state.LedgerFormat3)
	switch {
	case err != nil:
		b.emit(event.AmendmentRefused, nil, refs, "invalid_document", "target_"+p.Target)
		return
	case p.Amends != PinnedRef(b.s, p.Target):
		b.emit(event.AmendmentRefused, nil, refs, "stale", "target_"+p.Target)
		return
	}
	switch p.Target {
	case state.AmendContract:
		b.s.Contract = n.contract
		rs.ContractRef = n.ref
		rs.AuthorityRef = n.contract.AuthorityRef()
		refs["authority"] = rs.AuthorityRef
	case state.AmendGoal:
		b.s.Goal = n.goal
		rs.GoalRefs = []codec.Ref{n.ref}
	case state.AmendEnvironment:
		b.s.Spec = n.spec
		rs.EnvironmentSpecRef = n.ref
	}
	rs.Amendments++
	b.amended = true
	reasons := []string{"target_" + p.Target, "by_operator"}
	if rs.Status == state.RunStopped {
		// Stopped on a budget (only such a run takes amendments): the
		// next cycle runs under the new version, and stops again at
		// once if the budget is still spent.
		rs.Status = state.RunRunning
		reasons = append(reasons, "run_resumed")
	}
	b.withSigner(event.AmendmentAccepted, chk.signer, refs, reasons...)
}

// pinnedRefs are the versions a cycle runs under, named on its
// persistent.cycle.started once the run has been amended (a run never
// amended records them once, on persistent.run.started).
func pinnedRefs(rs *state.RunState, refs map[string]codec.Ref) map[string]codec.Ref {
	if rs.Amendments == 0 {
		return refs
	}
	refs["contract"] = rs.ContractRef
	refs["authority"] = rs.AuthorityRef
	refs["environment_spec"] = rs.EnvironmentSpecRef
	if len(rs.GoalRefs) > 0 {
		refs["goal"] = rs.GoalRefs[0]
	}
	return refs
}

// sameGit reports whether two git worlds are the same (both absent
// included).
func sameGit(a, b *world.GitSpec) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}
