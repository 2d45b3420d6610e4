package kernel

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// transitions returns a cycle's controller path as "from>to:reason".
func transitions(t *testing.T, evs ...[]event.Event) []string {
	t.Helper()
	var out []string
	for _, ev := range slices.Concat(evs...) {
		ts, err := controller.TransitionsOf(ev)
		require.NoError(t, err)
		for _, tr := range ts {
			out = append(out, tr.PreviousState.String()+">"+tr.NextState.String()+":"+tr.Reason)
		}
	}
	return out
}

func reasonsOf(evs []event.Event, typ event.Kind) []string {
	var out []string
	for _, ev := range evs {
		if ev.Type == typ {
			out = append(out, ev.Reasons...)
		}
	}
	return out
}

// TestStopRules: each stop rule of the controller ends the cycle where it
// should, with the rule's reason on the transition.
func TestStopRules(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	failing := observe(spec, map[string]bool{"a": true}, false)
	cases := []struct {
		name   string
		tweak  func(c *governance.Contract)
		inbox  []inbox.Item
		kill   bool
		want   string // a transition that must be on the path
		effect bool
	}{
		{"a healthy cycle acts", nil, nil, false, "preflight>checkpoint:governance_execute", true},
		{"authority none cannot even observe", func(c *governance.Contract) { c.Authority.Mode = governance.AuthNone }, nil, false, "wake>blocked:authority_none", false},
		{"authority read cannot act", func(c *governance.Contract) { c.Authority.Mode = governance.AuthRead }, nil, false,
			"preflight>blocked:governance_refused_authority_insufficient", false},
		{"D0 thinks about nothing", func(c *governance.Contract) { c.Coordinates.CognitiveDepth = "D0" }, nil, false, "distill>no_cycle:cognitive_depth_D0", false},
		{"A1 only proposes", func(c *governance.Contract) { c.Coordinates.Autonomy = "A1" }, nil, false, "preflight>propose:autonomy_A1_proposal_only", false},
		{"cognition over max_cost", func(c *governance.Contract) { c.CycleBudget = &budget.Cycle{MaxCost: 1} }, nil, false, "distill>blocked:budget_max_cost", false},
		{"kill switch", nil, nil, true, "wake>blocked:operator_kill_switch", false},
		{"stop request", nil, []inbox.Item{stopItem()}, false, "wake>blocked:explicit_stop", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ct := testContract()
			if c.tweak != nil {
				c.tweak(&ct)
			}
			s := newState(t, spec, ct, observe(spec, map[string]bool{}, false))
			p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: failing, Inbox: c.inbox, KillSwitch: c.kill})
			require.NoError(t, err)
			assert.Equal(t, c.effect, p.Effect != nil)
			var st Settlement
			if p.Effect != nil {
				st = settled(&world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: world.OpApplyPatch, Target: "a.txt", Status: world.OutcomeCommitted}, "a")
			}
			r, err := Finish(p, st)
			require.NoError(t, err)
			path := transitions(t, p.Events, r.Events)
			if c.want != "" {
				assert.Contains(t, path, c.want)
			}
			assert.Equal(t, "sleep", controllerEnd(path), "every cycle goes back to sleep")
		})
	}
}

// controllerEnd is the state the last transition of a path went to.
func controllerEnd(path []string) string {
	last := path[len(path)-1]
	to := last[strings.Index(last, ">")+1:]
	return to[:strings.Index(to, ":")]
}

func stopItem() inbox.Item {
	st := &state.StopRequest{Schema: state.StopSchema, ID: "stop-1", By: "op", CreatedAt: "2026-01-01T00:00:00Z"}
	return inbox.Item{ID: st.ID, Kind: inbox.KindStop, Stop: st, Body: codec.MustMarshal(st)}
}

