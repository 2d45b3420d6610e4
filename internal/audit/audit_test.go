package audit

import (
	"bytes"
	"flag"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/scenario"
	"github.com/acr-project/acr/internal/strategy"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/ (review the diff)")

// runScenario runs a reference scenario and returns its state directory.
func runScenario(t *testing.T, name string) *disk.OSDir {
	t.Helper()
	sc, err := scenario.Load(filepath.Join("..", "..", "scenarios", name))
	require.NoError(t, err)
	res, err := scenario.Run(sc, scenario.Options{Keep: true})
	require.NoError(t, err)
	require.True(t, res.Passed, "%v", res.Failures)
	t.Cleanup(func() { _ = os.RemoveAll(filepath.Dir(res.Dir)) })
	fsys, err := disk.OpenOSDir(res.Dir)
	require.NoError(t, err)
	return fsys
}

// TestAuditAfterCompaction is P9's audit half: after 50+ cycles and a
// compaction, an early cycle is still explained from the ledger: its
// decision receipt, the contract and authority in force, the commitment
// it promoted, and the lens source version that shaped it.
func TestAuditAfterCompaction(t *testing.T) {
	fsys := runScenario(t, "p09-compaction")
	var reviewed, promoted int64
	for c := int64(1); c <= 10; c++ {
		r, err := Explain(ledger.NewReader(fsys), c)
		require.NoError(t, err)
		if r.Strategy.Overlay != nil && reviewed == 0 {
			reviewed = c
		}
		if slices.ContainsFunc(r.Commitments, func(cc CommitmentChange) bool { return cc.Event == event.CommitmentCreated }) && promoted == 0 {
			promoted = c
		}
	}
	require.NotZero(t, reviewed, "no early cycle had a strategic review")
	require.NotZero(t, promoted, "no early cycle promoted a commitment")

	r, err := Explain(ledger.NewReader(fsys), reviewed)
	require.NoError(t, err)
	require.NotNil(t, r.Compaction, "cycle %d should have been summarised by a later compaction", reviewed)
	assert.Greater(t, r.Compaction.Cycle, reviewed)
	assert.NotEmpty(t, r.Compaction.BlockID)
	assert.Contains(t, r.Strategy.Sources, sourceVersion("alternative-remedy", "src:wujiece-handbook", "2026-08-01"))
	require.NotNil(t, r.Decision)
	require.NotNil(t, r.Receipt)
	assert.Equal(t, r.DecisionRef, r.Receipt.DecisionRef)
	assert.Equal(t, "governance", r.Receipt.Actor)
	assert.Equal(t, r.Decision.ContractRef, r.Contract.Ref, "the decision names the contract pinned at the start")
	assert.Equal(t, "project_write", string(r.Contract.Authority.Mode))

	p, err := Explain(ledger.NewReader(fsys), promoted)
	require.NoError(t, err)
	require.NotNil(t, p.Compaction)
	var created *CommitmentChange
	for i := range p.Commitments {
		if p.Commitments[i].Event == event.CommitmentCreated {
			created = &p.Commitments[i]
		}
	}
	require.NotNil(t, created)
	assert.Equal(t, "PROMOTE_TO_COMMITMENT", created.Commitment.Origin.Kind)
	assert.Equal(t, p.Record.AgendaResolutionRef, created.Commitment.Origin.ResolutionRef)
	require.NotNil(t, p.Decision)
	assert.Equal(t, "DEFER", p.Decision.Verdict.String())

	_, err = Explain(ledger.NewReader(fsys), 10_000)
	assert.ErrorIs(t, err, ErrUnknownCycle)
}

func sourceVersion(id, ref, v string) strategy.SourceVersion {
	return strategy.SourceVersion{LensID: id, SourceRef: ref, SourceVersion: v}
}

// TestAuditGolden pins the text, JSON and DOT renderings of the approval
// scenario's cycles (run -update to rewrite them, then review the diff).
func TestAuditGolden(t *testing.T) {
	fsys := runScenario(t, "p05-approval-escalation")
	n := 0
	for _, c := range []int64{1, 2} {
		r, err := Explain(ledger.NewReader(fsys), c)
		require.NoError(t, err)
		var text, dot bytes.Buffer
		require.NoError(t, r.WriteText(&text))
		require.NoError(t, r.WriteDOT(&dot))
		js, err := codec.Marshal(r)
		require.NoError(t, err)
		for ext, got := range map[string][]byte{"txt": text.Bytes(), "json": append(js, '\n'), "dot": dot.Bytes()} {
			golden(t, filepath.Join("testdata", "p05-cycle"+itoa(c)+"."+ext), got)
			n++
		}
	}
	require.Equal(t, 6, n)
}

// TestAuditStandingCommitment pins the explanation of two cycles of a
// goal's standing commitments (p17): the one a period woke, which sets
// the next look, and the one the deadline woke, which gives the promise up
// as unmet; each says what woke it and the commitment's scope and times.
func TestAuditStandingCommitment(t *testing.T) {
	fsys := runScenario(t, "p17-standing-commitments")
	for c, want := range map[int64][]string{
		5: {"commitment  commitment.modified", "(period_due)", "  standing  nightly-report on nightly, next look 2026-01-03T00:00:00Z",
			"sleep          -> wake                     observer         commitment_deadline_due"},
		6: {"commitment  commitment.abandoned", "(deadline_passed_unmet,terminal_exit_condition)",
			"  standing  release-notes on release-notes, deadline 2026-01-02T12:00:00Z", "commitment_deadline_due"},
	} {
		r, err := Explain(ledger.NewReader(fsys), c)
		require.NoError(t, err)
		var text bytes.Buffer
		require.NoError(t, r.WriteText(&text))
		golden(t, filepath.Join("testdata", "p17-cycle"+itoa(c)+".txt"), text.Bytes())
		for _, w := range want {
			assert.Contains(t, text.String(), w, "cycle %d", c)
		}
	}
}

func itoa(n int64) string { return string(rune('0' + n)) }

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		require.NoError(t, os.WriteFile(path, got, 0o644))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "missing golden file (run go test ./internal/audit -update)")
	assert.Equal(t, string(want), string(got), path)
}

