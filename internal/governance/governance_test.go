package governance_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// quickstartContract mirrors scenarios/quickstart/contract.json.
func quickstartContract() governance.Contract {
	return governance.Contract{
		Schema:      governance.ContractSchema,
		ID:          "quickstart",
		Authority:   governance.Authority{ID: "quickstart-operator", Mode: governance.AuthProjectWrite},
		Coordinates: governance.Coordinates{Readiness: "L2", Autonomy: "A2", CognitiveDepth: "D2"},
		Rules: []governance.Rule{
			{Operation: "*", Paths: []string{"vendor/**"}, Effect: governance.Forbid, Reason: "vendored code is read-only"},
			{Operation: "apply_local_patch", Paths: []string{"config/**"}, Effect: governance.Approve, Reason: "configuration changes need a person"},
			{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow},
		},
		Budgets: budget.Run{Cycles: budget.Limit{Soft: 80, Hard: 100}, Actions: budget.Limit{Hard: 20}},
	}
}

func TestContractValidateAcceptsQuickstart(t *testing.T) {
	c := quickstartContract()
	require.NoError(t, c.Validate())
}

func TestContractValidateNamesTheField(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *governance.Contract)
		path   string
	}{
		{"schema", func(c *governance.Contract) { c.Schema = "acr.contract/v1" }, "schema"},
		{"id", func(c *governance.Contract) { c.ID = "Quick Start" }, "id"},
		{"empty id", func(c *governance.Contract) { c.ID = "" }, "id"},
		{"authority id", func(c *governance.Contract) { c.Authority.ID = "" }, "authority.id"},
		{"authority mode", func(c *governance.Contract) { c.Authority.Mode = "root" }, "authority.mode"},
		{"empty authority mode", func(c *governance.Contract) { c.Authority.Mode = "" }, "authority.mode"},
		{"readiness L4", func(c *governance.Contract) { c.Coordinates.Readiness = "L4" }, "coordinates.readiness"},
		{"readiness empty", func(c *governance.Contract) { c.Coordinates.Readiness = "" }, "coordinates.readiness"},
		{"readiness wrong letter", func(c *governance.Contract) { c.Coordinates.Readiness = "A2" }, "coordinates.readiness"},
		{"autonomy A5", func(c *governance.Contract) { c.Coordinates.Autonomy = "A5" }, "coordinates.autonomy"},
		{"autonomy lower-case", func(c *governance.Contract) { c.Coordinates.Autonomy = "a2" }, "coordinates.autonomy"},
		{"cognitive depth D4", func(c *governance.Contract) { c.Coordinates.CognitiveDepth = "D4" }, "coordinates.cognitive_depth"},
		{"cognitive depth long", func(c *governance.Contract) { c.Coordinates.CognitiveDepth = "D22" }, "coordinates.cognitive_depth"},
		{"rule operation", func(c *governance.Contract) { c.Rules[1].Operation = "delete" }, "rules[1].operation"},
		{"rule operation empty", func(c *governance.Contract) { c.Rules[0].Operation = "" }, "rules[0].operation"},
		{"rule paths", func(c *governance.Contract) { c.Rules[2].Paths = nil }, "rules[2].paths"},
		{"rule effect", func(c *governance.Contract) { c.Rules[0].Effect = "maybe" }, "rules[0].effect"},
		{"budget soft > hard", func(c *governance.Contract) { c.Budgets.Cycles = budget.Limit{Soft: 101, Hard: 100} }, "budgets.cycles"},
		{"budget negative soft", func(c *governance.Contract) { c.Budgets.CognitiveOperations.Soft = -1 }, "budgets.cognitive_operations"},
		{"budget negative hard", func(c *governance.Contract) { c.Budgets.Actions.Hard = -1 }, "budgets.actions"},
		{"budget compactions", func(c *governance.Contract) { c.Budgets.Compactions = budget.Limit{Soft: 5, Hard: 4} }, "budgets.compactions"},
		{"budget wall clock", func(c *governance.Contract) { c.Budgets.WallClockSeconds.Hard = -5 }, "budgets.wall_clock_seconds"},
		{"defer_to", func(c *governance.Contract) { c.Policy.DeferTo = "wait" }, "policy.defer_to"},
		{"valid_until not RFC 3339", func(c *governance.Contract) { c.ValidUntil = "next week" }, "valid_until"},
		{"max_provider_failures", func(c *governance.Contract) { c.Policy.MaxProviderFailures = -1 }, "policy.max_provider_failures"},
		{"compact_after_units", func(c *governance.Contract) { c.Policy.CompactAfterUnits = -1 }, "policy.compact_after_units"},
		{"compact_every_cycles", func(c *governance.Contract) { c.Policy.CompactEveryCycles = -1 }, "policy.compact_every_cycles"},
		{"keep_summary_blocks", func(c *governance.Contract) { c.Policy.KeepSummaryBlocks = -1 }, "policy.keep_summary_blocks"},
		{"repeat_limit", func(c *governance.Contract) { c.Policy.RepeatLimit = -1 }, "policy.repeat_limit"},
		{"failure_threshold", func(c *governance.Contract) { c.Policy.FailureThreshold = -1 }, "policy.failure_threshold"},
		{"commitment_deadline_seconds", func(c *governance.Contract) { c.Policy.CommitmentDeadlineSeconds = -1 }, "policy.commitment_deadline_seconds"},
		{"idle_sleep_seconds", func(c *governance.Contract) { c.Policy.IdleSleepSeconds = -1 }, "policy.idle_sleep_seconds"},
		{"signal_ttl_seconds", func(c *governance.Contract) { c.Policy.SignalTTLSeconds = -1 }, "policy.signal_ttl_seconds"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := quickstartContract()
			tc.mutate(&c)
			err := c.Validate()
			require.Error(t, err)
			var fe *codec.FieldError
			require.True(t, errors.As(err, &fe), "want *codec.FieldError, got %T: %v", err, err)
			assert.Equal(t, tc.path, fe.Path)
		})
	}
}

