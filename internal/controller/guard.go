package controller

import (
	"fmt"

	"github.com/acr-project/acr/internal/codec"
)

// The non-self-approval rules, as reason codes.
const (
	RuleOwnPlan        = "distiller_cannot_approve_own_plan"
	RuleSoleEvaluator  = "executor_cannot_be_sole_evaluator"
	RuleFitnessFixed   = "evaluator_cannot_change_fitness_contract"
	RuleSelfPromotion  = "candidate_cannot_load_or_promote_itself"
	RuleIntentSameCyle = "intent_cannot_be_amended_and_accepted_in_one_cycle"
	RuleRaise          = "cycle_cannot_raise_authority"
)

// Violation is a refused act: a role tried to approve, evaluate, amend or
// promote something the rules keep it from. The kernel records it in the
// ledger and carries on without the act.
type Violation struct {
	Rule     string    `json:"rule"`
	Actor    Role      `json:"actor_role"`
	Artifact codec.Ref `json:"artifact"`
	Detail   string    `json:"detail"`
}

func (v *Violation) Error() string {
	return fmt.Sprintf("refused (%s): %s by %s on %s", v.Rule, v.Detail, v.Actor, v.Artifact)
}

// Guard keeps the authorship of a cycle's artifacts and enforces the
// separation of roles over them. Authorship is what makes the rules
// checkable: every artifact names the role that produced it.
type Guard struct {
	authors       map[codec.Ref]Role
	fitness       codec.Ref // the FitnessContract fixed before the action
	intentAmended codec.Ref // an IntentContract amendment made this cycle
}

// NewGuard returns an empty guard for one cycle.
func NewGuard() *Guard { return &Guard{authors: map[codec.Ref]Role{}} }

// Author records that role produced the artifact ref.
func (g *Guard) Author(ref codec.Ref, role Role) {
	if ref != "" {
		g.authors[ref] = role
	}
}

// AuthorOf returns the role that produced ref.
func (g *Guard) AuthorOf(ref codec.Ref) (Role, bool) {
	r, ok := g.authors[ref]
	return r, ok
}

func refuse(rule string, actor Role, artifact codec.Ref, format string, args ...any) error {
	return &Violation{Rule: rule, Actor: actor, Artifact: artifact, Detail: fmt.Sprintf(format, args...)}
}

// ApprovePlan lets approver approve the plan: only the intent custodian
// (ruling against the pre-granted Contract) or the operator may, and never
// the role that wrote the plan.
func (g *Guard) ApprovePlan(plan codec.Ref, approver Role) error {
	if author, ok := g.authors[plan]; ok && author == approver {
		return refuse(RuleOwnPlan, approver, plan, "the plan's author cannot approve it")
	}
	if approver != IntentCustodian && approver != Operator {
		return refuse(RuleOwnPlan, approver, plan, "only the intent custodian or the operator approves plans")
	}
	return nil
}

// AcceptEvaluation lets an evaluation stand: its author must not be the
// executor of the outcome it judges, and at least one piece of evidence it
// rests on must come from a role other than the executor (an independent
// readback), so the executor is never the sole evaluator.
func (g *Guard) AcceptEvaluation(eval, outcome codec.Ref, evidence []codec.Ref) error {
	evaluator := g.authors[eval]
	executor, ok := g.authors[outcome]
	if !ok {
		executor = Executor
	}
	if evaluator == executor {
		return refuse(RuleSoleEvaluator, evaluator, eval, "the executor cannot evaluate its own outcome")
	}
	for _, e := range evidence {
		if a, ok := g.authors[e]; ok && a != executor {
			return nil
		}
	}
	return refuse(RuleSoleEvaluator, evaluator, eval, "no evidence independent of the executor")
}

// FixFitness fixes the FitnessContract before the action. It can be fixed
// once per cycle, and nothing replaces it afterwards: the contract is
// derived from the pinned environment and the action when the plan is
// made, and a plan that waits for a person carries it to the cycle that
// acts (docs/controller.md says why no amendment replaces it).
func (g *Guard) FixFitness(ref codec.Ref, by Role) error {
	if g.fitness != "" && g.fitness != ref {
		return refuse(RuleFitnessFixed, by, ref, "the fitness contract %s is already fixed", g.fitness)
	}
	g.fitness = ref
	return nil
}

// Fitness is the FitnessContract fixed in this cycle.
func (g *Guard) Fitness() codec.Ref { return g.fitness }

// Promote lets by load or promote a capability candidate: only the
// promoter may, never the candidate itself (by names the acting artifact)
// and never the role that forged it.
func (g *Guard) Promote(candidate codec.Ref, by Role, acting codec.Ref) error {
	if acting == candidate {
		return refuse(RuleSelfPromotion, by, candidate, "a candidate cannot load or promote itself")
	}
	if author, ok := g.authors[candidate]; ok && author == by {
		return refuse(RuleSelfPromotion, by, candidate, "the candidate's author cannot promote it")
	}
	if by != Promoter {
		return refuse(RuleSelfPromotion, by, candidate, "only the promoter promotes candidates")
	}
	return nil
}

// AmendIntent records an IntentContract amendment proposed this cycle.
func (g *Guard) AmendIntent(ref codec.Ref) { g.intentAmended = ref }

// AcceptIntent accepts an IntentContract amendment; one made in this same
// cycle cannot be, so no cycle can rewrite and ratify its own intent.
func (g *Guard) AcceptIntent(ref codec.Ref, by Role) error {
	if g.intentAmended == ref {
		return refuse(RuleIntentSameCyle, by, ref, "the amendment was made in this cycle")
	}
	if by != Operator && by != IntentCustodian {
		return refuse(RuleIntentSameCyle, by, ref, "only the intent custodian or the operator accepts intent")
	}
	return nil
}

// Raise refuses any request to go beyond the granted coordinates.
func (g *Guard) Raise(granted, requested Coordinates, by Role, source codec.Ref) error {
	if err := Within(granted, requested); err != nil {
		return refuse(RuleRaise, by, source, "%v", err)
	}
	return nil
}