// TestWakeHygiene: only whitelisted, live, parented signals that carry no
// authority are accepted; a duplicate dedup key is coalesced.
func TestWakeHygiene(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{}, false)
	s := newState(t, spec, testContract(), obs)
	mk := func(id, source, key, parent, expires string, payload string) inbox.Item {
		w := &state.WakeSignal{Schema: state.WakeSignalSchema, ID: id, Source: source, DedupKey: key, CausalParent: parent,
			CreatedAt: "2026-01-01T00:00:00Z", ExpiresAt: expires, By: "op"}
		if payload != "" {
			v, err := codec.Parse([]byte(payload))
			require.NoError(t, err)
			w.Payload = &v
		}
		return inbox.Item{ID: id, Kind: inbox.KindWake, Wake: w, Body: codec.MustMarshal(w)}
	}
	live, dead := "2026-01-02T00:00:00Z", "2026-01-01T00:00:30Z"
	items := []inbox.Item{
		mk("w1", "external_event", "k", "cycle:0", live, ""),
		mk("w2", "external_event", "k", "cycle:0", live, ""),
		mk("w3", "telepathy", "k3", "cycle:0", live, ""),
		mk("w4", "external_event", "k4", "cycle:0", dead, ""),
		mk("w5", "external_event", "k5", "", live, ""),
		mk("w6", "external_event", "k6", "cycle:0", live, `{"note":{"authority":"external_action"}}`),
	}
	p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: obs, Inbox: items})
	require.NoError(t, err)
	assert.Equal(t, []string{"source_external_event"}, reasonsOf(p.Events, event.WakeAccepted))
	assert.Equal(t, []string{"duplicate_dedup_key"}, reasonsOf(p.Events, event.WakeCoalesced))
	assert.Equal(t, []string{"unknown_source", "expired", "no_causal_parent", "carries_authority"}, reasonsOf(p.Events, event.WakeRejected))
	assert.Equal(t, []string{controller.RuleRaise}, reasonsOf(p.Events, event.ViolationRefused), "the raise is refused and recorded")
}

// TestControls: the action is blocked if any required control is absent.
func TestControls(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	s := newState(t, spec, testContract(), observe(spec, map[string]bool{}, false))
	p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: observe(spec, map[string]bool{"a": true}, false)})
	require.NoError(t, err)
	require.NotNil(t, p.Effect)
	bundle := &world.RollbackBundle{Target: "a.txt", Existed: true, Content: "bad"}
	good := &world.Intent{Schema: world.IntentSchema, Key: p.Effect.Key, Changes: true, Rollback: bundle}
	soon := t0.Add(2 * time.Minute)
	for _, c := range []struct {
		name string
		in   *world.Intent
		lock bool
		now  time.Time
		want string
	}{
		{"all in place", good, true, soon, ""},
		{"no lock", good, false, soon, "lock_unavailable"},
		{"no durable intent", nil, true, soon, "checkpoint_missing"},
		{"an intent for another key", &world.Intent{Key: "idem:other", Changes: true, Rollback: bundle}, true, soon, "checkpoint_missing"},
		{"no rollback bundle", &world.Intent{Key: p.Effect.Key, Changes: true}, true, soon, "rollback_bundle_unavailable"},
		{"nothing to undo needs no bundle", &world.Intent{Key: p.Effect.Key, Changes: false}, true, soon, ""},
		{"past the cycle's wall time", good, true, t0.Add(time.Hour), "watchdog_max_wall_time"},
	} {
		assert.Equal(t, c.want, Controls(p, c.in, c.lock, c.now), c.name)
	}
	r, err := Finish(p, Settlement{Blocked: "rollback_bundle_unavailable"})
	require.NoError(t, err)
	assert.Contains(t, transitions(t, r.Events), "checkpoint>blocked:rollback_bundle_unavailable")
	assert.Empty(t, reasonsOf(r.Events, event.ActionCommitted), "nothing was done")
}

// TestWakePriority: of two wake signals with one dedup key in one cycle,
// the one with the higher priority is accepted whatever order the inbox
// listed them in, and the other is coalesced into it.
func TestWakePriority(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{}, false)
	s := newState(t, spec, testContract(), obs)
	mk := func(id string, prio int) inbox.Item {
		w := &state.WakeSignal{Schema: state.WakeSignalSchema, ID: id, Source: "external_event", DedupKey: "k", CausalParent: "cycle:0",
			CreatedAt: "2026-01-01T00:00:00Z", ExpiresAt: "2026-01-02T00:00:00Z", By: "op", Priority: prio}
		return inbox.Item{ID: id, Kind: inbox.KindWake, Wake: w, Body: codec.MustMarshal(w)}
	}
	accepted := func(items ...inbox.Item) codec.Ref {
		p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: obs, Inbox: items})
		require.NoError(t, err)
		var got codec.Ref
		for _, ev := range p.Events {
			if ev.Type == event.WakeAccepted {
				require.Empty(t, got, "one signal accepted")
				got = ev.Refs["item"]
			}
		}
		require.Len(t, reasonsOf(p.Events, event.WakeCoalesced), 1)
		return got
	}
	low, high := mk("w-low", 1), mk("w-high", 5)
	want := codec.NewRef(inboxKind(inbox.KindWake), high.Body)
	assert.Equal(t, want, accepted(low, high))
	assert.Equal(t, want, accepted(high, low))
}