// TestAuditWithoutIndex: with a deleted or corrupted cycle index the
// audit builds the index in memory and answers the same, and it never
// writes: the index stays as it was (the run's writer rebuilds it).
func TestAuditWithoutIndex(t *testing.T) {
	fsys := runScenario(t, "p07-direct-path")
	want, err := Explain(ledger.NewReader(fsys), 2)
	require.NoError(t, err)
	wantJS := codec.MustMarshal(want)

	b, err := fsys.ReadFile(ledger.IndexFileName)
	require.NoError(t, err)
	require.NoError(t, fsys.Remove(ledger.IndexFileName))
	got, err := Explain(ledger.NewReader(fsys), 2)
	require.NoError(t, err)
	assert.Equal(t, wantJS, codec.MustMarshal(got), "after deleting the index")
	_, err = fsys.Stat(ledger.IndexFileName)
	require.ErrorIs(t, err, fs.ErrNotExist, "a reader does not write the index")

	// Point cycle 2's entry at cycle 1's bytes (same length, valid syntax).
	lines := bytes.SplitAfter(b, []byte("\n"))
	require.GreaterOrEqual(t, len(lines), 2)
	lines[1] = bytes.Replace(lines[0], []byte(`"cycle":"000000000001"`), []byte(`"cycle":"000000000002"`), 1)
	bad := bytes.Join(lines, nil)
	require.NoError(t, fsys.WriteFile(ledger.IndexFileName, bad))
	got, err = Explain(ledger.NewReader(fsys), 2)
	require.NoError(t, err)
	assert.Equal(t, wantJS, codec.MustMarshal(got), "after corrupting the index")
	after, err := fsys.ReadFile(ledger.IndexFileName)
	require.NoError(t, err)
	assert.Equal(t, bad, after, "a reader does not repair the index either")

	require.NoError(t, fsys.WriteFile(ledger.IndexFileName, []byte("garbage")))
	got, err = Explain(ledger.NewReader(fsys), 2)
	require.NoError(t, err)
	assert.Equal(t, wantJS, codec.MustMarshal(got), "after replacing the index with garbage")
}
