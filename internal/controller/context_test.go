package controller

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

func value(t *testing.T, v any) codec.Value {
	t.Helper()
	val, err := codec.Parse(codec.MustMarshal(v))
	require.NoError(t, err)
	return val
}

func patchOn(path string) world.Action {
	return world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: path, Find: "x", Replace: "y"}
}

// TestAssessTrust: each concern the run can know of, at its level, on the
// paths it covers; an answered request is no concern.
func TestAssessTrust(t *testing.T) {
	obsRef := ref("obs")
	pending := func(reason string, a world.Action, answered bool) state.PendingApproval {
		p := state.PendingApproval{Ref: a.Ref(), ItemID: "check:x", Reason: reason, Action: value(t, a)}
		if answered {
			p.Resolution = &state.Approval{Verdict: "approve"}
		}
		return p
	}
	cases := []struct {
		name    string
		obs     world.Observation
		pending []state.PendingApproval
		level   string
		reasons []string
	}{
		{"nothing in doubt", world.Observation{}, nil, "L3", nil},
		{"an uncertain effect waiting for a person", world.Observation{},
			[]state.PendingApproval{pending("uncertain_effect", patchOn("a.txt"), false)}, "L0", []string{ConcernUncertainEffect}},
		{"an answered uncertain effect", world.Observation{},
			[]state.PendingApproval{pending("uncertain_effect", patchOn("a.txt"), true)}, "L3", nil},
		{"an effect under review", world.Observation{},
			[]state.PendingApproval{pending("evaluation_needs_operator_review", patchOn("a.txt"), false)}, "L1", []string{ConcernEffectUnderReview}},
		{"an approval the contract asks for is no doubt", world.Observation{},
			[]state.PendingApproval{pending("contract_requires_approval", patchOn("a.txt"), false)}, "L3", nil},
		{"a refused path", world.Observation{Refused: []world.Refusal{{Path: "link", Reason: "symlink"}}}, nil, "L0",
			[]string{ConcernObservationRefused}},
	}
	many := world.Observation{}
	for i := range world.MaxRefusedListed {
		many.Refused = append(many.Refused, world.Refusal{Path: fmt.Sprintf("l%d", i), Reason: "symlink"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := AssessTrust(world.Catalog{}, c.obs, obsRef, c.pending)
			assert.Equal(t, c.level, tr.Level)
			var reasons []string
			for _, k := range tr.Concerns {
				reasons = append(reasons, k.Reason)
				assert.NotEmpty(t, k.Ref, "every concern names its evidence")
			}
			assert.Equal(t, c.reasons, reasons)
		})
	}
	tr := AssessTrust(world.Catalog{}, many, obsRef, nil)
	require.Len(t, tr.Concerns, world.MaxRefusedListed+1)
	assert.Equal(t, ConcernRefusalsUnlisted, tr.Concerns[world.MaxRefusedListed].Reason, "more refusals than listed: the whole context is in doubt")
	assert.Equal(t, "L2", tr.For([]string{"elsewhere.txt"}))
}

// TestTrustFor: a concern sets the trust of what it covers (a refused
// directory covers everything below it); anywhere else the context is at
// most L2; a literal path with glob characters is matched literally.
func TestTrustFor(t *testing.T) {
	tr := AssessTrust(world.Catalog{}, world.Observation{Refused: []world.Refusal{{Path: "dir", Reason: "symlink"}, {Path: "we*rd", Reason: "fifo"}}}, ref("obs"),
		[]state.PendingApproval{{Ref: ref("a"), Reason: "evaluation_needs_operator_review", Action: value(t, patchOn("a.txt"))}})
	for paths, want := range map[string]string{
		"dir": "L0", "dir/sub/f.txt": "L0", "we*rd": "L0", "a.txt": "L1", "weird": "L2", "directory.txt": "L2", "b.txt": "L2", "**": "L0",
	} {
		assert.Equal(t, want, tr.For([]string{paths}), paths)
	}
	assert.Equal(t, "L3", AssessTrust(world.Catalog{}, world.Observation{}, ref("obs"), nil).For([]string{"**"}))
}