func TestContractValidateAcceptsBoundaries(t *testing.T) {
	cases := []struct {
		name   string
		mutate func(c *governance.Contract)
	}{
		{"no rules", func(c *governance.Contract) { c.Rules = nil }},
		{"soft without hard", func(c *governance.Contract) { c.Budgets.Cycles = budget.Limit{Soft: 500} }},
		{"soft equals hard", func(c *governance.Contract) { c.Budgets.Cycles = budget.Limit{Soft: 5, Hard: 5} }},
		{"readiness L0 and L3", func(c *governance.Contract) { c.Coordinates.Readiness = "L3" }},
		{"autonomy A0", func(c *governance.Contract) { c.Coordinates.Autonomy = "A0" }},
		{"autonomy A4", func(c *governance.Contract) { c.Coordinates.Autonomy = "A4" }},
		{"depth D0", func(c *governance.Contract) { c.Coordinates.CognitiveDepth = "D0" }},
		{"depth D3", func(c *governance.Contract) { c.Coordinates.CognitiveDepth = "D3" }},
		{"defer_to sleep", func(c *governance.Contract) { c.Policy.DeferTo = "sleep" }},
		{"defer_to defer", func(c *governance.Contract) { c.Policy.DeferTo = "defer" }},
		{"every authority mode", func(c *governance.Contract) { c.Authority.Mode = governance.AuthNone }},
		{"external_action", func(c *governance.Contract) { c.Authority.Mode = governance.AuthExternalAction }},
		{"every named operation", func(c *governance.Contract) {
			for _, op := range world.Operations() {
				c.Rules = append(c.Rules, governance.Rule{Operation: string(op), Paths: []string{"x"}, Effect: governance.Allow})
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := quickstartContract()
			tc.mutate(&c)
			require.NoError(t, c.Validate())
		})
	}
}

func TestAuthorityModeRank(t *testing.T) {
	modes := []governance.AuthorityMode{governance.AuthNone, governance.AuthRead, governance.AuthPropose, governance.AuthProjectWrite, governance.AuthExternalAction}
	for i, m := range modes {
		assert.Equal(t, i, m.Rank(), "%s", m)
	}
	assert.Equal(t, -1, governance.AuthorityMode("admin").Rank())
	assert.Equal(t, -1, governance.AuthorityMode("").Rank())
}

func TestLevel(t *testing.T) {
	cases := []struct {
		coord  string
		prefix byte
		want   int
	}{
		{"A0", 'A', 0}, {"A4", 'A', 4}, {"L3", 'L', 3}, {"D2", 'D', 2},
		{"A5", 'A', -1}, {"L2", 'A', -1}, {"A", 'A', -1}, {"", 'A', -1}, {"A10", 'A', -1}, {"Ax", 'A', -1},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, governance.Level(tc.coord, tc.prefix), "Level(%q, %q)", tc.coord, tc.prefix)
	}
}

