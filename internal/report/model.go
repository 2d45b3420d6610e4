package report

import (
	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Entry is one item of a run's history in ledger order: a completed cycle,
// or an incident recorded outside any cycle's own work (a recovery, a
// provider failure, a fault declared between cycles). Exactly one field
// is set.
type Entry struct {
	Cycle    *Cycle
	Incident *Incident
}

// Cycle is what the report shows of one completed cycle, digested from its
// ledger events.
type Cycle struct {
	Seq         int64
	At          string
	Disposition state.Disposition
	Reasons     []string
	// WokeBy says why a resting run became eligible for this cycle.
	WokeBy []string
	// Agenda is the selected item ("" when the agenda was empty).
	Agenda        string
	AgendaSummary string
	AgendaReasons []string
	// Action is "operation target" of the action request, if any.
	Action string
	// Decision is the governance verdict name, or "NONE".
	Decision        string
	DecisionReasons []string
	// Diff is the change the action's intent recorded before the effect,
	// as a unified diff ("" for a command or no effect).
	Diff string
	// Outcome is the world outcome status of an executed action.
	Outcome    string
	Evaluation string
	// Inbox lists consumed inbox items, one line each.
	Inbox       []string
	Commitments []CommitmentChange
	Approvals   []ApprovalChange
	// Review holds the reasons of a strategic review; nil when none ran.
	Review     []string
	Compaction *Compaction
	// Budget is the budget use recorded by the cycle's checkpoint record.
	Budget *state.BudgetUsage
	// Notes are other events worth a line: soft budget limits, the loop
	// guard, rejected wake signals, stop requests.
	Notes []string
	// Observed says whether the cycle looked at the world (a cycle that
	// stops, or is blocked before it observes, does not); Failing and
	// Passing are then the ids of the checks that failed and passed, sorted.
	Observed bool
	Failing  []string
	Passing  []string
}

// CommitmentChange is one lifecycle event of a commitment.
type CommitmentChange struct {
	ID      string
	Event   string // created, modified, suspended, resumed, completed, expired, abandoned
	Status  string // the status after the event
	Version int64
	Summary string
	Reason  string
}

// ApprovalChange is an approval requested, resolved or ignored in a cycle.
type ApprovalChange struct {
	Kind      string // requested, resolved, ignored
	ActionRef codec.Ref
	Action    string
	Reason    string
	Verdict   string // approve or deny, for resolved
	By        string
}

// Compaction is a compaction of working memory.
type Compaction struct {
	Trigger  string
	Block    string
	From, To int64
}

// Incident is an event recorded outside a cycle's own work.
type Incident struct {
	// Cycle is the cycle the run was at (the last completed one, or the
	// one being recovered).
	Cycle   int64
	At      string
	Type    event.Kind
	Reasons []string
	Detail  string
}

// Head is the run's present, from its checkpoint: who it is, where it
// stands, and the contract's budget limits.
type Head struct {
	RunID           string
	Status          string
	Disposition     state.Disposition
	Reasons         []string
	CheckpointCycle int64
	UpdatedAt       string
	GoalID          string
	Mission         string
	ContractID      string
	// World says which world the run looks after: a directory in place,
	// or the sandbox copy.
	World   string
	Budget  state.BudgetUsage
	Limits  budget.Run
	Pending []PendingApproval
}

// PendingApproval is an approval the run is still waiting for.
type PendingApproval struct {
	Ref         codec.Ref
	Action      string
	Reason      string
	RequestedAt string
	Cycle       int64
	// Evidence, for an uncertain effect, says what each path it may touch
	// held in the intent and holds now ("counter.txt changed (...)"); a
	// person answers it with acr resolve.
	Evidence []string
	// Change, for a command fix of a git world, is what it changes when
	// tried now in a throwaway work tree at the branch head (its diff, as
	// acr status shows it): the tree an approval binds to. The shell
	// fills it (Head.Preview); the report reads only the ledger.
	Change string
}

// Preview fills the Change of each pending approval for which change
// gives one (ok), before the page is rendered: the shell tries the
// change, the report only shows it.
func (h *Head) Preview(change func(ref codec.Ref) (text string, ok bool)) {
	for i := range h.Pending {
		if text, ok := change(h.Pending[i].Ref); ok {
			h.Pending[i].Change = text
		}
	}
}

// HeadOf takes the report's header from a checkpoint.
func HeadOf(st kernel.EngineState) Head {
	r := st.Run
	h := Head{
		RunID: r.RunID, Status: string(r.Status), Disposition: r.LoopDisposition, Reasons: r.ReasonCodes,
		CheckpointCycle: r.CycleSeq, UpdatedAt: r.UpdatedAt, GoalID: st.Goal.ID, Mission: st.Goal.Mission,
		ContractID: st.Contract.ID, Budget: r.Budget, Limits: st.Contract.Budgets, World: "a sandbox copy of the environment's files",
	}
	if st.Spec.Root != "" {
		h.World = "the directory " + st.Spec.Root + " (in place)"
	}
	if st.Spec.Git != nil {
		h.World = st.Spec.Git.Describe()
	}
	for _, p := range r.PendingApprovals {
		if p.Resolution == nil {
			action := p.Operation + " " + p.Target
			var a world.Action
			if codec.DecodeValue(p.Action, &a) == nil {
				action = a.Describe()
			}
			pa := PendingApproval{Ref: p.Ref, Action: action, Reason: p.Reason, RequestedAt: p.RequestedAt, Cycle: p.CycleSeq}
			for _, e := range p.Evidence {
				pa.Evidence = append(pa.Evidence, e.String())
			}
			h.Pending = append(h.Pending, pa)
		}
	}
	return h
}

// Options bound the view. Zero fields take the defaults.
type Options struct {
	// MaxBars is the most timeline bars; more cycles than this share bars.
	MaxBars int
	// Recent is how many of the last cycles keep full detail.
	Recent int
	// NotablePerKind is how many notable cycles of each kind keep full
	// detail (the most recent ones).
	NotablePerKind int
	// MaxLanes is the most commitment lanes shown.
	MaxLanes int
	// MaxLaneEvents is the most lifecycle events kept per lane (the first
	// one and the most recent ones).
	MaxLaneEvents int
	// MaxApprovals, MaxCompactions, MaxIncidents and MaxChecks bound
	// those tables.
	MaxApprovals   int
	MaxCompactions int
	MaxIncidents   int
	MaxChecks      int
	// TimeAxis lays the timeline, its marker rows and the plots under it
	// on a wall-clock axis from the first cycle to the last instead of one
	// bar per cycle (or bucket of cycles): each bar starts when its first
	// cycle ran and lasts until the next bar's, so long waits are wide and
	// bursts of cycles thin.
	TimeAxis bool
	// Generator names the program that wrote the page, for its footer.
	Generator string
}

// Defaults of Options; MaxPageBytes in doc.go and the size test depend on
// them.
const (
	DefaultMaxBars        = 2000
	DefaultRecent         = 200
	DefaultNotablePerKind = 40
	DefaultMaxLanes       = 50
	DefaultMaxLaneEvents  = 16
	DefaultMaxApprovals   = 100
	DefaultMaxCompactions = 100
	DefaultMaxIncidents   = 100
	DefaultMaxChecks      = 200
)

// withDefaults fills zero fields. Limits below a working minimum are
// raised, so the aggregation never divides by zero or keeps nothing.
func (o Options) withDefaults() Options {
	def := func(v *int, d, lo int) {
		if *v == 0 {
			*v = d
		}
		*v = max(*v, lo)
	}
	def(&o.MaxBars, DefaultMaxBars, 2)
	def(&o.Recent, DefaultRecent, 1)
	def(&o.NotablePerKind, DefaultNotablePerKind, 1)
	def(&o.MaxLanes, DefaultMaxLanes, 1)
	def(&o.MaxLaneEvents, DefaultMaxLaneEvents, 2)
	def(&o.MaxApprovals, DefaultMaxApprovals, 1)
	def(&o.MaxCompactions, DefaultMaxCompactions, 1)
	def(&o.MaxIncidents, DefaultMaxIncidents, 1)
	def(&o.MaxChecks, DefaultMaxChecks, 1)
	return o
}
