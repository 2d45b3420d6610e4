// Package commitment keeps the loop's promises to itself: bounded future
// intentions with a lifecycle (create, modify, suspend, resume, complete,
// expire, abandon), wake conditions, deadlines and exit conditions.
//
// Two rules shape the API. Evaluating conditions never mutates anything
// (ConditionMatched != AutomaticMutation): Evaluate returns transition
// candidates, and the kernel applies each through Apply, which takes the
// version the caller expects and refuses a stale one instead of silently
// overwriting (optimistic concurrency). And nothing becomes a commitment by
// accident: Create is called only for an explicit, recorded promotion.
//
// Commitments come from two places. A deferral promoted explicitly (the
// work waits, suspended, for its evidence) makes one; and a goal declares
// standing commitments (standing.go): checks the loop promises to keep
// passing, judged at a deadline, looked at on a schedule, or both, which
// the store takes up, narrows, moves and ends as the goal, the environment,
// the clock and the wake signals say.
//
// The store holds live commitments only; terminal ones leave it and live on
// in the ledger's lifecycle events.
package commitment

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Schema names.
const (
	StoreSchema      = "acr.commitment-store/v0.1"
	CommitmentSchema = "acr.commitment/v0.1"
)

// Status is a commitment's lifecycle state.
type Status string

// The statuses; completed, expired and abandoned are terminal.
const (
	Active    Status = "active"
	Suspended Status = "suspended"
	Completed Status = "completed"
	Expired   Status = "expired"
	Abandoned Status = "abandoned"
)

// Terminal reports whether the status ends the commitment.
func (s Status) Terminal() bool { return s == Completed || s == Expired || s == Abandoned }

// ConditionKind says what a wake condition waits for.
type ConditionKind string

// The wake condition kinds.
const (
	WakeEvidence ConditionKind = "evidence" // an evidence item is observed
	WakeTime     ConditionKind = "time"     // the clock reaches At
	WakeApproval ConditionKind = "approval" // an approval for ActionRef is resolved
	WakeSignal   ConditionKind = "signal"   // a wake signal with Source (and Ref) arrives
)

// Condition is a wake condition.
type Condition struct {
	Kind       ConditionKind `json:"kind"`
	EvidenceID string        `json:"evidence_id,omitempty"`
	At         string        `json:"at,omitempty"`
	ActionRef  string        `json:"action_ref,omitempty"`
	Source     string        `json:"source,omitempty"`
	Ref        string        `json:"ref,omitempty"`
}

// String renders the condition for status lines.
func (c Condition) String() string {
	switch c.Kind {
	case WakeEvidence:
		return "evidence " + c.EvidenceID + " observed"
	case WakeTime:
		return "time " + c.At
	case WakeApproval:
		return "approval of " + c.ActionRef
	default:
		return "signal " + c.Source + " " + c.Ref
	}
}

// Commitment is one promise.
type Commitment struct {
	Schema  string `json:"schema"`
	ID      string `json:"id"`
	Version int64  `json:"version"`
	Status  Status `json:"status"`
	// ItemID is the agenda item the commitment holds: the work a deferral
	// promoted, or the work a standing commitment is suspended on (empty
	// while it is active).
	ItemID string `json:"item_id"`
	// CheckID and Target are the check and path of promoted work; a
	// standing commitment covers its Scope instead.
	CheckID string `json:"check_id"`
	Target  string `json:"target"`
	Summary string `json:"summary"`
	// Origin records the explicit promotion or the goal declaration that
	// created it.
	Origin Origin     `json:"origin"`
	Wake   *Condition `json:"wake"`
	// Deadline, when set, ends the commitment if it is still live then: a
	// promoted one expires; a standing one is judged (completed when every
	// check of its scope passes, abandoned when one fails).
	Deadline string `json:"deadline,omitempty"`
	// ExitOnCheckPass completes the commitment once its check passes.
	ExitOnCheckPass bool `json:"exit_on_check_pass"`
	// Standing is the id of the goal's declaration a standing commitment
	// keeps (empty for promoted work), DeclarationRef the version of that
	// declaration it keeps now.
	Standing       string    `json:"standing,omitempty"`
	DeclarationRef codec.Ref `json:"declaration_ref,omitempty"`
	// Scope lists the checks a standing commitment promises to keep
	// passing: the declared ones the environment still has.
	Scope []string `json:"scope,omitempty"`
	// EverySeconds is a recurring standing commitment's period, NextDue
	// the next time the loop looks at its checks even if nothing else
	// wakes it.
	EverySeconds int64  `json:"every_seconds,omitempty"`
	NextDue      string `json:"next_due,omitempty"`
	// MovedBy is the ref of the external_event wake signal whose payload
	// may move the deadline.
	MovedBy    string `json:"moved_by,omitempty"`
	CreatedAt  string `json:"created_at"`
	UpdatedAt  string `json:"updated_at"`
	LastReason string `json:"last_reason"`
}

