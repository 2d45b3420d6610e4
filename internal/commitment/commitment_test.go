package commitment_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

const (
	t0 = "2026-03-01T10:00:00Z"
	t1 = "2026-03-01T11:00:00Z"
)

func mk(id string, status commitment.Status, version int64) commitment.Commitment {
	return commitment.Commitment{
		Schema: commitment.CommitmentSchema, ID: id, Version: version, Status: status,
		ItemID: "check:" + id, CheckID: id, Target: id + ".txt", Summary: "promise " + id,
		Origin: commitment.Origin{Kind: "PROMOTE_TO_COMMITMENT", CycleSeq: 1}, CreatedAt: t0, UpdatedAt: t0,
	}
}

func storeOf(cs ...commitment.Commitment) commitment.Store {
	s := commitment.NewStore()
	s.Commitments = append(s.Commitments, cs...)
	return s
}

// deepCopy copies a store through JSON so that no pointer or slice is shared.
func deepCopy(t *testing.T, s commitment.Store) commitment.Store {
	t.Helper()
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var out commitment.Store
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

func TestStatusTerminal(t *testing.T) {
	want := map[commitment.Status]bool{
		commitment.Active: false, commitment.Suspended: false,
		commitment.Completed: true, commitment.Expired: true, commitment.Abandoned: true,
	}
	for s, term := range want {
		assert.Equal(t, term, s.Terminal(), "%s", s)
	}
}

func TestApplyEveryTransitionFromEveryStatus(t *testing.T) {
	statuses := []commitment.Status{commitment.Active, commitment.Suspended, commitment.Completed, commitment.Expired, commitment.Abandoned}
	kinds := []commitment.Kind{commitment.Modify, commitment.Suspend, commitment.Resume, commitment.Complete, commitment.Expire, commitment.Abandon, "teleport"}
	// want[kind][from] is the resulting status; absent means illegal.
	want := map[commitment.Kind]map[commitment.Status]commitment.Status{
		commitment.Modify:   {commitment.Active: commitment.Active, commitment.Suspended: commitment.Suspended},
		commitment.Suspend:  {commitment.Active: commitment.Suspended},
		commitment.Resume:   {commitment.Suspended: commitment.Active},
		commitment.Complete: {commitment.Active: commitment.Completed, commitment.Suspended: commitment.Completed},
		commitment.Expire:   {commitment.Active: commitment.Expired, commitment.Suspended: commitment.Expired},
		commitment.Abandon:  {commitment.Active: commitment.Abandoned, commitment.Suspended: commitment.Abandoned},
	}
	wake := &commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: "ci-report"}
	ran := 0
	for _, k := range kinds {
		for _, from := range statuses {
			t.Run(fmt.Sprintf("%s from %s", k, from), func(t *testing.T) {
				ran++
				cur := mk("b", from, 3)
				if from == commitment.Suspended {
					cur.Wake = &commitment.Condition{Kind: commitment.WakeTime, At: t1}
				}
				s := storeOf(mk("a", commitment.Active, 1), cur, mk("c", commitment.Suspended, 2))
				before := deepCopy(t, s)
				tr := commitment.Transition{Kind: k, CommitmentID: "b", ExpectedVersion: 3, Reason: "because", At: t1}
				if k == commitment.Suspend {
					tr.Wake = wake
				}
				out, got, err := s.Apply(tr)
				assert.Equal(t, before, s, "Apply must not change the store it is called on")

				to, legal := want[k][from]
				if !legal {
					require.ErrorIs(t, err, commitment.ErrIllegal)
					assert.Equal(t, before, out, "an illegal transition returns the store unchanged")
					assert.Equal(t, commitment.Commitment{}, got)
					return
				}
				require.NoError(t, err)
				assert.Equal(t, to, got.Status)
				assert.Equal(t, int64(4), got.Version)
				assert.Equal(t, t1, got.UpdatedAt)
				assert.Equal(t, t0, got.CreatedAt)
				assert.Equal(t, "because", got.LastReason)
				switch k {
				case commitment.Suspend:
					assert.Equal(t, wake, got.Wake)
				case commitment.Resume:
					assert.Nil(t, got.Wake)
				}
				if to.Terminal() {
					_, still := out.Get("b")
					assert.False(t, still, "a terminal commitment leaves the store")
					assert.Equal(t, []string{"a", "c"}, idsOf(out))
				} else {
					inStore, ok := out.Get("b")
					require.True(t, ok)
					assert.Equal(t, got, inStore)
					assert.Equal(t, []string{"a", "b", "c"}, idsOf(out))
				}
				// The neighbours are untouched.
				a, _ := out.Get("a")
				assert.Equal(t, before.Commitments[0], a)
				assert.Equal(t, commitment.StoreSchema, out.Schema)
			})
		}
	}
	require.Equal(t, len(kinds)*len(statuses), ran)
}

