package kernel

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// cycleWith runs one cycle and settles its effect (if any) as a clean
// commit that makes its check pass; it returns the result and every event
// of the cycle.
func cycleWith(t *testing.T, s EngineState, in Inputs) (*Result, *Pending, []event.Event) {
	t.Helper()
	p, err := Begin(s, in)
	require.NoError(t, err)
	var st Settlement
	if p.Effect != nil {
		out := &world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: p.Effect.Action.Operation, Target: p.Effect.Action.Target,
			Status: world.OutcomeCommitted, PostCheck: &world.CheckResult{ID: p.Effect.Action.CheckID, Status: world.CheckPass}}
		st = settled(out, p.Effect.Action.CheckID)
	}
	first := slices.Clone(p.Events)
	r, err := Finish(p, st)
	require.NoError(t, err)
	return r, p, append(first, r.Events...)
}

// contextOf decodes the cycle's context record (nil when none).
func contextOf(t *testing.T, evs []event.Event) *controller.Context {
	t.Helper()
	for _, ev := range evs {
		if ev.Type == event.ContextRecorded {
			var c controller.Context
			require.NoError(t, ev.Object.Decode(&c))
			return &c
		}
	}
	return nil
}

// TestContextRecorded: from ledger format 2 on, every cycle that observes
// records its context (source authority, trust state, available
// capabilities) as an output of the observe state, and the tension report
// reads it; a format-1 run records none and derives as it always did.
func TestContextRecorded(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{"a": true}, false)
	g := intent.Goal{Schema: intent.Schema, ID: "g", Mission: "m", Success: intent.Success{AllChecksPass: true}}
	for _, f := range []state.LedgerFormat{state.LedgerFormat1, state.LedgerFormat2} {
		s, _, err := Init(Bootstrap{RunID: "run:test", Now: t0, Goal: g, Contract: testContract(), Spec: spec, Observation: obs, LedgerFormat: f})
		require.NoError(t, err)
		_, p, evs := cycleWith(t, s, Inputs{Now: t0.Add(time.Minute), Observation: obs})
		require.NotNil(t, p.Effect)
		c := contextOf(t, evs)
		if f == state.LedgerFormat1 {
			assert.Nil(t, c)
			continue
		}
		require.NotNil(t, c)
		assert.Equal(t, controller.ContextSchema, c.Schema)
		assert.Equal(t, "L3", c.Trust.Level)
		assert.Equal(t, []controller.Capability{
			{Kind: controller.CapabilityFix, CheckID: "a", Fix: "fix-0", Operation: world.OpApplyPatch, Mode: controller.ModeAct},
			{Kind: controller.CapabilityReport, Operation: world.OpMarkIssue, Mode: controller.ModeAct}}, c.Capabilities)
		names := map[string]string{}
		for _, src := range c.Sources {
			names[src.Name] = src.Authority
		}
		assert.Equal(t, map[string]string{"goal": controller.AuthorityIntent, "contract": controller.AuthorityGrant, "environment": controller.AuthorityDeclaration,
			"world": controller.AuthorityData, "inbox": controller.AuthoritySignal, "knowledge": controller.AuthorityCandidate}, names)
		var ref = evs[slices.IndexFunc(evs, func(e event.Event) bool { return e.Type == event.ContextRecorded })].Object.Ref
		var outputs bool
		for _, ev := range evs {
			ts, err := controller.TransitionsOf(ev)
			require.NoError(t, err)
			for _, tr := range ts {
				outputs = outputs || (tr.PreviousState == controller.Observe && slices.Contains(tr.OutputHashes, ref))
			}
		}
		assert.True(t, outputs, "the context is part of the snapshot the observe state hands on")
	}
}

