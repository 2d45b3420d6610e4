package kernel

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
)

// waitingForApproval returns a run whose first cycle escalated the fix of
// check a to a person, and the observation it runs under.
func waitingForApproval(t *testing.T) (EngineState, Inputs) {
	t.Helper()
	spec := testSpec(patchCheck("a", "a.txt"))
	failing := observe(spec, map[string]bool{"a": true}, false)
	s := newState(t, spec, testContract(governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Approve}), observe(spec, map[string]bool{}, false))
	p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: failing})
	require.NoError(t, err)
	r, err := Finish(p, Settlement{})
	require.NoError(t, err)
	require.Equal(t, state.WaitApproval, r.State.Run.LoopDisposition)
	require.Len(t, r.State.Run.PendingApprovals, 1)
	return r.State, Inputs{Now: t0.Add(2 * time.Minute), Observation: failing}
}

// answerItem seals an answer as acr approve would write it.
func answerItem(t *testing.T, ref codec.Ref, cycle int64, verdict, by, replaces string) inbox.Item {
	t.Helper()
	a := &state.Approval{Schema: state.ApprovalSchema, ActionRef: ref, RequestCycle: cycle, Verdict: verdict, By: by,
		Replaces: replaces, CreatedAt: "2026-01-01T00:01:30Z"}
	id, body, err := inbox.Seal(a)
	require.NoError(t, err)
	return inbox.Item{ID: id, Kind: inbox.KindApproval, Approval: a, Body: body}
}

// TestAnswers: an answer counts once, for exactly the request it names;
// the last of several answers to one request counts and all are recorded.
func TestAnswers(t *testing.T) {
	s, in := waitingForApproval(t)
	p0 := s.Run.PendingApprovals[0]
	ref, asked := p0.Ref, p0.CycleSeq
	approve := answerItem(t, ref, asked, "approve", "alice", "")
	deny := answerItem(t, ref, asked, "deny", "alice", "")
	cases := []struct {
		name     string
		consumed []string // answers consumed by earlier cycles
		items    func() []inbox.Item
		resolved []string // reasons of approval.resolved, in order
		ignored  []string // reasons of approval.ignored, in order
		verdict  string   // the verdict the request is resolved with; "" if still open
	}{
		{"the answer to the open request", nil, func() []inbox.Item { return []inbox.Item{approve} },
			[]string{"verdict_approve"}, nil, "approve"},
		{"an answer to another asking of the same action", nil,
			func() []inbox.Item { return []inbox.Item{answerItem(t, ref, asked+1, "approve", "alice", "")} },
			nil, []string{"answers_another_request"}, ""},
		{"an answer that names no request", nil,
			func() []inbox.Item { return []inbox.Item{answerItem(t, ref, 0, "approve", "alice", "")} },
			nil, []string{"answers_another_request"}, ""},
		{"an answer for another action", nil,
			func() []inbox.Item {
				return []inbox.Item{answerItem(t, codec.MustRefOf("areq", "other"), asked, "approve", "alice", "")}
			},
			nil, []string{"no_pending_approval_for_ref"}, ""},
		{"ran, to a request that is not an uncertain effect", nil,
			func() []inbox.Item { return []inbox.Item{answerItem(t, ref, asked, state.VerdictRan, "alice", "")} },
			nil, []string{"not_an_uncertain_effect"}, ""},
		{"a consumed answer put back", []string{approve.ID}, func() []inbox.Item { return []inbox.Item{approve} },
			nil, []string{"answer_already_consumed"}, ""},
		{"a denial that replaces an approval", nil,
			func() []inbox.Item {
				return []inbox.Item{approve, answerItem(t, ref, asked, "deny", "alice", approve.ID)}
			},
			[]string{"verdict_deny"}, []string{"replaced_by_later_answer"}, "deny"},
		{"the replacing answer first in inbox order", nil,
			func() []inbox.Item {
				return []inbox.Item{answerItem(t, ref, asked, "deny", "alice", approve.ID), approve}
			},
			[]string{"verdict_deny"}, []string{"replaced_by_later_answer"}, "deny"},
		{"two answers without a link: the last counts", nil, func() []inbox.Item { return []inbox.Item{approve, deny} },
			[]string{"verdict_approve", "verdict_deny", "replaces_earlier_answer"}, nil, "deny"},
		{"the loop cannot replace a person's answer", nil,
			func() []inbox.Item {
				return []inbox.Item{approve, answerItem(t, ref, asked, "deny", "distiller", approve.ID)}
			},
			[]string{"verdict_approve"}, []string{"self_approval_refused", "by_distiller"}, "approve"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := s.clone()
			s.Run.AnswersConsumed = c.consumed
			items := c.items()
			in := in
			in.Inbox = items
			for _, it := range items {
				in.InboxPresent = append(in.InboxPresent, it.ID)
			}
			p, err := Begin(s, in)
			require.NoError(t, err)
			assert.Equal(t, c.resolved, reasonsOf(p.Events, event.ApprovalResolved))
			assert.Equal(t, c.ignored, reasonsOf(p.Events, event.ApprovalIgnored))
			open := slices.IndexFunc(p.b.s.Run.PendingApprovals, func(p state.PendingApproval) bool { return p.Ref == ref && p.Resolution == nil })
			if c.verdict == "" {
				assert.GreaterOrEqual(t, open, 0, "the request is still open")
				assert.Nil(t, p.Effect, "nothing is executed")
			} else {
				assert.Less(t, open, 0, "the request is answered")
				assert.Equal(t, c.verdict == "approve", p.Effect != nil, "an approval executes the action, a denial does not")
			}
			for _, it := range items {
				assert.Contains(t, p.b.s.Run.AnswersConsumed, it.ID, "every answer read is consumed for good")
			}
		})
	}
}

// TestAnswersConsumedIsBounded: the record of consumed answers keeps the
// newest state.MaxAnswersConsumed ids.
func TestAnswersConsumedIsBounded(t *testing.T) {
	s, in := waitingForApproval(t)
	ref := s.Run.PendingApprovals[0].Ref
	for i := range state.MaxAnswersConsumed {
		s.Run.AnswersConsumed = append(s.Run.AnswersConsumed, fmt.Sprintf("approval-%024d", i))
	}
	it := answerItem(t, ref, s.Run.PendingApprovals[0].CycleSeq, "deny", "alice", "")
	in.Inbox, in.InboxPresent = []inbox.Item{it}, []string{it.ID}
	p, err := Begin(s, in)
	require.NoError(t, err)
	got := p.b.s.Run.AnswersConsumed
	assert.Len(t, got, state.MaxAnswersConsumed)
	assert.Equal(t, it.ID, got[len(got)-1], "the newest is kept")
	assert.Equal(t, fmt.Sprintf("approval-%024d", 1), got[0], "the oldest is dropped")
}