func idsOf(s commitment.Store) []string {
	out := []string{}
	for _, c := range s.Commitments {
		out = append(out, c.ID)
	}
	return out
}

func TestApplyModify(t *testing.T) {
	s := storeOf(mk("a", commitment.Active, 2))
	s.Commitments[0].Deadline = t0
	s.Commitments[0].Wake = &commitment.Condition{Kind: commitment.WakeTime, At: t0}

	// Nothing given: nothing but the version, time and reason changes.
	out, got, err := s.Apply(commitment.Transition{Kind: commitment.Modify, CommitmentID: "a", ExpectedVersion: 2, At: t1, Reason: "r"})
	require.NoError(t, err)
	assert.Equal(t, t0, got.Deadline)
	assert.Equal(t, &commitment.Condition{Kind: commitment.WakeTime, At: t0}, got.Wake)

	dl := "2026-04-01T00:00:00Z"
	w := &commitment.Condition{Kind: commitment.WakeSignal, Source: "external_event"}
	out, got, err = out.Apply(commitment.Transition{Kind: commitment.Modify, CommitmentID: "a", ExpectedVersion: 3, At: t1, Change: commitment.Change{Deadline: &dl}, Wake: w})
	require.NoError(t, err)
	assert.Equal(t, dl, got.Deadline)
	assert.Equal(t, w, got.Wake)
	assert.Equal(t, int64(4), got.Version)
	assert.Equal(t, commitment.Active, got.Status)
	inStore, _ := out.Get("a")
	assert.Equal(t, got, inStore)
}

func TestApplyOptimisticConcurrency(t *testing.T) {
	s := storeOf(mk("a", commitment.Active, 5), mk("b", commitment.Suspended, 1))
	before := deepCopy(t, s)
	for _, v := range []int64{0, 4, 6, -1} {
		for _, k := range []commitment.Kind{commitment.Modify, commitment.Suspend, commitment.Complete, commitment.Abandon, commitment.Expire} {
			out, got, err := s.Apply(commitment.Transition{Kind: k, CommitmentID: "a", ExpectedVersion: v, At: t1})
			require.ErrorIs(t, err, commitment.ErrConflict, "%s expecting version %d", k, v)
			assert.NotErrorIs(t, err, commitment.ErrIllegal)
			assert.Equal(t, before, out)
			assert.Equal(t, commitment.Commitment{}, got)
		}
	}
	assert.Equal(t, before, s)

	// The current version succeeds, and then the old one is stale.
	out, _, err := s.Apply(commitment.Transition{Kind: commitment.Suspend, CommitmentID: "a", ExpectedVersion: 5, At: t1})
	require.NoError(t, err)
	_, _, err = out.Apply(commitment.Transition{Kind: commitment.Resume, CommitmentID: "a", ExpectedVersion: 5, At: t1})
	require.ErrorIs(t, err, commitment.ErrConflict)
	_, got, err := out.Apply(commitment.Transition{Kind: commitment.Resume, CommitmentID: "a", ExpectedVersion: 6, At: t1})
	require.NoError(t, err)
	assert.Equal(t, int64(7), got.Version)
}

func TestApplyUnknownCommitment(t *testing.T) {
	s := storeOf(mk("a", commitment.Active, 1))
	out, _, err := s.Apply(commitment.Transition{Kind: commitment.Complete, CommitmentID: "zz", ExpectedVersion: 1, At: t1})
	require.ErrorIs(t, err, commitment.ErrNotFound)
	assert.Equal(t, s, out)
}

