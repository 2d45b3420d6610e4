package cognition_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/world"
)

const targetHash = codec.Fingerprint("sha256:1111111111111111111111111111111111111111111111111111111111111111")

// twoRemedyCheck has a preferred patch and a fallback artifact.
func twoRemedyCheck() world.Check {
	return world.Check{
		ID: "license", Summary: "MIT licensed", Kind: world.CheckPresentText, Path: "LICENSE", Text: "MIT", Priority: 5,
		Fixes: []world.Fix{
			{Operation: world.OpApplyPatch, Find: "GPL", Replace: "MIT"},
			{Operation: world.OpRecordArtifact, Content: "MIT License\n"},
			{Operation: world.OpMarkIssue, Note: "please license"},
		},
	}
}

func failing() world.CheckResult {
	return world.CheckResult{ID: "license", Status: world.CheckFail, Detail: "required text is missing", TargetSHA256: targetHash}
}

func TestRetrieveListsFixesInOrder(t *testing.T) {
	c := twoRemedyCheck()
	affs := cognition.Retrieve(world.Catalog{}, c, failing())
	require.Len(t, affs, 3)

	wantActions := []world.Action{
		{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "LICENSE", CheckID: "license", ExpectSHA256: targetHash, Find: "GPL", Replace: "MIT"},
		{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "LICENSE", CheckID: "license", ExpectSHA256: targetHash, Content: "MIT License\n"},
		{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "license", Note: "please license"},
	}
	for i, a := range affs {
		assert.Equal(t, []string{"fix-0", "fix-1", "fix-2"}[i], a.ID)
		assert.Equal(t, c.Fixes[i].Operation, a.Operation)
		assert.Equal(t, i, a.FixIndex)
		assert.Equal(t, cognition.Fingerprint(wantActions[i]), a.Fingerprint, "affordance %d", i)
	}
	assert.NotEqual(t, affs[0].Fingerprint, affs[1].Fingerprint)
}

func TestRetrieveFallsBackToMarkIssue(t *testing.T) {
	c := world.Check{ID: "no-debug", Summary: "debugging is off", Kind: world.CheckAbsentText, Path: "src/app.go", Text: "debug = true"}
	res := world.CheckResult{ID: "no-debug", Status: world.CheckFail, TargetSHA256: targetHash}
	affs := cognition.Retrieve(world.Catalog{}, c, res)
	require.Len(t, affs, 1)
	want := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "no-debug", Note: "debugging is off"}
	assert.Equal(t, cognition.Affordance{ID: "report", Operation: world.OpMarkIssue, FixIndex: -1, Fingerprint: cognition.Fingerprint(want)}, affs[0])
}

func TestRetrieveMarkIssueWithoutNoteUsesSummary(t *testing.T) {
	c := world.Check{ID: "x", Summary: "the summary", Kind: world.CheckFileExists, Path: "a",
		Fixes: []world.Fix{{Operation: world.OpMarkIssue}}}
	affs := cognition.Retrieve(world.Catalog{}, c, world.CheckResult{ID: "x", Status: world.CheckFail})
	require.Len(t, affs, 1)
	want := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "x", Note: "the summary"}
	assert.Equal(t, cognition.Fingerprint(want), affs[0].Fingerprint)
	assert.Equal(t, "fix-0", affs[0].ID)
}

func TestCompileStepOrder(t *testing.T) {
	c := twoRemedyCheck()
	affs := cognition.Retrieve(world.Catalog{}, c, failing())
	ref := codec.MustRefOf("route", "overlay")
	cases := []struct {
		name    string
		routing cognition.Routing
		steps   []cognition.Op
	}{
		{"direct", cognition.Routing{}, []cognition.Op{cognition.OpObserveTarget, cognition.OpRetrieve, cognition.OpSelect, cognition.OpDraft, cognition.OpCritique, cognition.OpFinalize}},
		{"skip failed alone keeps the direct order", cognition.Routing{Ref: ref, SkipFailed: true}, []cognition.Op{cognition.OpObserveTarget, cognition.OpRetrieve, cognition.OpSelect, cognition.OpDraft, cognition.OpCritique, cognition.OpFinalize}},
		{"critique first", cognition.Routing{Ref: ref, CritiqueFirst: true}, []cognition.Op{cognition.OpObserveTarget, cognition.OpRetrieve, cognition.OpCritique, cognition.OpSelect, cognition.OpDraft, cognition.OpFinalize}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := cognition.Compile(9, "check:license", c, affs, tc.routing)
			assert.Equal(t, tc.steps, p.Steps)
			assert.Equal(t, cognition.ProgramSchema, p.Schema)
			assert.Equal(t, int64(9), p.CycleSeq)
			assert.Equal(t, "check:license", p.ItemID)
			assert.Equal(t, "license", p.CheckID)
			assert.Equal(t, affs, p.Affordances)
			assert.Equal(t, tc.routing.Ref, p.Routing)
		})
	}
}

