package commitment_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

func TestDeclarationValidate(t *testing.T) {
	ok := commitment.Declaration{ID: "docs", Checks: []string{"a", "b"}, By: "2026-03-02T00:00:00Z", Every: "6h", MovedBy: "release"}
	cases := []struct {
		name  string
		edit  func(*commitment.Declaration)
		field string // "" means valid
	}{
		{"valid", func(*commitment.Declaration) {}, ""},
		{"deadline only", func(d *commitment.Declaration) { d.Every = "" }, ""},
		{"period only", func(d *commitment.Declaration) { d.By, d.MovedBy = "", "" }, ""},
		{"offset deadline", func(d *commitment.Declaration) { d.By = "2026-03-02T00:00:00+02:00" }, ""},
		{"shortest period", func(d *commitment.Declaration) { d.Every = "1m" }, ""},
		{"bad id", func(d *commitment.Declaration) { d.ID = "Docs" }, "id"},
		{"no checks", func(d *commitment.Declaration) { d.Checks = nil }, "checks"},
		{"bad check id", func(d *commitment.Declaration) { d.Checks = []string{"a", "B"} }, "checks[1]"},
		{"check twice", func(d *commitment.Declaration) { d.Checks = []string{"a", "b", "a"} }, "checks[2]"},
		{"neither deadline nor period", func(d *commitment.Declaration) { d.By, d.Every, d.MovedBy = "", "", "" }, "by"},
		{"bad deadline", func(d *commitment.Declaration) { d.By = "friday" }, "by"},
		{"bad period", func(d *commitment.Declaration) { d.Every = "daily" }, "every"},
		{"period too short", func(d *commitment.Declaration) { d.Every = "59s" }, "every"},
		{"period not whole seconds", func(d *commitment.Declaration) { d.Every = "90.5s" }, "every"},
		{"negative period", func(d *commitment.Declaration) { d.Every = "-6h" }, "every"},
		{"move without deadline", func(d *commitment.Declaration) { d.By = "" }, "moved_by"},
		{"bad move ref", func(d *commitment.Declaration) { d.MovedBy = "Release Date" }, "moved_by"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := ok
			d.Checks = append([]string(nil), ok.Checks...)
			tc.edit(&d)
			err := d.Validate()
			if tc.field == "" {
				assert.NoError(t, err)
				return
			}
			var fe *codec.FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, tc.field, fe.Path)
		})
	}
}

// standingCtx is a cycle's context for the declarations decls, with the
// environment's checks (each passing unless listed in failing).
func standingCtx(t *testing.T, now string, decls []commitment.Declaration, checks []string, failing ...string) commitment.Context {
	t.Helper()
	status := map[string]world.CheckStatus{}
	for _, c := range checks {
		status[c] = world.CheckPass
	}
	for _, c := range failing {
		status[c] = world.CheckFail
	}
	return commitment.Context{Now: mustTime(t, now), Observation: obsWith(status, nil), Declarations: decls, Checks: checks,
		GoalRef: "goal:sha256:" + zeros64, CycleSeq: 7}
}

const zeros64 = "0000000000000000000000000000000000000000000000000000000000000000"

// takenUp is the live commitment a declaration becomes when taken up at at.
func takenUp(t *testing.T, d commitment.Declaration, at string, checks []string) commitment.Store {
	t.Helper()
	got := commitment.Evaluate(commitment.NewStore(), standingCtx(t, at, []commitment.Declaration{d}, checks))
	require.Len(t, got, 1)
	s, _, err := commitment.NewStore().Apply(got[0].Transition(at))
	require.NoError(t, err)
	return s
}

