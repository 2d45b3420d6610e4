package agenda_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/agenda"
)

func TestItemID(t *testing.T) {
	assert.Equal(t, "check:readme-typo", agenda.ItemID("readme-typo"))
	assert.NotEqual(t, agenda.ItemID("a"), agenda.ItemID("b"))
}

func ids(cs []agenda.Candidate) []string {
	out := []string{}
	for _, c := range cs {
		out = append(out, c.ItemID)
	}
	return out
}

func TestResolve(t *testing.T) {
	cases := []struct {
		name      string
		in        agenda.Inputs
		order     []string
		excluded  []agenda.Exclusion
		outcome   agenda.Outcome
		selected  string
		reasons   []string
		selSource agenda.Source
	}{
		{
			name:     "nothing at all",
			in:       agenda.Inputs{CycleSeq: 1},
			order:    []string{},
			excluded: []agenda.Exclusion{},
			outcome:  agenda.NoAgenda,
			reasons:  []string{"no_positive_agenda"},
		},
		{
			name: "issues by priority desc then item id",
			in: agenda.Inputs{Issues: []agenda.Issue{
				{CheckID: "low", Priority: 1}, {CheckID: "b-high", Priority: 50}, {CheckID: "a-high", Priority: 50}, {CheckID: "mid", Priority: 10},
			}},
			order:     []string{"check:a-high", "check:b-high", "check:mid", "check:low"},
			excluded:  []agenda.Exclusion{},
			outcome:   agenda.Selected,
			selected:  "check:a-high",
			reasons:   []string{"highest_priority_issue"},
			selSource: agenda.FromIssue,
		},
		{
			name: "reactivated commitments before higher-priority issues",
			in: agenda.Inputs{
				Issues:      []agenda.Issue{{CheckID: "urgent", Priority: 999}, {CheckID: "promised", Priority: 1}, {CheckID: "other-promise", Priority: 5}},
				Reactivated: []agenda.Work{{CommitmentID: "cmt-1", CheckID: "promised"}, {CommitmentID: "cmt-2", CheckID: "other-promise"}},
			},
			order:     []string{"check:other-promise", "check:promised", "check:urgent"},
			excluded:  []agenda.Exclusion{},
			outcome:   agenda.Selected,
			selected:  "check:other-promise",
			reasons:   []string{"reactivated_commitment_first"},
			selSource: agenda.FromCommitment,
		},
		{
			name: "commitments among themselves by priority then id",
			in: agenda.Inputs{
				Reactivated: []agenda.Work{{CommitmentID: "c1", CheckID: "z"}, {CommitmentID: "c2", CheckID: "y"}, {CommitmentID: "c3", CheckID: "x"}},
				Issues:      []agenda.Issue{{CheckID: "z", Priority: 7}},
			},
			order:     []string{"check:z", "check:x", "check:y"},
			excluded:  []agenda.Exclusion{},
			outcome:   agenda.Selected,
			selected:  "check:z",
			reasons:   []string{"reactivated_commitment_first"},
			selSource: agenda.FromCommitment,
		},
		{
			name: "blocked items are excluded with their reasons, sorted",
			in: agenda.Inputs{
				Issues:      []agenda.Issue{{CheckID: "a", Priority: 100}, {CheckID: "b", Priority: 50}, {CheckID: "c", Priority: 10}},
				Reactivated: []agenda.Work{{CommitmentID: "cmt-9", CheckID: "d"}},
				Blocked:     map[string]string{"check:d": "held_by_suspended_commitment", "check:a": "awaiting_approval"},
			},
			order: []string{"check:b", "check:c"},
			excluded: []agenda.Exclusion{
				{ItemID: "check:a", Reason: "awaiting_approval"},
				{ItemID: "check:d", Reason: "held_by_suspended_commitment"},
			},
			outcome:   agenda.Selected,
			selected:  "check:b",
			reasons:   []string{"highest_priority_issue"},
			selSource: agenda.FromIssue,
		},
		{
			name: "every candidate blocked",
			in: agenda.Inputs{
				Issues:  []agenda.Issue{{CheckID: "b"}, {CheckID: "a"}},
				Blocked: map[string]string{"check:a": "suppressed", "check:b": "deferred_for_evidence", "check:unrelated": "x"},
			},
			order:    []string{},
			excluded: []agenda.Exclusion{{ItemID: "check:a", Reason: "suppressed"}, {ItemID: "check:b", Reason: "deferred_for_evidence"}},
			outcome:  agenda.NoAgenda,
			reasons:  []string{"no_positive_agenda", "all_candidates_blocked"},
		},
		{
			name: "blocked entries for items that are not candidates are not reported",
			in: agenda.Inputs{
				Issues:  []agenda.Issue{{CheckID: "a", Priority: 3}},
				Blocked: map[string]string{"check:gone": "suppressed"},
			},
			order:     []string{"check:a"},
			excluded:  []agenda.Exclusion{},
			outcome:   agenda.Selected,
			selected:  "check:a",
			reasons:   []string{"highest_priority_issue"},
			selSource: agenda.FromIssue,
		},
		{
			name: "duplicate issues for one check appear once",
			in: agenda.Inputs{
				Issues: []agenda.Issue{{CheckID: "a", Priority: 3}, {CheckID: "a", Priority: 3}},
			},
			order:     []string{"check:a"},
			excluded:  []agenda.Exclusion{},
			outcome:   agenda.Selected,
			selected:  "check:a",
			reasons:   []string{"highest_priority_issue"},
			selSource: agenda.FromIssue,
		},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := agenda.Resolve(tc.in)
			assert.Equal(t, agenda.Schema, r.Schema)
			assert.Equal(t, tc.in.CycleSeq, r.CycleSeq)
			assert.Equal(t, tc.order, ids(r.Candidates))
			assert.Equal(t, tc.excluded, r.Excluded)
			assert.Equal(t, tc.outcome, r.Outcome)
			assert.Equal(t, tc.reasons, r.ReasonCodes)
			if tc.selected == "" {
				assert.Nil(t, r.Selected)
				return
			}
			require.NotNil(t, r.Selected)
			assert.Equal(t, tc.selected, r.Selected.ItemID)
			assert.Equal(t, tc.selSource, r.Selected.Source)
			assert.Equal(t, r.Candidates[0], *r.Selected)
		})
	}
}