type runCase struct {
	name       string
	check      world.Check
	spec       world.Spec
	routing    cognition.Routing
	failed     []int // indexes of affordances whose fingerprint failed before
	wantAction *world.Action
	wantAff    string
	wantReason string
	roles      []string
	ops        []cognition.Op
}

func TestRun(t *testing.T) {
	c := twoRemedyCheck()
	patch := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "LICENSE", CheckID: "license", ExpectSHA256: targetHash, Find: "GPL", Replace: "MIT"}
	artifact := world.Action{Schema: world.ActionSchema, Operation: world.OpRecordArtifact, Target: "LICENSE", CheckID: "license", ExpectSHA256: targetHash, Content: "MIT License\n"}
	report := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: world.IssuesFile, CheckID: "license", Note: "please license"}
	review := cognition.Routing{Ref: codec.MustRefOf("route", "r"), CritiqueFirst: true, SkipFailed: true}

	directOps := []cognition.Op{cognition.OpObserveTarget, cognition.OpRetrieve, cognition.OpSelect, cognition.OpDraft, cognition.OpCritique, cognition.OpFinalize}
	directRoles := []string{"observer", "proposer", "proposer", "proposer", "critic", "resolver"}
	reviewOps := []cognition.Op{cognition.OpObserveTarget, cognition.OpRetrieve, cognition.OpCritique, cognition.OpSelect, cognition.OpDraft, cognition.OpFinalize}
	reviewRoles := []string{"observer", "proposer", "critic", "proposer", "proposer", "resolver"}

	cases := []runCase{
		{name: "direct path takes the first remedy", check: c, wantAction: &patch, wantAff: "fix-0", roles: directRoles, ops: directOps},
		{name: "direct path takes the first remedy even if it failed before", check: c, failed: []int{0},
			wantAction: &patch, wantAff: "fix-0", roles: directRoles, ops: directOps},
		{name: "critique first without skip keeps the first remedy", check: c,
			routing: cognition.Routing{CritiqueFirst: true}, failed: []int{0},
			wantAction: &patch, wantAff: "fix-0", roles: reviewRoles, ops: reviewOps},
		{name: "reviewed path skips the failed first remedy", check: c, routing: review, failed: []int{0},
			wantAction: &artifact, wantAff: "fix-1", roles: reviewRoles, ops: reviewOps},
		{name: "reviewed path skips every failed remedy", check: c, routing: review, failed: []int{0, 1},
			wantAction: &report, wantAff: "fix-2", roles: reviewRoles, ops: reviewOps},
		{name: "reviewed path with nothing failed takes the first remedy", check: c, routing: review,
			wantAction: &patch, wantAff: "fix-0", roles: reviewRoles, ops: reviewOps},
		{name: "every remedy failed: no action", check: c, routing: review, failed: []int{0, 1, 2},
			wantReason: "no_affordance", roles: []string{"observer", "proposer", "critic", "proposer", "resolver"},
			ops: []cognition.Op{cognition.OpObserveTarget, cognition.OpRetrieve, cognition.OpCritique, cognition.OpSelect, cognition.OpFinalize}},
		{name: "skip failed on the direct order rejects the draft", check: c,
			routing: cognition.Routing{SkipFailed: true}, failed: []int{0},
			wantReason: "remedy already failed on this item", roles: directRoles, ops: directOps},
		{name: "critic rejects an excluded target", check: world.Check{ID: "license", Summary: "MIT licensed", Kind: world.CheckFileExists, Path: "LICENSE"},
			spec:       world.Spec{Exclude: []string{world.IssuesFile}},
			wantReason: "target is excluded from observation", roles: directRoles, ops: directOps},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res := failing()
			affs := cognition.Retrieve(world.Catalog{}, tc.check, res)
			failed := map[string]bool{}
			for _, i := range tc.failed {
				failed[affs[i].Fingerprint] = true
			}
			p := cognition.Compile(3, "check:license", tc.check, affs, tc.routing)
			progRef := codec.MustRefOf("cprog", p)
			spec := tc.spec
			d, a := cognition.Run(p, progRef, cognition.Situation{Check: tc.check, Result: res, FailedPrint: failed, Spec: &spec, Routing: tc.routing})

			assert.Equal(t, cognition.DialogueSchema, d.Schema)
			assert.Equal(t, progRef, d.ProgramRef)
			var roles []string
			var ops []cognition.Op
			for _, turn := range d.Turns {
				roles = append(roles, turn.Role)
				ops = append(ops, turn.Op)
				assert.NotEmpty(t, turn.Claim)
			}
			assert.Equal(t, tc.roles, roles)
			assert.Equal(t, tc.ops, ops)
			assert.Equal(t, len(d.Turns), d.Operations)

			if tc.wantAction == nil {
				assert.Nil(t, a)
				assert.Equal(t, "no_action", d.Result)
				assert.Equal(t, tc.wantReason, d.Reason)
				assert.Empty(t, d.ActionRef)
				assert.Empty(t, d.Affordance)
				last := d.Turns[len(d.Turns)-1]
				assert.Equal(t, "resolver", last.Role)
				assert.True(t, strings.HasPrefix(last.Claim, "no action: "+tc.wantReason), last.Claim)
				return
			}
			require.NotNil(t, a)
			assert.Equal(t, *tc.wantAction, *a)
			assert.Equal(t, "action", d.Result)
			assert.Equal(t, a.Ref(), d.ActionRef)
			assert.Equal(t, tc.wantAff, d.Affordance)
			assert.Empty(t, d.Reason)
		})
	}
}