func TestEvaluateTakesUpDeclarations(t *testing.T) {
	decls := []commitment.Declaration{
		{ID: "docs", Summary: "docs clean by the release", Checks: []string{"a", "gone", "b"}, By: "2026-03-02T02:00:00+02:00"},
		{ID: "nightly", Checks: []string{"n"}, Every: "24h"},
		{ID: "vanished", Checks: []string{"gone"}, Every: "1h"}, // nothing of it in the environment
	}
	ctx := standingCtx(t, t0, decls, []string{"a", "b", "n"}, "a")
	s := commitment.NewStore()
	got := commitment.Evaluate(s, ctx)
	require.Len(t, got, 2)
	assert.Empty(t, s.Commitments, "Evaluate changes nothing")

	docs, nightly := got[0].New, got[1].New
	require.NotNil(t, docs)
	require.NotNil(t, nightly)
	for i, c := range got {
		assert.Equal(t, commitment.Create, c.Kind)
		assert.Equal(t, commitment.ReasonDeclared, c.Reason)
		assert.Equal(t, decls[i].Ref(), c.New.DeclarationRef)
		assert.Equal(t, commitment.Origin{Kind: commitment.OriginDeclared, CycleSeq: 7, GoalRef: ctx.GoalRef}, c.New.Origin)
		assert.Equal(t, commitment.Active, c.New.Status)
		assert.Equal(t, commitment.NewID("goal:"+decls[i].ID, 7), c.New.ID)
		assert.Empty(t, c.New.ItemID)
		assert.False(t, c.New.ExitOnCheckPass)
	}
	assert.Equal(t, "docs", docs.Standing)
	assert.Equal(t, []string{"a", "b"}, docs.Scope, "only the checks the environment has, in declared order")
	assert.Equal(t, "2026-03-02T00:00:00Z", docs.Deadline, "deadlines are kept in UTC")
	assert.Equal(t, "docs clean by the release", docs.Summary)
	assert.Zero(t, docs.EverySeconds)
	assert.Empty(t, docs.NextDue)
	assert.Equal(t, int64(86400), nightly.EverySeconds)
	assert.Equal(t, "2026-03-02T10:00:00Z", nightly.NextDue, "the first look is one period after it is taken up")
	assert.Equal(t, "keep n passing, looked at every 24h", nightly.Summary)

	// Taken up, a declaration is not taken up again: not while it is
	// live, and not after it ended, unless the goal declares it anew.
	for _, c := range got {
		var err error
		s, _, err = s.Apply(c.Transition(t0))
		require.NoError(t, err)
	}
	assert.Equal(t, sortedRefs(decls[0].Ref(), decls[1].Ref()), s.Declared, "the refs taken up, sorted")
	assert.Empty(t, commitment.Evaluate(s, ctx))
	ended, _, err := s.Apply(commitment.Transition{Kind: commitment.Abandon, CommitmentID: docs.ID, ExpectedVersion: 1, At: t1})
	require.NoError(t, err)
	assert.Equal(t, s.Declared, ended.Declared, "an ended commitment's declaration stays taken up")
	assert.Empty(t, commitment.Evaluate(ended, ctx))
	renewed := ctx
	renewed.Declarations = []commitment.Declaration{decls[0], decls[1]}
	renewed.Declarations[0].By = "2026-03-03T00:00:00Z"
	again := commitment.Evaluate(ended, renewed)
	require.Len(t, again, 1)
	assert.Equal(t, commitment.Create, again[0].Kind)
	assert.Equal(t, "2026-03-03T00:00:00Z", again[0].New.Deadline)
}

func sortedRefs(a, b codec.Ref) []codec.Ref {
	if b < a {
		return []codec.Ref{b, a}
	}
	return []codec.Ref{a, b}
}