// Origin is the recorded decision a commitment came from.
type Origin struct {
	Kind          string    `json:"kind"` // PROMOTE_TO_COMMITMENT or GOAL_DECLARED
	CycleSeq      int64     `json:"cycle_seq"`
	ResolutionRef codec.Ref `json:"agenda_resolution_ref"`
	DecisionRef   codec.Ref `json:"decision_ref,omitempty"`
	// GoalRef is the goal version that declared a standing commitment.
	GoalRef codec.Ref `json:"goal_ref,omitempty"`
}

// The origins of a commitment.
const (
	OriginPromoted = "PROMOTE_TO_COMMITMENT"
	OriginDeclared = "GOAL_DECLARED"
)

// Store is the set of live commitments.
type Store struct {
	Schema      string       `json:"schema"`
	Commitments []Commitment `json:"commitments"`
	// Declared lists the refs of every goal declaration the store has
	// taken up, live or ended, so that a kept or abandoned promise is not
	// made again from the same declaration (a changed one is new).
	Declared []codec.Ref `json:"declared,omitempty"`
}

// NewStore returns an empty store.
func NewStore() Store { return Store{Schema: StoreSchema, Commitments: []Commitment{}} }

// Errors callers branch on.
var (
	// ErrConflict: the expected version is not the current one.
	ErrConflict = errors.New("commitment version conflict")
	// ErrNotFound: no live commitment with that id.
	ErrNotFound = errors.New("no such live commitment")
	// ErrIllegal: the transition is not allowed from the current status.
	ErrIllegal = errors.New("illegal commitment transition")
)

// Get returns a live commitment.
func (s Store) Get(id string) (Commitment, bool) {
	i := slices.IndexFunc(s.Commitments, func(c Commitment) bool { return c.ID == id })
	if i < 0 {
		return Commitment{}, false
	}
	return s.Commitments[i], true
}

// ForItem returns the live commitment on an item, if any.
func (s Store) ForItem(itemID string) (Commitment, bool) {
	i := slices.IndexFunc(s.Commitments, func(c Commitment) bool { return c.ItemID == itemID })
	if i < 0 {
		return Commitment{}, false
	}
	return s.Commitments[i], true
}

// Kind names a lifecycle transition.
type Kind string

// The transitions.
const (
	Create   Kind = "create"
	Modify   Kind = "modify"
	Suspend  Kind = "suspend"
	Resume   Kind = "resume"
	Complete Kind = "complete"
	Expire   Kind = "expire"
	Abandon  Kind = "abandon"
)

// Transition asks for one lifecycle change. ExpectedVersion must equal the
// commitment's current version (0 for Create).
type Transition struct {
	Kind            Kind   `json:"kind"`
	CommitmentID    string `json:"commitment_id"`
	ExpectedVersion int64  `json:"expected_version"`
	Reason          string `json:"reason"`
	// Class is the seed's class of interruption (Phase-12 §7.3) behind
	// the change, when one is: an Interruption constant.
	Class string      `json:"class,omitempty"`
	At    string      `json:"at"`
	New   *Commitment `json:"new,omitempty"`  // Create
	Wake  *Condition  `json:"wake,omitempty"` // Suspend, Modify
	// Item is the work a standing commitment is suspended on (Suspend).
	Item string `json:"item_id,omitempty"`
	// Change is what a Modify sets.
	Change
}

// Change is what a Modify sets; nil (or empty) fields stay as they are.
type Change struct {
	Deadline       *string    `json:"deadline,omitempty"`
	NextDue        *string    `json:"next_due,omitempty"`
	EverySeconds   *int64     `json:"every_seconds,omitempty"`
	Scope          []string   `json:"scope,omitempty"`
	MovedBy        *string    `json:"moved_by,omitempty"`
	Summary        *string    `json:"summary,omitempty"`
	DeclarationRef *codec.Ref `json:"declaration_ref,omitempty"`
}

// apply sets what the change names on c.
func (ch Change) apply(c *Commitment) {
	set := func(dst *string, v *string) {
		if v != nil {
			*dst = *v
		}
	}
	set(&c.Deadline, ch.Deadline)
	set(&c.NextDue, ch.NextDue)
	set(&c.MovedBy, ch.MovedBy)
	set(&c.Summary, ch.Summary)
	if ch.EverySeconds != nil {
		c.EverySeconds = *ch.EverySeconds
	}
	if ch.Scope != nil {
		c.Scope = slices.Clone(ch.Scope)
	}
	if ch.DeclarationRef != nil {
		c.DeclarationRef = *ch.DeclarationRef
	}
}