func TestRunReportsDroppedRemedies(t *testing.T) {
	c := twoRemedyCheck()
	res := failing()
	affs := cognition.Retrieve(world.Catalog{}, c, res)
	routing := cognition.Routing{CritiqueFirst: true, SkipFailed: true}
	p := cognition.Compile(1, "check:license", c, affs, routing)
	spec := world.Spec{}
	d, a := cognition.Run(p, "", cognition.Situation{Check: c, Result: res, Spec: &spec, Routing: routing,
		FailedPrint: map[string]bool{affs[0].Fingerprint: true, affs[1].Fingerprint: true}})
	require.NotNil(t, a)
	require.Len(t, d.Turns, 6)
	assert.Equal(t, "critic", d.Turns[2].Role)
	assert.Contains(t, d.Turns[2].Claim, "drop 2 remedy(ies)")
	// The program's own affordance list is not changed by the critique.
	assert.Len(t, p.Affordances, 3)
	assert.Equal(t, "fix-0", p.Affordances[0].ID)
}

func TestRunWithoutCritiqueProducesNoAction(t *testing.T) {
	// A program that never critiques must not finalize an action.
	c := twoRemedyCheck()
	res := failing()
	affs := cognition.Retrieve(world.Catalog{}, c, res)
	p := cognition.Program{Schema: cognition.ProgramSchema, Affordances: affs,
		Steps: []cognition.Op{cognition.OpObserveTarget, cognition.OpRetrieve, cognition.OpSelect, cognition.OpDraft, cognition.OpFinalize}}
	spec := world.Spec{}
	d, a := cognition.Run(p, "", cognition.Situation{Check: c, Result: res, Spec: &spec})
	assert.Nil(t, a)
	assert.Equal(t, "no_action", d.Result)
	assert.Equal(t, "no_acceptable_draft", d.Reason)
}

func TestFingerprint(t *testing.T) {
	base := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "a.txt", CheckID: "c",
		ExpectSHA256: targetHash, Find: "x", Replace: "y"}
	fp := cognition.Fingerprint(base)
	require.True(t, strings.HasPrefix(fp, "sha256:"), fp)
	assert.Equal(t, fp, cognition.Fingerprint(base))

	same := base
	same.ExpectSHA256 = "sha256:2222222222222222222222222222222222222222222222222222222222222222"
	assert.Equal(t, fp, cognition.Fingerprint(same), "the expected hash is evidence, not part of the remedy")
	same.ExpectSHA256 = ""
	assert.Equal(t, fp, cognition.Fingerprint(same))

	changes := map[string]func(a *world.Action){
		"find":      func(a *world.Action) { a.Find = "z" },
		"replace":   func(a *world.Action) { a.Replace = "z" },
		"target":    func(a *world.Action) { a.Target = "b.txt" },
		"operation": func(a *world.Action) { a.Operation = world.OpRecordArtifact },
		"check":     func(a *world.Action) { a.CheckID = "d" },
		"content":   func(a *world.Action) { a.Content = "z" },
		"note":      func(a *world.Action) { a.Note = "z" },
	}
	require.NotEmpty(t, changes)
	for name, change := range changes {
		a := base
		change(&a)
		assert.NotEqual(t, fp, cognition.Fingerprint(a), "changing %s must change the fingerprint", name)
	}
	// Fingerprint does not modify its argument.
	assert.Equal(t, targetHash, base.ExpectSHA256)
}

