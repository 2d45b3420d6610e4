package report

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// worstText is a ledger value as long as the clipping allows, made of the
// character HTML escaping expands most.
var worstText = strings.Repeat(`"`, 200)

func worstList(n int, tag int64) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%d-%d%s", tag, i, worstText)
	}
	return out
}

// worstLists are the longest lists of the longest values; every worst
// cycle shares them (Aggregate only reads its input), which keeps this
// test cheap. What must differ from cycle to cycle (commitment, approval
// and check ids) is made fresh in worstCycle.
var worstLists = worstList(maxList+1, 0)

// worstCycle fills every field of a cycle with the longest values, and
// gives its commitments, approvals and checks fresh ids so that they churn
// through every lane and table row.
func worstCycle(seq int64, d state.Disposition) Entry {
	l := worstLists
	c := Cycle{Seq: seq, At: worstText, Disposition: d, Reasons: l, WokeBy: l,
		Agenda: worstText, AgendaSummary: worstText, AgendaReasons: l, Action: worstText, Decision: "REFUSE",
		DecisionReasons: l, Outcome: worstText, Evaluation: worstText, Inbox: l, Review: l,
		Compaction: &Compaction{Trigger: worstText, Block: worstText, From: seq, To: seq}, Notes: l,
		Budget:   &state.BudgetUsage{Cycles: seq, CognitiveOperations: seq * 1_000_000, Actions: seq, Compactions: seq, WallClockSeconds: seq * 1_000_000, SoftWarned: l},
		Observed: true}
	for i := range maxList + 1 {
		id := fmt.Sprintf("%d-%d%s", seq, i%3, worstText) // three per cycle, each with several events
		c.Commitments = append(c.Commitments, CommitmentChange{ID: id, Event: worstText, Status: worstText, Version: seq, Summary: worstText, Reason: worstText})
		ref := codec.Ref(fmt.Sprintf("%d-%d%s", seq, i, worstText))
		c.Approvals = append(c.Approvals, ApprovalChange{Kind: "requested", ActionRef: ref, Action: worstText, Reason: worstText},
			ApprovalChange{Kind: "resolved", ActionRef: ref, Verdict: worstText, By: worstText})
		c.Failing = append(c.Failing, string(ref))
		c.Passing = append(c.Passing, "p"+string(ref))
	}
	return Entry{Cycle: &c}
}

func worstHead() Head {
	h := Head{RunID: worstText, Status: worstText, Disposition: state.Faulted, Reasons: worstList(maxList+1, 0), CheckpointCycle: 1 << 40,
		UpdatedAt: worstText, GoalID: worstText, Mission: worstText, ContractID: worstText,
		Limits: budget.Run{Cycles: budget.Limit{Soft: 1 << 40, Hard: 1 << 41}, WallClockSeconds: budget.Limit{Soft: 1, Hard: 2}}}
	for i := range maxList + 1 {
		h.Pending = append(h.Pending, PendingApproval{Ref: codec.Ref(worstText), Action: worstText, Reason: worstText, RequestedAt: worstText, Cycle: int64(i)})
	}
	return h
}

// worstHistory is n worst cycles whose dispositions rotate through all
// eight values (the invalid one too), each followed by a worst incident.
// timed gives the cycles clock readings (a wall-clock axis needs them)
// instead of the worst text, with gaps of every length.
func worstHistory(n int64, timed bool) func(yield func(Entry) bool) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	return func(yield func(Entry) bool) {
		for i := int64(1); i <= n; i++ {
			e := worstCycle(i, state.Disposition(i%numDisp))
			if timed {
				t0 = t0.Add(time.Duration(i%7*i%13) * 7919 * time.Millisecond)
				e.Cycle.At = state.FormatTime(t0)
			}
			if !yield(e) {
				return
			}
			in := Incident{Cycle: i, At: worstText, Type: event.Kind(worstText), Reasons: worstLists, Detail: worstText}
			if !yield(Entry{Incident: &in}) {
				return
			}
		}
	}
}

