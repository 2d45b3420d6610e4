package budget

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/state"
)

// TestDefaults: a zero field takes its default, a set one is kept.
func TestDefaults(t *testing.T) {
	want := Cycle{MaxWallTimeSeconds: 300, MaxEvents: 256, MaxRecursiveDepth: 3, MaxBranches: 64, MaxToolActions: 1,
		MaxFilesTouched: 8, MaxCost: 64, MaxCascadeFanout: 8}
	assert.Equal(t, want, Cycle{}.Defaults())
	set := Cycle{MaxWallTimeSeconds: 5, MaxEvents: 6, MaxRecursiveDepth: 1, MaxBranches: 2, MaxToolActions: 3, MaxFilesTouched: 4,
		MaxCost: 7, MaxCascadeFanout: 9}
	assert.Equal(t, set, set.Defaults())
	assert.Equal(t, Cycle{MaxWallTimeSeconds: 300, MaxEvents: 10, MaxRecursiveDepth: 3, MaxBranches: 64, MaxToolActions: 1,
		MaxFilesTouched: 8, MaxCost: 64, MaxCascadeFanout: 8}, Cycle{MaxEvents: 10}.Defaults(), "one field set, the rest defaulted")
}

// TestUsageAdd: spending adds up, except depth, which is the deepest the
// cycle went.
func TestUsageAdd(t *testing.T) {
	cases := []struct {
		name string
		a, b Usage
		want Usage
	}{
		{"zero", Usage{}, Usage{}, Usage{}},
		{"sums", Usage{Events: 3, Branches: 2, ToolActions: 1, FilesTouched: 4, Cost: 5, CascadeFanout: 6},
			Usage{Events: 10, Branches: 20, ToolActions: 30, FilesTouched: 40, Cost: 50, CascadeFanout: 60},
			Usage{Events: 13, Branches: 22, ToolActions: 31, FilesTouched: 44, Cost: 55, CascadeFanout: 66}},
		{"depth is a high-water mark", Usage{RecursiveDepth: 2}, Usage{RecursiveDepth: 1}, Usage{RecursiveDepth: 2}},
		{"depth either way round", Usage{RecursiveDepth: 1}, Usage{RecursiveDepth: 3}, Usage{RecursiveDepth: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tc.a.Add(tc.b))
			assert.Equal(t, tc.want, tc.b.Add(tc.a), "the order does not matter")
		})
	}
}

// TestOver: does the next step fit in the cycle's budget? Reaching a limit
// fits, going past it does not; the first limit in the contract's order is
// named; a zero budget means the defaults.
func TestOver(t *testing.T) {
	b := Cycle{MaxEvents: 10, MaxRecursiveDepth: 2, MaxBranches: 3, MaxToolActions: 1, MaxFilesTouched: 2, MaxCost: 5, MaxCascadeFanout: 4}
	cases := []struct {
		name string
		u    Usage
		b    Cycle
		want string
	}{
		{"nothing spent", Usage{}, b, ""},
		{"every limit reached exactly", Usage{Events: 10, RecursiveDepth: 2, Branches: 3, ToolActions: 1, FilesTouched: 2, Cost: 5, CascadeFanout: 4}, b, ""},
		{"events", Usage{Events: 11}, b, "max_events"},
		{"depth", Usage{RecursiveDepth: 3}, b, "max_recursive_depth"},
		{"branches", Usage{Branches: 4}, b, "max_branches"},
		{"tool actions", Usage{ToolActions: 2}, b, "max_tool_actions"},
		{"files", Usage{FilesTouched: 3}, b, "max_files_touched"},
		{"cost", Usage{Cost: 6}, b, "max_cost"},
		{"fanout", Usage{CascadeFanout: 5}, b, "max_cascade_fanout"},
		{"the first in the contract's order", Usage{Cost: 6, Branches: 4, CascadeFanout: 9}, b, "max_branches"},
		{"defaults: one action a cycle", Usage{ToolActions: 2}, Cycle{}, "max_tool_actions"},
		{"defaults: 256 events fit", Usage{Events: 256}, Cycle{}, ""},
		{"defaults: 257 do not", Usage{Events: 257}, Cycle{}, "max_events"},
		{"a field left zero takes its default, not zero", Usage{Cost: 64}, Cycle{MaxEvents: 1}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Over(tc.u, tc.b))
		})
	}
	for _, name := range []string{"max_events", "max_recursive_depth", "max_branches", "max_tool_actions", "max_files_touched", "max_cost", "max_cascade_fanout"} {
		assert.Contains(t, jsonNames(reflect.TypeOf(Cycle{})), name, "a blocked cycle's reason must name the contract's field")
	}
}

