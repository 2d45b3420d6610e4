package report

import (
	"fmt"
	"iter"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// cyc is a plain cycle; options add to it.
func cyc(seq int64, d state.Disposition, opts ...func(*Cycle)) Entry {
	c := Cycle{Seq: seq, At: fmt.Sprintf("t%d", seq), Disposition: d, Decision: "NONE", Budget: &state.BudgetUsage{Cycles: seq}}
	for _, o := range opts {
		o(&c)
	}
	return Entry{Cycle: &c}
}

func compacted(c *Cycle) {
	c.Compaction = &Compaction{Trigger: "cadence", Block: "blk", From: 1, To: c.Seq - 1}
}
func reviewed(c *Cycle) { c.Review = []string{"repeated_failure"} }

func requested(ref string) func(*Cycle) {
	return func(c *Cycle) {
		c.Decision, c.Action = "ESCALATE", "apply_local_patch app.ini"
		c.Approvals = append(c.Approvals, ApprovalChange{Kind: "requested", ActionRef: codec.Ref(ref), Action: c.Action, Reason: "contract_requires_approval"})
	}
}

func resolved(ref, verdict, by string) func(*Cycle) {
	return func(c *Cycle) {
		c.Approvals = append(c.Approvals, ApprovalChange{Kind: "resolved", ActionRef: codec.Ref(ref), Verdict: verdict, By: by})
	}
}

func commitmentEvent(id, event, status string) func(*Cycle) {
	return func(c *Cycle) {
		c.Commitments = append(c.Commitments, CommitmentChange{ID: id, Event: event, Status: status, Version: 1, Summary: "do " + id})
	}
}

// history numbers n cycles from 1, with disposition pick(i).
func history(n int, pick func(i int64) state.Disposition) []Entry {
	out := make([]Entry, 0, n)
	for i := int64(1); i <= int64(n); i++ {
		out = append(out, cyc(i, pick(i)))
	}
	return out
}

func alternating(i int64) state.Disposition {
	if i%2 == 1 {
		return state.Continue
	}
	return state.Idle
}

func seqs(ds []CycleView) []int64 {
	var out []int64
	for _, d := range ds {
		out = append(out, d.Seq)
	}
	return out
}

func TestAggregate(t *testing.T) {
	head := Head{RunID: "run:t", Status: "RUNNING", Disposition: state.Idle, CheckpointCycle: 0,
		Limits: budget.Run{Cycles: budget.Limit{Soft: 5, Hard: 10}}}
	cases := []struct {
		name    string
		entries []Entry
		opts    Options
		check   func(t *testing.T, v *View)
	}{{
		name: "no cycle yet",
		check: func(t *testing.T, v *View) {
			assert.Zero(t, v.Cycles)
			assert.Empty(t, v.Timeline.Bars)
			assert.Empty(t, v.Details)
			require.Len(t, v.Totals, 7, "every disposition is in the legend, even at zero")
			assert.Equal(t, Total{Disposition: "CONTINUE", Class: "disp-CONTINUE", Count: 0, Percent: "0.0"}, v.Totals[0])
			require.Len(t, v.Budgets, 5)
			assert.Equal(t, "ok", v.Budgets[0].State)
		},
	}, {
		name:    "few cycles: one bar per cycle, each linked to its detail",
		entries: history(4, alternating),
		opts:    Options{MaxBars: 4, Recent: 10},
		check: func(t *testing.T, v *View) {
			assert.Equal(t, int64(1), v.BucketWidth)
			require.Len(t, v.Timeline.Bars, 4)
			assert.Equal(t, "cycle disp-CONTINUE", v.Timeline.Bars[0].Class)
			assert.Equal(t, "cycle disp-IDLE", v.Timeline.Bars[1].Class)
			assert.Equal(t, "#c2", v.Timeline.Bars[1].Href)
			assert.Contains(t, v.Timeline.Bars[1].Title, "cycle 2 · IDLE · t2")
			assert.Empty(t, v.Timeline.Paths)
			assert.Nil(t, v.Recent, "no separate recent strip while every cycle has its bar")
			assert.Equal(t, []string{"cycle 1", "cycle 2", "cycle 3", "cycle 4", "cycle 4"}, v.Axis)
			assert.Equal(t, int64(2), v.Totals[0].Count)
			assert.Equal(t, "50.0", v.Totals[0].Percent)
		},
	}, {
		name:    "more cycles than bars: buckets of a power-of-two width",
		entries: history(9, alternating),
		opts:    Options{MaxBars: 4, Recent: 3},
		check: func(t *testing.T, v *View) {
			assert.Equal(t, int64(4), v.BucketWidth, "9 cycles in at most 4 bars")
			require.Len(t, v.Timeline.Bars, 3)
			b := v.Timeline.Bars[2]
			assert.Equal(t, "bucket", b.Class)
			assert.Equal(t, []int64{9, 9}, []int64{b.From, b.To}, "the last bucket ends at the last cycle")
			assert.Equal(t, "cycles 1–4 (4): CONTINUE 2 · IDLE 2; decisions NONE 4", v.Timeline.Bars[0].Title)
			require.Len(t, v.Timeline.Paths, 2)
			assert.Equal(t, Path{Class: "seg disp-CONTINUE", D: "M0 50.0h1v50.0h-1zM1 50.0h1v50.0h-1zM2 0.0h1v100.0h-1z"}, v.Timeline.Paths[0])
			assert.Equal(t, "seg disp-IDLE", v.Timeline.Paths[1].Class)
			require.NotNil(t, v.Recent)
			assert.Equal(t, []int64{7, 8, 9}, []int64{v.Recent.Bars[0].From, v.Recent.Bars[1].From, v.Recent.Bars[2].From})
			assert.Equal(t, "#c9", v.Recent.Bars[2].Href)
			assert.Equal(t, []int64{7, 8, 9}, seqs(v.Details))
		},
	}, {
		name: "notable cycles keep their detail, the most recent of each kind",
		entries: []Entry{
			cyc(1, state.Idle, compacted), cyc(2, state.WaitApproval, requested("areq:1")), cyc(3, state.Idle, compacted),
			cyc(4, state.Continue, reviewed), cyc(5, state.Continue), cyc(6, state.Stopped), cyc(7, state.Idle), cyc(8, state.Idle),
		},
		opts: Options{Recent: 2, NotablePerKind: 1},
		check: func(t *testing.T, v *View) {
			assert.Equal(t, []int64{2, 3, 4, 6, 7, 8}, seqs(v.Details), "cycle 1 is an older compaction than 3")
			kinds := map[int64][]string{}
			for _, d := range v.Details {
				kinds[d.Seq] = d.Kinds
			}
			assert.Equal(t, []string{"approval"}, kinds[2])
			assert.Equal(t, []string{"halt"}, kinds[6])
			assert.Equal(t, []string{"recent"}, kinds[8])
			assert.Equal(t, "cycle-detail disp-WAIT_APPROVAL", v.Details[0].Class)
			assert.Equal(t, "", v.Timeline.Bars[0].Href, "cycle 1 has no detail to link to")
			assert.Equal(t, int64(2), v.CompactionsN)
			require.Len(t, v.Compactions, 2)
			assert.Equal(t, int64(3), v.Compactions[1].Cycle)
			assert.Equal(t, "#c3", v.Compactions[1].Href)
			assert.Equal(t, "", v.Compactions[0].Href)
			ticks := map[string]int{}
			for _, r := range v.Markers {
				ticks[r.ID] = r.Ticks
			}
			assert.Equal(t, map[string]int{"compaction": 2, "approval": 1, "review": 1, "commitment": 0, "incident": 1}, ticks)
			assert.Equal(t, "M1 0h1v10h-1z", v.Markers[1].D)
		},
	}, {
		name: "approvals requested and resolved",
		entries: []Entry{
			cyc(3, state.WaitApproval, requested("areq:a")),
			cyc(5, state.Continue, resolved("areq:a", "approve", "bob")),
			cyc(6, state.WaitApproval, requested("areq:b")),
			cyc(7, state.Continue, resolved("areq:old", "deny", "eve")),
		},
		check: func(t *testing.T, v *View) {
			require.Len(t, v.Approvals, 3)
			a := v.Approvals[0]
			assert.Equal(t, "approved", a.State)
			assert.Equal(t, []int64{3, 5}, []int64{a.RequestedCycle, a.ResolvedCycle})
			assert.Equal(t, "bob", a.By)
			assert.Equal(t, "#c3", a.RequestedHref)
			assert.Equal(t, "pending", v.Approvals[1].State)
			assert.Equal(t, "denied", v.Approvals[2].State, "a resolution whose request is not in view still shows")
			assert.Zero(t, v.Approvals[2].RequestedCycle)
			assert.Equal(t, int64(3), v.ApprovalsN)
		},
	}, {
		name: "commitment lanes",
		entries: []Entry{
			cyc(1, state.Continue),
			cyc(2, state.Sleep, commitmentEvent("cmt-a", "created", "suspended")),
			cyc(6, state.Continue, commitmentEvent("cmt-a", "resumed", "active")),
			cyc(8, state.Continue, commitmentEvent("cmt-a", "completed", "completed")),
			cyc(11, state.Idle),
		},
		check: func(t *testing.T, v *View) {
			require.Len(t, v.Lanes, 1)
			l := v.Lanes[0]
			assert.Equal(t, "cmt-a", l.ID)
			assert.Equal(t, "completed", l.Status)
			assert.Equal(t, []LaneSpan{{X: "90.9", W: "363.6", Class: "status-suspended"}, {X: "454.5", W: "181.8", Class: "status-active"}}, l.Spans)
			require.Len(t, l.Marks, 3)
			assert.Equal(t, "ev-completed", l.Marks[2].Class)
			assert.Equal(t, "#c8", l.Marks[2].Href)
			assert.Contains(t, l.Marks[0].Title, "cycle 2 · t2 · cmt-a created, v1 suspended")
		},
	}, {
		name: "more commitments than lanes: finished ones leave first",
		entries: []Entry{
			cyc(1, state.Continue, commitmentEvent("cmt-live", "created", "active")),
			cyc(2, state.Continue, commitmentEvent("cmt-done", "created", "active")),
			cyc(3, state.Continue, commitmentEvent("cmt-done", "completed", "completed")),
			cyc(4, state.Continue, commitmentEvent("cmt-new", "created", "active")),
		},
		opts: Options{MaxLanes: 2},
		check: func(t *testing.T, v *View) {
			assert.Equal(t, []string{"cmt-live", "cmt-new"}, []string{v.Lanes[0].ID, v.Lanes[1].ID})
			assert.Equal(t, 1, v.LanesOmitted)
		},
	}, {
		name: "a long lifecycle keeps its first and latest events",
		entries: []Entry{
			cyc(1, state.Sleep, commitmentEvent("c", "created", "suspended")),
			cyc(2, state.Continue, commitmentEvent("c", "resumed", "active")),
			cyc(3, state.Sleep, commitmentEvent("c", "suspended", "suspended")),
			cyc(4, state.Continue, commitmentEvent("c", "resumed", "active")),
			cyc(5, state.Continue, commitmentEvent("c", "completed", "completed")),
		},
		opts: Options{MaxLaneEvents: 3},
		check: func(t *testing.T, v *View) {
			var got []string
			for _, m := range v.Lanes[0].Marks {
				got = append(got, m.Class)
			}
			assert.Equal(t, []string{"ev-created", "ev-resumed", "ev-completed"}, got)
			assert.Equal(t, 2, v.Lanes[0].Omitted)
		},
	}, {
		name:    "budgets against the contract's limits",
		entries: history(7, alternating),
		check: func(t *testing.T, v *View) {
			b := v.Budgets[0]
			assert.Equal(t, "cycles", b.Name)
			assert.Equal(t, []int64{7, 5, 10}, []int64{b.Used, b.Soft, b.Hard})
			assert.Equal(t, 70, b.Percent)
			assert.Equal(t, "soft", b.State)
			assert.Equal(t, 7, strings.Count(b.Points, ","), "one point per bar")
			assert.Equal(t, "50.0", b.SoftY)
			assert.Equal(t, "0.0", b.HardY)
			assert.Equal(t, -1, v.Budgets[1].Percent, "no hard limit")
		},
	}, {
		name:    "a hard limit reached",
		entries: history(10, alternating),
		check: func(t *testing.T, v *View) {
			assert.Equal(t, "hard", v.Budgets[0].State)
			assert.Equal(t, 100, v.Budgets[0].Percent)
		},
	}, {
		name: "incidents between cycles",
		entries: []Entry{
			cyc(1, state.Continue),
			{Incident: &Incident{Cycle: 1, Type: event.ProviderFailed, Reasons: []string{"provider_failure"}, Detail: "observe failed"}},
			{Incident: &Incident{Cycle: 1, Type: event.RunFaulted, Reasons: []string{"provider_failures_exceeded"}}},
			cyc(2, state.Faulted),
		},
		check: func(t *testing.T, v *View) {
			assert.Equal(t, int64(2), v.IncidentsN)
			require.Len(t, v.Incidents, 2)
			assert.Equal(t, "observe failed", v.Incidents[0].Detail)
			assert.Equal(t, 2, v.Markers[4].Ticks, "the incidents at cycle 1 and the FAULTED cycle 2")
			assert.Equal(t, []string{"recent", "halt"}, v.Details[1].Kinds, "a FAULTED cycle is notable")
		},
	}, {
		name: "ledger values are clipped",
		entries: []Entry{cyc(1, state.Continue, func(c *Cycle) {
			c.Reasons = []string{strings.Repeat("x", 10_000), strings.Repeat(`"`, 100)}
			c.Notes = make([]string, 50)
		})},
		check: func(t *testing.T, v *View) {
			c := v.Details[0]
			assert.LessOrEqual(t, cost(c.Reasons[0]), maxString)
			assert.True(t, strings.HasSuffix(c.Reasons[0], "…"))
			assert.Equal(t, strings.Repeat(`"`, 31)+"…", c.Reasons[1], "a quote costs five bytes once escaped")
			require.Len(t, c.Notes, maxList)
			assert.Equal(t, "… 43 more", c.Notes[maxList-1])
			assert.LessOrEqual(t, cost(v.Timeline.Bars[0].Title), maxTitle)
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Aggregate(head, slices.Values(tc.entries), tc.opts)
			tc.check(t, v)
			again := Aggregate(head, slices.Values(tc.entries), tc.opts)
			assert.Equal(t, v, again, "the same history gives the same view")
		})
	}
	require.Len(t, cases, 12)
}

// TestBucketWidth: the rule that decides when cycles share a bar, at the
// default bound.
func TestBucketWidth(t *testing.T) {
	cases := []struct {
		cycles int
		width  int64
		bars   int
	}{
		{1, 1, 1}, {2000, 1, 2000}, {2001, 2, 1001}, {4000, 2, 2000}, {4001, 4, 1001}, {100_000, 64, 1563},
	}
	for _, tc := range cases {
		v := Aggregate(Head{}, slices.Values(history(tc.cycles, alternating)), Options{})
		assert.Equal(t, tc.width, v.BucketWidth, "%d cycles", tc.cycles)
		assert.Len(t, v.Timeline.Bars, tc.bars, "%d cycles", tc.cycles)
		assert.LessOrEqual(t, len(v.Timeline.Bars), DefaultMaxBars)
	}
}

// TestAggregateStopsWithTheIterator: Aggregate consumes a sequence it is
// given once, in order, without asking for more than it has.
func TestAggregateStopsWithTheIterator(t *testing.T) {
	n := 0
	var seq iter.Seq[Entry] = func(yield func(Entry) bool) {
		for i := int64(1); i <= 3; i++ {
			n++
			if !yield(cyc(i, state.Idle)) {
				return
			}
		}
	}
	v := Aggregate(Head{}, seq, Options{})
	assert.Equal(t, 3, n)
	assert.Equal(t, int64(3), v.Cycles)
}

func decided(d string) func(*Cycle) { return func(c *Cycle) { c.Decision = d } }

func observed(failing ...string) func(*Cycle) {
	return func(c *Cycle) {
		c.Observed, c.Failing = true, failing
		for _, id := range []string{"a", "b", "c"} {
			if !slices.Contains(failing, id) {
				c.Passing = append(c.Passing, id)
			}
		}
	}
}

func at(t string) func(*Cycle) { return func(c *Cycle) { c.At = t } }

// TestAggregateDecisionsChecksAndTime: the decision strip and its legend,
// the marker counts that match the sections, the failing checks plot and
// table, and the wall-clock axis.
func TestAggregateDecisionsChecksAndTime(t *testing.T) {
	cases := []struct {
		name    string
		entries []Entry
		opts    Options
		check   func(t *testing.T, v *View)
	}{{
		name: "a refusal is told apart from an execution, though both CONTINUE",
		entries: []Entry{
			cyc(1, state.Continue, decided("EXECUTE")), cyc(2, state.Continue, decided("REFUSE")), cyc(3, state.Sleep, decided("DEFER")),
			cyc(4, state.Idle), cyc(5, state.Continue, decided("SOMETHING_NEW")),
		},
		check: func(t *testing.T, v *View) {
			var classes []string
			for _, b := range v.Decisions.Bars {
				classes = append(classes, b.Class)
			}
			assert.Equal(t, []string{"cycle dec-EXECUTE", "cycle dec-REFUSE", "cycle dec-DEFER", "cycle dec-NONE", "cycle dec-OTHER"}, classes)
			assert.Equal(t, "cycle disp-CONTINUE", v.Timeline.Bars[1].Class, "the disposition strip is unchanged")
			assert.Equal(t, "cycle 2 · decision REFUSE", v.Decisions.Bars[1].Title)
			counts := map[string]int64{}
			for _, tot := range v.DecisionTotals {
				counts[tot.Disposition] = tot.Count
			}
			assert.Equal(t, map[string]int64{"EXECUTE": 1, "ESCALATE": 0, "REFUSE": 1, "DEFER": 1, "IDLE": 0, "NONE": 1, "OTHER": 1}, counts)
		},
	}, {
		name:    "bucketed decisions stack like dispositions",
		entries: []Entry{cyc(1, state.Continue, decided("EXECUTE")), cyc(2, state.Continue, decided("REFUSE")), cyc(3, state.Idle)},
		opts:    Options{MaxBars: 2},
		check: func(t *testing.T, v *View) {
			assert.Empty(t, v.Decisions.Bars, "the timeline's bucket is the hover target")
			require.Len(t, v.Decisions.Paths, 3)
			assert.Equal(t, Path{Class: "seg dec-EXECUTE", D: "M0 50.0h1v50.0h-1z"}, v.Decisions.Paths[0])
			assert.Contains(t, v.Timeline.Bars[0].Title, "; decisions EXECUTE 1, REFUSE 1")
		},
	}, {
		name: "the approvals marker counts requests, as the Approvals section does",
		entries: []Entry{
			cyc(3, state.WaitApproval, requested("areq:a")),
			cyc(4, state.Continue, resolved("areq:a", "approve", "bob")),
		},
		check: func(t *testing.T, v *View) {
			m := v.Markers[1]
			require.Equal(t, "approval", m.ID)
			assert.Equal(t, v.ApprovalsN, m.Count)
			assert.Equal(t, int64(1), m.Count)
			assert.Equal(t, 2, m.Ticks, "a tick under the request and one under the answer")
		},
	}, {
		name: "failing checks over the run, and one row per check",
		entries: []Entry{
			cyc(1, state.Continue, observed("a", "b")), cyc(2, state.Continue, observed("b")), cyc(3, state.Stopped),
			cyc(4, state.Continue, observed("a", "b")), cyc(5, state.Idle, observed()),
		},
		check: func(t *testing.T, v *View) {
			assert.Equal(t, FailingPlot{Width: 5, Points: "0.5,33.3 1.5,66.7 2.5,66.7 3.5,33.3 4.5,100.0", Top: 3, Now: 0, Of: 3, Peak: 2}, v.Failing,
				"a cycle that did not observe carries the last count")
			require.Len(t, v.Checks, 3)
			assert.Equal(t, CheckRow{ID: "a", Status: "passing", Since: 5, SinceHref: "#c5", Observed: 4, Failing: 2, FirstFailing: 1, LastFailing: 4,
				Fixed: 2, Regressed: 1}, v.Checks[0])
			assert.Equal(t, CheckRow{ID: "b", Status: "passing", Since: 5, SinceHref: "#c5", Observed: 4, Failing: 3, FirstFailing: 1, LastFailing: 4,
				Fixed: 1}, v.Checks[1])
			assert.Equal(t, CheckRow{ID: "c", Status: "passing", Since: 1, SinceHref: "#c1", Observed: 4}, v.Checks[2])
			assert.False(t, v.ChecksOmitted)
			assert.Equal(t, []string{"a", "b"}, v.Details[0].Failing)
		},
	}, {
		name:    "more checks than the table holds",
		entries: []Entry{cyc(1, state.Continue, observed("a"))},
		opts:    Options{MaxChecks: 2},
		check: func(t *testing.T, v *View) {
			assert.Len(t, v.Checks, 2)
			assert.True(t, v.ChecksOmitted)
		},
	}, {
		name: "a wall-clock axis: a bar lasts until the next cycle",
		entries: []Entry{
			cyc(1, state.Continue, at("2026-01-01T00:00:00Z")), cyc(2, state.Sleep, at("2026-01-01T00:00:00Z")),
			cyc(3, state.Continue, at("2026-01-01T03:00:00Z")), cyc(4, state.Idle, at("2026-01-01T04:00:00Z")),
		},
		opts: Options{TimeAxis: true},
		check: func(t *testing.T, v *View) {
			require.True(t, v.TimeAxis)
			assert.Equal(t, TimeWidth, v.Timeline.Width)
			var xw []string
			for _, b := range v.Timeline.Bars {
				xw = append(xw, b.X+"+"+b.W)
			}
			assert.Equal(t, []string{"0+0.5", "0+750", "750+250", "999.5+0.5"}, xw, "a burst is thin, a wait is wide")
			assert.Equal(t, []string{"2026-01-01T00:00:00Z", "2026-01-01T01:00:00Z", "2026-01-01T02:00:00Z", "2026-01-01T03:00:00Z", "2026-01-01T04:00:00Z"}, v.Axis)
			assert.Equal(t, "999.5", v.Decisions.Bars[3].X, "the decisions share the axis")
			assert.Equal(t, TimeWidth, v.Budgets[0].Width)
			assert.True(t, strings.HasPrefix(v.Budgets[0].Points, "0.3,"), "budget points at the middle of their bars")
		},
	}, {
		name:    "a wall-clock axis needs more than one instant",
		entries: []Entry{cyc(1, state.Continue, at("2026-01-01T00:00:00Z")), cyc(2, state.Idle, at("2026-01-01T00:00:00Z"))},
		opts:    Options{TimeAxis: true},
		check: func(t *testing.T, v *View) {
			assert.False(t, v.TimeAxis)
			assert.Equal(t, []string{"0+1", "1+1"}, []string{v.Timeline.Bars[0].X + "+" + v.Timeline.Bars[0].W, v.Timeline.Bars[1].X + "+" + v.Timeline.Bars[1].W})
		},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			v := Aggregate(Head{}, slices.Values(tc.entries), tc.opts)
			tc.check(t, v)
			assert.Equal(t, v, Aggregate(Head{}, slices.Values(tc.entries), tc.opts), "the same history gives the same view")
		})
	}
	require.Len(t, cases, 7)
}