// TestEvaluateReconcilesWithGoalAndEnvironment: an accepted amendment of
// the goal or the environment narrows, redeclares or abandons a live
// standing commitment, with the seed's interruption class.
func TestEvaluateReconcilesWithGoalAndEnvironment(t *testing.T) {
	decl := commitment.Declaration{ID: "docs", Checks: []string{"a", "b"}, Every: "6h", By: "2026-03-05T00:00:00Z"}
	s := takenUp(t, decl, t0, []string{"a", "b", "c"})
	c := s.Commitments[0]
	later := "2026-03-01T13:00:00Z"
	str := func(s string) *string { return &s }

	cases := []struct {
		name   string
		decls  []commitment.Declaration
		checks []string
		want   []commitment.Candidate
	}{
		{"unchanged", []commitment.Declaration{decl}, []string{"a", "b", "c"}, nil},
		{"a check left the environment: the scope narrows", []commitment.Declaration{decl}, []string{"b", "c"},
			[]commitment.Candidate{{CommitmentID: c.ID, Kind: commitment.Modify, ExpectedVersion: 1, Reason: commitment.ReasonScopeNarrowed,
				Class: commitment.ContractChanged, Change: &commitment.Change{Scope: []string{"b"}}}}},
		{"every check left: abandoned", []commitment.Declaration{decl}, []string{"c"},
			[]commitment.Candidate{{CommitmentID: c.ID, Kind: commitment.Abandon, ExpectedVersion: 1, Reason: commitment.ReasonCheckRemoved, Class: commitment.ContractChanged}}},
		{"no longer declared: abandoned", nil, []string{"a", "b", "c"},
			[]commitment.Candidate{{CommitmentID: c.ID, Kind: commitment.Abandon, ExpectedVersion: 1, Reason: commitment.ReasonDeclarationRemoved, Class: commitment.ContractChanged}}},
	}
	redeclared := decl
	redeclared.Every, redeclared.By, redeclared.Summary = "12h", "2026-03-06T00:00:00Z", "now twice a day"
	ref, every := redeclared.Ref(), int64(43200)
	cases = append(cases, struct {
		name   string
		decls  []commitment.Declaration
		checks []string
		want   []commitment.Candidate
	}{"redeclared: period, deadline and summary follow", []commitment.Declaration{redeclared}, []string{"a", "b"},
		[]commitment.Candidate{{CommitmentID: c.ID, Kind: commitment.Modify, ExpectedVersion: 1, Reason: commitment.ReasonDeclarationChanged, Class: commitment.ContractChanged,
			Change: &commitment.Change{Deadline: str("2026-03-06T00:00:00Z"), NextDue: str("2026-03-02T01:00:00Z"), EverySeconds: &every,
				MovedBy: str(""), Summary: str("now twice a day"), DeclarationRef: &ref}}}})
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := commitment.Evaluate(s, standingCtx(t, later, tc.decls, tc.checks))
			assert.Equal(t, tc.want, got)
			for _, cand := range got {
				next, after, err := s.Apply(cand.Transition(later))
				require.NoError(t, err)
				if cand.Kind == commitment.Modify {
					assert.Equal(t, next.Commitments[0], after)
				}
			}
		})
	}

	// A scope narrowed and then widened again by a later amendment.
	narrowed, _, err := s.Apply(commitment.Evaluate(s, standingCtx(t, later, []commitment.Declaration{decl}, []string{"b"}))[0].Transition(later))
	require.NoError(t, err)
	got := commitment.Evaluate(narrowed, standingCtx(t, later, []commitment.Declaration{decl}, []string{"a", "b"}))
	require.Len(t, got, 1)
	assert.Equal(t, commitment.ReasonScopeChanged, got[0].Reason)
	assert.Equal(t, []string{"a", "b"}, got[0].Change.Scope)
}