// TestReady: one row per readiness level against each trust level: a
// cycle acts (or proposes) only on a context trusted at least as far as
// its readiness asks.
func TestReady(t *testing.T) {
	levels := []string{"L0", "L1", "L2", "L3"}
	for r, readiness := range levels {
		t.Run("readiness "+readiness, func(t *testing.T) {
			for tl, trust := range levels {
				assert.Equal(t, tl >= r, Ready(readiness, trust), "readiness %s, trust %s", readiness, trust)
			}
		})
	}
	assert.False(t, Ready("", "L3"), "no readiness declared: nothing is ready")
	assert.False(t, Ready("L2", ""), "no trust known: not ready")
}

// TestCapabilities: what the run can do is what governance would let it
// do with each declared fix, at the contract's authority and autonomy.
func TestCapabilities(t *testing.T) {
	spec := world.Spec{Schema: world.SpecSchema, Checks: []world.Check{
		{ID: "a", Kind: world.CheckAbsentText, Path: "a.txt", Text: "bad", Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "bad", Replace: "good"}}},
		{ID: "b", Kind: world.CheckAbsentText, Path: "vendor/b.txt", Text: "bad", Fixes: []world.Fix{{Operation: world.OpApplyPatch, Find: "bad", Replace: "good"}}},
		{ID: "c", Kind: world.CheckCommand, Argv: []string{"check"}, Fixes: []world.Fix{{ID: "fmt", Operation: world.OpRunCommand, Argv: []string{"fmt"}, Touches: []string{"**/*.go"}}}},
		{ID: "d", Kind: world.CheckFileExists, Path: "d.txt", RequiresEvidence: []string{"ev"},
			Fixes: []world.Fix{{Operation: world.OpRecordArtifact, Content: "d"}}},
	}}
	contract := func(mode governance.AuthorityMode, autonomy string, rules ...governance.Rule) governance.Contract {
		return governance.Contract{Schema: governance.ContractSchema, ID: "c", Authority: governance.Authority{ID: "op", Mode: mode},
			Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: autonomy, CognitiveDepth: "D2"}, Rules: rules}
	}
	allow := governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}
	cases := []struct {
		name string
		c    governance.Contract
		want []string
	}{
		{"everything allowed", contract(governance.AuthProjectWrite, "A2", governance.Rule{Operation: "run_command", Paths: []string{"**"}, Effect: governance.Allow}, allow),
			[]string{"fix a fix-0 act", "fix b fix-0 act", "fix c fmt act", "fix d fix-0 act", "report   act"}},
		{"a forbidden path, an approval and no named command rule", contract(governance.AuthProjectWrite, "A2",
			governance.Rule{Operation: "*", Paths: []string{"vendor/**"}, Effect: governance.Forbid},
			governance.Rule{Operation: "record_artifact", Paths: []string{"**"}, Effect: governance.Approve}, allow),
			[]string{"fix a fix-0 act", "fix d fix-0 approval", "report   act"}},
		{"A1 proposes", contract(governance.AuthProjectWrite, "A1", allow), []string{"fix a fix-0 propose", "fix b fix-0 propose", "fix d fix-0 propose", "report   propose"}},
		{"A0 can do nothing", contract(governance.AuthProjectWrite, "A0", allow), nil},
		{"read authority cannot write", contract(governance.AuthRead, "A2", allow), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, k := range Capabilities(world.Catalog{}, &c.c, &spec) {
				got = append(got, fmt.Sprintf("%s %s %s %s", k.Kind, k.CheckID, k.Fix, k.Mode))
			}
			assert.Equal(t, c.want, got)
		})
	}
	withProposer := contract(governance.AuthProjectWrite, "A2", allow)
	withProposer.Proposer = &governance.Proposer{Argv: []string{"p"}}
	caps := Capabilities(world.Catalog{}, &withProposer, &spec)
	assert.Equal(t, Capability{Kind: CapabilityProposer, Mode: ModeAdvisory}, caps[len(caps)-1])
	withProposer.Coordinates.Autonomy = "A0"
	assert.Empty(t, Capabilities(world.Catalog{}, &withProposer, &spec), "at A0 not even a proposal can go anywhere")
}

