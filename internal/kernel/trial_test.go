package kernel

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// TestApprovedTrial: only an approval of a command fix in a git world
// binds its effect to a trial's tree; every other answer and action is
// governed and carried out as before.
func TestApprovedTrial(t *testing.T) {
	trial := &world.GitTrial{Head: "1111111111111111111111111111111111111111", Tree: "2222222222222222222222222222222222222222", Changed: []string{"main.go"}}
	command := world.Action{Schema: world.ActionSchema, Operation: world.OpRunCommand, FixID: "gofmt-w", Argv: []string{"gofmt", "-w", "."}}
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "README.md"}
	git := &world.GitSpec{Remote: "/srv/remote.git", Base: "main", Branch: "acr/tidy"}
	answer := func(verdict string, tr *world.GitTrial) *state.Approval {
		return &state.Approval{Schema: state.ApprovalSchema, ActionRef: command.Ref(), Verdict: verdict, By: "alice", Trial: tr}
	}
	for _, tc := range []struct {
		name     string
		git      *world.GitSpec
		action   world.Action
		approval *state.Approval
		want     *world.GitTrial
	}{
		{"a git world's command fix, approved with its trial", git, command, answer(state.VerdictApprove, trial), trial},
		{"no answer", git, command, nil, nil},
		{"an answer without a trial (an older acr)", git, command, answer(state.VerdictApprove, nil), nil},
		{"a denial", git, command, answer(state.VerdictDeny, trial), nil},
		{"not a git world", nil, command, answer(state.VerdictApprove, trial), nil},
		{"not a command", git, patch, answer(state.VerdictApprove, trial), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := &EngineState{Spec: world.Spec{Schema: world.SpecSchema, Git: tc.git}}
			assert.Equal(t, tc.want, approvedTrial(s, tc.action, tc.approval))
		})
	}
}

// TestAnswerWithoutTrialBindsToTheAskedOne: an approval without a trial
// of a request governance asked with a trial binds to that trial (what
// acr status showed), so that no tree nobody saw is committed; an answer
// with its own trial, a denial, and a request asked without a trial are
// left as they came.
func TestAnswerWithoutTrialBindsToTheAskedOne(t *testing.T) {
	asked := &world.GitTrial{Head: "1111111111111111111111111111111111111111", Tree: "2222222222222222222222222222222222222222", Changed: []string{"main.go"}}
	own := &world.GitTrial{Head: asked.Head, Tree: "3333333333333333333333333333333333333333", Changed: []string{"main.go"}}
	answer := func(verdict string, tr *world.GitTrial) *state.Approval {
		return &state.Approval{Schema: state.ApprovalSchema, Verdict: verdict, By: "alice", Trial: tr}
	}
	for _, tc := range []struct {
		name     string
		asked    *world.GitTrial
		approval *state.Approval
		want     *world.GitTrial
	}{
		{"approved without a trial, asked with one", asked, answer(state.VerdictApprove, nil), asked},
		{"approved with its own trial", asked, answer(state.VerdictApprove, own), own},
		{"denied", asked, answer(state.VerdictDeny, nil), nil},
		{"asked without a trial (an older run, another world)", nil, answer(state.VerdictApprove, nil), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			had := tc.approval.Trial
			got := withAskedTrial(state.PendingApproval{Trial: tc.asked}, tc.approval)
			assert.Equal(t, tc.want, got.Trial)
			assert.Equal(t, had, tc.approval.Trial, "the answer itself is not changed")
		})
	}
	assert.Nil(t, withAskedTrial(state.PendingApproval{Trial: asked}, nil))
}