func TestMatchFirstRuleWins(t *testing.T) {
	c := quickstartContract()
	cases := []struct {
		op     world.Operation
		target string
		want   int
	}{
		{world.OpApplyPatch, "vendor/lib.js", 0},
		{world.OpInspect, "vendor/lib.js", 0},
		{world.OpApplyPatch, "config/app.ini", 1},
		{world.OpMarkIssue, "config/app.ini", 2}, // rule 1 names only apply_local_patch
		{world.OpApplyPatch, "README.md", 2},
		{world.OpRecordArtifact, "docs/a/b.md", 2},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, c.Match(tc.op, tc.target), "Match(%s, %s)", tc.op, tc.target)
	}

	// A broad rule listed first shadows narrower ones.
	shadow := governance.Contract{Rules: []governance.Rule{
		{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow},
		{Operation: "*", Paths: []string{"vendor/**"}, Effect: governance.Forbid},
	}}
	assert.Equal(t, 0, shadow.Match(world.OpApplyPatch, "vendor/lib.js"))

	none := governance.Contract{Rules: []governance.Rule{
		{Operation: "inspect", Paths: []string{"**"}, Effect: governance.Allow},
		{Operation: "*", Paths: []string{"docs/**"}, Effect: governance.Allow},
	}}
	assert.Equal(t, -1, none.Match(world.OpApplyPatch, "src/a.go"))
	assert.Equal(t, 1, none.Match(world.OpApplyPatch, "docs/a.md"))
	assert.Equal(t, -1, (&governance.Contract{}).Match(world.OpInspect, "a"))
}

func TestPolicyDefaults(t *testing.T) {
	got := governance.Policy{}.Defaults()
	assert.Equal(t, governance.Policy{
		MaxProviderFailures: 3, CompactAfterUnits: 64, CompactEveryCycles: 50, KeepSummaryBlocks: 8,
		DeferTo: "sleep", RepeatLimit: 3, FailureThreshold: 2, SignalTTLSeconds: 7 * 24 * 3600,
	}, got)

	set := governance.Policy{
		MaxProviderFailures: 1, CompactAfterUnits: 2, CompactEveryCycles: 3, KeepSummaryBlocks: 4, DeferTo: "defer",
		RepeatLimit: 5, FailureThreshold: 6, CommitmentDeadlineSeconds: 7, IdleSleepSeconds: 8, SignalTTLSeconds: 9,
	}
	assert.Equal(t, set, set.Defaults(), "explicit values are kept")
}

func TestVerdictText(t *testing.T) {
	names := map[governance.Verdict]string{
		governance.Execute: "EXECUTE", governance.Refuse: "REFUSE", governance.Defer: "DEFER",
		governance.IdleVerdict: "IDLE", governance.Escalate: "ESCALATE",
	}
	require.Len(t, names, 5)
	for v, name := range names {
		b, err := v.MarshalText()
		require.NoError(t, err)
		assert.Equal(t, name, string(b))
		assert.Equal(t, name, v.String())

		var back governance.Verdict
		require.NoError(t, back.UnmarshalText(b))
		assert.Equal(t, v, back)

		j, err := json.Marshal(struct {
			V governance.Verdict `json:"v"`
		}{v})
		require.NoError(t, err)
		assert.JSONEq(t, `{"v":"`+name+`"}`, string(j))
	}

	for _, bad := range []governance.Verdict{governance.VerdictInvalid, governance.Verdict(6), governance.Verdict(255)} {
		_, err := bad.MarshalText()
		assert.Error(t, err, "MarshalText(%d)", uint8(bad))
		_, err = json.Marshal(bad)
		assert.Error(t, err, "json.Marshal(%d)", uint8(bad))
	}
	assert.Equal(t, "Verdict(0)", governance.VerdictInvalid.String())

	for _, bad := range []string{"", "execute", "Execute", "WAIT_APPROVAL", "IDLE ", "DEFERRED", "INVALID"} {
		v := governance.Escalate
		assert.Error(t, v.UnmarshalText([]byte(bad)), "UnmarshalText(%q)", bad)
		assert.Equal(t, governance.Escalate, v, "a rejected name must not change the verdict")
	}
	var v governance.Verdict
	assert.Error(t, json.Unmarshal([]byte(`"NOPE"`), &v))
}