func TestApplyCreate(t *testing.T) {
	s := commitment.NewStore()
	newC := func(id string, st commitment.Status) *commitment.Commitment {
		c := mk(id, st, 42)
		c.Schema, c.CreatedAt, c.UpdatedAt = "", "", ""
		return &c
	}

	t.Run("creates at version 1", func(t *testing.T) {
		out, got, err := s.Apply(commitment.Transition{Kind: commitment.Create, ExpectedVersion: 0, At: t1, Reason: "promoted", New: newC("a", commitment.Suspended)})
		require.NoError(t, err)
		assert.Equal(t, int64(1), got.Version)
		assert.Equal(t, commitment.CommitmentSchema, got.Schema)
		assert.Equal(t, t1, got.CreatedAt)
		assert.Equal(t, t1, got.UpdatedAt)
		assert.Equal(t, "promoted", got.LastReason)
		assert.Equal(t, commitment.Suspended, got.Status)
		inStore, ok := out.Get("a")
		require.True(t, ok)
		assert.Equal(t, got, inStore)
		assert.Empty(t, s.Commitments, "the original store is unchanged")
	})

	errCases := []struct {
		name string
		tr   commitment.Transition
		want error
	}{
		{"nonzero expected version", commitment.Transition{Kind: commitment.Create, ExpectedVersion: 1, New: newC("a", commitment.Active)}, commitment.ErrIllegal},
		{"no new commitment", commitment.Transition{Kind: commitment.Create}, commitment.ErrIllegal},
		{"created completed", commitment.Transition{Kind: commitment.Create, New: newC("a", commitment.Completed)}, commitment.ErrIllegal},
		{"created abandoned", commitment.Transition{Kind: commitment.Create, New: newC("a", commitment.Abandoned)}, commitment.ErrIllegal},
		{"created without status", commitment.Transition{Kind: commitment.Create, New: newC("a", "")}, commitment.ErrIllegal},
	}
	require.NotEmpty(t, errCases)
	for _, tc := range errCases {
		t.Run(tc.name, func(t *testing.T) {
			out, got, err := s.Apply(tc.tr)
			require.ErrorIs(t, err, tc.want)
			assert.Equal(t, s, out)
			assert.Equal(t, commitment.Commitment{}, got)
		})
	}

	t.Run("duplicate id conflicts", func(t *testing.T) {
		existing := storeOf(mk("a", commitment.Active, 3))
		before := deepCopy(t, existing)
		out, _, err := existing.Apply(commitment.Transition{Kind: commitment.Create, New: newC("a", commitment.Active), At: t1})
		require.ErrorIs(t, err, commitment.ErrConflict)
		assert.Equal(t, before, out)
		assert.Equal(t, int64(3), out.Commitments[0].Version)
	})
}

func TestStoreStaysSortedByID(t *testing.T) {
	s := commitment.NewStore()
	var err error
	for _, id := range []string{"m", "c", "x", "a", "k"} {
		c := mk(id, commitment.Active, 0)
		s, _, err = s.Apply(commitment.Transition{Kind: commitment.Create, New: &c, At: t0})
		require.NoError(t, err)
	}
	assert.Equal(t, []string{"a", "c", "k", "m", "x"}, idsOf(s))

	s, _, err = s.Apply(commitment.Transition{Kind: commitment.Suspend, CommitmentID: "c", ExpectedVersion: 1, At: t1})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c", "k", "m", "x"}, idsOf(s))
	s, _, err = s.Apply(commitment.Transition{Kind: commitment.Complete, CommitmentID: "k", ExpectedVersion: 1, At: t1})
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "c", "m", "x"}, idsOf(s))

	got, ok := s.ForItem("check:m")
	require.True(t, ok)
	assert.Equal(t, "m", got.ID)
	_, ok = s.ForItem("check:k")
	assert.False(t, ok)
	_, ok = s.Get("k")
	assert.False(t, ok)
}

func obsWith(checks map[string]world.CheckStatus, evidence map[string]bool) world.Observation {
	o := world.Observation{Schema: world.ObservationSchema}
	for id, st := range checks {
		o.Checks = append(o.Checks, world.CheckResult{ID: id, Status: st})
	}
	for id, p := range evidence {
		o.Evidence = append(o.Evidence, world.EvidenceFact{ID: id, Present: p})
	}
	return o
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	tm, err := state.ParseTime(s)
	require.NoError(t, err)
	return tm
}