// TestGaps: a failing check is a gap when none of its fixes is available
// and there is no proposer.
func TestGaps(t *testing.T) {
	caps := []Capability{{Kind: CapabilityFix, CheckID: "a", Fix: "fix-0", Mode: ModeAct}, {Kind: CapabilityFix, CheckID: "b", Fix: "fix-0", Mode: ModeApproval},
		{Kind: CapabilityReport, Operation: world.OpMarkIssue, Mode: ModeAct}}
	assert.Equal(t, []string{"c"}, Gaps([]string{"a", "b", "c"}, caps), "reporting is not fixing")
	assert.Empty(t, Gaps([]string{"a", "b", "c"}, append(caps, Capability{Kind: CapabilityProposer, Mode: ModeAdvisory})))
	assert.Equal(t, []string{"a"}, Gaps([]string{"a"}, nil))
}

// TestOpportunities: one available fix declared for several failing
// checks is leverage; the same remedy forbidden for one of them, a
// different remedy, a passing check or a report is not.
func TestOpportunities(t *testing.T) {
	patch := world.Fix{Operation: world.OpApplyPatch, Find: "debug = true", Replace: "debug = false"}
	check := func(id, path string, fixes ...world.Fix) world.Check {
		return world.Check{ID: id, Kind: world.CheckAbsentText, Path: path, Text: "x", Fixes: fixes}
	}
	spec := world.Spec{Schema: world.SpecSchema, Checks: []world.Check{
		check("debug-off", "app.ini", patch), check("prod-mode", "app.ini", world.Fix{Operation: world.OpMarkIssue}, patch),
		check("other-file", "b.ini", patch), check("other-edit", "app.ini", world.Fix{Operation: world.OpApplyPatch, Find: "a", Replace: "b"}),
		check("report-a", "r.ini", world.Fix{Operation: world.OpMarkIssue, Note: "n"}), check("report-b", "r.ini", world.Fix{Operation: world.OpMarkIssue, Note: "n"}),
	}}
	c := governance.Contract{Schema: governance.ContractSchema, ID: "c", Authority: governance.Authority{ID: "op", Mode: governance.AuthProjectWrite},
		Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: "A2", CognitiveDepth: "D2"},
		Rules:       []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow}}}
	caps := Capabilities(world.Catalog{}, &c, &spec)
	all := []string{"debug-off", "prod-mode", "other-file", "other-edit", "report-a", "report-b"}
	assert.Equal(t, []string{"debug-off+prod-mode"}, Opportunities(world.Catalog{}, &spec, caps, all))
	assert.Empty(t, Opportunities(world.Catalog{}, &spec, caps, []string{"debug-off", "other-file"}), "the same edit on another file is another action")
	assert.Empty(t, Opportunities(world.Catalog{}, &spec, caps, []string{"debug-off"}), "prod-mode passes")
	c.Rules = append([]governance.Rule{{Operation: "apply_local_patch", Paths: []string{"app.ini"}, Effect: governance.Forbid}}, c.Rules...)
	assert.Empty(t, Opportunities(world.Catalog{}, &spec, Capabilities(world.Catalog{}, &c, &spec), all), "a forbidden fix is no opportunity")
}

// TestSources: the pinned sources with their authority, the amendments
// a person proposed against the version pinned now, and no others.
func TestSources(t *testing.T) {
	goal, contract, env, obs := ref("goal"), ref("contract"), ref("envspec"), ref("obs")
	pending := []state.PendingAmendment{
		{Ref: ref("amd1"), Target: state.AmendContract, Amends: contract},
		{Ref: ref("amd2"), Target: state.AmendContract, Amends: ref("old-contract")},
		{Ref: ref("amd3"), Target: state.AmendEnvironment, Amends: env},
	}
	got := map[string]Source{}
	for _, s := range Sources(goal, contract, env, obs, pending, false) {
		got[s.Name] = s
	}
	assert.Equal(t, Source{Name: "contract", Ref: contract, Authority: AuthorityGrant, Pending: []codec.Ref{ref("amd1")}}, got["contract"], "a stale amendment can never be accepted")
	assert.Equal(t, []codec.Ref{ref("amd3")}, got["environment"].Pending)
	assert.Empty(t, got["goal"].Pending)
	assert.Equal(t, AuthorityData, got["world"].Authority)
	assert.Equal(t, obs, got["world"].Ref)
	assert.Equal(t, AuthoritySignal, got["inbox"].Authority)
	assert.NotContains(t, got, "proposer")
	srcs := Sources(goal, contract, env, obs, nil, true)
	assert.Equal(t, Source{Name: "proposer", Authority: AuthorityAdvisory}, srcs[len(srcs)-1])
}