// TestStandingConditions: a standing commitment's deadline is judged on
// its checks, its deadline moved only by the signal its declaration
// names, its period brought due, its wake condition resumed.
func TestStandingConditions(t *testing.T) {
	decl := commitment.Declaration{ID: "docs", Checks: []string{"a", "b"}, By: "2026-03-01T18:00:00Z", Every: "6h", MovedBy: "release"}
	base := takenUp(t, decl, t0, []string{"a", "b"}) // next look 16:00, deadline 18:00
	id := base.Commitments[0].ID
	suspended, _, err := base.Apply(commitment.Transition{Kind: commitment.Suspend, CommitmentID: id, ExpectedVersion: 1, At: t0, Item: "check:a",
		Wake: &commitment.Condition{Kind: commitment.WakeSignal, Source: "external_event", Ref: "ok"}})
	require.NoError(t, err)
	signal := func(ref, payload string) state.WakeSignal {
		w := state.WakeSignal{Source: "external_event", Ref: ref}
		if payload != "" {
			v, err := codec.Parse([]byte(payload))
			require.NoError(t, err)
			w.Payload = &v
		}
		return w
	}
	str := func(s string) *string { return &s }
	type kr struct {
		kind   commitment.Kind
		reason string
		class  string
		change *commitment.Change
	}
	cases := []struct {
		name    string
		store   commitment.Store
		now     string
		failing []string
		signals []state.WakeSignal
		want    []kr
	}{
		{"before anything is due", base, "2026-03-01T15:59:59Z", []string{"a"}, nil, nil},
		{"the period comes due", base, "2026-03-01T16:00:00Z", nil, nil,
			[]kr{{commitment.Modify, commitment.ReasonPeriodDue, "", &commitment.Change{NextDue: str("2026-03-01T22:00:00Z")}}}},
		{"the deadline, checks passing: kept", base, "2026-03-01T18:00:00Z", nil, nil,
			[]kr{{commitment.Complete, commitment.ReasonDeadlineMet, "", nil}}},
		{"the deadline, a check failing: abandoned", base, "2026-03-01T19:00:00Z", []string{"b"}, nil,
			[]kr{{commitment.Abandon, commitment.ReasonDeadlineUnmet, commitment.TerminalExit, nil}}},
		{"the named signal moves the deadline", base, "2026-03-01T11:00:00Z", nil, []state.WakeSignal{signal("release", `{"deadline":"2026-03-02T10:00:00+02:00"}`)},
			[]kr{{commitment.Modify, commitment.ReasonDeadlineMoved, "", &commitment.Change{Deadline: str("2026-03-02T08:00:00Z")}}}},
		{"the last of several named signals counts", base, "2026-03-01T11:00:00Z", nil,
			[]state.WakeSignal{signal("release", `{"deadline":"2026-03-02T00:00:00Z"}`), signal("release", `{"deadline":"2026-03-03T00:00:00Z"}`)},
			[]kr{{commitment.Modify, commitment.ReasonDeadlineMoved, "", &commitment.Change{Deadline: str("2026-03-03T00:00:00Z")}}}},
		{"a move that arrives with the deadline postpones it", base, "2026-03-01T18:00:00Z", []string{"a"}, []state.WakeSignal{signal("release", `{"deadline":"2026-03-02T00:00:00Z"}`)},
			[]kr{{commitment.Modify, commitment.ReasonDeadlineMoved, "", &commitment.Change{Deadline: str("2026-03-02T00:00:00Z")}},
				{commitment.Modify, commitment.ReasonPeriodDue, "", &commitment.Change{NextDue: str("2026-03-01T22:00:00Z")}}}},
		{"another ref moves nothing", base, "2026-03-01T11:00:00Z", nil, []state.WakeSignal{signal("marketing", `{"deadline":"2026-03-02T00:00:00Z"}`)}, nil},
		{"another source moves nothing", base, "2026-03-01T11:00:00Z", nil,
			[]state.WakeSignal{{Source: "scheduled_tick", Ref: "release", Payload: signal("release", `{"deadline":"2026-03-02T00:00:00Z"}`).Payload}}, nil},
		{"no deadline in the payload", base, "2026-03-01T11:00:00Z", nil, []state.WakeSignal{signal("release", `{"when":"2026-03-02T00:00:00Z"}`), signal("release", "")}, nil},
		{"not a time", base, "2026-03-01T11:00:00Z", nil, []state.WakeSignal{signal("release", `{"deadline":"next week"}`), signal("release", `{"deadline":7}`)}, nil},
		{"not into the past", base, "2026-03-01T11:00:00Z", nil, []state.WakeSignal{signal("release", `{"deadline":"2026-03-01T11:00:00Z"}`)}, nil},
		{"the same deadline again", base, "2026-03-01T11:00:00Z", nil, []state.WakeSignal{signal("release", `{"deadline":"2026-03-01T18:00:00Z"}`)}, nil},
		{"missed periods: the next look is the first one to come", base, "2026-03-02T05:00:00Z", nil,
			[]state.WakeSignal{signal("release", `{"deadline":"2026-03-03T00:00:00Z"}`)},
			[]kr{{commitment.Modify, commitment.ReasonDeadlineMoved, "", &commitment.Change{Deadline: str("2026-03-03T00:00:00Z")}},
				{commitment.Modify, commitment.ReasonPeriodDue, "", &commitment.Change{NextDue: str("2026-03-02T10:00:00Z")}}}},
		{"resumed, then due, in one evaluation", suspended, "2026-03-01T16:30:00Z", nil, []state.WakeSignal{signal("ok", "")},
			[]kr{{commitment.Resume, "wake_condition_matched", "", nil},
				{commitment.Modify, commitment.ReasonPeriodDue, "", &commitment.Change{NextDue: str("2026-03-01T22:00:00Z")}}}},
		{"suspended at its deadline, a check failing: abandoned", suspended, "2026-03-01T18:00:00Z", []string{"a"}, nil,
			[]kr{{commitment.Abandon, commitment.ReasonDeadlineUnmet, commitment.TerminalExit, nil}}},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := standingCtx(t, tc.now, []commitment.Declaration{decl}, []string{"a", "b"}, tc.failing...)
			ctx.Signals = tc.signals
			before := deepCopy(t, tc.store)
			got := commitment.Evaluate(tc.store, ctx)
			assert.Equal(t, before, deepCopy(t, tc.store), "Evaluate changes nothing")
			require.Len(t, got, len(tc.want))
			s := tc.store
			for i, w := range tc.want {
				assert.Equal(t, id, got[i].CommitmentID)
				assert.Equal(t, w.kind, got[i].Kind, "step %d", i)
				assert.Equal(t, w.reason, got[i].Reason, "step %d", i)
				assert.Equal(t, w.class, got[i].Class, "step %d", i)
				assert.Equal(t, w.change, got[i].Change, "step %d", i)
				// Each step expects the version the one before left.
				var err error
				s, _, err = s.Apply(got[i].Transition(tc.now))
				require.NoError(t, err, "step %d", i)
			}
		})
	}
}