func TestResolveCommitmentAndIssueOnSameCheckMakeOneCandidate(t *testing.T) {
	r := agenda.Resolve(agenda.Inputs{
		CycleSeq:    3,
		Issues:      []agenda.Issue{{CheckID: "debug-off", Priority: 40, Summary: "issue summary"}, {CheckID: "other", Priority: 90}},
		Reactivated: []agenda.Work{{CommitmentID: "cmt-abc", CheckID: "debug-off", Summary: "promise summary"}},
	})
	require.Len(t, r.Candidates, 2)
	assert.Equal(t, agenda.Candidate{
		ItemID: "check:debug-off", CheckID: "debug-off", CommitmentID: "cmt-abc", Source: agenda.FromCommitment,
		Priority: 40, Summary: "promise summary",
	}, r.Candidates[0], "the commitment's candidate wins and takes the issue's priority")
	assert.Equal(t, agenda.Candidate{ItemID: "check:other", CheckID: "other", Source: agenda.FromIssue, Priority: 90}, r.Candidates[1])
	require.NotNil(t, r.Selected)
	assert.Equal(t, "cmt-abc", r.Selected.CommitmentID)
}

func TestResolveBlockedCommitmentHidesTheSameIssue(t *testing.T) {
	// A suspended commitment's block covers the item however it is proposed.
	r := agenda.Resolve(agenda.Inputs{
		Issues:      []agenda.Issue{{CheckID: "a", Priority: 5}},
		Reactivated: []agenda.Work{{CommitmentID: "cmt-1", CheckID: "a"}},
		Blocked:     map[string]string{"check:a": "awaiting_approval"},
	})
	assert.Empty(t, r.Candidates)
	assert.Equal(t, []agenda.Exclusion{{ItemID: "check:a", Reason: "awaiting_approval"}}, r.Excluded)
	assert.Equal(t, agenda.NoAgenda, r.Outcome)
	assert.Equal(t, []string{"no_positive_agenda", "all_candidates_blocked"}, r.ReasonCodes)
}

func TestResolveIsDeterministicAndDoesNotAliasInputs(t *testing.T) {
	in := agenda.Inputs{
		Issues: []agenda.Issue{{CheckID: "c", Priority: 1}, {CheckID: "a", Priority: 1}, {CheckID: "b", Priority: 2}},
	}
	first := agenda.Resolve(in)
	// Same facts in another order resolve the same way.
	in2 := agenda.Inputs{Issues: []agenda.Issue{in.Issues[2], in.Issues[0], in.Issues[1]}}
	second := agenda.Resolve(in2)
	assert.Equal(t, first, second)
	assert.Equal(t, []string{"check:b", "check:a", "check:c"}, ids(first.Candidates))

	// The selection is a copy: changing it does not change the candidate list.
	require.NotNil(t, first.Selected)
	first.Selected.Priority = 999
	assert.Equal(t, 2, first.Candidates[0].Priority)
}