// TestWorstCaseSize: with every list full and every value at its longest
// and most expensive to escape, the page stays under MaxPageBytes, both
// with one bar per cycle and with buckets holding every disposition.
func TestWorstCaseSize(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		n     int64
		timed bool
	}{{DefaultMaxBars, false}, {DefaultMaxBars, true}, {8 * DefaultMaxBars, false}, {8 * DefaultMaxBars, true}} {
		t.Run(fmt.Sprintf("%d cycles, time axis %t", c.n, c.timed), func(t *testing.T) {
			t.Parallel()
			v := Aggregate(worstHead(), worstHistory(c.n, c.timed), Options{Generator: worstText, TimeAxis: c.timed})
			w := &countingWriter{}
			require.NoError(t, Render(w, v))
			t.Logf("%d bytes (%d cycles in detail, %d left out), bound %d", w.n, len(v.Details), v.DetailsOmitted, MaxPageBytes)
			assert.LessOrEqual(t, w.n, int64(MaxPageBytes))
			assert.Equal(t, c.timed, v.TimeAxis)
			assert.Len(t, v.Timeline.Bars, DefaultMaxBars)
			assert.Len(t, v.Lanes, DefaultMaxLanes)
			assert.Len(t, v.Approvals, DefaultMaxApprovals)
			assert.Len(t, v.Incidents, DefaultMaxIncidents)
			assert.Len(t, v.Checks, DefaultMaxChecks)
		})
	}
}

// realistic is a long run's history made up on the fly: mostly CONTINUE
// and IDLE, a compaction every 50 cycles, now and then an approval and a
// commitment's lifecycle.
func realistic(n int64, each func(i int64)) func(yield func(Entry) bool) {
	return func(yield func(Entry) bool) {
		for i := int64(1); i <= n; i++ {
			if each != nil {
				each(i)
			}
			var opts []func(*Cycle)
			d := alternating(i)
			if i%50 == 0 {
				opts = append(opts, compacted)
			}
			if i%997 == 0 {
				d = state.WaitApproval
				opts = append(opts, requested(fmt.Sprintf("areq:%d", i)))
			}
			if i%997 == 1 && i > 1 {
				opts = append(opts, resolved(fmt.Sprintf("areq:%d", i-1), "approve", "ops"))
			}
			if i%501 == 0 {
				opts = append(opts, commitmentEvent(fmt.Sprintf("cmt-%d", i), "created", "suspended"))
			}
			if i%501 == 7 && i > 7 {
				opts = append(opts, commitmentEvent(fmt.Sprintf("cmt-%d", i-7), "completed", "completed"))
			}
			e := cyc(i, d, append(opts, func(c *Cycle) {
				c.Reasons = []string{"no_positive_agenda", "nothing_due"}
				if d == state.Continue {
					c.Agenda, c.Action, c.Decision, c.Outcome, c.Evaluation = "check:typo", "apply_local_patch README.md", "EXECUTE", "committed", "accepted"
				}
			})...)
			if !yield(e) {
				return
			}
		}
	}
}

// TestLongHistoryInBoundedMemory streams 300,000 cycles through Aggregate
// and checks that the heap after the first 30,000 is about what it is at
// the end: the aggregate does not grow with the history. The page stays
// under the bound and the view's lists at their caps.
func TestLongHistoryInBoundedMemory(t *testing.T) {
	const n = 300_000
	heap := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var early, late uint64
	v := Aggregate(Head{RunID: "run:long"}, realistic(n, func(i int64) {
		switch i {
		case 30_000:
			early = heap()
		case n:
			late = heap()
		}
	}), Options{})
	t.Logf("heap after 30,000 cycles %d KiB, after %d cycles %d KiB", early>>10, n, late>>10)
	assert.Less(t, int64(late)-int64(early), int64(8<<20), "the heap grew with the history")

	assert.Equal(t, int64(n), v.Cycles)
	assert.Equal(t, int64(256), v.BucketWidth)
	assert.LessOrEqual(t, len(v.Timeline.Bars), DefaultMaxBars)
	assert.LessOrEqual(t, len(v.Details), DefaultRecent+numKinds*DefaultNotablePerKind)
	assert.Len(t, v.Compactions, DefaultMaxCompactions)
	assert.Equal(t, int64(n/50), v.CompactionsN)
	assert.LessOrEqual(t, len(v.Lanes), DefaultMaxLanes)
	assert.Equal(t, int64(n/997), v.ApprovalsN)
	w := &countingWriter{}
	require.NoError(t, Render(w, v))
	t.Logf("page %d bytes", w.n)
	assert.Less(t, w.n, int64(MaxPageBytes))
}
