package controller

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
)

// TestTransitionsOf reads the transitions back from the events of both
// ledger formats, and nothing from other kinds.
func TestTransitionsOf(t *testing.T) {
	a, b := codec.Ref("obs:sha256:"+codec.Digest([]byte("a"))), codec.Ref("sem:sha256:"+codec.Digest([]byte("b")))
	one := Transition{Schema: TransitionSchema, CycleID: "run:r/cycle/2", ParentCycleID: "run:r/cycle/1", Seq: 1, PreviousState: Sleep, NextState: Wake,
		ActorRole: Observer, InputHashes: []codec.Ref{a}, OutputHashes: []codec.Ref{b}, Timestamp: "2026-01-01T00:00:00Z", Reason: "r",
		AuthorityUsed: governance.AuthRead, BudgetConsumed: budget.Usage{Events: 1}}
	two := one
	two.Seq, two.PreviousState, two.NextState, two.InputHashes, two.OutputHashes = 2, Wake, Observe, []codec.Ref{b}, []codec.Ref{}
	log, err := LogOf([]Transition{one, two})
	require.NoError(t, err)
	object := func(kind string, v any) *event.Object {
		o, err := event.NewObject(kind, v)
		require.NoError(t, err)
		return o
	}
	cases := []struct {
		name    string
		ev      event.Event
		want    []Transition
		wantErr string
	}{
		{"format 1: one transition", event.Event{Type: event.Transition, Object: object("ctrans", one)}, []Transition{one}, ""},
		{"format 2: a batch's log", event.Event{Type: event.Transitions, Object: object("ctlog", log)}, []Transition{one, two}, ""},
		{"another kind", event.Event{Type: event.CycleDeclared, Object: object("ctrans", one)}, nil, ""},
		{"a transition event without its record", event.Event{Type: event.Transitions}, nil, "without its record"},
		{"a log where a transition was", event.Event{Type: event.Transition, Object: object("ctlog", log)}, nil, "unknown field"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := TransitionsOf(tc.ev)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}
