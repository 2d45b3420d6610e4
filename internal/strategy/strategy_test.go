package strategy_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/strategy"
)

func candidate(src, prior, observed string, reviewed bool) strategy.KnowledgeCandidate {
	return strategy.KnowledgeCandidate{
		Update:     strategy.KnowledgeUpdate{Schema: strategy.KnowledgeSchema, SourceRef: src, PriorVersionRef: prior, ObservedVersionRef: observed},
		ReceivedAt: "2026-01-01T00:00:00Z", Reviewed: reviewed, Status: "candidate",
	}
}

func TestAssess(t *testing.T) {
	cases := []struct {
		name string
		in   strategy.Inputs
		want []strategy.Signal
	}{
		{"nothing", strategy.Inputs{}, []strategy.Signal{}},
		{"failures below the threshold", strategy.Inputs{Failures: map[string]int{"check:a": 2}, FailureThreshold: 3}, []strategy.Signal{}},
		{"failures at and above the threshold, sorted by item", strategy.Inputs{
			Failures: map[string]int{"check:z": 3, "check:a": 4, "check:m": 2}, FailureThreshold: 3,
		}, []strategy.Signal{
			{Class: strategy.RepeatedFailure, Subject: "check:a", Count: 4},
			{Class: strategy.RepeatedFailure, Subject: "check:z", Count: 3},
		}},
		{"threshold is at least two", strategy.Inputs{Failures: map[string]int{"check:a": 1, "check:b": 2}, FailureThreshold: 1},
			[]strategy.Signal{{Class: strategy.RepeatedFailure, Subject: "check:b", Count: 2}}},
		{"zero threshold means two", strategy.Inputs{Failures: map[string]int{"check:a": 1, "check:b": 2}},
			[]strategy.Signal{{Class: strategy.RepeatedFailure, Subject: "check:b", Count: 2}}},
		{"one commitment per target is no conflict", strategy.Inputs{Targets: map[string]string{"cmt-1": "a.txt", "cmt-2": "b.txt"}}, []strategy.Signal{}},
		{"commitments on one target conflict, sorted by target", strategy.Inputs{Targets: map[string]string{
			"cmt-1": "z.txt", "cmt-2": "z.txt", "cmt-3": "a.txt", "cmt-4": "a.txt", "cmt-5": "a.txt", "cmt-6": "solo.txt",
		}}, []strategy.Signal{
			{Class: strategy.ConflictingCommitments, Subject: "a.txt", Count: 3},
			{Class: strategy.ConflictingCommitments, Subject: "z.txt", Count: 2},
		}},
		{"only unreviewed knowledge candidates count", strategy.Inputs{Candidates: []strategy.KnowledgeCandidate{
			candidate("src:b", "v1", "v2", false), candidate("src:a", "v1", "v2", true), candidate("src:c", "v1", "v3", false),
		}}, []strategy.Signal{
			{Class: strategy.StaleKnowledge, Subject: "src:b", Count: 1},
			{Class: strategy.StaleKnowledge, Subject: "src:c", Count: 1},
		}},
		{"all classes in a fixed order", strategy.Inputs{
			Failures:         map[string]int{"check:a": 5},
			Targets:          map[string]string{"cmt-1": "t", "cmt-2": "t"},
			Candidates:       []strategy.KnowledgeCandidate{candidate("src:x", "1", "2", false)},
			FailureThreshold: 2,
		}, []strategy.Signal{
			{Class: strategy.RepeatedFailure, Subject: "check:a", Count: 5},
			{Class: strategy.ConflictingCommitments, Subject: "t", Count: 2},
			{Class: strategy.StaleKnowledge, Subject: "src:x", Count: 1},
		}},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.in.CycleSeq = 12
			got := strategy.Assess(tc.in)
			assert.Equal(t, strategy.TensionSchema, got.Schema)
			assert.Equal(t, int64(12), got.CycleSeq)
			assert.Equal(t, tc.want, got.Signals)
		})
	}
}

