package semantic_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/semantic"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

const (
	h1 = codec.Fingerprint("sha256:1111111111111111111111111111111111111111111111111111111111111111")
	h2 = codec.Fingerprint("sha256:2222222222222222222222222222222222222222222222222222222222222222")
	h3 = codec.Fingerprint("sha256:3333333333333333333333333333333333333333333333333333333333333333")
)

func spec() *world.Spec {
	return &world.Spec{
		Schema: world.SpecSchema,
		Checks: []world.Check{
			{ID: "zeta", Kind: world.CheckAbsentText, Path: "z.txt", Text: "x", Priority: 5},
			{ID: "alpha", Kind: world.CheckFileExists, Path: "a.txt", Priority: 50},
			{ID: "mid", Kind: world.CheckPresentText, Path: "m.txt", Text: "y", Priority: 20},
		},
	}
}

func observation() world.Observation {
	return world.Observation{
		Schema: world.ObservationSchema,
		Checks: []world.CheckResult{
			{ID: "zeta", Status: world.CheckFail, Detail: "found 1 occurrence(s) of the forbidden text", TargetSHA256: h1},
			{ID: "mid", Status: world.CheckPass, TargetSHA256: h2},
			{ID: "alpha", Status: world.CheckFail, Detail: "file is missing"},
			{ID: "orphan", Status: world.CheckPass},
		},
		Evidence: []world.EvidenceFact{
			{ID: "sign-off", Present: false},
			{ID: "ci-report", Present: true, SHA256: h3},
			{ID: "audit", Present: false},
		},
	}
}

func TestEncode(t *testing.T) {
	obs := observation()
	s := semantic.Encode(obs, spec())
	assert.Equal(t, semantic.StateSchema, s.Schema)
	assert.Equal(t, obs.Ref(), s.ObservationRef)
	assert.Equal(t, []semantic.Fact{
		{Kind: semantic.CheckFailing, Subject: "alpha", Path: "a.txt", Detail: "file is missing", Priority: 50},
		{Kind: semantic.CheckFailing, Subject: "zeta", Path: "z.txt", Detail: "found 1 occurrence(s) of the forbidden text", Priority: 5, Hash: h1},
		{Kind: semantic.CheckPassing, Subject: "mid", Path: "m.txt", Priority: 20, Hash: h2},
		{Kind: semantic.CheckPassing, Subject: "orphan"},
		{Kind: semantic.EvidenceMissing, Subject: "audit"},
		{Kind: semantic.EvidenceMissing, Subject: "sign-off"},
		{Kind: semantic.EvidencePresent, Subject: "ci-report", Hash: h3},
	}, s.Facts)
}

func TestEncodeIsIndependentOfInputOrder(t *testing.T) {
	a := observation()
	b := observation()
	b.Checks = []world.CheckResult{a.Checks[3], a.Checks[1], a.Checks[0], a.Checks[2]}
	b.Evidence = []world.EvidenceFact{a.Evidence[2], a.Evidence[1], a.Evidence[0]}
	assert.Equal(t, semantic.Encode(a, spec()).Facts, semantic.Encode(b, spec()).Facts)
	// The ref names the exact observation, so a reordered one is a different input.
	assert.NotEqual(t, semantic.Encode(a, spec()).ObservationRef, semantic.Encode(b, spec()).ObservationRef)
}

func TestEncodeEmpty(t *testing.T) {
	s := semantic.Encode(world.Observation{}, &world.Spec{})
	assert.NotNil(t, s.Facts)
	assert.Empty(t, s.Facts)
	assert.Empty(t, s.Failing())
	_, ok := s.Fact("anything")
	assert.False(t, ok)
}

func TestFailingAndFact(t *testing.T) {
	s := semantic.Encode(observation(), spec())
	var failing []string
	for _, f := range s.Failing() {
		assert.Equal(t, semantic.CheckFailing, f.Kind)
		failing = append(failing, f.Subject)
	}
	assert.Equal(t, []string{"alpha", "zeta"}, failing)

	f, ok := s.Fact("mid")
	require.True(t, ok)
	assert.Equal(t, semantic.CheckPassing, f.Kind)
	assert.Equal(t, 20, f.Priority)

	f, ok = s.Fact("zeta")
	require.True(t, ok)
	assert.Equal(t, semantic.CheckFailing, f.Kind)

	// Evidence facts are not check facts, even with a matching subject.
	_, ok = s.Fact("ci-report")
	assert.False(t, ok)
}

func TestFailuresByItem(t *testing.T) {
	cases := []struct {
		name     string
		attempts []state.Attempt
		want     []semantic.ItemFailures
	}{
		{"none", nil, nil},
		{"only successes", []state.Attempt{{ItemID: "check:a", Count: 3}}, nil},
		{"summed per item across fingerprints and evidence, sorted", []state.Attempt{
			{ItemID: "check:z", Fingerprint: "f1", EvidenceRef: "e1", Count: 2, Failures: 2},
			{ItemID: "check:a", Fingerprint: "f1", EvidenceRef: "e1", Count: 1, Failures: 1},
			{ItemID: "check:z", Fingerprint: "f2", EvidenceRef: "e2", Count: 4, Failures: 3},
			{ItemID: "check:m", Fingerprint: "f1", EvidenceRef: "e1", Count: 5, Failures: 0},
		}, []semantic.ItemFailures{{ItemID: "check:a", Failures: 1}, {ItemID: "check:z", Failures: 5}}},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, semantic.FailuresByItem(tc.attempts))
		})
	}
}

func TestObserve(t *testing.T) {
	rs := &state.RunState{
		LoopDisposition:  state.Deferred,
		Budget:           state.BudgetUsage{Cycles: 7, Actions: 2, CognitiveOperations: 30},
		PendingApprovals: []state.PendingApproval{{ItemID: "check:a"}, {ItemID: "check:b"}},
		Deferred:         []state.DeferredItem{{ItemID: "check:c"}},
		Suppressed:       []state.Suppression{{ItemID: "check:d"}, {ItemID: "check:e"}, {ItemID: "check:f"}},
		Attempts: []state.Attempt{
			{ItemID: "check:b", Failures: 2},
			{ItemID: "check:a", Failures: 1},
			{ItemID: "check:b", Failures: 1},
			{ItemID: "check:x", Failures: 0},
		},
	}
	s := semantic.Observe(rs, 8, 4)
	assert.Equal(t, semantic.Self{
		Schema: semantic.SelfSchema, CycleSeq: 8, PriorDisposition: state.Deferred,
		Budget:           state.BudgetUsage{Cycles: 7, Actions: 2, CognitiveOperations: 30},
		PendingApprovals: 2, Deferred: 1, Suppressed: 3, LiveCommitments: 4,
		RecentFailures: []semantic.ItemFailures{{ItemID: "check:a", Failures: 1}, {ItemID: "check:b", Failures: 3}},
	}, s)

	empty := semantic.Observe(&state.RunState{}, 1, 0)
	assert.Equal(t, []semantic.ItemFailures{}, empty.RecentFailures, "recent failures are an empty list, not null")
	assert.Equal(t, 0, empty.PendingApprovals)
}