// TestCapabilityGapFromCapabilities: a failing check is a capability gap
// when none of its fixes is an available capability (none declared, the
// contract forbids them, or the authority or autonomy does not reach
// them) and there is no proposer; a fix that needs a person's approval is
// still a capability.
func TestCapabilityGapFromCapabilities(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{"a": true}, false)
	rule := func(e governance.Effect) governance.Rule {
		return governance.Rule{Operation: "apply_local_patch", Paths: []string{"a.txt"}, Effect: e}
	}
	cases := []struct {
		name  string
		tweak func(c *governance.Contract)
		gap   bool
	}{
		{"allowed", nil, false},
		{"needs approval", func(c *governance.Contract) { c.Rules = []governance.Rule{rule(governance.Approve)} }, false},
		{"forbidden", func(c *governance.Contract) { c.Rules = []governance.Rule{rule(governance.Forbid)} }, true},
		{"no rule covers it", func(c *governance.Contract) {
			c.Rules = []governance.Rule{{Operation: "*", Paths: []string{"b.txt"}, Effect: governance.Allow}}
		}, true},
		{"forbidden, but a proposer", func(c *governance.Contract) {
			c.Rules = []governance.Rule{rule(governance.Forbid)}
			c.Proposer = &governance.Proposer{Argv: []string{"p"}}
		}, false},
		{"authority read", func(c *governance.Contract) { c.Authority.Mode = governance.AuthRead }, true},
		{"A1 proposes it", func(c *governance.Contract) { c.Coordinates.Autonomy = "A1" }, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := testContract()
			if tc.tweak != nil {
				tc.tweak(&c)
			}
			s := newState(t, spec, c, obs)
			p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: obs})
			require.NoError(t, err)
			classes := reasonsOf(p.Events, event.TensionAssessed)
			assert.Equal(t, tc.gap, slices.Contains(classes, controller.TensionCapabilityGap), "%v", classes)
		})
	}
}

// TestHighLeverageOpportunity: one available fix declared for two failing
// checks is a high-leverage opportunity in the tension report, named by
// the checks; once it is forbidden it is not.
func TestHighLeverageOpportunity(t *testing.T) {
	a, b := patchCheck("debug-off", "app.ini"), patchCheck("prod-mode", "app.ini")
	spec := testSpec(a, b, patchCheck("other", "other.ini"))
	obs := observe(spec, map[string]bool{"debug-off": true, "prod-mode": true, "other": true}, false)
	sources := func(c governance.Contract) []controller.TensionSource {
		p, err := Begin(newState(t, spec, c, obs), Inputs{Now: t0.Add(time.Minute), Observation: obs})
		require.NoError(t, err)
		for _, ev := range p.Events {
			if ev.Type == event.TensionAssessed {
				var r controller.TensionReport
				require.NoError(t, ev.Object.Decode(&r))
				return slices.DeleteFunc(r.Sources, func(s controller.TensionSource) bool { return s.Class != controller.TensionOpportunity })
			}
		}
		t.Fatal("no tension report")
		return nil
	}
	got := sources(testContract())
	require.Len(t, got, 1)
	assert.Equal(t, "debug-off+prod-mode", got[0].Subject)
	assert.Equal(t, obs.Ref(), got[0].Ref, "the claim names its evidence")
	assert.Empty(t, sources(testContract(governance.Rule{Operation: "*", Paths: []string{"app.ini"}, Effect: governance.Forbid},
		governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow})))
}