func TestTensionFingerprintIgnoresCycle(t *testing.T) {
	sig := []strategy.Signal{{Class: strategy.RepeatedFailure, Subject: "check:a", Count: 2}}
	a := strategy.Tension{Schema: strategy.TensionSchema, CycleSeq: 1, Signals: sig}
	b := strategy.Tension{Schema: strategy.TensionSchema, CycleSeq: 99, Signals: sig}
	assert.Equal(t, a.Fingerprint(), b.Fingerprint())
	c := strategy.Tension{Signals: []strategy.Signal{{Class: strategy.RepeatedFailure, Subject: "check:a", Count: 3}}}
	assert.NotEqual(t, a.Fingerprint(), c.Fingerprint())
}

func TestNeedsReview(t *testing.T) {
	repeated := strategy.Tension{CycleSeq: 5, Signals: []strategy.Signal{
		{Class: strategy.RepeatedFailure, Subject: "check:a", Count: 2},
		{Class: strategy.RepeatedFailure, Subject: "check:b", Count: 3},
		{Class: strategy.StaleKnowledge, Subject: "src:x", Count: 1},
	}}
	empty := strategy.Tension{CycleSeq: 5, Signals: []strategy.Signal{}}
	cases := []struct {
		name     string
		tension  strategy.Tension
		last     string
		decision strategy.Decision
		reasons  []string
	}{
		{"no tension", empty, "", strategy.NoReview, []string{"no_material_tension"}},
		{"no tension even if something was reviewed", empty, "sha256:old", strategy.NoReview, []string{"no_material_tension"}},
		{"tension already reviewed", repeated, repeated.Fingerprint(), strategy.NoReview, []string{"tension_already_reviewed"}},
		{"new tension", repeated, "", strategy.Review, []string{"tension_repeated_failure", "tension_stale_knowledge"}},
		{"changed tension", repeated, "sha256:something-else", strategy.Review, []string{"tension_repeated_failure", "tension_stale_knowledge"}},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := strategy.NewState(strategy.DefaultLenses())
			s.LastReviewed = tc.last
			tr := strategy.NeedsReview(tc.tension, s)
			assert.Equal(t, strategy.Trigger{
				Schema: strategy.TriggerSchema, CycleSeq: 5, Decision: tc.decision, Reasons: tc.reasons,
				TensionFingerprint: tc.tension.Fingerprint(),
			}, tr)
		})
	}
}

func TestNewState(t *testing.T) {
	s := strategy.NewState(strategy.DefaultLenses())
	assert.Equal(t, strategy.StateSchema, s.Schema)
	assert.Equal(t, []strategy.SourceVersion{
		{LensID: "alternative-remedy", SourceRef: "src:acr-builtin-lenses", SourceVersion: "1"},
		{LensID: "one-promise-per-target", SourceRef: "src:acr-builtin-lenses", SourceVersion: "1"},
		{LensID: "source-refresh-review", SourceRef: "src:acr-builtin-lenses", SourceVersion: "1"},
	}, s.Active)
	assert.NotNil(t, s.Candidates)
	assert.Nil(t, s.Overlay)
	assert.Equal(t, strategy.Memory{Schema: strategy.StateSchema, Active: []strategy.SourceVersion{}, Candidates: []strategy.KnowledgeCandidate{}}, strategy.NewState(nil))
}

func review(t *testing.T, in strategy.Inputs, s strategy.Memory) (strategy.Tension, strategy.Trigger) {
	t.Helper()
	ten := strategy.Assess(in)
	tr := strategy.NeedsReview(ten, s)
	require.Equal(t, strategy.Review, tr.Decision)
	return ten, tr
}

