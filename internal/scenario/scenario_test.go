package scenario

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// TestReferenceScenarios runs every scenario under scenarios/ and requires
// each to meet its own expectations (including frozen fingerprints).
func TestReferenceScenarios(t *testing.T) {
	dirs, err := Discover(filepath.Join("..", "..", "scenarios"))
	require.NoError(t, err)
	require.NotEmpty(t, dirs, "no scenarios found")
	for _, d := range dirs {
		t.Run(filepath.Base(d), func(t *testing.T) {
			sc, err := Load(d)
			require.NoError(t, err)
			res, err := Run(sc, Options{})
			require.NoError(t, err)
			for _, f := range res.Failures {
				t.Error(f)
			}
			t.Logf("%s: %d cycles, final %s, sequence %v", res.Name, res.Cycles, res.FinalDisposition, res.DispositionSequence)
			assert.True(t, res.Passed)
		})
	}
}

// TestPromotionIsNeverSilent: in every reference scenario's ledger, each
// commitment.created event is preceded, in the same cycle, by an
// agenda.promotion.recorded event naming that commitment.
func TestPromotionIsNeverSilent(t *testing.T) {
	dirs, err := Discover(filepath.Join("..", "..", "scenarios"))
	require.NoError(t, err)
	created := 0
	for _, d := range dirs {
		sc, err := Load(d)
		require.NoError(t, err)
		res, err := Run(sc, Options{Keep: true})
		require.NoError(t, err)
		fsys, err := disk.OpenOSDir(res.Dir)
		require.NoError(t, err)
		promoted := map[string]int64{}
		require.NoError(t, ledger.Scan(fsys, func(r ledger.Record) error {
			switch r.Event.Type {
			case "agenda.promotion.recorded":
				var p struct {
					CommitmentID string `json:"commitment_id"`
				}
				v, err := state.ParseCanonical(r.Event.Object.Body)
				require.NoError(t, err)
				for _, m := range v.Obj {
					if m.Key == "commitment_id" {
						p.CommitmentID = m.Val.Str
					}
				}
				promoted[p.CommitmentID] = r.Event.CycleSeq
			case "commitment.created":
				var c commitment.Commitment
				require.NoError(t, r.Event.Object.Decode(&c))
				cyc, ok := promoted[c.ID]
				assert.True(t, ok && cyc == r.Event.CycleSeq, "%s: commitment %s created without a recorded promotion", sc.Script.Name, c.ID)
				assert.Equal(t, "PROMOTE_TO_COMMITMENT", c.Origin.Kind)
				created++
			}
			return nil
		}))
		require.NoError(t, os.RemoveAll(filepath.Dir(res.Dir)))
	}
	require.Positive(t, created, "no scenario created a commitment: the check saw nothing")
}

func TestLoadRejectsBadSteps(t *testing.T) {
	cases := map[string]string{
		"world escapes":     `{"world":{"write":"../outside","content":"x"}}`,
		"world empty":       `{"world":{}}`,
		"bad expiry":        `{"wake":{"source":"external_event","expires_in":"soon"}}`,
		"unknown source":    `{"wake":{"source":"grant_me"}}`,
		"two actions":       `{"run":1,"advance":"1h"}`,
		"unknown failpoint": `{"crash":{"failpoint":"somewhere"}}`,
	}
	for name, step := range cases {
		t.Run(name, func(t *testing.T) {
			var st Step
			require.NoError(t, state.Unmarshal([]byte(step), &st))
			s := Script{Schema: Schema, Name: "x", Start: "2026-01-01T00:00:00Z", Steps: []Step{st}}
			var fe *state.FieldError
			require.ErrorAs(t, s.validate(), &fe)
			assert.Contains(t, fe.Path, "steps[0]")
		})
	}
}