// TestReadiness: one table per readiness level. A cycle acts on the
// failing check a (on a.txt) only when the trust of a.txt is at least its
// readiness: nothing in doubt (L3), a doubt elsewhere in the context (L2),
// an effect on a.txt under a person's review (L1), a.txt's state unknown
// (L0: an uncertain effect on it, or observation refused to read it).
// Otherwise preflight blocks the cycle and sets the item aside.
func TestReadiness(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{"a": true}, false)
	doubt := func(reason, path string) func(s *EngineState, o *world.Observation) {
		return func(s *EngineState, o *world.Observation) {
			a := world.Action{Schema: world.ActionSchema, Operation: world.OpApplyPatch, Target: path, CheckID: "x", Find: "1", Replace: "2"}
			s.Run.PendingApprovals = append(s.Run.PendingApprovals, state.PendingApproval{Ref: a.Ref(), Operation: string(a.Operation), Target: path,
				CheckID: "x", ItemID: "check:x", Reason: reason, RequestedAt: state.FormatTime(t0), CycleSeq: 0, Action: mustValue(a)})
		}
	}
	refused := func(s *EngineState, o *world.Observation) {
		o.Refused = []world.Refusal{{Path: "a.txt", Reason: "symlink; symlinks are not followed"}}
	}
	situations := []struct {
		name  string
		trust string
		make  func(s *EngineState, o *world.Observation)
	}{
		{"nothing in doubt", "L3", nil},
		{"an uncertain effect elsewhere", "L2", doubt("uncertain_effect", "c.txt")},
		{"an effect on a.txt under review", "L1", doubt("evaluation_needs_operator_review", "a.txt")},
		{"an uncertain effect on a.txt", "L0", doubt("uncertain_effect", "a.txt")},
		{"a.txt refused by observation", "L0", refused},
	}
	for lvl, readiness := range []string{"L0", "L1", "L2", "L3"} {
		t.Run("readiness "+readiness, func(t *testing.T) {
			for _, sit := range situations {
				t.Run(sit.name, func(t *testing.T) {
					c := testContract()
					c.Coordinates.Readiness = readiness
					s := newState(t, spec, c, obs)
					o := obs
					if sit.make != nil {
						sit.make(&s, &o)
					}
					r, p, evs := cycleWith(t, s, Inputs{Now: t0.Add(time.Minute), Observation: o})
					ctx := contextOf(t, evs)
					require.NotNil(t, ctx)
					assert.Equal(t, sit.trust, ctx.Trust.For([]string{"a.txt"}))
					acts := int(sit.trust[1]-'0') >= lvl
					if acts {
						require.NotNil(t, p.Effect, "trust %s meets readiness %s", sit.trust, readiness)
						assert.Empty(t, reasonsOf(evs, event.CycleBlocked))
						return
					}
					assert.Nil(t, p.Effect, "trust %s is below readiness %s", sit.trust, readiness)
					assert.Equal(t, []string{"trust_below_readiness", "trust_" + sit.trust, "readiness_" + readiness}, reasonsOf(evs, event.CycleBlocked)[:3])
					assert.Contains(t, transitions(t, evs), "preflight>blocked:trust_below_readiness")
					i := slices.IndexFunc(r.State.Run.Suppressed, func(sp state.Suppression) bool { return sp.ItemID == "check:a" })
					require.GreaterOrEqual(t, i, 0, "the item is set aside")
					assert.Equal(t, "trust_below_readiness", r.State.Run.Suppressed[i].Reason)
				})
			}
		})
	}
}

// TestTrustSetsOneItemAside: a target the world refuses sets only its own
// item aside; the rest of the agenda is served, and the item is weighed
// again once the refusal is gone.
func TestTrustSetsOneItemAside(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"), patchCheck("b", "b.txt"))
	obs := observe(spec, map[string]bool{"a": true, "b": true}, false)
	s := newState(t, spec, testContract(), observe(spec, nil, false))
	bad := obs
	bad.Refused = []world.Refusal{{Path: "a.txt", Reason: "symlink; symlinks are not followed"}}

	r, p, _ := cycleWith(t, s, Inputs{Now: t0.Add(time.Minute), Observation: bad})
	require.Nil(t, p.Effect)
	assert.Equal(t, state.Continue, r.State.Run.LoopDisposition, "other work remains")
	r, p, _ = cycleWith(t, r.State, Inputs{Now: t0.Add(2 * time.Minute), Observation: bad})
	require.NotNil(t, p.Effect)
	assert.Equal(t, "b.txt", p.Effect.Action.Target, "the rest of the agenda is served")

	fixed := observe(spec, map[string]bool{"a": true}, false)
	fixed.Refused = bad.Refused
	r, p, _ = cycleWith(t, r.State, Inputs{Now: t0.Add(3 * time.Minute), Observation: fixed})
	assert.Nil(t, p.Effect, "still refused: still aside")
	clean := observe(spec, map[string]bool{"a": true}, false)
	_, p, evs := cycleWith(t, r.State, Inputs{Now: t0.Add(4 * time.Minute), Observation: clean})
	assert.Contains(t, reasonsOf(evs, event.SuppressionLifted), "trust_changed")
	require.NotNil(t, p.Effect, "the refusal is gone: the item is weighed again")
	assert.Equal(t, "a.txt", p.Effect.Action.Target)
}