func TestApplyRepeatedFailure(t *testing.T) {
	s := strategy.NewState(strategy.DefaultLenses())
	ten, tr := review(t, strategy.Inputs{CycleSeq: 8, Failures: map[string]int{"check:z": 2, "check:a": 3}}, s)
	out, ret, ov := strategy.Apply(ten, tr, strategy.DefaultLenses(), s)

	alt := strategy.SourceVersion{LensID: "alternative-remedy", SourceRef: "src:acr-builtin-lenses", SourceVersion: "1"}
	assert.Equal(t, strategy.Retrieval{
		Schema: strategy.RetrievalSchema, CycleSeq: 8,
		Candidates:        []strategy.LensCandidate{{SourceVersion: alt, Matched: []strategy.TensionClass{strategy.RepeatedFailure}}},
		Corrections:       []strategy.Correction{{ItemID: "check:a", Kind: "skip_failed_fixes"}, {ItemID: "check:z", Kind: "skip_failed_fixes"}},
		KnowledgeReviewed: []string{},
	}, ret)
	require.NotNil(t, ov)
	assert.Equal(t, strategy.Overlay{
		Schema: strategy.OverlaySchema, FromCycle: 8, Lenses: []strategy.SourceVersion{alt},
		CritiqueFirst: true, SkipFailedFixes: []string{"check:a", "check:z"},
	}, *ov)
	require.NotNil(t, out.Overlay)
	assert.Equal(t, *ov, *out.Overlay)
	assert.Equal(t, "route", ov.Ref().Kind())
	assert.Equal(t, tr.TensionFingerprint, out.LastReviewed)
	assert.Equal(t, int64(1), out.Reviews)
	assert.Equal(t, s.Active, out.Active, "a review never changes the active lenses")

	// The same tension is not reviewed again.
	again := strategy.NeedsReview(strategy.Assess(strategy.Inputs{CycleSeq: 9, Failures: map[string]int{"check:z": 2, "check:a": 3}}), out)
	assert.Equal(t, strategy.NoReview, again.Decision)
}

func TestApplyOnlyMatchingLenses(t *testing.T) {
	registry := []strategy.Lens{
		{ID: "both", SourceRef: "src:a", SourceVersion: "3", AppliesTo: []strategy.TensionClass{strategy.StaleKnowledge, strategy.ConflictingCommitments}, Routing: strategy.Routing{CritiqueFirst: true}},
		{ID: "failures-only", SourceRef: "src:b", SourceVersion: "7", AppliesTo: []strategy.TensionClass{strategy.RepeatedFailure}, Routing: strategy.Routing{PreferNextFix: true}},
		{ID: "no-routing", SourceRef: "src:c", SourceVersion: "2", AppliesTo: []strategy.TensionClass{strategy.ConflictingCommitments}},
	}
	s := strategy.NewState(registry)
	ten, tr := review(t, strategy.Inputs{CycleSeq: 4, Targets: map[string]string{"c1": "x", "c2": "x"}}, s)
	out, ret, ov := strategy.Apply(ten, tr, registry, s)

	assert.Equal(t, []strategy.LensCandidate{
		{SourceVersion: strategy.SourceVersion{LensID: "both", SourceRef: "src:a", SourceVersion: "3"}, Matched: []strategy.TensionClass{strategy.ConflictingCommitments}},
		{SourceVersion: strategy.SourceVersion{LensID: "no-routing", SourceRef: "src:c", SourceVersion: "2"}, Matched: []strategy.TensionClass{strategy.ConflictingCommitments}},
	}, ret.Candidates)
	assert.Empty(t, ret.Corrections)
	require.NotNil(t, ov)
	assert.Equal(t, []strategy.SourceVersion{{LensID: "both", SourceRef: "src:a", SourceVersion: "3"}}, ov.Lenses, "only lenses that shaped the routing are listed")
	assert.True(t, ov.CritiqueFirst)
	assert.Equal(t, []string{}, ov.SkipFailedFixes)
	assert.Equal(t, ov, out.Overlay)
}