// Interruption classes: why a live commitment was interrupted, modified or
// given up, in the words of the seed's §7.3 (a commitment's priority is not
// absolute). In acr the goal, contract and environment are pinned together
// and change only by an accepted amendment, so any accepted amendment that
// touches a commitment is a contract change.
const (
	ContractChanged    = "contract_changed"
	TerminalExit       = "terminal_exit_condition"
	GovernanceBoundary = "governance_boundary"
)

// allowedFrom lists the statuses a transition may start from.
func allowedFrom(k Kind) []Status {
	switch k {
	case Suspend:
		return []Status{Active}
	case Resume:
		return []Status{Suspended}
	case Modify, Complete, Expire, Abandon:
		return []Status{Active, Suspended}
	}
	return nil
}

// Apply performs a transition and returns the new store and the commitment
// as it now is (terminal commitments are returned but leave the store).
func (s Store) Apply(t Transition) (Store, Commitment, error) {
	if t.Kind == Create {
		if t.New == nil || t.ExpectedVersion != 0 {
			return s, Commitment{}, fmt.Errorf("%w: create needs a new commitment and expected version 0", ErrIllegal)
		}
		if _, ok := s.Get(t.New.ID); ok {
			return s, Commitment{}, fmt.Errorf("%w: %s already exists", ErrConflict, t.New.ID)
		}
		c := *t.New
		c.Schema, c.Version, c.CreatedAt, c.UpdatedAt, c.LastReason = CommitmentSchema, 1, t.At, t.At, t.Reason
		if c.Status != Active && c.Status != Suspended {
			return s, Commitment{}, fmt.Errorf("%w: a new commitment is active or suspended, not %s", ErrIllegal, c.Status)
		}
		out := s.with(c)
		if c.Standing != "" && c.DeclarationRef != "" {
			out = out.declared(c.DeclarationRef)
		}
		return out, c, nil
	}
	cur, ok := s.Get(t.CommitmentID)
	if !ok {
		return s, Commitment{}, fmt.Errorf("%w: %s", ErrNotFound, t.CommitmentID)
	}
	if cur.Version != t.ExpectedVersion {
		return s, Commitment{}, fmt.Errorf("%w: %s is at version %d, caller expected %d", ErrConflict, cur.ID, cur.Version, t.ExpectedVersion)
	}
	if !slices.Contains(allowedFrom(t.Kind), cur.Status) {
		return s, Commitment{}, fmt.Errorf("%w: %s from %s", ErrIllegal, t.Kind, cur.Status)
	}
	next := cur
	next.Version++
	next.UpdatedAt, next.LastReason = t.At, t.Reason
	switch t.Kind {
	case Modify:
		if t.Wake != nil {
			next.Wake = t.Wake
		}
		t.Change.apply(&next)
	case Suspend:
		next.Status, next.Wake = Suspended, t.Wake
		if next.Standing != "" {
			next.ItemID = t.Item
		}
	case Resume:
		next.Status, next.Wake = Active, nil
		if next.Standing != "" {
			next.ItemID = ""
		}
	case Complete:
		next.Status = Completed
	case Expire:
		next.Status = Expired
	case Abandon:
		next.Status = Abandoned
	}
	if next.Status.Terminal() {
		return s.without(cur.ID), next, nil
	}
	out := s.with(next)
	if next.Standing != "" && next.DeclarationRef != cur.DeclarationRef {
		out = out.declared(next.DeclarationRef)
	}
	return out, next, nil
}

func (s Store) with(c Commitment) Store {
	out := Store{Schema: StoreSchema, Commitments: slices.DeleteFunc(slices.Clone(s.Commitments), func(x Commitment) bool { return x.ID == c.ID }),
		Declared: s.Declared}
	out.Commitments = append(out.Commitments, c)
	slices.SortFunc(out.Commitments, func(a, b Commitment) int { return strings.Compare(a.ID, b.ID) })
	return out
}

func (s Store) without(id string) Store {
	return Store{Schema: StoreSchema, Commitments: slices.DeleteFunc(slices.Clone(s.Commitments), func(x Commitment) bool { return x.ID == id }),
		Declared: s.Declared}
}

// declared records that a declaration was taken up.
func (s Store) declared(ref codec.Ref) Store {
	if slices.Contains(s.Declared, ref) {
		return s
	}
	d := append(slices.Clone(s.Declared), ref)
	slices.Sort(d)
	s.Declared = d
	return s
}

// Context is what conditions are evaluated against.
type Context struct {
	Now         time.Time
	Observation world.Observation
	// Signals are the wake signals consumed this cycle.
	Signals []state.WakeSignal
	// Approvals are the approval resolutions consumed this cycle.
	Approvals []state.Approval
	// Declarations are the standing commitments the goal declares now,
	// GoalRef the goal's version, Checks the ids of the environment's
	// checks and CycleSeq the cycle: what standing commitments are
	// reconciled with (standing.go).
	Declarations []Declaration
	GoalRef      codec.Ref
	Checks       []string
	CycleSeq     int64
}