// decideFixture is a request whose defaults lead to EXECUTE under the
// quickstart contract.
type decideFixture struct {
	contract governance.Contract
	spec     world.Spec
	req      governance.Request
}

func newFixture() decideFixture {
	a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: "README.md", CheckID: "readme-typo", Find: "teh ", Replace: "the "}
	return decideFixture{
		contract: quickstartContract(),
		spec:     world.Spec{Schema: world.SpecSchema},
		req: governance.Request{
			Action: a, ActionRef: a.Ref(), ContractRef: codec.MustRefOf("contract", "c"), CycleSeq: 4,
			Now: "2026-01-02T03:04:05Z", EvidencePresent: map[string]bool{}, StillNeeded: true,
			ObservationRef: codec.MustRefOf("obs", "o"),
		},
	}
}

func setAction(f *decideFixture, op world.Operation, target string) {
	f.req.Action.Operation, f.req.Action.Target = op, target
	f.req.ActionRef = f.req.Action.Ref()
}

func approval(ref codec.Ref, verdict string) *state.Approval {
	return &state.Approval{Schema: state.ApprovalSchema, ID: "approval-1", ActionRef: ref, Verdict: verdict, By: "op", CreatedAt: "2026-01-02T00:00:00Z"}
}

func TestDecide(t *testing.T) {
	otherRef := world.Action{Schema: world.ActionSchema, Operation: world.OpMarkIssue, Target: "ISSUES.md"}.Ref()
	cases := []struct {
		name     string
		mutate   func(f *decideFixture)
		verdict  governance.Verdict
		reasons  []string
		rule     string
		effect   governance.Effect
		missing  []string
		approval string
	}{
		{"unknown operation", func(f *decideFixture) { setAction(f, "delete", "README.md") },
			governance.Refuse, []string{"unknown_operation"}, "none", "", []string{}, ""},
		{"unknown operation beats bad path", func(f *decideFixture) { setAction(f, "delete", "../x") },
			governance.Refuse, []string{"unknown_operation"}, "none", "", []string{}, ""},
		{"invalid target path", func(f *decideFixture) { setAction(f, world.OpApplyPatch, "../etc/passwd") },
			governance.Refuse, []string{"target_path_invalid"}, "none", "", []string{}, ""},
		{"absolute target path", func(f *decideFixture) { setAction(f, world.OpApplyPatch, "/etc/passwd") },
			governance.Refuse, []string{"target_path_invalid"}, "none", "", []string{}, ""},
		{"excluded target", func(f *decideFixture) { setAction(f, world.OpApplyPatch, "secrets/api.key") },
			governance.Refuse, []string{"target_excluded"}, "none", "", []string{}, ""},
		{"excluded by spec pattern", func(f *decideFixture) {
			f.spec.Exclude = []string{"private/**"}
			setAction(f, world.OpApplyPatch, "private/notes.md")
		}, governance.Refuse, []string{"target_excluded"}, "none", "", []string{}, ""},
		{"excluded beats nothing to do", func(f *decideFixture) {
			setAction(f, world.OpApplyPatch, ".env")
			f.req.StillNeeded = false
		}, governance.Refuse, []string{"target_excluded"}, "none", "", []string{}, ""},
		{"nothing to do", func(f *decideFixture) { f.req.StillNeeded = false },
			governance.IdleVerdict, []string{"nothing_to_do"}, "none", "", []string{}, ""},
		{"nothing to do beats forbidden target", func(f *decideFixture) {
			setAction(f, world.OpApplyPatch, "vendor/lib.js")
			f.req.StillNeeded = false
		}, governance.IdleVerdict, []string{"nothing_to_do"}, "none", "", []string{}, ""},
		{"read authority cannot write", func(f *decideFixture) { f.contract.Authority.Mode = governance.AuthRead },
			governance.Refuse, []string{"authority_insufficient"}, "none", "", []string{}, ""},
		{"propose authority cannot write", func(f *decideFixture) { f.contract.Authority.Mode = governance.AuthPropose },
			governance.Refuse, []string{"authority_insufficient"}, "none", "", []string{}, ""},
		{"no authority cannot inspect", func(f *decideFixture) {
			f.contract.Authority.Mode = governance.AuthNone
			setAction(f, world.OpInspect, "README.md")
		}, governance.Refuse, []string{"authority_insufficient"}, "none", "", []string{}, ""},
		{"read authority may inspect", func(f *decideFixture) {
			f.contract.Authority.Mode = governance.AuthRead
			setAction(f, world.OpInspect, "README.md")
		}, governance.Execute, []string{"contract_allows"}, "rules[2]", governance.Allow, []string{}, ""},
		{"high autonomy does not lift read authority", func(f *decideFixture) {
			f.contract.Authority.Mode = governance.AuthRead
			f.contract.Coordinates.Autonomy = "A4"
			f.req.Approval = approval(f.req.ActionRef, "approve")
		}, governance.Refuse, []string{"authority_insufficient"}, "none", "", []string{}, ""},
		{"no rule allows", func(f *decideFixture) { f.contract.Rules = f.contract.Rules[:2] },
			governance.Refuse, []string{"no_rule_allows"}, "default", "", []string{}, ""},
		{"contract forbids", func(f *decideFixture) { setAction(f, world.OpApplyPatch, "vendor/lib.js") },
			governance.Refuse, []string{"contract_forbids"}, "rules[0]", governance.Forbid, []string{}, ""},
		{"contract forbids even with approval", func(f *decideFixture) {
			setAction(f, world.OpApplyPatch, "vendor/lib.js")
			f.req.Approval = approval(f.req.ActionRef, "approve")
		}, governance.Refuse, []string{"contract_forbids"}, "rules[0]", governance.Forbid, []string{}, ""},
		{"operator denied", func(f *decideFixture) { f.req.Approval = approval(f.req.ActionRef, "deny") },
			governance.Refuse, []string{"operator_denied"}, "rules[2]", governance.Allow, []string{}, "approval-1"},
		{"operator denied beats missing evidence", func(f *decideFixture) {
			f.req.RequiredEvidence = []string{"ci-report"}
			f.req.Approval = approval(f.req.ActionRef, "deny")
		}, governance.Refuse, []string{"operator_denied"}, "rules[2]", governance.Allow, []string{}, "approval-1"},
		{"denial of a different action does not count", func(f *decideFixture) { f.req.Approval = approval(otherRef, "deny") },
			governance.Execute, []string{"contract_allows"}, "rules[2]", governance.Allow, []string{}, ""},
		{"evidence missing, sorted and deduplicated", func(f *decideFixture) {
			f.contract.Rules[2].RequiresEvidence = []string{"zeta", "alpha", "present"}
			f.req.RequiredEvidence = []string{"mid", "alpha", "zeta"}
			f.req.EvidencePresent = map[string]bool{"present": true, "mid": false}
		}, governance.Defer, []string{"evidence_missing"}, "rules[2]", governance.Allow, []string{"alpha", "mid", "zeta"}, ""},
		{"evidence missing beats A0", func(f *decideFixture) {
			f.contract.Coordinates.Autonomy = "A0"
			f.req.RequiredEvidence = []string{"ci-report"}
		}, governance.Defer, []string{"evidence_missing"}, "rules[2]", governance.Allow, []string{"ci-report"}, ""},
		{"evidence present", func(f *decideFixture) {
			f.req.RequiredEvidence = []string{"ci-report"}
			f.req.EvidencePresent = map[string]bool{"ci-report": true}
		}, governance.Execute, []string{"contract_allows"}, "rules[2]", governance.Allow, []string{}, ""},
		{"A0 refuses", func(f *decideFixture) { f.contract.Coordinates.Autonomy = "A0" },
			governance.Refuse, []string{"autonomy_A0_observe_only"}, "rules[2]", governance.Allow, []string{}, ""},
		{"A0 refuses even with approval", func(f *decideFixture) {
			f.contract.Coordinates.Autonomy = "A0"
			f.req.Approval = approval(f.req.ActionRef, "approve")
		}, governance.Refuse, []string{"autonomy_A0_observe_only"}, "rules[2]", governance.Allow, []string{}, "approval-1"},
		{"A1 proposal only", func(f *decideFixture) { f.contract.Coordinates.Autonomy = "A1" },
			governance.Escalate, []string{"autonomy_A1_proposal_only"}, "rules[2]", governance.Allow, []string{}, ""},
		{"A1 with approval of another action", func(f *decideFixture) {
			f.contract.Coordinates.Autonomy = "A1"
			f.req.Approval = approval(otherRef, "approve")
		}, governance.Escalate, []string{"autonomy_A1_proposal_only"}, "rules[2]", governance.Allow, []string{}, ""},
		{"A1 with approval still only proposes", func(f *decideFixture) {
			f.contract.Coordinates.Autonomy = "A1"
			f.req.Approval = approval(f.req.ActionRef, "approve")
		}, governance.Escalate, []string{"autonomy_A1_proposal_only"}, "rules[2]", governance.Allow, []string{}, "approval-1"},
		{"restore of the run's own effect needs no rule", func(f *decideFixture) {
			setAction(f, world.OpRestore, "config/app.ini")
		}, governance.Execute, []string{"rollback_of_own_effect"}, "rollback_of_own_effect", governance.Allow, []string{}, ""},
		{"approve effect escalates", func(f *decideFixture) { setAction(f, world.OpApplyPatch, "config/app.ini") },
			governance.Escalate, []string{"contract_requires_approval"}, "rules[1]", governance.Approve, []string{}, ""},
		{"approve effect, approval for a different action", func(f *decideFixture) {
			setAction(f, world.OpApplyPatch, "config/app.ini")
			f.req.Approval = approval(otherRef, "approve")
		}, governance.Escalate, []string{"contract_requires_approval"}, "rules[1]", governance.Approve, []string{}, ""},
		{"approve effect, approval with unknown verdict", func(f *decideFixture) {
			setAction(f, world.OpApplyPatch, "config/app.ini")
			f.req.Approval = approval(f.req.ActionRef, "yes")
		}, governance.Escalate, []string{"contract_requires_approval"}, "rules[1]", governance.Approve, []string{}, ""},
		{"approve effect with approval executes", func(f *decideFixture) {
			setAction(f, world.OpApplyPatch, "config/app.ini")
			f.req.Approval = approval(f.req.ActionRef, "approve")
		}, governance.Execute, []string{"operator_approved"}, "rules[1]", governance.Approve, []string{}, "approval-1"},
		{"allow executes", func(f *decideFixture) {},
			governance.Execute, []string{"contract_allows"}, "rules[2]", governance.Allow, []string{}, ""},
		{"allow with needless approval", func(f *decideFixture) { f.req.Approval = approval(f.req.ActionRef, "approve") },
			governance.Execute, []string{"operator_approved"}, "rules[2]", governance.Allow, []string{}, "approval-1"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture()
			tc.mutate(&f)
			before := f.contract
			beforeRules := append([]governance.Rule(nil), f.contract.Rules...)
			d := governance.Decide(&f.contract, &f.spec, f.req)
			assert.Equal(t, tc.verdict, d.Verdict, "verdict")
			assert.Equal(t, tc.reasons, d.ReasonCodes, "reason codes")
			assert.Equal(t, tc.rule, d.Rule, "rule")
			assert.Equal(t, tc.effect, d.Effect, "effect")
			assert.Equal(t, tc.missing, d.MissingEvidence, "missing evidence")
			assert.Equal(t, tc.approval, d.ApprovalID, "approval id")
			// Fields every decision carries.
			assert.Equal(t, governance.DecisionSchema, d.Schema)
			assert.Equal(t, int64(4), d.CycleSeq)
			assert.Equal(t, f.req.ActionRef, d.ActionRef)
			assert.Equal(t, f.req.ContractRef, d.ContractRef)
			assert.Equal(t, f.contract.Authority.ID, d.AuthorityID)
			assert.Equal(t, f.contract.Authority.Mode, d.AuthorityMode)
			assert.Equal(t, f.contract.Coordinates.Autonomy, d.Autonomy)
			assert.Equal(t, "governance", d.Actor)
			// Deciding never changes the contract.
			assert.Equal(t, before.Authority, f.contract.Authority)
			assert.Equal(t, before.Coordinates, f.contract.Coordinates)
			assert.Equal(t, beforeRules, f.contract.Rules)
		})
	}
}

