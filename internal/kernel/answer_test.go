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
	// Four people answer at once, two of them naming the answer they saw
	// queued (acr approve does, racing the others).
	race := func() []inbox.Item {
		a1 := answerItem(t, ref, asked, "approve", "alice", "")
		a2 := answerItem(t, ref, asked, "approve", "bob", a1.ID)
		a3 := answerItem(t, ref, asked, "approve", "carol", "")
		a4 := answerItem(t, ref, asked, "approve", "dave", a3.ID)
		return []inbox.Item{a1, a2, a3, a4}
	}
	cases := []struct {
		name     string
		consumed []string // answers consumed by earlier cycles
		items    func() []inbox.Item
		resolved []string // reasons of approval.resolved, in order
		ignored  []string // reasons of approval.ignored, in order
		verdict  string   // the verdict the request is resolved with; "" if still open
		format   state.LedgerFormat
	}{
		{"the answer to the open request", nil, func() []inbox.Item { return []inbox.Item{approve} },
			[]string{"verdict_approve"}, nil, "approve", 0},
		{"an answer to another asking of the same action", nil,
			func() []inbox.Item { return []inbox.Item{answerItem(t, ref, asked+1, "approve", "alice", "")} },
			nil, []string{"answers_another_request"}, "", 0},
		{"an answer that names no request", nil,
			func() []inbox.Item { return []inbox.Item{answerItem(t, ref, 0, "approve", "alice", "")} },
			nil, []string{"answers_another_request"}, "", 0},
		{"an answer for another action", nil,
			func() []inbox.Item {
				return []inbox.Item{answerItem(t, codec.MustRefOf("areq", "other"), asked, "approve", "alice", "")}
			},
			nil, []string{"no_pending_approval_for_ref"}, "", 0},
		{"ran, to a request that is not an uncertain effect", nil,
			func() []inbox.Item { return []inbox.Item{answerItem(t, ref, asked, state.VerdictRan, "alice", "")} },
			nil, []string{"not_an_uncertain_effect"}, "", 0},
		{"a consumed answer put back", []string{approve.ID}, func() []inbox.Item { return []inbox.Item{approve} },
			nil, []string{"answer_already_consumed"}, "", 0},
		{"a denial that replaces an approval", nil,
			func() []inbox.Item {
				return []inbox.Item{approve, answerItem(t, ref, asked, "deny", "alice", approve.ID)}
			},
			[]string{"verdict_deny"}, []string{"replaced_by_later_answer"}, "deny", 0},
		{"the replacing answer first in inbox order", nil,
			func() []inbox.Item {
				return []inbox.Item{answerItem(t, ref, asked, "deny", "alice", approve.ID), approve}
			},
			[]string{"verdict_deny"}, []string{"replaced_by_later_answer"}, "deny", 0},
		{"two answers without a link: the last counts, resolved once", nil, func() []inbox.Item { return []inbox.Item{approve, deny} },
			[]string{"verdict_deny"}, []string{"replaced_by_later_answer"}, "deny", 0},
		{"two answers without a link in a format-2 run: both resolved", nil, func() []inbox.Item { return []inbox.Item{approve, deny} },
			[]string{"verdict_approve", "verdict_deny", "replaces_earlier_answer"}, nil, "deny", state.LedgerFormat2},
		{"four people race, two links: one resolution", nil,
			race,
			[]string{"verdict_approve"}, []string{"replaced_by_later_answer", "replaced_by_later_answer", "replaced_by_later_answer"}, "approve", 0},
		{"four people race in a format-2 run: two resolutions", nil,
			race,
			[]string{"verdict_approve", "verdict_approve", "replaces_earlier_answer"}, []string{"replaced_by_later_answer", "replaced_by_later_answer"}, "approve", state.LedgerFormat2},
		{"the loop cannot replace a person's answer", nil,
			func() []inbox.Item {
				return []inbox.Item{approve, answerItem(t, ref, asked, "deny", "distiller", approve.ID)}
			},
			[]string{"verdict_approve"}, []string{"self_approval_refused", "by_distiller"}, "approve", 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := s.clone()
			s.Run.AnswersConsumed = c.consumed
			if c.format != 0 {
				s.Run.SetFormat(c.format)
			}
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

// TestAnswerToARequestAnsweredBefore: the first answer consumed is final.
// A request an earlier cycle resolved, and that is not acted on yet, is
// not resolved again by a later answer in the cycle that acts on it.
func TestAnswerToARequestAnsweredBefore(t *testing.T) {
	s, in := waitingForApproval(t)
	p0 := s.Run.PendingApprovals[0]
	first := answerItem(t, p0.Ref, p0.CycleSeq, "approve", "alice", "")
	s.Run.PendingApprovals[0].Resolution = first.Approval
	s.Run.AnswersConsumed = []string{first.ID}
	later := answerItem(t, p0.Ref, p0.CycleSeq, "deny", "bob", "")
	in.Inbox, in.InboxPresent = []inbox.Item{later}, []string{later.ID}
	p, err := Begin(s, in)
	require.NoError(t, err)
	assert.Empty(t, reasonsOf(p.Events, event.ApprovalResolved))
	assert.Equal(t, []string{"request_already_answered"}, reasonsOf(p.Events, event.ApprovalIgnored))
	require.NotNil(t, p.Effect, "the approval consumed first is acted on")
}
