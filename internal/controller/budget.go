package controller

import "github.com/acr-project/acr/internal/governance"

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
func Over(u Usage, b governance.CycleBudget) string {
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

// Exceeds names the limit that spending more on top of what the machine
// has already used would break ("" when it fits). The kernel asks before
// each costly step, so a cycle stops before it overspends, not after.
func (m *Machine) Exceeds(more Usage) string { return Over(m.used.Add(more), m.budget) }