func TestNewReceipt(t *testing.T) {
	f := newFixture()
	f.req.Approval = approval(f.req.ActionRef, "approve")
	d := governance.Decide(&f.contract, &f.spec, f.req)
	require.Equal(t, governance.Execute, d.Verdict)
	decRef := codec.MustRefOf("gdec", d)
	r := governance.NewReceipt(d, decRef, f.req)
	assert.Equal(t, governance.Receipt{
		Schema: governance.ReceiptSchema, DecisionRef: decRef, ActionRef: f.req.ActionRef, ContractRef: f.req.ContractRef,
		AuthorityID: "quickstart-operator", Verdict: governance.Execute,
		EvidenceRefs: []string{string(f.req.ObservationRef), "approval-1"},
		DecidedAt:    f.req.Now, Actor: "governance", RequestedBy: "cognition",
	}, r)

	f.req.Approval = nil
	d = governance.Decide(&f.contract, &f.spec, f.req)
	r = governance.NewReceipt(d, decRef, f.req)
	assert.Equal(t, []string{string(f.req.ObservationRef)}, r.EvidenceRefs)
}

func TestContractValidateRejectsMalformedRulePattern(t *testing.T) {
	// A malformed glob never matches, so a forbid rule written with one
	// would silently fall through to a later allow rule.
	c := quickstartContract()
	c.Rules[0].Paths = []string{"vendor/[lib"}
	assert.Equal(t, 2, c.Match(world.OpApplyPatch, "vendor/[lib"), "the malformed forbid rule is skipped")
	var fe *codec.FieldError
	require.ErrorAs(t, c.Validate(), &fe)
	assert.Equal(t, "rules[0].paths[0]", fe.Path)
}