func TestApplyWithoutRoutingLensLeavesOverlay(t *testing.T) {
	s := strategy.NewState(strategy.DefaultLenses())
	prior := &strategy.Overlay{Schema: strategy.OverlaySchema, FromCycle: 1, CritiqueFirst: true, SkipFailedFixes: []string{"check:a"},
		Lenses: []strategy.SourceVersion{{LensID: "alternative-remedy", SourceRef: "src:acr-builtin-lenses", SourceVersion: "1"}}}
	s.Overlay = prior
	s.Candidates = []strategy.KnowledgeCandidate{candidate("src:site", "v1", "v2", false)}
	ten, tr := review(t, strategy.Inputs{CycleSeq: 6, Candidates: s.Candidates}, s)
	out, ret, ov := strategy.Apply(ten, tr, strategy.DefaultLenses(), s)
	assert.Nil(t, ov, "source-refresh-review has no routing")
	assert.Same(t, prior, out.Overlay)
	require.Len(t, ret.Candidates, 1)
	assert.Equal(t, "source-refresh-review", ret.Candidates[0].LensID)
	assert.Equal(t, []string{"src:site"}, ret.KnowledgeReviewed)
}

func TestApplyReviewsKnowledgeWithoutPromoting(t *testing.T) {
	s := strategy.NewState(strategy.DefaultLenses())
	s.Candidates = []strategy.KnowledgeCandidate{
		candidate("src:a", "v1", "v2", false),
		candidate("src:b", "v1", "v2", true),
		candidate("src:c", "v4", "v5", false),
	}
	before := make([]strategy.KnowledgeCandidate, len(s.Candidates))
	copy(before, s.Candidates)
	ten, tr := review(t, strategy.Inputs{CycleSeq: 2, Candidates: s.Candidates}, s)
	out, ret, _ := strategy.Apply(ten, tr, strategy.DefaultLenses(), s)

	assert.Equal(t, []string{"src:a", "src:c"}, ret.KnowledgeReviewed)
	require.Len(t, out.Candidates, 3)
	for _, c := range out.Candidates {
		assert.True(t, c.Reviewed, c.Update.SourceRef)
		assert.Equal(t, "candidate", c.Status, "a review never promotes knowledge")
	}
	assert.Equal(t, before, s.Candidates, "the input state's candidates are not modified")
	assert.Equal(t, s.Active, out.Active)

	// Reviewed candidates no longer make tension.
	assert.Empty(t, strategy.Assess(strategy.Inputs{Candidates: out.Candidates}).Signals)
}

func TestApplyMergesWithPriorOverlay(t *testing.T) {
	registry := strategy.DefaultLenses()
	s := strategy.NewState(registry)
	ten, tr := review(t, strategy.Inputs{CycleSeq: 3, Failures: map[string]int{"check:m": 2}}, s)
	s, _, _ = strategy.Apply(ten, tr, registry, s)
	require.NotNil(t, s.Overlay)

	ten, tr = review(t, strategy.Inputs{CycleSeq: 9, Failures: map[string]int{"check:b": 2, "check:m": 2}}, s)
	out, _, ov := strategy.Apply(ten, tr, registry, s)
	require.NotNil(t, ov)
	assert.Equal(t, []string{"check:b", "check:m"}, ov.SkipFailedFixes, "merged, sorted, without duplicates")
	assert.True(t, ov.CritiqueFirst)
	assert.Equal(t, int64(9), ov.FromCycle)
	assert.Equal(t, int64(2), out.Reviews)
	assert.Equal(t, []string{"check:m"}, s.Overlay.SkipFailedFixes, "the prior overlay is not modified")
}

func TestApplyMergedOverlayNamesEveryContributingLens(t *testing.T) {
	// A review for conflicting commitments on top of an overlay that a
	// repeated-failure review produced keeps the skip list of the earlier
	// overlay, so the overlay must still name the lens that list came from.
	registry := strategy.DefaultLenses()
	s := strategy.NewState(registry)
	ten, tr := review(t, strategy.Inputs{CycleSeq: 3, Failures: map[string]int{"check:m": 2}}, s)
	s, _, _ = strategy.Apply(ten, tr, registry, s)
	require.NotNil(t, s.Overlay)

	ten, tr = review(t, strategy.Inputs{CycleSeq: 4, Targets: map[string]string{"c1": "x", "c2": "x"}}, s)
	_, _, ov := strategy.Apply(ten, tr, registry, s)
	require.NotNil(t, ov)
	assert.Equal(t, []string{"check:m"}, ov.SkipFailedFixes)
	var lensIDs []string
	for _, l := range ov.Lenses {
		lensIDs = append(lensIDs, l.LensID)
	}
	assert.Contains(t, lensIDs, "one-promise-per-target")
	assert.Contains(t, lensIDs, "alternative-remedy", "the merged overlay names every lens it carries")
}

