// Package controller holds the governance rules of the autopoietic cycle
// controller: who may decide what inside a cycle. The Phase-12 pipeline in
// package kernel says how a cycle runs; this package says which controller
// state each step of it is, which role acts there, which transitions are
// legal, what a cycle may spend, and which acts of approval are refused
// because the approver would be approving itself. It also computes the
// three controller inputs the seed names that no document hands a cycle
// (context.go): which sources speak with authority, how far the context
// can be trusted (on the readiness coordinate's scale), and what the run
// can actually do.
//
// Everything here is pure: a Machine is stepped by the kernel with the
// clock reading, the refs and the role of each step, and returns the
// Transition record the kernel writes to the ledger. An illegal transition
// is an error, never a panic: its inputs come from disk.
package controller

import (
	"errors"
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
)

// Phase is a controller state. The zero value is invalid.
type Phase uint8

// The controller states, in the order of a full cycle.
const (
	StateInvalid Phase = iota
	Sleep
	Wake
	Observe
	Align
	AssessTension
	NoCycle
	Distill
	Plan
	Preflight
	Propose
	Checkpoint
	Act
	ObserveEffect
	Evaluate
	Rollback
	Metabolize
	ForgeCandidate
	Cascade
	Blocked
	Failed
)

var stateNames = [...]string{
	Sleep: "sleep", Wake: "wake", Observe: "observe", Align: "align", AssessTension: "assess_tension", NoCycle: "no_cycle",
	Distill: "distill", Plan: "plan", Preflight: "preflight", Propose: "propose", Checkpoint: "checkpoint", Act: "act",
	ObserveEffect: "observe_effect", Evaluate: "evaluate", Rollback: "rollback", Metabolize: "metabolize",
	ForgeCandidate: "forge_candidate_optional", Cascade: "cascade", Blocked: "blocked", Failed: "failed",
}

// States lists every valid state in cycle order.
func States() []Phase {
	out := make([]Phase, 0, len(stateNames)-1)
	for s := Sleep; s <= Failed; s++ {
		out = append(out, s)
	}
	return out
}

func (s Phase) String() string {
	if s > StateInvalid && int(s) < len(stateNames) {
		return stateNames[s]
	}
	return fmt.Sprintf("State(%d)", uint8(s))
}

// MarshalText writes the state's name; the invalid state cannot be written.
func (s Phase) MarshalText() ([]byte, error) {
	if s > StateInvalid && int(s) < len(stateNames) {
		return []byte(stateNames[s]), nil
	}
	return nil, fmt.Errorf("invalid controller state %d", uint8(s))
}

// UnmarshalText accepts exactly the names of the states.
func (s *Phase) UnmarshalText(b []byte) error {
	for _, c := range States() {
		if stateNames[c] == string(b) {
			*s = c
			return nil
		}
	}
	return fmt.Errorf("unknown controller state %q", b)
}

// next is the transition relation. Sleep is where every cycle starts and
// ends; blocked and failed are reachable from every working state (a stop
// rule or a fault can end a cycle anywhere) and lead back to sleep.
func next(s Phase) []Phase {
	switch s {
	case Sleep:
		return []Phase{Wake}
	case Wake:
		return []Phase{Observe}
	case Observe:
		return []Phase{Align}
	case Align:
		return []Phase{AssessTension}
	case AssessTension:
		return []Phase{NoCycle, Distill}
	case NoCycle:
		return []Phase{Sleep}
	case Distill:
		// The distiller may produce no Resultant: the controller does not
		// force a non-empty action.
		return []Phase{Plan, NoCycle}
	case Plan:
		return []Phase{Preflight}
	case Preflight:
		// Preflight may find nothing left to do (the check already passes).
		return []Phase{Propose, Checkpoint, NoCycle}
	case Propose:
		return []Phase{Sleep}
	case Checkpoint:
		return []Phase{Act}
	case Act:
		return []Phase{ObserveEffect}
	case ObserveEffect:
		return []Phase{Evaluate}
	case Evaluate:
		return []Phase{Rollback, Metabolize}
	case Rollback:
		return []Phase{Metabolize}
	case Metabolize:
		return []Phase{ForgeCandidate, Cascade}
	case ForgeCandidate:
		return []Phase{Cascade}
	case Cascade:
		return []Phase{Sleep}
	case Blocked, Failed:
		return []Phase{Sleep}
	}
	return nil
}

