// Package budget is what a run and each of its cycles may spend, and the
// arithmetic that says whether the next step fits: the run's budgets from
// the contract (cycles, cognitive operations, actions, compactions, wall
// clock; a soft and a hard level each), the cycle controller's per-cycle
// budget, and what a cycle has used. Checks happen before spending, with
// the cost of the next step, so a limit is never overshot. The package is
// pure; the kernel decides what a reached limit does to the run.
package budget

import (
	"time"

	"github.com/acr-project/acr/internal/state"
)

// Run bounds the whole run (the contract's budgets). A zero limit means
// unbounded.
type Run struct {
	Cycles              Limit `json:"cycles"`
	CognitiveOperations Limit `json:"cognitive_operations"`
	Actions             Limit `json:"actions"`
	Compactions         Limit `json:"compactions"`
	WallClockSeconds    Limit `json:"wall_clock_seconds"`
}

// Limit is a soft level (warn once) and a hard level (stop the run).
type Limit struct {
	Soft int64 `json:"soft,omitempty"`
	Hard int64 `json:"hard,omitempty"`
}

// Overrun reports whether spending cost more, on top of used, would take
// the budget past its hard level: the next step does not fit. The run
// stops without spending it, so a hard level is never exceeded.
func (l Limit) Overrun(used, cost int64) bool { return l.Hard > 0 && used+cost > l.Hard }

// UsedUp reports whether the use has reached the hard level: nothing more
// fits (a run past its deadline, or resumed after its last cycle).
func (l Limit) UsedUp(used int64) bool { return l.Hard > 0 && used >= l.Hard }

// SoftReached reports whether the use since the allowance began (base,
// the use when the budget was last replenished) has reached the soft
// level: the budget is temporarily exhausted until the next
// replenishment.
func (l Limit) SoftReached(used, base int64) bool { return l.Soft > 0 && used-base >= l.Soft }

// Cycle is what one cycle may spend (the cycle controller's budget). A zero field takes its default;
// a cycle that would go over a limit stops in the controller's blocked
// state with the limit's name as the reason.
type Cycle struct {
	// MaxWallTimeSeconds bounds the time from the cycle's start to its
	// effect: past it, the effect is not carried out (the watchdog).
	MaxWallTimeSeconds int64 `json:"max_wall_time_seconds,omitempty"`
	// MaxEvents bounds the ledger events one cycle writes.
	MaxEvents int64 `json:"max_events,omitempty"`
	// MaxRecursiveDepth bounds the cognitive depth a cycle reaches (D0..D3
	// as 0..3), whatever the contract's coordinate allows.
	MaxRecursiveDepth int64 `json:"max_recursive_depth,omitempty"`
	// MaxBranches bounds the agenda candidates one cycle weighs.
	MaxBranches int64 `json:"max_branches,omitempty"`
	// MaxToolActions bounds sandbox actions per cycle.
	MaxToolActions int64 `json:"max_tool_actions,omitempty"`
	// MaxFilesTouched bounds the files one cycle's action may change.
	MaxFilesTouched int64 `json:"max_files_touched,omitempty"`
	// MaxCost bounds cognitive operations per cycle.
	MaxCost int64 `json:"max_cost,omitempty"`
	// MaxCascadeFanout bounds the recipients of a cycle's cascade.
	MaxCascadeFanout int64 `json:"max_cascade_fanout,omitempty"`
}

// Defaults returns the budget with zero fields replaced by defaults.
func (b Cycle) Defaults() Cycle {
	def := func(v *int64, d int64) {
		if *v == 0 {
			*v = d
		}
	}
	def(&b.MaxWallTimeSeconds, 300)
	def(&b.MaxEvents, 256)
	def(&b.MaxRecursiveDepth, 3)
	def(&b.MaxBranches, 64)
	def(&b.MaxToolActions, 1)
	def(&b.MaxFilesTouched, 8)
	def(&b.MaxCost, 64)
	def(&b.MaxCascadeFanout, 8)
	return b
}

// Usage is what a cycle (or one of its steps) spent, in the units of the
// cycle budget.
type Usage struct {
	Events         int64 `json:"events,omitempty"`
	RecursiveDepth int64 `json:"recursive_depth,omitempty"`
	Branches       int64 `json:"branches,omitempty"`
	ToolActions    int64 `json:"tool_actions,omitempty"`
	FilesTouched   int64 `json:"files_touched,omitempty"`
	Cost           int64 `json:"cost,omitempty"`
	CascadeFanout  int64 `json:"cascade_fanout,omitempty"`
}

// Add returns the sum. Depth is a high-water mark, not a sum.
func (u Usage) Add(v Usage) Usage {
	return Usage{
		Events: u.Events + v.Events, RecursiveDepth: max(u.RecursiveDepth, v.RecursiveDepth), Branches: u.Branches + v.Branches,
		ToolActions: u.ToolActions + v.ToolActions, FilesTouched: u.FilesTouched + v.FilesTouched, Cost: u.Cost + v.Cost,
		CascadeFanout: u.CascadeFanout + v.CascadeFanout,
	}
}

// Over names the first limit of b that u goes beyond ("" when none).
// The names are the contract's field names, so a blocked cycle's reason
// points at the setting to change.
func Over(u Usage, b Cycle) string {
	b = b.Defaults()
	for _, c := range []struct {
		name       string
		used, most int64
	}{
		{"max_events", u.Events, b.MaxEvents}, {"max_recursive_depth", u.RecursiveDepth, b.MaxRecursiveDepth},
		{"max_branches", u.Branches, b.MaxBranches}, {"max_tool_actions", u.ToolActions, b.MaxToolActions},
		{"max_files_touched", u.FilesTouched, b.MaxFilesTouched}, {"max_cost", u.Cost, b.MaxCost},
		{"max_cascade_fanout", u.CascadeFanout, b.MaxCascadeFanout},
	} {
		if c.used > c.most {
			return c.name
		}
	}
	return ""
}

// Of returns a run budget's limit and the run's use of it at now (the wall
// clock is the time since the run started).
func Of(bu Run, rs *state.RunState, name string, now time.Time) (Limit, int64) {
	u := rs.Budget
	switch name {
	case "cycles":
		return bu.Cycles, u.Cycles
	case "cognitive_operations":
		return bu.CognitiveOperations, u.CognitiveOperations
	case "actions":
		return bu.Actions, u.Actions
	case "compactions":
		return bu.Compactions, u.Compactions
	default:
		return bu.WallClockSeconds, WallClock(rs, now)
	}
}

// WallClock is the number of seconds from the run's start to now.
func WallClock(rs *state.RunState, now time.Time) int64 {
	started, err := state.ParseTime(rs.StartedAt)
	if err != nil {
		return rs.Budget.WallClockSeconds
	}
	return int64(now.Sub(started) / time.Second)
}

// Names lists the run budgets, in the contract's order.
func Names() []string {
	return []string{"cycles", "cognitive_operations", "actions", "compactions", "wall_clock_seconds"}
}