func TestSettle(t *testing.T) {
	base := func() strategy.Memory {
		s := strategy.NewState(strategy.DefaultLenses())
		s.LastReviewed = "sha256:reviewed"
		s.Overlay = &strategy.Overlay{Schema: strategy.OverlaySchema, FromCycle: 2, CritiqueFirst: true, SkipFailedFixes: []string{"check:a", "check:b"},
			Lenses: []strategy.SourceVersion{{LensID: "alternative-remedy", SourceRef: "src:acr-builtin-lenses", SourceVersion: "1"}}}
		return s
	}

	t.Run("nothing resolved", func(t *testing.T) {
		s := base()
		out := strategy.Settle(s, nil)
		assert.Equal(t, s, out)
	})
	t.Run("no overlay", func(t *testing.T) {
		s := strategy.NewState(nil)
		s.LastReviewed = "sha256:x"
		assert.Equal(t, s, strategy.Settle(s, []string{"check:a"}))
	})
	t.Run("unrelated item", func(t *testing.T) {
		s := base()
		out := strategy.Settle(s, []string{"check:zzz"})
		require.NotNil(t, out.Overlay)
		assert.Equal(t, []string{"check:a", "check:b"}, out.Overlay.SkipFailedFixes)
		assert.Equal(t, "sha256:reviewed", out.LastReviewed)
	})
	t.Run("one of two resolved", func(t *testing.T) {
		s := base()
		out := strategy.Settle(s, []string{"check:a"})
		require.NotNil(t, out.Overlay)
		assert.Equal(t, []string{"check:b"}, out.Overlay.SkipFailedFixes)
		assert.True(t, out.Overlay.CritiqueFirst)
		assert.Equal(t, "sha256:reviewed", out.LastReviewed)
		assert.Equal(t, []string{"check:a", "check:b"}, s.Overlay.SkipFailedFixes, "the input overlay is not modified")
	})
	t.Run("all resolved removes the overlay", func(t *testing.T) {
		s := base()
		out := strategy.Settle(s, []string{"check:b", "check:a"})
		assert.Nil(t, out.Overlay)
		assert.Equal(t, "", out.LastReviewed, "the tension may be reviewed afresh")
		assert.NotNil(t, s.Overlay)
	})
	t.Run("unrelated item leaves a critique-only overlay alone", func(t *testing.T) {
		s := base()
		s.Overlay.SkipFailedFixes = []string{}
		out := strategy.Settle(s, []string{"check:zzz"})
		assert.Equal(t, s, out)
	})
}

func TestReceive(t *testing.T) {
	up := func(src, prior, observed string) strategy.KnowledgeUpdate {
		return strategy.KnowledgeUpdate{Schema: strategy.KnowledgeSchema, SourceRef: src, PriorVersionRef: prior, ObservedVersionRef: observed}
	}
	s := strategy.NewState(nil)
	s.Candidates = []strategy.KnowledgeCandidate{candidate("src:known", "v1", "v2", true)}
	before := make([]strategy.KnowledgeCandidate, len(s.Candidates))
	copy(before, s.Candidates)

	updates := []strategy.KnowledgeUpdate{
		up("src:known", "v1", "v2"), // already a candidate (even reviewed)
		up("src:same", "v3", "v3"),  // prior == observed: not a change
		up("src:new", "v1", "v2"),   // new
		up("src:new", "v1", "v2"),   // duplicate within the batch
		up("src:known", "v2", "v3"), // a newer version of a known source
	}
	out, fresh := strategy.Receive(s, updates, "2026-05-05T05:05:05Z")
	assert.Equal(t, []strategy.KnowledgeUpdate{up("src:new", "v1", "v2"), up("src:known", "v2", "v3")}, fresh)
	require.Len(t, out.Candidates, 3)
	assert.Equal(t, before[0], out.Candidates[0])
	for _, c := range out.Candidates[1:] {
		assert.Equal(t, "2026-05-05T05:05:05Z", c.ReceivedAt)
		assert.False(t, c.Reviewed)
		assert.Equal(t, "candidate", c.Status)
	}
	assert.Equal(t, before, s.Candidates, "the input state is not modified")

	// Receiving the same updates again changes nothing.
	again, fresh2 := strategy.Receive(out, updates, "2026-05-06T00:00:00Z")
	assert.Empty(t, fresh2)
	assert.Equal(t, out.Candidates, again.Candidates)
}

