package validate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// TestCommitmentJudge reads standing commitments' lifecycle events the way
// gate C does: each change that the recorded inputs justify passes, each
// one they do not is reported.
func TestCommitmentJudge(t *testing.T) {
	decl := declarationView{ID: "docs", Checks: []string{"a", "b"}, By: "2026-01-01T12:00:00Z", Every: "6h", MovedBy: "release"}
	live := commitmentView{ID: "cmt-1", Status: "active", Standing: "docs", DeclarationRef: "decl:1", Scope: []string{"a", "b"},
		Deadline: "2026-01-01T12:00:00Z", EverySeconds: 21600, NextDue: "2026-01-01T06:00:00Z", MovedBy: "release"}
	with := func(edit func(*commitmentView)) commitmentView {
		c := live
		c.Scope = append([]string(nil), live.Scope...)
		edit(&c)
		return c
	}
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return tm
	}
	inputs := func(clock string, failing ...string) wakeInputs {
		in := wakeInputs{at: at(clock)}
		for _, id := range []string{"a", "b"} {
			st := "pass"
			for _, f := range failing {
				if f == id {
					st = "fail"
				}
			}
			in.observation.Checks = append(in.observation.Checks, struct {
				ID     string `json:"id"`
				Status string `json:"status"`
			}{id, st})
		}
		return in
	}
	moved := func(ref, deadline string) signalView {
		p, _ := json.Marshal(map[string]string{"deadline": deadline})
		return signalView{Source: "external_event", Ref: ref, Payload: p}
	}
	cases := []struct {
		name    string
		typ     event.Kind
		reasons []string
		before  commitmentView
		after   commitmentView
		in      wakeInputs
		checks  []string // the environment in force (default a, b)
		undecl  bool     // the goal in force no longer declares it
		ok      bool
	}{
		{"taken up as declared", event.CommitmentCreated, nil, commitmentView{}, live, inputs("2026-01-01T00:00:00Z"), nil, false, true},
		{"taken up with another scope", event.CommitmentCreated, nil, commitmentView{}, with(func(c *commitmentView) { c.Scope = []string{"a"} }), inputs("2026-01-01T00:00:00Z"), nil, false, false},
		{"taken up with another deadline", event.CommitmentCreated, nil, commitmentView{}, with(func(c *commitmentView) { c.Deadline = "2026-01-02T00:00:00Z" }), inputs("2026-01-01T00:00:00Z"), nil, false, false},
		{"taken up with another period", event.CommitmentCreated, nil, commitmentView{}, with(func(c *commitmentView) { c.EverySeconds = 60 }), inputs("2026-01-01T00:00:00Z"), nil, false, false},
		{"taken up undeclared", event.CommitmentCreated, nil, commitmentView{}, live, inputs("2026-01-01T00:00:00Z"), nil, true, false},
		{"kept at the deadline", event.CommitmentCompleted, []string{"deadline_met"}, live, with(func(c *commitmentView) { c.Status = "completed" }), inputs("2026-01-01T12:00:00Z"), nil, false, true},
		{"kept before the deadline", event.CommitmentCompleted, []string{"deadline_met"}, live, with(func(c *commitmentView) { c.Status = "completed" }), inputs("2026-01-01T11:59:59Z"), nil, false, false},
		{"kept with a check failing", event.CommitmentCompleted, []string{"deadline_met"}, live, with(func(c *commitmentView) { c.Status = "completed" }), inputs("2026-01-01T12:00:00Z", "b"), nil, false, false},
		{"given up unmet", event.CommitmentAbandoned, []string{"deadline_passed_unmet"}, live, with(func(c *commitmentView) { c.Status = "abandoned" }), inputs("2026-01-01T13:00:00Z", "a"), nil, false, true},
		{"given up unmet while passing", event.CommitmentAbandoned, []string{"deadline_passed_unmet"}, live, with(func(c *commitmentView) { c.Status = "abandoned" }), inputs("2026-01-01T13:00:00Z"), nil, false, false},
		{"given up unmet before the deadline", event.CommitmentAbandoned, []string{"deadline_passed_unmet"}, live, with(func(c *commitmentView) { c.Status = "abandoned" }), inputs("2026-01-01T11:00:00Z", "a"), nil, false, false},
		{"abandoned, its checks gone", event.CommitmentAbandoned, []string{"check_removed"}, live, with(func(c *commitmentView) { c.Status = "abandoned" }), inputs("2026-01-01T08:00:00Z"), []string{"c"}, false, true},
		{"abandoned, its checks still there", event.CommitmentAbandoned, []string{"check_removed"}, live, with(func(c *commitmentView) { c.Status = "abandoned" }), inputs("2026-01-01T08:00:00Z"), []string{"b", "c"}, false, false},
		{"abandoned, undeclared", event.CommitmentAbandoned, []string{"declaration_removed"}, live, with(func(c *commitmentView) { c.Status = "abandoned" }), inputs("2026-01-01T08:00:00Z"), nil, true, true},
		{"abandoned as undeclared, still declared", event.CommitmentAbandoned, []string{"declaration_removed"}, live, with(func(c *commitmentView) { c.Status = "abandoned" }), inputs("2026-01-01T08:00:00Z"), nil, false, false},
		{"abandoned for no known reason", event.CommitmentAbandoned, []string{"felt_like_it"}, live, with(func(c *commitmentView) { c.Status = "abandoned" }), inputs("2026-01-01T08:00:00Z"), nil, false, false},
		{"deadline moved by the named signal", event.CommitmentModified, []string{"deadline_moved"}, live, with(func(c *commitmentView) { c.Deadline = "2026-01-01T18:00:00Z" }),
			func() wakeInputs {
				in := inputs("2026-01-01T08:00:00Z")
				in.signals = []signalView{moved("release", "2026-01-01T20:00:00+02:00")}
				return in
			}(), nil, false, true},
		{"deadline moved with no signal", event.CommitmentModified, []string{"deadline_moved"}, live, with(func(c *commitmentView) { c.Deadline = "2026-01-01T18:00:00Z" }), inputs("2026-01-01T08:00:00Z"), nil, false, false},
		{"deadline moved by another ref", event.CommitmentModified, []string{"deadline_moved"}, live, with(func(c *commitmentView) { c.Deadline = "2026-01-01T18:00:00Z" }),
			func() wakeInputs {
				in := inputs("2026-01-01T08:00:00Z")
				in.signals = []signalView{moved("marketing", "2026-01-01T18:00:00Z")}
				return in
			}(), nil, false, false},
		{"deadline moved into the past", event.CommitmentModified, []string{"deadline_moved"}, live, with(func(c *commitmentView) { c.Deadline = "2026-01-01T07:00:00Z" }),
			func() wakeInputs {
				in := inputs("2026-01-01T08:00:00Z")
				in.signals = []signalView{moved("release", "2026-01-01T07:00:00Z")}
				return in
			}(), nil, false, false},
		{"period due", event.CommitmentModified, []string{"period_due"}, live, with(func(c *commitmentView) { c.NextDue = "2026-01-01T12:00:00Z" }), inputs("2026-01-01T06:00:00Z"), nil, false, true},
		{"period moved on early", event.CommitmentModified, []string{"period_due"}, live, with(func(c *commitmentView) { c.NextDue = "2026-01-01T12:00:00Z" }), inputs("2026-01-01T05:59:59Z"), nil, false, false},
		{"period off its schedule", event.CommitmentModified, []string{"period_due"}, live, with(func(c *commitmentView) { c.NextDue = "2026-01-01T13:00:00Z" }), inputs("2026-01-01T07:00:00Z"), nil, false, false},
		{"period skipping a look", event.CommitmentModified, []string{"period_due"}, live, with(func(c *commitmentView) { c.NextDue = "2026-01-01T18:00:00Z" }), inputs("2026-01-01T07:00:00Z"), nil, false, false},
		{"scope narrowed as the environment says", event.CommitmentModified, []string{"scope_narrowed"}, live, with(func(c *commitmentView) { c.Scope = []string{"b"} }), inputs("2026-01-01T08:00:00Z"), []string{"b"}, false, true},
		{"scope narrowed beyond it", event.CommitmentModified, []string{"scope_narrowed"}, live, with(func(c *commitmentView) { c.Scope = []string{"b"} }), inputs("2026-01-01T08:00:00Z"), nil, false, false},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			j := &commitmentJudge{run: "r", goal: goalView{Commitments: []declarationView{decl}}, checks: []string{"a", "b"}}
			if tc.checks != nil {
				j.checks = tc.checks
			}
			if tc.undecl {
				j.goal.Commitments = nil
			}
			j.judge(3, tc.typ, tc.reasons, tc.before, tc.typ != event.CommitmentCreated, tc.after, tc.in)
			if tc.ok {
				assert.Empty(t, j.bad)
			} else {
				assert.NotEmpty(t, j.bad)
			}
		})
	}

	t.Run("a due left past its time", func(t *testing.T) {
		j := &commitmentJudge{run: "r"}
		j.due(4, map[string]commitmentView{"cmt-1": live}, at("2026-01-01T05:00:00Z"))
		assert.Empty(t, j.bad)
		j.due(4, map[string]commitmentView{"cmt-1": live}, at("2026-01-01T06:00:00Z"))
		assert.NotEmpty(t, j.bad)
	})
	t.Run("a resting run that sleeps past a commitment's time", func(t *testing.T) {
		rest := func(nextWake string) cycle {
			chk, _ := json.Marshal(map[string]any{"next_wake": map[string]string{"at": nextWake}})
			c := cycle{seq: 5, events: []event.Record{{Event: event.Event{Type: event.CheckpointCreated, Object: &event.Object{Body: chk}}}}}
			c.record.LoopDisposition = state.Sleep
			return c
		}
		j := &commitmentJudge{run: "r"}
		j.wake(5, map[string]commitmentView{"cmt-1": live}, at("2026-01-01T01:00:00Z"), rest("2026-01-01T06:00:00Z"))
		assert.Empty(t, j.bad)
		j.wake(5, map[string]commitmentView{"cmt-1": live}, at("2026-01-01T01:00:00Z"), rest("2026-01-01T07:00:00Z"))
		assert.NotEmpty(t, j.bad)
		assert.Equal(t, 2, j.wakes)
	})
}