func TestRunCritiqueFirstStillRejectsExcludedTarget(t *testing.T) {
	// The critic rejects a draft on an excluded target on the direct path;
	// moving the critique earlier must not lose that check.
	c := world.Check{ID: "license", Summary: "MIT licensed", Kind: world.CheckFileExists, Path: "LICENSE"}
	res := failing()
	affs := cognition.Retrieve(world.Catalog{}, c, res)
	routing := cognition.Routing{CritiqueFirst: true, SkipFailed: true}
	p := cognition.Compile(1, "check:license", c, affs, routing)
	spec := world.Spec{Exclude: []string{world.IssuesFile}}
	d, _ := cognition.Run(p, "", cognition.Situation{Check: c, Result: res, Spec: &spec, Routing: routing, FailedPrint: map[string]bool{}})
	require.Len(t, d.Turns, 7, "the draft is critiqued at finalize as well")
	assert.Equal(t, cognition.OpCritique, d.Turns[2].Op)
	assert.Equal(t, "critic", d.Turns[5].Role)
	assert.Equal(t, cognition.OpFinalize, d.Turns[5].Op)
	assert.Equal(t, "drop 0 remedy(ies) that already failed on this item", d.Turns[2].Claim)
	assert.Equal(t, "critic", d.Turns[2].Role)
	assert.Equal(t, "no_action", d.Result)
	assert.Equal(t, "target is excluded from observation", d.Reason)
}

// TestCostBoundsRun: Cost, known before a program runs, is never less than
// what Run spends, on every routing and whether a remedy is left or not.
func TestCostBoundsRun(t *testing.T) {
	spec := world.Spec{Schema: world.SpecSchema}
	n := 0
	for _, routing := range []cognition.Routing{{}, {CritiqueFirst: true}, {CritiqueFirst: true, SkipFailed: true}} {
		for _, c := range []world.Check{twoRemedyCheck(), {ID: "bare", Kind: world.CheckPresentText, Path: "x", Text: "y"}} {
			affs := cognition.Retrieve(world.Catalog{}, c, failing())
			p := cognition.Compile(1, "check:"+c.ID, c, affs, routing)
			failed := map[string]bool{}
			for _, a := range affs {
				failed[a.Fingerprint] = true
			}
			d, _ := cognition.Run(p, "", cognition.Situation{Check: c, Result: failing(), FailedPrint: failed, Spec: &spec, Routing: routing})
			assert.LessOrEqual(t, d.Operations, cognition.Cost(p))
			assert.Equal(t, len(d.Turns), d.Operations, "each operation is one public turn")
			n++
		}
	}
	require.Positive(t, n)
}

// TestReplyCostBoundsRunProposal: ReplyCost, known once the reply is in and
// before it is weighed, is never less than what RunProposal spends.
func TestReplyCostBoundsRunProposal(t *testing.T) {
	spec := world.Spec{Schema: world.SpecSchema}
	c := twoRemedyCheck()
	p := cognition.CompileProposal(1, "check:"+c.ID, c, cognition.Retrieve(world.Catalog{}, c, failing()), cognition.Routing{})
	report := cognition.ReportAction(world.Catalog{}, c, failing())
	n := 0
	for _, k := range []int{0, 1, 3, 7} {
		var acts []cognition.ProposedAction
		for range k {
			acts = append(acts, cognition.ProposedAction{Operation: world.OpApplyPatch, Target: "../outside", Find: "a", Replace: "b"})
		}
		for _, rep := range []*world.Action{nil, &report} {
			reply := cognition.Reply{Schema: cognition.ReplySchema, Proposal: cognition.Proposal{Actions: acts}}
			d, _ := cognition.RunProposal(p, "", cognition.Situation{Check: c, Result: failing(), Spec: &spec}, reply, rep)
			assert.LessOrEqual(t, d.Operations, cognition.ReplyCost(reply), "%d proposed actions", k)
			n++
		}
	}
	require.Positive(t, n)
}
