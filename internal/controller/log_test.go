package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
)

func TestTransitionLogRoundTrip(t *testing.T) {
	a, b, c := codec.Ref("obs:sha256:"+codec.Digest([]byte("a"))), codec.Ref("sem:sha256:"+codec.Digest([]byte("b"))), codec.Ref("x:sha256:"+codec.Digest([]byte("c")))
	tr := func(seq int, from, to Phase, in, out []codec.Ref) Transition {
		return Transition{Schema: TransitionSchema, CycleID: "run:r/cycle/2", ParentCycleID: "run:r/cycle/1", Seq: seq, PreviousState: from, NextState: to,
			ActorRole: Observer, InputHashes: in, OutputHashes: out, Timestamp: "2026-01-01T00:00:00Z", Reason: "r",
			AuthorityUsed: governance.AuthRead, BudgetConsumed: budget.Usage{Events: int64(seq)}}
	}
	later := func(t Transition) Transition { t.Timestamp = "2026-01-01T00:02:00Z"; return t }
	cases := []struct {
		name string
		ts   []Transition
		// listed: which entries must carry their inputs
		listed []bool
	}{
		{"one", []Transition{tr(1, Sleep, Wake, []codec.Ref{a}, []codec.Ref{b})}, []bool{true}},
		{"chained", []Transition{tr(1, Sleep, Wake, []codec.Ref{a}, []codec.Ref{b}), tr(2, Wake, Observe, []codec.Ref{b}, []codec.Ref{c}), tr(3, Observe, Align, []codec.Ref{c}, []codec.Ref{})}, []bool{true, false, false}},
		{"not chained", []Transition{tr(1, Sleep, Wake, []codec.Ref{a}, []codec.Ref{b}), tr(2, Wake, Observe, []codec.Ref{a}, []codec.Ref{c})}, []bool{true, true}},
		{"empty inputs after outputs", []Transition{tr(1, Sleep, Wake, []codec.Ref{}, []codec.Ref{b}), tr(2, Wake, Observe, []codec.Ref{}, []codec.Ref{})}, []bool{true, true}},
		{"a later time within the batch", []Transition{tr(1, Sleep, Wake, []codec.Ref{a}, []codec.Ref{b}), later(tr(2, Wake, Observe, []codec.Ref{b}, []codec.Ref{c}))}, []bool{true, false}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l, err := LogOf(tc.ts)
			require.NoError(t, err)
			for i, m := range l.Transitions {
				require.Equal(t, tc.listed[i], m.InputHashes != nil, "entry %d", i)
			}
			var back TransitionLog
			require.NoError(t, codec.UnmarshalCanonical(codec.MustMarshal(l), &back))
			require.Equal(t, tc.ts, back.Expand())
		})
	}
	_, err := LogOf(nil)
	require.Error(t, err)
	other := tr(2, Wake, Observe, nil, nil)
	other.CycleID = "run:r/cycle/3"
	_, err = LogOf([]Transition{tr(1, Sleep, Wake, nil, nil), other})
	require.ErrorContains(t, err, "run:r/cycle/3")
}

// TestMachineTick: a transition carries the clock reading of the input the
// cycle went on from; a reading earlier than the machine's is ignored.
func TestMachineTick(t *testing.T) {
	m := Start("run:r/cycle/1", "run:r/cycle/0", "2026-01-01T00:00:00Z", budget.Cycle{})
	t1, err := m.Move(Step{To: Wake, Role: Observer})
	require.NoError(t, err)
	m.Tick("2026-01-01T00:05:00Z")
	t2, err := m.Move(Step{To: Observe, Role: Observer})
	require.NoError(t, err)
	m.Tick("2026-01-01T00:01:00Z")
	t3, err := m.Move(Step{To: Align, Role: Observer})
	require.NoError(t, err)
	require.Equal(t, []string{"2026-01-01T00:00:00Z", "2026-01-01T00:05:00Z", "2026-01-01T00:05:00Z"}, []string{t1.Timestamp, t2.Timestamp, t3.Timestamp})
}
