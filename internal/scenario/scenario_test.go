package scenario

import (
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// TestReferenceScenarios runs every scenario under scenarios/ once, in
// parallel, and checks three things on each run, which used to be three
// tests that ran every scenario again:
//
//   - expectations: it meets its own expectations (including frozen
//     fingerprints);
//   - promotion: each commitment.created event in its ledger is preceded, in
//     the same cycle, by an agenda.promotion.recorded event naming that
//     commitment (promotion is never silent);
//   - encoding: every recorded event and object re-encodes to its recorded
//     bytes (reencodesRecorded);
//   - replay: its ledger is re-derived, cycle by cycle, from its recorded
//     inputs alone, including the ones with crashes and recoveries in them.
func TestReferenceScenarios(t *testing.T) {
	dirs, err := Discover(filepath.Join("..", "..", "scenarios"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "no scenarios found")
	var created, replayed, reencoded atomic.Int64
	t.Run("each", func(t *testing.T) {
		for _, d := range dirs {
			t.Run(filepath.Base(d), func(t *testing.T) {
				t.Parallel()
				sc, err := Load(d)
				require.NoError(t, err)
				res, err := Run(sc, Options{Keep: true})
				require.NoError(t, err)
				t.Cleanup(func() { _ = removeAll(filepath.Dir(res.Dir)) })
				fsys, err := disk.OpenOSDir(res.Dir)
				require.NoError(t, err)
				recs, err := ledger.ReadAll(fsys)
				require.NoError(t, err)

				t.Run("expectations", func(t *testing.T) {
					for _, f := range res.Failures {
						t.Error(f)
					}
					t.Logf("%s: %d cycles, final %s, sequence %v", res.Name, res.Cycles, res.FinalDisposition, res.DispositionSequence)
					assert.True(t, res.Passed)
				})
				t.Run("catalog", func(t *testing.T) {
					for _, r := range recs {
						assert.True(t, r.Event.Type.Valid(), "event kind %q is not in the catalog (internal/event)", r.Event.Type)
					}
				})
				t.Run("promotion", func(t *testing.T) {
					created.Add(int64(promotionsNeverSilent(t, sc.Script.Name, recs)))
				})
				t.Run("encoding", func(t *testing.T) {
					reencoded.Add(int64(reencodesRecorded(t, recs)))
				})
				t.Run("replay", func(t *testing.T) {
					rep, err := kernel.Replay(recs, 1)
					require.NoError(t, err)
					assert.True(t, rep.OK, "divergence: %+v", rep.Divergence)
					assert.Positive(t, rep.CyclesVerified)
					replayed.Add(1)
				})
			})
		}
	})
	require.Positive(t, created.Load(), "no scenario created a commitment: the promotion check saw nothing")
	require.Equal(t, int64(len(dirs)), replayed.Load(), "every scenario was replayed")
	require.Positive(t, reencoded.Load(), "no recorded object was re-encoded")
}

// promotionsNeverSilent checks that each commitment.created event among
// recs is explicit: a promoted one follows an agenda.promotion.recorded
// event of the same cycle naming that commitment; a standing one keeps a
// declaration of the goal in force when it was created (the pinned goal,
// or the last accepted amendment of it), that exact version of it. It
// returns how many commitments it checked.
func promotionsNeverSilent(t *testing.T, name string, recs []event.Record) int {
	t.Helper()
	created := 0
	promoted := map[string]int64{}
	var goal intent.Goal
	proposed := map[codec.Ref]state.PendingAmendment{}
	for _, r := range recs {
		switch r.Event.Type {
		case event.GoalPinned:
			require.NoError(t, r.Event.Object.Decode(&goal))
		case event.AmendmentProposed:
			var p state.PendingAmendment
			require.NoError(t, r.Event.Object.Decode(&p))
			proposed[p.Ref] = p
		case event.AmendmentAccepted:
			if p, ok := proposed[r.Event.Refs["amendment"]]; ok && p.Target == state.AmendGoal {
				goal = intent.Goal{}
				require.NoError(t, codec.DecodeValue(p.Document, &goal))
			}
		case event.PromotionRecorded:
			v, err := codec.ParseCanonical(r.Event.Object.Body)
			require.NoError(t, err)
			for _, m := range v.Obj {
				if m.Key == "commitment_id" {
					promoted[m.Val.Str] = r.Event.CycleSeq
				}
			}
		case event.CommitmentCreated:
			var c commitment.Commitment
			require.NoError(t, r.Event.Object.Decode(&c))
			created++
			if c.Origin.Kind == commitment.OriginDeclared {
				i := slices.IndexFunc(goal.Commitments, func(d commitment.Declaration) bool { return d.ID == c.Standing })
				require.GreaterOrEqual(t, i, 0, "%s: commitment %s keeps %q, which the goal in force does not declare", name, c.ID, c.Standing)
				assert.Equal(t, goal.Commitments[i].Ref(), c.DeclarationRef, "%s: commitment %s", name, c.ID)
				assert.Equal(t, codec.MustRefOf("goal", goal), c.Origin.GoalRef, "%s: commitment %s names another goal", name, c.ID)
				continue
			}
			cyc, ok := promoted[c.ID]
			assert.True(t, ok && cyc == r.Event.CycleSeq, "%s: commitment %s created without a recorded promotion", name, c.ID)
			assert.Equal(t, commitment.OriginPromoted, c.Origin.Kind)
		}
	}
	return created
}

func TestLoadRejectsBadSteps(t *testing.T) {
	cases := map[string]string{
		"world escapes":     `{"world":{"write":"../outside","content":"x"}}`,
		"world empty":       `{"world":{}}`,
		"bad expiry":        `{"wake":{"source":"external_event","expires_in":"soon"}}`,
		"unknown source":    `{"wake":{"source":"grant_me"}}`,
		"two actions":       `{"run":1,"advance":"1h"}`,
		"unknown failpoint": `{"crash":{"failpoint":"somewhere"}}`,
		"amend two files":   `{"amend":{"goal":"g.json","environment":"e.json"}}`,
		"amend nothing":     `{"amend":{}}`,
		"amend outside":     `{"amend":{"environment":"../p14-mixed-100/environment.json"}}`,
	}
	for name, step := range cases {
		t.Run(name, func(t *testing.T) {
			var st Step
			require.NoError(t, codec.Unmarshal([]byte(step), &st))
			s := Script{Schema: Schema, Name: "x", Start: "2026-01-01T00:00:00Z", Steps: []Step{st}}
			var fe *codec.FieldError
			require.ErrorAs(t, s.validate(), &fe)
			assert.Contains(t, fe.Path, "steps[0]")
		})
	}
}