func TestValidateUpdate(t *testing.T) {
	ok := strategy.KnowledgeUpdate{Schema: strategy.KnowledgeSchema, SourceRef: "src:a", ObservedVersionRef: "v2"}
	require.NoError(t, strategy.ValidateUpdate(ok))
	bad := []func(u *strategy.KnowledgeUpdate){
		func(u *strategy.KnowledgeUpdate) { u.Schema = "x" },
		func(u *strategy.KnowledgeUpdate) { u.SourceRef = "" },
		func(u *strategy.KnowledgeUpdate) { u.ObservedVersionRef = "" },
	}
	for i, m := range bad {
		u := ok
		m(&u)
		assert.Error(t, strategy.ValidateUpdate(u), "case %d", i)
	}
}

func TestValidateLenses(t *testing.T) {
	require.NoError(t, strategy.ValidateLenses(strategy.DefaultLenses(), "lenses"))
	require.NoError(t, strategy.ValidateLenses(nil, "lenses"))

	good := func() []strategy.Lens {
		return []strategy.Lens{
			{ID: "a", SourceRef: "src:a", SourceVersion: "1", AppliesTo: []strategy.TensionClass{strategy.RepeatedFailure}},
			{ID: "b", SourceRef: "src:b", SourceVersion: "2", AppliesTo: []strategy.TensionClass{strategy.StaleKnowledge, strategy.ConflictingCommitments}},
		}
	}
	cases := []struct {
		name   string
		mutate func(ls []strategy.Lens)
		path   string
	}{
		{"missing id", func(ls []strategy.Lens) { ls[0].ID = "" }, "goal.lenses[0].id"},
		{"duplicate id", func(ls []strategy.Lens) { ls[1].ID = "a" }, "goal.lenses[1].id"},
		{"missing source ref", func(ls []strategy.Lens) { ls[1].SourceRef = "" }, "goal.lenses[1].source_ref"},
		{"missing source version", func(ls []strategy.Lens) { ls[0].SourceVersion = "" }, "goal.lenses[0].source_version"},
		{"missing applies_to", func(ls []strategy.Lens) { ls[1].AppliesTo = nil }, "goal.lenses[1].applies_to"},
		{"unknown tension class", func(ls []strategy.Lens) { ls[1].AppliesTo[1] = "boredom" }, "goal.lenses[1].applies_to[1]"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ls := good()
			tc.mutate(ls)
			err := strategy.ValidateLenses(ls, "goal.lenses")
			var fe *codec.FieldError
			require.True(t, errors.As(err, &fe), "want *codec.FieldError, got %T: %v", err, err)
			assert.Equal(t, tc.path, fe.Path)
		})
	}
}

func TestStateJSONShape(t *testing.T) {
	// The knowledge candidates are persisted under their documented key with
	// status "candidate".
	s := strategy.NewState(strategy.DefaultLenses())
	s, _ = strategy.Receive(s, []strategy.KnowledgeUpdate{{Schema: strategy.KnowledgeSchema, SourceRef: "src:a", PriorVersionRef: "1", ObservedVersionRef: "2"}}, "t")
	b, err := json.Marshal(s)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	kc, ok := m["knowledge_candidates"].([]any)
	require.True(t, ok)
	require.Len(t, kc, 1)
	assert.Equal(t, "candidate", kc[0].(map[string]any)["status"])
}