// TestSourceAuthorityUnresolved: while a person's amendment is pending,
// an action the loop would take on its own is not taken if the answer
// decides whether it may be; one the amendment does not bear on is taken.
// Answering lifts the stop.
func TestSourceAuthorityUnresolved(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"), patchCheck("b", "b.txt"))
	ok := observe(spec, map[string]bool{}, false)
	failing := observe(spec, map[string]bool{"a": true}, false)
	base := newState(t, spec, testContract(), ok)
	forbidA := testContract(governance.Rule{Operation: "apply_local_patch", Paths: []string{"a.txt"}, Effect: governance.Forbid},
		governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow})
	approveA := testContract(governance.Rule{Operation: "apply_local_patch", Paths: []string{"a.txt"}, Effect: governance.Approve},
		governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Allow})
	moreBudget := testContract()
	moreBudget.Budgets = budget.Run{Cycles: budget.Limit{Hard: 100}}
	noA := spec
	noA.Checks = slices.Clone(spec.Checks[1:])
	changedA := spec
	changedA.Checks = slices.Clone(spec.Checks)
	changedA.Checks[0].Fixes = []world.Fix{{Operation: world.OpApplyPatch, Find: "bad", Replace: "better"}}
	mission := base.Goal
	mission.Mission = "another mission"

	with := func(m int, its ...inbox.Item) Inputs {
		in := Inputs{Now: t0.Add(time.Duration(m) * time.Minute), Observation: failing, Inbox: its}
		for _, it := range its {
			in.InboxPresent = append(in.InboxPresent, it.ID)
		}
		return in
	}
	cases := []struct {
		name      string
		item      inbox.Item
		contested bool
	}{
		{"a contract forbidding the fix", amendItem(t, state.AmendContract, forbidA, base.Run.ContractRef), true},
		{"a contract asking a person first", amendItem(t, state.AmendContract, approveA, base.Run.ContractRef), true},
		{"a contract raising a budget", amendItem(t, state.AmendContract, moreBudget, base.Run.ContractRef), false},
		{"an environment without the check", amendItem(t, state.AmendEnvironment, noA, base.Run.EnvironmentSpecRef), true},
		{"an environment with another fix for it", amendItem(t, state.AmendEnvironment, changedA, base.Run.EnvironmentSpecRef), true},
		{"a goal with another mission", amendItem(t, state.AmendGoal, mission, base.Run.GoalRefs[0]), false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r, p, evs := cycleWith(t, base, with(1, tc.item))
			require.Len(t, eventsOf(evs, event.AmendmentProposed), 1)
			ctx := contextOf(t, evs)
			require.NotNil(t, ctx)
			var pending int
			for _, src := range ctx.Sources {
				pending += len(src.Pending)
			}
			assert.Equal(t, 1, pending, "the context names the pending amendment")
			if !tc.contested {
				assert.NotNil(t, p.Effect, "the amendment does not bear on the action")
				return
			}
			require.Nil(t, p.Effect, "the loop does not settle alone what a person is deciding")
			assert.Contains(t, transitions(t, evs), "preflight>blocked:source_authority_unresolved")
			assert.Contains(t, reasonsOf(evs, event.CycleBlocked), "source_authority_unresolved")

			// Nothing changes until the person answers: still aside.
			r2, p, _ := cycleWith(t, r.State, with(2, wake("w1", "external_event", "")))
			assert.Nil(t, p.Effect)
			// Denied: the pinned version stands, and the item is weighed again.
			pa := r2.State.Run.PendingAmendments[0]
			_, p, evs = cycleWith(t, r2.State, with(3, answerItem(t, pa.Ref, pa.CycleSeq, "deny", "alice", "")))
			assert.Contains(t, reasonsOf(evs, event.SuppressionLifted), "amendment_answered")
			require.NotNil(t, p.Effect)
			assert.Equal(t, "a.txt", p.Effect.Action.Target)
		})
	}
	require.NotEmpty(t, cases)

	// A stale amendment (of a version no longer pinned) contests nothing:
	// it can never be accepted.
	s := base
	s.Run.PendingAmendments = []state.PendingAmendment{{Ref: "amd:sha256:00", Target: state.AmendContract, Amends: "contract:sha256:00",
		NewRef: PinnedRef(EngineState{Contract: forbidA}, state.AmendContract), Document: mustValue(forbidA), By: "alice", CycleSeq: 0}}
	_, p, _ := cycleWith(t, s, with(1))
	assert.NotNil(t, p.Effect)
}