func TestStandingSuspendHoldsItsItem(t *testing.T) {
	s := takenUp(t, commitment.Declaration{ID: "docs", Checks: []string{"a"}, Every: "1h"}, t0, []string{"a"})
	id := s.Commitments[0].ID
	s, c, err := s.Apply(commitment.Transition{Kind: commitment.Suspend, CommitmentID: id, ExpectedVersion: 1, At: t1, Item: "check:a",
		Wake: &commitment.Condition{Kind: commitment.WakeApproval, ActionRef: "areq:x"}})
	require.NoError(t, err)
	assert.Equal(t, "check:a", c.ItemID, "a standing commitment remembers the work it is held on")
	_, c, err = s.Apply(commitment.Transition{Kind: commitment.Resume, CommitmentID: id, ExpectedVersion: 2, At: t1})
	require.NoError(t, err)
	assert.Empty(t, c.ItemID)
	assert.Nil(t, c.Wake)

	// A promoted commitment keeps its item throughout.
	p := storeOf(mk("p", commitment.Active, 1))
	_, c, err = p.Apply(commitment.Transition{Kind: commitment.Suspend, CommitmentID: "p", ExpectedVersion: 1, At: t1, Item: "check:other"})
	require.NoError(t, err)
	assert.Equal(t, "check:p", c.ItemID)
}

func TestStoreDue(t *testing.T) {
	a, b, c := mk("a", commitment.Active, 1), mk("b", commitment.Suspended, 1), mk("c", commitment.Active, 1)
	a.Deadline = "2026-03-01T12:00:00Z"
	b.Deadline, b.NextDue = "2026-03-02T00:00:00Z", "2026-03-01T11:30:00Z"
	c.NextDue = "2026-03-01T09:00:00Z" // past
	s := storeOf(a, b, c)
	assert.Equal(t, "2026-03-01T11:30:00Z", s.Due(mustTime(t, t0)))
	assert.Equal(t, "2026-03-01T12:00:00Z", s.Due(mustTime(t, "2026-03-01T11:30:00Z")), "a time reached is no longer to come")
	assert.Equal(t, "", s.Due(mustTime(t, "2026-03-02T00:00:00Z")))
	assert.Equal(t, "", commitment.NewStore().Due(mustTime(t, t0)))
}

func TestParseEvery(t *testing.T) {
	for s, want := range map[string]time.Duration{"1m": time.Minute, "6h": 6 * time.Hour, "1h30m": 90 * time.Minute, "90s": 90 * time.Second} {
		got, err := commitment.ParseEvery(s)
		require.NoError(t, err, s)
		assert.Equal(t, want, got, s)
	}
	for _, s := range []string{"", "0", "59s", "1d", "1.5s", "-1h", "soon"} {
		_, err := commitment.ParseEvery(s)
		assert.Error(t, err, s)
	}
}
