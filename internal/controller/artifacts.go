package controller

import (
	"slices"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
)

// Schema names of the controller's artifacts.
const (
	DeclarationSchema = "acr.controller-cycle/v0.1"
	TensionSchema     = "acr.tension-report/v0.1"
	FitnessSchema     = "acr.fitness-contract/v0.1"
	LearningSchema    = "acr.learning-delta/v0.1"
	CandidateSchema   = "acr.capability-candidate/v0.1"
	CascadeSchema     = "acr.cascade/v0.1"
	ViolationSchema   = "acr.controller-violation/v0.1"
)

// Declaration is what a cycle declares before it does anything: its
// coordinates, the depth it allows itself, and its budget.
type Declaration struct {
	Schema        string      `json:"schema"`
	CycleID       string      `json:"cycle_id"`
	ParentCycleID string      `json:"parent_cycle_id"`
	Coordinates   Coordinates `json:"coordinates"`
	// MaxDepth is the cognitive depth the cycle may reach: the lower of
	// the coordinate and the budget's max_recursive_depth.
	MaxDepth int64        `json:"max_depth"`
	Budget   budget.Cycle `json:"budget"`
}

// Tension classes of a TensionReport.
const (
	TensionOperatorRequest = "operator_request"
	TensionStateDrift      = "intent_state_drift"
	TensionValidation      = "validation_failure"
	TensionFreshness       = "freshness_expiry"
	TensionConflict        = "open_conflict"
	TensionCapabilityGap   = "capability_gap"
	TensionOpportunity     = "high-leverage_opportunity"
	TensionMaintenance     = "maintenance_need"
	TensionNone            = "no_material_tension"
)

// TensionSource is one reason for tension, with the ref of the evidence.
type TensionSource struct {
	Class   string    `json:"class"`
	Subject string    `json:"subject"`
	Ref     codec.Ref `json:"ref"`
}

// TensionReport says whether anything calls for a cycle, and why, with a
// source ref for every claim.
type TensionReport struct {
	Schema   string          `json:"schema"`
	CycleID  string          `json:"cycle_id"`
	Classes  []string        `json:"classes"`
	Sources  []TensionSource `json:"sources"`
	Material bool            `json:"material"`
}

// TensionInputs are the public signals the tension assessment reads.
type TensionInputs struct {
	CycleID     string
	Observation codec.Ref
	// OperatorSignals are accepted wake signals sent by a person, and
	// resolved approvals.
	OperatorSignals []TensionSource
	// Failing are failing checks that are not set aside (awaiting
	// approval, evidence or a changed target).
	Failing []string
	// Drifted are failing checks that an earlier cycle had fixed.
	Drifted []string
	// Due are commitments whose wake condition or deadline came.
	Due []string
	// Conflicts are open conflicts the strategy layer found.
	Conflicts []string
	// Gaps are failing checks none of whose fixes is an available
	// capability, with no proposer to ask.
	Gaps []string
	// Opportunities are available fixes that are the declared remedy of
	// several failing checks at once, each named by its checks.
	Opportunities []string
	// Maintenance is upkeep that is due (a compaction asked for).
	Maintenance []string
	// Stop is set when a stop request or the kill switch is pending: it
	// is operator tension that ends the run.
	Stop bool
}

// Assess classifies the tension of a cycle. The report is material
// when any class but no_material_tension is present; otherwise the cycle
// goes to no_cycle and back to sleep.
func Assess(in TensionInputs) TensionReport {
	r := TensionReport{Schema: TensionSchema, CycleID: in.CycleID, Classes: []string{}, Sources: []TensionSource{}}
	add := func(class string, subjects []string) {
		for _, s := range subjects {
			r.Sources = append(r.Sources, TensionSource{Class: class, Subject: s, Ref: in.Observation})
		}
	}
	r.Sources = append(r.Sources, in.OperatorSignals...)
	if in.Stop {
		r.Sources = append(r.Sources, TensionSource{Class: TensionOperatorRequest, Subject: "stop", Ref: in.Observation})
	}
	drift := map[string]bool{}
	for _, d := range in.Drifted {
		drift[d] = true
	}
	add(TensionStateDrift, in.Drifted)
	add(TensionValidation, slices.DeleteFunc(slices.Clone(in.Failing), func(s string) bool { return drift[s] }))
	add(TensionFreshness, in.Due)
	add(TensionConflict, in.Conflicts)
	add(TensionCapabilityGap, in.Gaps)
	add(TensionOpportunity, in.Opportunities)
	add(TensionMaintenance, in.Maintenance)
	for _, s := range r.Sources {
		if !slices.Contains(r.Classes, s.Class) {
			r.Classes = append(r.Classes, s.Class)
		}
	}
	slices.Sort(r.Classes)
	r.Material = len(r.Classes) > 0
	if !r.Material {
		r.Classes = []string{TensionNone}
	}
	return r
}

// FitnessContract says how the result of an action will be judged. It is
// written by the distiller with the plan and fixed (by hash) before the
// action; the evaluator judges by it and cannot change it.
type FitnessContract struct {
	Schema    string    `json:"schema"`
	CycleID   string    `json:"cycle_id"`
	ActionRef codec.Ref `json:"action_ref"`
	CheckID   string    `json:"check_id,omitempty"`
	Target    string    `json:"target"`
	// Criteria, all of which an accepted result meets:
	//   check_passes   the addressed check passes on independent readback
	//   no_regression  no check on the target that passed before fails after
	//   readback_agrees the observer reads the bytes the executor reported
	//   issue_recorded the report is in the issues file (mark_issue)
	Criteria []string `json:"criteria"`
	// PassingBefore are the checks on the target that passed before.
	PassingBefore []string `json:"passing_before"`
	ProposedBy    Role     `json:"proposed_by"`
}

// LearningDelta is what a cycle keeps: only accepted durable changes; a
// rejected or inconclusive result keeps its status and evidence but no
// change.
type LearningDelta struct {
	Schema             string      `json:"schema"`
	CycleID            string      `json:"cycle_id"`
	ResultantStatus    string      `json:"resultant_status"`
	SupportingEvidence []codec.Ref `json:"supporting_evidence"`
	Changes            []string    `json:"rule_or_state_delta"`
	Superseded         []codec.Ref `json:"superseded"`
	RemainingUnknowns  []string    `json:"remaining_unknowns"`
	NextTrigger        string      `json:"next_trigger"`
	RevisitConditions  []string    `json:"revisit_conditions"`
	MemoryClass        string      `json:"memory_class"` // source | reflection | rule | residue
}

// Candidate is a capability candidate forged after a demonstrated gap: a
// disabled specification with its tests. It cannot load or promote itself.
type Candidate struct {
	Schema   string    `json:"schema"`
	ID       string    `json:"id"`
	Gap      string    `json:"gap"`
	Evidence codec.Ref `json:"evidence"`
	Kind     string    `json:"kind"` // guard | test
	Spec     string    `json:"spec"`
	Tests    []string  `json:"tests"`
	Enabled  bool      `json:"enabled"`
	AuthorBy Role      `json:"authored_by"`
}

// CascadeRecord records which surfaces a cycle touched and who should hear of
// it. It carries context and impact, never authority or commands.
type CascadeRecord struct {
	Schema     string   `json:"schema"`
	CycleID    string   `json:"cycle_id"`
	Surfaces   []string `json:"impacted_surfaces"`
	Recipients []string `json:"recipients"`
	Impact     string   `json:"impact"`
}