// Candidate is a transition the conditions call for. It is a proposal:
// only Apply changes the store.
type Candidate struct {
	CommitmentID    string `json:"commitment_id"`
	Kind            Kind   `json:"kind"`
	ExpectedVersion int64  `json:"expected_version"`
	Reason          string `json:"reason"`
	// Class is the §7.3 interruption class, when one applies.
	Class string `json:"class,omitempty"`
	// New is the commitment a Create makes.
	New *Commitment `json:"new,omitempty"`
	// Change is what a Modify sets.
	Change *Change `json:"change,omitempty"`
}

// Transition is the transition that carries the candidate out at at.
func (c Candidate) Transition(at string) Transition {
	t := Transition{Kind: c.Kind, CommitmentID: c.CommitmentID, ExpectedVersion: c.ExpectedVersion, Reason: c.Reason, Class: c.Class, At: at, New: c.New}
	if c.Change != nil {
		t.Change = *c.Change
	}
	return t
}

// maxSteps bounds the transitions one commitment takes in one evaluation.
// Each rule moves a commitment on (a terminal status, a deadline or due
// time set after now, an active status), so a handful always suffices.
const maxSteps = 8

// Evaluate checks the live commitments against the goal's declarations
// and the conditions of the cycle, and returns the transitions they call
// for, in the order they are to be applied: standing commitments are first
// reconciled with the goal and the environment (taken up, narrowed,
// redeclared, abandoned), then every commitment's exit, deadline and wake
// conditions are evaluated in that order (for a standing commitment, a
// signal moving its deadline comes first and its period last). One
// commitment may take several steps (resumed, then due): each candidate
// expects the version the one before leaves. Evaluate changes nothing: it
// works on a copy.
func Evaluate(s Store, ctx Context) []Candidate {
	var out []Candidate
	at := state.FormatTime(ctx.Now)
	work := s
	take := func(c Candidate) bool {
		next, _, err := work.Apply(c.Transition(at))
		if err != nil {
			return false
		}
		work = next
		out = append(out, c)
		return true
	}
	for _, c := range reconcile(work, ctx) {
		take(c)
	}
	ids := make([]string, 0, len(work.Commitments))
	for _, c := range work.Commitments {
		ids = append(ids, c.ID)
	}
	for _, id := range ids {
		for range maxSteps {
			c, ok := work.Get(id)
			if !ok {
				break
			}
			cand, ok := condition(c, ctx)
			if !ok || !take(cand) {
				break
			}
		}
	}
	return out
}

// condition is the transition one commitment's conditions call for now.
func condition(c Commitment, ctx Context) (Candidate, bool) {
	if c.Standing != "" {
		return standingCondition(c, ctx)
	}
	cand := Candidate{CommitmentID: c.ID, ExpectedVersion: c.Version}
	switch {
	case c.ExitOnCheckPass && checkPasses(ctx.Observation, c.CheckID):
		cand.Kind, cand.Reason = Complete, "exit_condition_met"
	case c.Deadline != "" && deadlinePassed(c.Deadline, ctx.Now):
		cand.Kind, cand.Reason = Expire, "deadline_passed"
	case c.Status == Suspended && c.Wake != nil && Matched(*c.Wake, ctx):
		cand.Kind, cand.Reason = Resume, "wake_condition_matched"
	default:
		return cand, false
	}
	return cand, true
}

func checkPasses(obs world.Observation, id string) bool {
	r, ok := obs.Check(id)
	return ok && r.Status == world.CheckPass
}

func deadlinePassed(deadline string, now time.Time) bool {
	t, err := state.ParseTime(deadline)
	return err == nil && !now.Before(t)
}

// Matched reports whether a wake condition holds in ctx.
func Matched(w Condition, ctx Context) bool {
	switch w.Kind {
	case WakeEvidence:
		return ctx.Observation.EvidencePresent(w.EvidenceID)
	case WakeTime:
		return deadlinePassed(w.At, ctx.Now)
	case WakeApproval:
		return slices.ContainsFunc(ctx.Approvals, func(a state.Approval) bool { return string(a.ActionRef) == w.ActionRef })
	case WakeSignal:
		return slices.ContainsFunc(ctx.Signals, func(s state.WakeSignal) bool {
			return s.Source == w.Source && (w.Ref == "" || s.Ref == w.Ref)
		})
	}
	return false
}

// NewID derives a commitment id from the item and the cycle that promoted
// it, so replay derives the same id.
func NewID(itemID string, cycleSeq int64) string {
	return "cmt-" + codec.Digest(codec.MustMarshal(map[string]any{"item_id": itemID, "cycle_seq": cycleSeq}))[:16]
}