// TestCheckEnvironment: a rule may wait only for evidence the environment
// declares.
func TestCheckEnvironment(t *testing.T) {
	spec := &world.Spec{Schema: world.SpecSchema, Evidence: []world.EvidenceSpec{{ID: "signoff", Path: "in/signoff.txt"}}}
	c := governance.Contract{Rules: []governance.Rule{{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow, RequiresEvidence: []string{"signoff"}}}}
	assert.NoError(t, c.CheckEnvironment(spec))
	c.Rules = append(c.Rules, governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow, RequiresEvidence: []string{"signoff", "sign-off"}})
	err := c.CheckEnvironment(spec)
	var fe *codec.FieldError
	require.ErrorAs(t, err, &fe)
	assert.Equal(t, "rules[1].requires_evidence[1]", fe.Path)
}

// TestInvalidated: a contract holds until its valid_until and while it is
// not revoked.
func TestInvalidated(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	c := governance.Contract{}
	assert.Equal(t, "", c.Invalidated(at))
	c.ValidUntil = "2026-01-01T13:00:00Z"
	assert.Equal(t, "", c.Invalidated(at))
	assert.Equal(t, "contract_expired", c.Invalidated(at.Add(time.Hour)), "at valid_until it no longer holds")
	c.Revoked = true
	assert.Equal(t, "contract_revoked", c.Invalidated(at))
}
