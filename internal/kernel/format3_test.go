package kernel

import (
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// asRecords numbers events as a ledger would hold them.
func asRecords(t *testing.T, evs []event.Event) []event.Record {
	t.Helper()
	out := make([]event.Record, 0, len(evs))
	for i, ev := range evs {
		ref, err := ev.Ref()
		require.NoError(t, err)
		out = append(out, event.Record{Seq: int64(i + 1), Ref: ref, Event: ev})
	}
	return out
}

// transitionTimes lists each controller transition's next state and time.
func transitionTimes(t *testing.T, evs []event.Event) map[controller.Phase]string {
	t.Helper()
	out := map[controller.Phase]string{}
	for _, ev := range evs {
		ts, err := controller.TransitionsOf(ev)
		require.NoError(t, err)
		for _, tr := range ts {
			out[tr.NextState] = tr.Timestamp
		}
	}
	return out
}

// TestTransitionTimes: from ledger format 3 on, a controller transition
// carries the clock reading of the input the cycle went on from: the
// cycle's own for the transitions up to the effect, the outcome's for
// those after it, and the events after the effect carry it too. Replay
// reads the time back from the recorded outcome. A format-2 run keeps one
// time for the whole cycle.
func TestTransitionTimes(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{"a": true}, false)
	start, settledAt := t0.Add(time.Minute), t0.Add(3*time.Minute)
	for _, f := range []state.LedgerFormat{state.LedgerFormat2, state.LedgerFormat3} {
		s, initEvs, err := Init(Bootstrap{RunID: "run:test", Now: t0, Goal: newState(t, spec, testContract(), obs).Goal, Contract: testContract(),
			Spec: spec, Observation: obs, LedgerFormat: f})
		require.NoError(t, err)
		p, err := Begin(s, Inputs{Now: start, Observation: obs})
		require.NoError(t, err)
		require.NotNil(t, p.Effect)
		out := &world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: world.OpApplyPatch, Target: "a.txt", Status: world.OutcomeCommitted,
			PostCheck: &world.CheckResult{ID: "a", Status: world.CheckPass}}
		st := settled(out, "a")
		st.At = settledAt
		r, err := Finish(p, st)
		require.NoError(t, err)
		times := transitionTimes(t, slices.Concat(p.Events, r.Events))
		want := state.FormatTime(settledAt)
		if f < state.LedgerFormat3 {
			want = state.FormatTime(start)
		}
		assert.Equal(t, state.FormatTime(start), times[controller.Checkpoint], "format %d: up to the effect, the cycle's clock", f)
		assert.Equal(t, want, times[controller.Act], "format %d: the effect's outcome", f)
		assert.Equal(t, want, times[controller.Sleep], "format %d", f)
		for _, ev := range r.Events {
			assert.Equal(t, want, ev.At, "format %d: %s", f, ev.Type)
		}
		for _, ev := range p.Events {
			assert.Equal(t, state.FormatTime(start), ev.At, "format %d: %s", f, ev.Type)
		}
		assert.Equal(t, state.FormatTime(start), r.State.Run.UpdatedAt, "the run state keeps the cycle's clock reading")

		rep, err := Replay(asRecords(t, slices.Concat(initEvs, p.Events, r.Events)), 1)
		require.NoError(t, err)
		assert.True(t, rep.OK, "format %d: %+v", f, rep.Divergence)
	}
}

// TestTransitionTimesAfterAProposal: the transitions after a proposer's
// reply carry the time it came.
func TestTransitionTimesAfterAProposal(t *testing.T) {
	c := patchCheck("a", "a.txt")
	c.Fixes = nil
	spec := testSpec(c)
	obs := observe(spec, map[string]bool{"a": true}, false)
	ct := testContract()
	ct.Proposer = &governance.Proposer{Argv: []string{"propose"}, Mode: governance.ProposerAlways}
	s := newState(t, spec, ct, obs)
	start, replied := t0.Add(time.Minute), t0.Add(2*time.Minute)
	p, err := Begin(s, Inputs{Now: start, Observation: obs})
	require.NoError(t, err)
	require.NotNil(t, p.Ask)
	reply := cognition.Reply{Schema: cognition.ReplySchema, Files: []cognition.FileShown{}, Targets: []cognition.TargetFact{},
		Proposal: cognition.Proposal{Schema: cognition.ProposalSchema, Actions: []cognition.ProposedAction{}, Rationale: []string{}}}
	p, err = Answer(p, reply, replied)
	require.NoError(t, err)
	require.NotNil(t, p.Effect, "with nothing proposed, the item is reported")
	r, err := Finish(p, Settlement{Blocked: "lock_not_held"})
	require.NoError(t, err)
	evs := slices.Concat(p.Events, r.Events)
	times := transitionTimes(t, evs)
	assert.Equal(t, state.FormatTime(start), times[controller.Distill])
	assert.Equal(t, state.FormatTime(replied), times[controller.Plan], "after the reply")
	i := slices.IndexFunc(evs, func(e event.Event) bool { return e.Type == event.ProposalReceived })
	require.GreaterOrEqual(t, i, 0)
	assert.Equal(t, state.FormatTime(replied), evs[i].At)
}

// TestRunStateExtensions: a run of ledger format 3 has the seed's
// extensions field, empty; what an extension keeps there survives a cycle
// and a checkpoint round trip unchanged. Earlier runs do not have it.
func TestRunStateExtensions(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	obs := observe(spec, map[string]bool{"a": true}, false)
	s := newState(t, spec, testContract(), obs)
	require.NotNil(t, s.Run.Extensions)
	assert.Empty(t, *s.Run.Extensions)
	b, err := codec.Marshal(s.Run)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"extensions":{}`)

	s.Run.Extensions = &state.Extensions{"org.example/notes": mustValue(map[string]any{"kept": "as is"})}
	s.seal()
	r, _ := step(t, s, Inputs{Now: t0.Add(time.Minute), Observation: observe(spec, map[string]bool{}, false)})
	assert.Equal(t, codec.MustMarshal(s.Run.Extensions), codec.MustMarshal(r.State.Run.Extensions))
	files, err := r.State.Encode()
	require.NoError(t, err)
	back, err := Decode(files)
	require.NoError(t, err)
	again, err := back.Encode()
	require.NoError(t, err)
	assert.Equal(t, files, again)

	old := newStateFormat(t, spec, testContract(), obs, state.LedgerFormat2)
	assert.Nil(t, old.Run.Extensions)
	b, err = codec.Marshal(old.Run)
	require.NoError(t, err)
	assert.NotContains(t, string(b), `"extensions"`)
}