// Allowed reports whether the controller may go from one state to the
// other.
func Allowed(from, to Phase) bool {
	if slices.Contains(next(from), to) {
		return true
	}
	working := from != Sleep && from != Blocked && from != Failed && from > StateInvalid && int(from) < len(stateNames)
	return working && (to == Blocked || to == Failed)
}

// Role is an actor role. One process plays several roles in turn, but
// every artifact names the role that produced it, and the rules of Guard
// keep a role from approving its own work. The zero value is invalid.
type Role uint8

// The roles. Operator is the person outside the loop; the others are the
// controller's logical roles.
const (
	RoleInvalid Role = iota
	IntentCustodian
	Observer
	Distiller
	Executor
	Evaluator
	Promoter
	Operator
)

var roleNames = [...]string{IntentCustodian: "intent_custodian", Observer: "observer", Distiller: "distiller",
	Executor: "executor", Evaluator: "evaluator", Promoter: "promoter", Operator: "operator"}

// Roles lists every valid role.
func Roles() []Role {
	return []Role{IntentCustodian, Observer, Distiller, Executor, Evaluator, Promoter, Operator}
}

func (r Role) String() string {
	if r > RoleInvalid && int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("Role(%d)", uint8(r))
}

// MarshalText writes the role's name.
func (r Role) MarshalText() ([]byte, error) {
	if r > RoleInvalid && int(r) < len(roleNames) {
		return []byte(roleNames[r]), nil
	}
	return nil, fmt.Errorf("invalid actor role %d", uint8(r))
}

// UnmarshalText accepts exactly the names of the roles.
func (r *Role) UnmarshalText(b []byte) error {
	for _, c := range Roles() {
		if roleNames[c] == string(b) {
			*r = c
			return nil
		}
	}
	return fmt.Errorf("unknown actor role %q", b)
}

// Coordinates are a cycle's four operating coordinates. They are declared
// from the Contract at the start of every cycle; no coordinate implies
// another, and nothing in a cycle can raise any of them.
//
// Three of them are the Contract's own coordinates (one definition, in
// governance); the fourth, authority, is the Contract's authority mode.
type Coordinates struct {
	governance.Coordinates
	Authority governance.AuthorityMode `json:"authority"`
}

// Declare reads the coordinates the Contract grants.
func Declare(c *governance.Contract) Coordinates {
	return Coordinates{Coordinates: c.Coordinates, Authority: c.Authority.Mode}
}

// ErrRaise is returned when something asks for more authority, autonomy,
// readiness or depth than the Contract grants.
var ErrRaise = errors.New("a cycle cannot raise its operating coordinates")

// Within checks requested coordinates against granted ones, coordinate by
// coordinate: a request may lower any of them, never raise one. An empty
// requested coordinate means "as granted".
func Within(granted, requested Coordinates) error {
	level := func(name, g, r string, prefix byte) error {
		if r == "" || r == g {
			return nil
		}
		gl, rl := governance.Level(g, prefix), governance.Level(r, prefix)
		if rl < 0 || rl > gl {
			return fmt.Errorf("%w: %s %s requested, %s granted", ErrRaise, name, r, g)
		}
		return nil
	}
	if err := level("readiness", granted.Readiness, requested.Readiness, 'L'); err != nil {
		return err
	}
	if err := level("autonomy", granted.Autonomy, requested.Autonomy, 'A'); err != nil {
		return err
	}
	if err := level("cognitive_depth", granted.CognitiveDepth, requested.CognitiveDepth, 'D'); err != nil {
		return err
	}
	if requested.Authority != "" && requested.Authority != granted.Authority &&
		(requested.Authority.Rank() < 0 || requested.Authority.Rank() > granted.Authority.Rank()) {
		return fmt.Errorf("%w: authority %s requested, %s granted", ErrRaise, requested.Authority, granted.Authority)
	}
	return nil
}

// Autonomy returns the numeric autonomy level (A0..A4), or -1.
func (c Coordinates) AutonomyLevel() int { return governance.Level(c.Autonomy, 'A') }

// Depth returns the numeric cognitive depth (D0..D3), or -1.
func (c Coordinates) Depth() int { return governance.Level(c.CognitiveDepth, 'D') }

