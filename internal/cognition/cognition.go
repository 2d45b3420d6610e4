// Package cognition turns a selected agenda item into at most one action
// request, in three public, structured steps: affordance retrieval (which
// remedies could address the item), compilation into a cognitive program
// (an ordered list of operations, which a strategy routing overlay may
// reorder), and self-dialogue (the program executed as turns by named roles,
// each turn a claim with refs). Nothing here is hidden reasoning: every turn
// is recorded, and the loop can run on this public state alone.
//
// Cognition proposes; it never decides. The action request it produces
// goes to governance, and a proposer is never the one that approves.
package cognition

import (
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Schema names.
const (
	ProgramSchema  = "acr.cognitive-program/v0.1"
	DialogueSchema = "acr.self-dialogue/v0.1"
)

// Affordance is one way to act on an item.
type Affordance struct {
	ID        string          `json:"id"`
	Operation world.Operation `json:"operation"`
	// FixIndex is the remedy in the check's fix list (-1: report only).
	FixIndex int `json:"fix_index"`
	// Fingerprint identifies the action this affordance would produce, so
	// remedies that failed before can be recognised.
	Fingerprint string `json:"fingerprint"`
}

// Op is a cognitive operation.
type Op string

// The cognitive operations, in their default order.
const (
	OpObserveTarget Op = "observe_target"
	OpRetrieve      Op = "retrieve_affordances"
	OpSelect        Op = "select_affordance"
	OpDraft         Op = "draft_action"
	OpCritique      Op = "critique"
	OpFinalize      Op = "finalize"
)

// Program is the compiled cognitive program for one item.
type Program struct {
	Schema      string       `json:"schema"`
	CycleSeq    int64        `json:"cycle_seq"`
	ItemID      string       `json:"item_id"`
	CheckID     string       `json:"check_id"`
	Affordances []Affordance `json:"affordances"`
	Steps       []Op         `json:"steps"`
	// Routing names the overlay that shaped the program ("" on the
	// direct path).
	Routing codec.Ref `json:"routing_ref"`
	// Proposer says the program consults the external proposer.
	Proposer bool `json:"proposer,omitempty"`
}

// Routing is what a strategy overlay asks of the compiler.
type Routing struct {
	Ref codec.Ref
	// CritiqueFirst moves the critique before selection, so that remedies
	// that failed before are weeded out before one is chosen.
	CritiqueFirst bool
	// SkipFailed, when true for this item, lets the critique drop
	// affordances whose fingerprint failed before.
	SkipFailed bool
}

// Retrieve lists the affordances for a check: its remedies in order, or
// reporting the issue (the catalog's Reports operation, ranked last) when
// it has none. ops is the run's catalog of operations.
func Retrieve(ops world.Catalog, c world.Check, res world.CheckResult) []Affordance {
	var out []Affordance
	for i, f := range c.Fixes {
		a := ops.DraftFix(c, res, f)
		out = append(out, Affordance{ID: fmt.Sprintf("fix-%d", i), Operation: f.Operation, FixIndex: i, Fingerprint: Fingerprint(a)})
	}
	if len(out) == 0 {
		a := ReportAction(ops, c, res)
		out = append(out, Affordance{ID: "report", Operation: a.Operation, FixIndex: -1, Fingerprint: Fingerprint(a)})
	}
	return out
}

// Compile orders the cognitive operations. The direct path observes,
// retrieves, selects, drafts, critiques and finalizes; a routing overlay
// with CritiqueFirst critiques the affordances before selecting one.
func Compile(cycleSeq int64, itemID string, c world.Check, affs []Affordance, r Routing) Program {
	steps := []Op{OpObserveTarget, OpRetrieve, OpSelect, OpDraft, OpCritique, OpFinalize}
	if r.CritiqueFirst {
		steps = []Op{OpObserveTarget, OpRetrieve, OpCritique, OpSelect, OpDraft, OpFinalize}
	}
	return Program{Schema: ProgramSchema, CycleSeq: cycleSeq, ItemID: itemID, CheckID: c.ID, Affordances: affs, Steps: steps, Routing: r.Ref}
}

// CompileProposal is the program that consults the external proposer: it
// observes the item, asks, critiques each proposed action in the order
// given and finalizes the first that passes.
func CompileProposal(cycleSeq int64, itemID string, c world.Check, affs []Affordance, r Routing) Program {
	return Program{Schema: ProgramSchema, CycleSeq: cycleSeq, ItemID: itemID, CheckID: c.ID, Affordances: affs,
		Steps: []Op{OpObserveTarget, OpConsult, OpCritique, OpFinalize}, Routing: r.Ref, Proposer: true}
}

// ReportAction is the action that reports an item for a person (the
// catalog's Reports operation), the remedy of last resort.
func ReportAction(ops world.Catalog, c world.Check, res world.CheckResult) world.Action {
	return ops.DraftFix(c, res, world.Fix{Operation: ops.Report().Op, Note: c.Summary})
}

// Turn is one public step of the self-dialogue.
type Turn struct {
	Role  string `json:"role"` // observer | proposer | critic | resolver
	Op    Op     `json:"op"`
	Claim string `json:"claim"`
}

// Dialogue is the executed program.
type Dialogue struct {
	Schema     string    `json:"schema"`
	ProgramRef codec.Ref `json:"program_ref"`
	Turns      []Turn    `json:"turns"`
	// Result is "action" or "no_action".
	Result     string    `json:"result"`
	ActionRef  codec.Ref `json:"action_ref,omitempty"`
	Affordance string    `json:"affordance,omitempty"`
	Reason     string    `json:"reason,omitempty"`
	// Operations counts the cognitive operations spent.
	Operations int `json:"operations"`
}

// Situation is what the dialogue may consult: the check, its observed
// result, and fingerprints of actions that already failed on this item.
// For a command check with a path, Result.TargetSHA256 is the path's hash
// (the kernel puts it there), since that is what a patch is derived from.
type Situation struct {
	Check       world.Check
	Result      world.CheckResult
	FailedPrint map[string]bool
	Spec        *world.Spec
	Routing     Routing
	// Operations is the run's catalog of operations (the zero value
	// holds the built-in ones).
	Operations world.Catalog
}

// Run executes the program step by step and returns the dialogue and the
// action request it produced, if any.
func Run(p Program, programRef codec.Ref, sit Situation) (Dialogue, *world.Action) {
	d := Dialogue{Schema: DialogueSchema, ProgramRef: programRef, Turns: []Turn{}, Result: "no_action"}
	avail := slices.Clone(p.Affordances)
	var chosen *Affordance
	var draft *world.Action
	critiqued, critiquedBeforeSelect := false, false
	say := func(role string, op Op, format string, args ...any) {
		d.Turns = append(d.Turns, Turn{Role: role, Op: op, Claim: fmt.Sprintf(format, args...)})
		d.Operations++
	}
	for _, op := range p.Steps {
		switch op {
		case OpObserveTarget:
			say("observer", op, "check %s is %s on %s (%s)", sit.Check.ID, sit.Result.Status, sit.Check.Path, orNone(sit.Result.Detail))
		case OpRetrieve:
			ids := make([]string, len(avail))
			for i, a := range avail {
				ids[i] = a.ID + ":" + string(a.Operation)
			}
			say("proposer", op, "affordances %v", ids)
		case OpCritique:
			critiqued = true
			if chosen == nil {
				critiquedBeforeSelect = true
				// Critique before selection: weed out remedies that failed.
				if sit.Routing.SkipFailed {
					kept := slices.DeleteFunc(slices.Clone(avail), func(a Affordance) bool { return sit.FailedPrint[a.Fingerprint] })
					say("critic", op, "drop %d remedy(ies) that already failed on this item", len(avail)-len(kept))
					avail = kept
				} else {
					say("critic", op, "no remedy to drop")
				}
				continue
			}
			if problem := critique(draft, sit); problem != "" {
				say("critic", op, "reject %s: %s", chosen.ID, problem)
				d.Reason, draft = problem, nil
			} else {
				say("critic", op, "accept %s: stays in %s, addresses %s", chosen.ID, draft.Target, sit.Check.ID)
			}
		case OpSelect:
			if len(avail) == 0 {
				say("proposer", op, "no affordance left")
				d.Reason = "no_affordance"
				continue
			}
			chosen = &avail[0]
			say("proposer", op, "choose %s (%s)", chosen.ID, chosen.Operation)
		case OpDraft:
			if chosen == nil {
				continue
			}
			a := draftFor(sit, *chosen)
			draft = &a
			say("proposer", op, "draft %s on %s", a.Operation, a.Target)
		case OpFinalize:
			if draft != nil && critiqued && critiquedBeforeSelect {
				// The critique ran before there was a draft; the draft's
				// own checks still apply.
				if problem := critique(draft, sit); problem != "" {
					say("critic", op, "reject %s: %s", chosen.ID, problem)
					d.Reason, draft = problem, nil
				}
			}
			if draft == nil || !critiqued {
				if d.Reason == "" {
					d.Reason = "no_acceptable_draft"
				}
				say("resolver", op, "no action: %s", d.Reason)
				continue
			}
			d.Result, d.ActionRef, d.Affordance, d.Reason = "action", draft.Ref(), chosen.ID, ""
			say("resolver", op, "request %s on %s for governance", draft.Operation, draft.Target)
		}
	}
	if d.Result != "action" {
		return d, nil
	}
	return d, draft
}

func orNone(s string) string {
	if s == "" {
		return "no detail"
	}
	return s
}

func draftFor(sit Situation, a Affordance) world.Action {
	if a.FixIndex < 0 {
		return ReportAction(sit.Operations, sit.Check, sit.Result)
	}
	return sit.Operations.DraftFix(sit.Check, sit.Result, sit.Check.Fixes[a.FixIndex])
}

// critique checks a draft against what cognition itself can know: the
// target is the check's, it is not excluded, and it was not tried in vain.
// Legitimacy is governance's call, not the critic's.
func critique(a *world.Action, sit Situation) string {
	if a == nil {
		return "nothing drafted"
	}
	if sit.Operations.OnSet(*a) {
		// A declared command: governance rules on what it touches.
		return ""
	}
	if sit.Spec.Excluded(a.Target) {
		return "target is excluded from observation"
	}
	if !sit.Operations.Of(a.Operation).Reports && a.Target != sit.Check.Path {
		return "target is not the checked file"
	}
	if sit.Routing.SkipFailed && sit.FailedPrint[Fingerprint(*a)] {
		return "remedy already failed on this item"
	}
	return ""
}

// Fingerprint identifies what an action does, independent of the evidence
// it was derived from (the expected hash), so the same remedy tried on new
// evidence is recognised as the same remedy.
func Fingerprint(a world.Action) string {
	a.ExpectSHA256 = ""
	return string(codec.MustFingerprintOf(a))
}

// Cost is the most cognitive operations Run can spend on p (one per step).
// It is known before the program runs, so a budget can be checked before
// it is spent. For a program that consults the proposer it is what the
// consultation costs with one proposed action; the reply fixes the rest
// (ReplyCost).
func Cost(p Program) int { return len(p.Steps) }

// ReplyCost is the most cognitive operations RunProposal can spend on a
// reply: observing, consulting and finalizing, and one critique for each
// proposed action. It is known before the reply is weighed.
func ReplyCost(r Reply) int { return 3 + len(r.Proposal.Actions) }