// TestOf: each run budget's limit and use, by name; the wall clock's use
// is the time since the run started, not the recorded one.
func TestOf(t *testing.T) {
	bu := Run{Cycles: Limit{Soft: 1, Hard: 2}, CognitiveOperations: Limit{Soft: 3, Hard: 4}, Actions: Limit{Soft: 5, Hard: 6},
		Compactions: Limit{Soft: 7, Hard: 8}, WallClockSeconds: Limit{Soft: 9, Hard: 10}}
	rs := &state.RunState{StartedAt: "2026-01-01T00:00:00Z", Budget: state.BudgetUsage{Cycles: 11, CognitiveOperations: 12, Actions: 13,
		Compactions: 14, WallClockSeconds: 15}}
	now := time.Date(2026, 1, 1, 0, 1, 40, 0, time.UTC)
	cases := []struct {
		name string
		l    Limit
		used int64
	}{
		{"cycles", bu.Cycles, 11},
		{"cognitive_operations", bu.CognitiveOperations, 12},
		{"actions", bu.Actions, 13},
		{"compactions", bu.Compactions, 14},
		{"wall_clock_seconds", bu.WallClockSeconds, 100},
	}
	require.Len(t, cases, len(Names()), "every run budget is covered")
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, used := Of(bu, rs, tc.name, now)
			assert.Equal(t, tc.l, l)
			assert.Equal(t, tc.used, used)
		})
	}
}

// TestWallClock counts whole seconds from the run's start; a start it
// cannot read leaves the recorded count.
func TestWallClock(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		name      string
		startedAt string
		now       time.Time
		want      int64
	}{
		{"at the start", "2026-01-01T00:00:00Z", start, 0},
		{"whole seconds, cut", "2026-01-01T00:00:00Z", start.Add(90*time.Second + 999*time.Millisecond), 90},
		{"a day", "2026-01-01T00:00:00Z", start.Add(24 * time.Hour), 86400},
		{"a start in another zone", "2026-01-01T01:00:00+01:00", start.Add(time.Minute), 60},
		{"an unreadable start", "yesterday", start.Add(time.Hour), 42},
		{"no start", "", start.Add(time.Hour), 42},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rs := &state.RunState{StartedAt: tc.startedAt, Budget: state.BudgetUsage{WallClockSeconds: 42}}
			assert.Equal(t, tc.want, WallClock(rs, tc.now))
		})
	}
}

// TestNames: the run budgets are the contract's fields, in its order, and
// each has its use counted in the run state under the same name.
func TestNames(t *testing.T) {
	assert.Equal(t, jsonNames(reflect.TypeOf(Run{})), Names())
	usage := jsonNames(reflect.TypeOf(state.BudgetUsage{}))
	for _, n := range Names() {
		assert.Contains(t, usage, n)
	}
}

// jsonNames lists the JSON names of a struct's fields, in order.
func jsonNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		out = append(out, name)
	}
	return out
}

// TestLevels: does the next step fit in a run budget? A hard level may be
// reached, never passed; a zero level is no level; the soft level counts
// from the last replenishment.
func TestLevels(t *testing.T) {
	cases := []struct {
		name             string
		l                Limit
		used, cost, base int64
		overrun, usedUp  bool
		softReached      bool
	}{
		{"unbounded", Limit{}, 1 << 40, 1 << 40, 0, false, false, false},
		{"well within", Limit{Soft: 5, Hard: 10}, 2, 1, 0, false, false, false},
		{"the step reaches the hard level", Limit{Hard: 10}, 9, 1, 0, false, false, false},
		{"the step would pass it", Limit{Hard: 10}, 9, 2, 0, true, false, false},
		{"at the hard level, a free step fits", Limit{Hard: 10}, 10, 0, 0, false, true, false},
		{"at the hard level, one more does not", Limit{Hard: 10}, 10, 1, 0, true, true, false},
		{"past it (a run that resumed)", Limit{Hard: 10}, 12, 0, 0, true, true, false},
		{"a program of several operations that does not fit", Limit{Hard: 10}, 4, 7, 0, true, false, false},
		{"soft level reached", Limit{Soft: 5}, 5, 1, 0, false, false, true},
		{"soft level not yet", Limit{Soft: 5}, 4, 1, 0, false, false, false},
		{"soft level counted from the replenishment", Limit{Soft: 5, Hard: 100}, 9, 1, 5, false, false, false},
		{"reached again after a replenishment", Limit{Soft: 5, Hard: 100}, 10, 1, 5, false, false, true},
		{"no soft level", Limit{Hard: 100}, 99, 1, 0, false, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.overrun, tc.l.Overrun(tc.used, tc.cost), "Overrun")
			assert.Equal(t, tc.usedUp, tc.l.UsedUp(tc.used), "UsedUp")
			assert.Equal(t, tc.softReached, tc.l.SoftReached(tc.used, tc.base), "SoftReached")
		})
	}
}