// TransitionSchema names a transition record.
const TransitionSchema = "acr.controller-transition/v0.1"

// Transition is the record of one controller transition, written to the
// ledger as the transition happens.
type Transition struct {
	Schema         string                   `json:"schema"`
	CycleID        string                   `json:"cycle_id"`
	ParentCycleID  string                   `json:"parent_cycle_id"`
	Seq            int                      `json:"seq"`
	PreviousState  Phase                    `json:"previous_state"`
	NextState      Phase                    `json:"next_state"`
	ActorRole      Role                     `json:"actor_role"`
	InputHashes    []codec.Ref              `json:"input_hashes"`
	OutputHashes   []codec.Ref              `json:"output_hashes"`
	Timestamp      string                   `json:"timestamp"`
	Reason         string                   `json:"reason"`
	AuthorityUsed  governance.AuthorityMode `json:"authority_used"`
	BudgetConsumed budget.Usage             `json:"budget_consumed"`
}

// CycleID names a cycle for transition records.
func CycleID(runID string, seq int64) string {
	if seq <= 0 {
		return ""
	}
	return fmt.Sprintf("%s/cycle/%d", runID, seq)
}

// IllegalTransitionError is the error for a transition the state machine
// does not allow. The kernel ends the run in FAULTED on it.
type IllegalTransitionError struct {
	From, To Phase
}

func (e *IllegalTransitionError) Error() string {
	return fmt.Sprintf("illegal controller transition %s -> %s", e.From, e.To)
}

// Step is one move of the machine: where to, who acts, why, on what.
type Step struct {
	To        Phase
	Role      Role
	Reason    string
	Inputs    []codec.Ref
	Outputs   []codec.Ref
	Authority governance.AuthorityMode // authority exercised by the step
	Used      budget.Usage             // budget consumed by the step
}

// Machine is the controller state machine of one cycle. It starts in
// sleep and must end in sleep.
type Machine struct {
	cycleID, parentID string
	at                string
	cur               Phase
	seq               int
	used              budget.Usage
	budget            budget.Cycle
}

// Start begins a cycle's machine in sleep.
func Start(cycleID, parentID, at string, budget budget.Cycle) *Machine {
	return &Machine{cycleID: cycleID, parentID: parentID, at: at, cur: Sleep, budget: budget.Defaults()}
}

// Tick sets the clock reading the machine's next transitions carry: the
// time of the input the cycle goes on from (a proposer's reply, an
// effect's outcome). Time is an input here as everywhere: the machine
// never reads a clock, and a reading earlier than its own is ignored.
func (m *Machine) Tick(at string) {
	if at > m.at {
		m.at = at
	}
}

// State is the current state.
func (m *Machine) State() Phase { return m.cur }

// Used is the budget consumed so far in this cycle.
func (m *Machine) Used() budget.Usage { return m.used }

// Budget is the cycle budget in force.
func (m *Machine) Budget() budget.Cycle { return m.budget }

// Move takes one transition and returns its record, or an
// *IllegalTransitionError without moving.
func (m *Machine) Move(s Step) (Transition, error) {
	if !Allowed(m.cur, s.To) {
		return Transition{}, &IllegalTransitionError{From: m.cur, To: s.To}
	}
	if s.Role <= RoleInvalid || int(s.Role) >= len(roleNames) {
		return Transition{}, fmt.Errorf("controller transition %s -> %s: invalid actor role", m.cur, s.To)
	}
	auth := s.Authority
	if auth == "" {
		auth = governance.AuthNone
	}
	m.seq++
	m.used = m.used.Add(s.Used)
	t := Transition{
		Schema: TransitionSchema, CycleID: m.cycleID, ParentCycleID: m.parentID, Seq: m.seq,
		PreviousState: m.cur, NextState: s.To, ActorRole: s.Role,
		InputHashes: nonNil(s.Inputs), OutputHashes: nonNil(s.Outputs), Timestamp: m.at, Reason: s.Reason,
		AuthorityUsed: auth, BudgetConsumed: s.Used,
	}
	m.cur = s.To
	return t, nil
}

func nonNil(rs []codec.Ref) []codec.Ref {
	out := make([]codec.Ref, 0, len(rs))
	for _, r := range rs {
		if r != "" {
			out = append(out, r)
		}
	}
	return out
}
