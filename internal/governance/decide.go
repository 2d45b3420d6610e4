package governance

import (
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Verdict is a governance decision about an action (seed §10.3). It is not
// a loop disposition: the kernel maps one to the other without changing it.
type Verdict uint8

// The verdicts; the zero value is invalid.
const (
	VerdictInvalid Verdict = iota
	Execute
	Refuse
	Defer
	IdleVerdict
	Escalate
)

func verdictName(v Verdict) string {
	switch v {
	case Execute:
		return "EXECUTE"
	case Refuse:
		return "REFUSE"
	case Defer:
		return "DEFER"
	case IdleVerdict:
		return "IDLE"
	case Escalate:
		return "ESCALATE"
	}
	return ""
}

func (v Verdict) String() string {
	if n := verdictName(v); n != "" {
		return n
	}
	return fmt.Sprintf("Verdict(%d)", uint8(v))
}

// MarshalText writes the verdict's name.
func (v Verdict) MarshalText() ([]byte, error) {
	if n := verdictName(v); n != "" {
		return []byte(n), nil
	}
	return nil, fmt.Errorf("invalid governance verdict %d", uint8(v))
}

// UnmarshalText accepts exactly the five names.
func (v *Verdict) UnmarshalText(b []byte) error {
	for c := Execute; c <= Escalate; c++ {
		if verdictName(c) == string(b) {
			*v = c
			return nil
		}
	}
	return fmt.Errorf("unknown governance verdict %q", b)
}

// Request is everything governance rules on. Evidence is what the cycle
// observed; nothing in it comes from the loop's own say-so.
type Request struct {
	Action      world.Action
	ActionRef   codec.Ref
	ContractRef codec.Ref
	CycleSeq    int64
	Now         string
	// EvidencePresent maps evidence ids to whether they were observed.
	EvidencePresent map[string]bool
	// RequiredEvidence is evidence the addressed check itself requires.
	RequiredEvidence []string
	ObservationRef   codec.Ref
	// StillNeeded is false when the addressed check already passes.
	StillNeeded bool
	// Approval is a person's resolution bound to this exact action.
	Approval *state.Approval
	// Operations is the run's catalog: what governance knows of the
	// action's operation (the zero value holds the built-in ones).
	Operations world.Catalog
	// Trial, for a command fix of a git world, is what the change
	// actually did when it was tried: the trial the cycle made before
	// governance (the ActionTried event), or the one a person approved
	// with (state.Approval.Trial). The contract's rules rule on the paths
	// it changed rather than the command's declared touches, and a change
	// outside those touches is refused. An approved effect commits
	// exactly its tree, so these paths are the effect's.
	Trial *world.GitTrial
	// TrialFailure, when not empty, is how the cycle's trial of the
	// command failed (an exit other than 0, a timeout): the fix failed
	// before anyone could approve it, and it is refused.
	TrialFailure string
}

// Decision is governance's ruling on one action request.
type Decision struct {
	Schema          string        `json:"schema"`
	CycleSeq        int64         `json:"cycle_seq"`
	Verdict         Verdict       `json:"verdict"`
	ActionRef       codec.Ref     `json:"action_ref"`
	ContractRef     codec.Ref     `json:"contract_ref"`
	AuthorityID     string        `json:"authority_id"`
	AuthorityMode   AuthorityMode `json:"authority_mode"`
	Autonomy        string        `json:"autonomy"`
	Rule            string        `json:"rule"`
	Effect          Effect        `json:"effect,omitempty"`
	MissingEvidence []string      `json:"missing_evidence"`
	ApprovalID      string        `json:"approval_id,omitempty"`
	ReasonCodes     []string      `json:"reason_codes"`
	// Actor is the role that decided: always governance, never the
	// cognition that proposed the action (non-self-approval).
	Actor string `json:"actor"`
}

// Receipt is the DecisionReceipt kept in the ledger: the evidence a later
// audit needs to see why the decision was made, without any prose.
type Receipt struct {
	Schema       string    `json:"schema"`
	DecisionRef  codec.Ref `json:"decision_ref"`
	ActionRef    codec.Ref `json:"action_ref"`
	ContractRef  codec.Ref `json:"contract_ref"`
	AuthorityID  string    `json:"authority_id"`
	Verdict      Verdict   `json:"verdict"`
	EvidenceRefs []string  `json:"evidence_refs"`
	DecidedAt    string    `json:"decided_at"`
	Actor        string    `json:"actor"`
	RequestedBy  string    `json:"requested_by"`
}

// requiredAuthority is the authority an operation needs.
func requiredAuthority(k world.OperationKind) AuthorityMode {
	if k.Writes {
		return AuthProjectWrite
	}
	return AuthRead
}

// Decide rules on an action. The order is fixed: validity, need, authority,
// contract rule, evidence, autonomy, approval. Every path returns a
// decision; none changes the contract or the authority.
func Decide(c *Contract, spec *world.Spec, req Request) Decision {
	d := Decision{
		Schema: DecisionSchema, CycleSeq: req.CycleSeq, ActionRef: req.ActionRef, ContractRef: req.ContractRef,
		AuthorityID: c.Authority.ID, AuthorityMode: c.Authority.Mode, Autonomy: c.Coordinates.Autonomy,
		Rule: "none", MissingEvidence: []string{}, Actor: "governance",
	}
	refuse := func(code string) Decision { d.Verdict, d.ReasonCodes = Refuse, []string{code}; return d }
	a := req.Action
	ops := req.Operations
	k, ok := ops.Kind(a.Operation)
	if !ok {
		return refuse("unknown_operation")
	}
	if k.Declared != nil {
		// Only what the environment declares, exactly as declared, may
		// run: a proposer names commands, it does not write them.
		if code := k.Declared(spec, a); code != "" {
			return refuse(code)
		}
	}
	if ops.OnSet(a) {
		for _, p := range k.Paths(a) {
			if world.ValidPattern(p) != nil {
				return refuse("target_path_invalid")
			}
		}
	} else {
		if _, err := world.CleanPath(a.Target); err != nil {
			return refuse("target_path_invalid")
		}
		if spec.Excluded(a.Target) {
			return refuse("target_excluded")
		}
	}
	if !req.StillNeeded {
		d.Verdict, d.ReasonCodes = IdleVerdict, []string{"nothing_to_do"}
		return d
	}
	if c.Authority.Mode.Rank() < requiredAuthority(k).Rank() {
		return refuse("authority_insufficient")
	}
	if req.TrialFailure != "" {
		return refuse("trial_failed")
	}
	if t := req.Trial; t != nil {
		if !t.Valid() {
			return refuse("approved_trial_invalid")
		}
		for _, p := range t.Changed {
			if world.ValidPattern(p) != nil {
				return refuse("approved_trial_invalid")
			}
		}
		if len(world.Outside(k.Paths(a), t.Changed)) > 0 {
			return refuse("changed_outside_touches")
		}
	}
	var r Rule
	if k.Undoes {
		// Undoing the run's own effect through its rollback bundle needs
		// no rule beyond the one that allowed the effect; it still needs
		// the authority and the autonomy to write.
		d.Rule, d.Effect = "rollback_of_own_effect", Allow
		r = Rule{Effect: Allow}
	} else {
		paths := k.Paths(a)
		if req.Trial != nil && len(req.Trial.Changed) > 0 {
			paths = req.Trial.Changed
		}
		rl := c.RuleOn(ops, a, paths)
		if rl.Effect == "" {
			d.Rule = "default"
			return refuse("no_rule_allows")
		}
		r = Rule{Effect: rl.Effect, RequiresEvidence: rl.RequiresEvidence}
		d.Rule, d.Effect = fmt.Sprintf("rules[%d]", rl.Rule), rl.Effect
	}
	if r.Effect == Forbid {
		return refuse("contract_forbids")
	}
	if req.Approval != nil && req.Approval.ActionRef == req.ActionRef && req.Approval.Verdict == "deny" {
		d.ApprovalID = req.Approval.ID
		return refuse("operator_denied")
	}
	for _, ev := range slices.Concat(r.RequiresEvidence, req.RequiredEvidence) {
		if !req.EvidencePresent[ev] && !slices.Contains(d.MissingEvidence, ev) {
			d.MissingEvidence = append(d.MissingEvidence, ev)
		}
	}
	if len(d.MissingEvidence) > 0 {
		slices.Sort(d.MissingEvidence)
		d.Verdict, d.ReasonCodes = Defer, []string{"evidence_missing"}
		return d
	}
	approved := req.Approval != nil && req.Approval.ActionRef == req.ActionRef && req.Approval.Verdict == "approve"
	if approved {
		d.ApprovalID = req.Approval.ID
	}
	switch autonomy := Level(c.Coordinates.Autonomy, 'A'); {
	case autonomy <= 0:
		return refuse("autonomy_A0_observe_only")
	case autonomy == 1:
		// A1 is proposal-only: an approval is the person's review of the
		// proposal, never permission for the loop to act.
		d.Verdict, d.ReasonCodes = Escalate, []string{"autonomy_A1_proposal_only"}
		return d
	}
	if r.Effect == Approve && !approved {
		d.Verdict, d.ReasonCodes = Escalate, []string{"contract_requires_approval"}
		return d
	}
	d.Verdict = Execute
	d.ReasonCodes = []string{"contract_allows"}
	if k.Undoes {
		d.ReasonCodes = []string{"rollback_of_own_effect"}
	}
	if approved {
		d.ReasonCodes = []string{"operator_approved"}
	}
	return d
}

// NewReceipt builds the receipt for a decision.
func NewReceipt(d Decision, decisionRef codec.Ref, req Request) Receipt {
	ev := []string{string(req.ObservationRef)}
	if d.ApprovalID != "" {
		ev = append(ev, d.ApprovalID)
	}
	return Receipt{
		Schema: ReceiptSchema, DecisionRef: decisionRef, ActionRef: d.ActionRef, ContractRef: d.ContractRef,
		AuthorityID: d.AuthorityID, Verdict: d.Verdict, EvidenceRefs: ev, DecidedAt: req.Now,
		Actor: "governance", RequestedBy: "cognition",
	}
}