func TestEvaluatePrecedenceAndPurity(t *testing.T) {
	now := mustTime(t, t1)
	wakeEvidence := &commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: "ev"}

	all := mk("all", commitment.Suspended, 2) // exit, deadline and wake all hold: exit wins
	all.ExitOnCheckPass, all.Deadline, all.Wake = true, t0, wakeEvidence

	dw := mk("dw", commitment.Suspended, 3) // deadline and wake hold: deadline wins
	dw.Deadline, dw.Wake = t0, wakeEvidence

	exitNoPass := mk("enp", commitment.Suspended, 4) // check still fails: the wake applies
	exitNoPass.ExitOnCheckPass, exitNoPass.Wake = true, wakeEvidence

	deadlineNow := mk("dnow", commitment.Active, 1) // deadline exactly now has passed
	deadlineNow.Deadline = t1

	future := mk("future", commitment.Suspended, 1) // nothing holds
	future.Deadline = "2026-03-02T00:00:00Z"
	future.Wake = &commitment.Condition{Kind: commitment.WakeTime, At: "2026-03-02T00:00:00Z"}

	activeWake := mk("awake", commitment.Active, 1) // an active commitment is not resumed
	activeWake.Wake = wakeEvidence

	badDeadline := mk("bad", commitment.Active, 1)
	badDeadline.Deadline = "tomorrow"

	noExitFlag := mk("noexit", commitment.Active, 1) // its check passes but it does not exit on pass

	exitDeadline := mk("exd", commitment.Active, 6) // exits on pass, check fails, deadline passed: expires
	exitDeadline.ExitOnCheckPass, exitDeadline.Deadline = true, t0

	s := storeOf(activeWake, all, badDeadline, deadlineNow, dw, exitNoPass, exitDeadline, future, noExitFlag)
	ctx := commitment.Context{
		Now:         now,
		Observation: obsWith(map[string]world.CheckStatus{"all": world.CheckPass, "enp": world.CheckFail, "exd": world.CheckFail, "noexit": world.CheckPass}, map[string]bool{"ev": true}),
	}
	before := deepCopy(t, s)
	got := commitment.Evaluate(s, ctx)
	assert.Equal(t, before, s, "Evaluate must not mutate the store")
	assert.Equal(t, before, deepCopy(t, s))

	assert.Equal(t, []commitment.Candidate{
		{CommitmentID: "all", Kind: commitment.Complete, ExpectedVersion: 2, Reason: "exit_condition_met"},
		{CommitmentID: "dnow", Kind: commitment.Expire, ExpectedVersion: 1, Reason: "deadline_passed"},
		{CommitmentID: "dw", Kind: commitment.Expire, ExpectedVersion: 3, Reason: "deadline_passed"},
		{CommitmentID: "enp", Kind: commitment.Resume, ExpectedVersion: 4, Reason: "wake_condition_matched"},
		{CommitmentID: "exd", Kind: commitment.Expire, ExpectedVersion: 6, Reason: "deadline_passed"},
	}, got)

	// Every candidate applies cleanly to the unchanged store.
	for _, c := range got {
		_, _, err := s.Apply(commitment.Transition{Kind: c.Kind, CommitmentID: c.CommitmentID, ExpectedVersion: c.ExpectedVersion, Reason: c.Reason, At: t1})
		require.NoError(t, err, "%s %s", c.Kind, c.CommitmentID)
	}

	assert.Empty(t, commitment.Evaluate(commitment.NewStore(), ctx))
}

func TestEvaluateBeforeAnyConditionHolds(t *testing.T) {
	c := mk("a", commitment.Suspended, 1)
	c.Deadline = t1
	c.Wake = &commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: "ev"}
	c.ExitOnCheckPass = true
	s := storeOf(c)
	ctx := commitment.Context{
		Now:         mustTime(t, t0),
		Observation: obsWith(map[string]world.CheckStatus{"a": world.CheckFail}, map[string]bool{"ev": false}),
	}
	assert.Empty(t, commitment.Evaluate(s, ctx))
	// A check missing from the observation does not count as passing.
	ctx.Observation = obsWith(nil, nil)
	assert.Empty(t, commitment.Evaluate(s, ctx))
}

func TestMatched(t *testing.T) {
	ref := "areq:sha256:" + fmt.Sprintf("%064x", 1)
	ctx := commitment.Context{
		Now:         mustTime(t, t1),
		Observation: obsWith(nil, map[string]bool{"here": true, "gone": false}),
		Signals: []state.WakeSignal{
			{Source: "external_event", Ref: "ticket-7"},
			{Source: "scheduled_tick"},
		},
		Approvals: []state.Approval{{ActionRef: codec.Ref(ref), Verdict: "deny"}},
	}
	cases := []struct {
		name string
		cond commitment.Condition
		want bool
	}{
		{"evidence present", commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: "here"}, true},
		{"evidence absent", commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: "gone"}, false},
		{"evidence unknown", commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: "never"}, false},
		{"time past", commitment.Condition{Kind: commitment.WakeTime, At: t0}, true},
		{"time exactly now", commitment.Condition{Kind: commitment.WakeTime, At: t1}, true},
		{"time future", commitment.Condition{Kind: commitment.WakeTime, At: "2026-03-01T11:00:01Z"}, false},
		{"time invalid", commitment.Condition{Kind: commitment.WakeTime, At: "soon"}, false},
		{"time empty", commitment.Condition{Kind: commitment.WakeTime}, false},
		{"approval resolved (either verdict)", commitment.Condition{Kind: commitment.WakeApproval, ActionRef: ref}, true},
		{"approval of another action", commitment.Condition{Kind: commitment.WakeApproval, ActionRef: "areq:sha256:" + fmt.Sprintf("%064x", 2)}, false},
		{"signal with matching ref", commitment.Condition{Kind: commitment.WakeSignal, Source: "external_event", Ref: "ticket-7"}, true},
		{"signal with any ref", commitment.Condition{Kind: commitment.WakeSignal, Source: "external_event"}, true},
		{"signal with another ref", commitment.Condition{Kind: commitment.WakeSignal, Source: "external_event", Ref: "ticket-8"}, false},
		{"signal from another source", commitment.Condition{Kind: commitment.WakeSignal, Source: "manual_resume"}, false},
		{"signal source without ref needs no ref", commitment.Condition{Kind: commitment.WakeSignal, Source: "scheduled_tick"}, true},
		{"unknown kind", commitment.Condition{Kind: "moon_phase"}, false},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		assert.Equal(t, tc.want, commitment.Matched(tc.cond, ctx), tc.name)
	}
	// Nothing in an empty context matches.
	for _, tc := range cases {
		assert.False(t, commitment.Matched(tc.cond, commitment.Context{Now: mustTime(t, "2000-01-01T00:00:00Z")}), "empty context: %s", tc.name)
	}
}

func TestConditionString(t *testing.T) {
	assert.Equal(t, "evidence ci observed", commitment.Condition{Kind: commitment.WakeEvidence, EvidenceID: "ci"}.String())
	assert.Equal(t, "time "+t0, commitment.Condition{Kind: commitment.WakeTime, At: t0}.String())
	assert.Equal(t, "approval of areq:x", commitment.Condition{Kind: commitment.WakeApproval, ActionRef: "areq:x"}.String())
	assert.Equal(t, "signal external_event r", commitment.Condition{Kind: commitment.WakeSignal, Source: "external_event", Ref: "r"}.String())
}

func TestNewID(t *testing.T) {
	id := commitment.NewID("check:a", 7)
	assert.Regexp(t, regexp.MustCompile(`^cmt-[0-9a-f]{16}$`), id)
	assert.Equal(t, id, commitment.NewID("check:a", 7))
	assert.NotEqual(t, id, commitment.NewID("check:b", 7))
	assert.NotEqual(t, id, commitment.NewID("check:a", 8))
	assert.NotEqual(t, id, commitment.NewID("check:a", 0))
}

func TestErrorsAreDistinct(t *testing.T) {
	errs := []error{commitment.ErrConflict, commitment.ErrNotFound, commitment.ErrIllegal}
	for i, a := range errs {
		for j, b := range errs {
			assert.Equal(t, i == j, errors.Is(a, b))
		}
	}
}
