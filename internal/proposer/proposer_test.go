package proposer_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/proposer"
	"github.com/acr-project/acr/internal/world"
)

func TestDecode(t *testing.T) {
	cases := []struct {
		doc, err string
	}{
		{`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "apply_local_patch", "target": "a.go", "find": "x", "replace": "y"}], "rationale": ["r"]}`, ""},
		{`{"schema": "acr.proposal/v0.1", "actions": [], "rationale": ["nothing to do"]}`, ""},
		{`  {"schema": "acr.proposal/v0.1", "actions": [{"operation": "run_command", "fix": "fmt"}]}` + "\n\n", ""},
		{`{"schema": "acr.proposal/v0.1", "actions": []}`, "an empty proposal must say why"},
		{`{"schema": "acr.proposal/v0.1"}`, "actions"},
		{`{"schema": "acr.proposal/v1", "actions": []}`, "want \"acr.proposal/v0.1\""},
		{`{"schema": "acr.proposal/v0.1", "actions": [], "rationale": [], "extra": 1}`, "unknown field"},
		{`{"schema": "acr.proposal/v0.1", "Actions": []}`, "unknown field"},
		{`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "apply_local_patch", "target": "a"}]}`, "needs target and find"},
		{`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "run_command"}]}`, "names a declared command fix"},
		{`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "mark_issue", "target": "a"}]}`, "cannot be proposed"},
		{`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "apply_local_patch", "target": "a", "find": "x", "occurrences": -1}]}`, "occurrences"},
		{`{"schema": "acr.proposal/v0.1", "actions": []} {}`, "trailing"},
		{`not json`, "invalid"},
	}
	for _, tc := range cases {
		_, err := proposer.Decode([]byte(tc.doc))
		if tc.err == "" {
			assert.NoError(t, err, tc.doc)
		} else {
			assert.ErrorContains(t, err, tc.err, tc.doc)
		}
	}
}

// Whatever Decode accepts is a well-formed proposal that encodes and
// decodes back to itself.
func FuzzDecodeProposal(f *testing.F) {
	f.Add([]byte(`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "apply_local_patch", "target": "a.go", "find": "x", "replace": "y"}], "rationale": ["r"]}`))
	f.Add([]byte(`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "run_command", "fix": "fmt"}]}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		p, err := proposer.Decode(b)
		if err != nil {
			return
		}
		again, err := proposer.Decode(codec.MustMarshal(p))
		require.NoError(t, err)
		require.Equal(t, codec.MustMarshal(p), codec.MustMarshal(again))
	})
}

type dirFiles string

func (d dirFiles) ReadFile(p string) ([]byte, bool, error) {
	b, err := os.ReadFile(filepath.Join(string(d), p))
	if os.IsNotExist(err) {
		return nil, false, nil
	}
	return b, err == nil, err
}

func TestRunnerShowsFilesAndLooksAtTargets(t *testing.T) {
	dir := t.TempDir()
	big := strings.Repeat("x", cognition.MaxProposalFileBytes+10)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "big.txt"), []byte(big), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte("x x y"), 0o644))
	script := filepath.Join(t.TempDir(), "p.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
cat > "$(dirname "$0")/req.json"
echo '{"schema": "acr.proposal/v0.1", "actions": [{"operation": "apply_local_patch", "target": "a.go", "find": "x", "replace": "z"}, {"operation": "record_artifact", "target": "new.txt", "content": "n"}], "rationale": ["r"]}'
`), 0o755))
	r := &proposer.Runner{Argv: []string{script}, Timeout: 10 * time.Second, Dir: dir, Environ: os.LookupEnv, Files: dirFiles(dir)}
	req := cognition.ProposalRequest{Schema: cognition.ProposalRequestSchema, RunID: "run:x", CycleSeq: 3,
		Files: []cognition.FileShown{{Path: "big.txt"}, {Path: "a.go"}, {Path: "gone.txt"}}}
	reply, err := r.Propose(t.Context(), req)
	require.NoError(t, err)
	require.Len(t, reply.Files, 2, "a file gone since the observation is not shown")
	assert.True(t, reply.Files[0].Truncated)
	assert.Equal(t, int64(len(big)), reply.Files[0].Bytes)
	assert.Empty(t, reply.Files[0].Content, "the reply keeps hashes, not text")
	sent, err := os.ReadFile(filepath.Join(filepath.Dir(script), "req.json"))
	require.NoError(t, err)
	assert.Equal(t, reply.Request, codec.NewRef("preqsent", []byte(strings.TrimSuffix(string(sent), "\n"))))
	assert.Contains(t, string(sent), `"content":"x x y"`)
	assert.Equal(t, []cognition.TargetFact{{Path: "a.go", SHA256: codec.FingerprintOf([]byte("x x y")), Finds: 2}, {Path: "new.txt"}}, reply.Targets)
}

func TestRunnerFailures(t *testing.T) {
	for _, tc := range []struct{ script, reason string }{
		{"exit 5", "exit 5"},
		{"sleep 10", "timed out"},
		{"kill -9 $$", "killed by signal"},
		{"echo '{}'", "invalid proposal"},
	} {
		script := filepath.Join(t.TempDir(), "p.sh")
		require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\n"+tc.script+"\n"), 0o755))
		r := &proposer.Runner{Argv: []string{script}, Timeout: 500 * time.Millisecond, Dir: t.TempDir(), Files: dirFiles(t.TempDir())}
		_, err := r.Propose(t.Context(), cognition.ProposalRequest{Schema: cognition.ProposalRequestSchema})
		var pf *world.ProviderFault
		require.ErrorAs(t, err, &pf, tc.script)
		assert.Equal(t, "proposer", pf.Source)
		assert.Contains(t, pf.Reason, tc.reason)
	}
}

// A proposer stopped because acr is stopping gave no answer: the error is
// the context's, not a provider failure held against the proposer.
func TestRunnerCancelledIsNoFault(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "p.sh")
	require.NoError(t, os.WriteFile(script, []byte("#!/bin/sh\ntouch \"$(dirname \"$0\")/asked\"\nsleep 300\n"), 0o755))
	r := &proposer.Runner{Argv: []string{script}, Timeout: time.Minute, Dir: dir, Files: dirFiles(dir)}
	ctx, cancel := context.WithCancel(t.Context())
	go func() {
		for {
			if _, err := os.Stat(filepath.Join(dir, "asked")); err == nil {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	_, err := r.Propose(ctx, cognition.ProposalRequest{Schema: cognition.ProposalRequestSchema})
	require.ErrorIs(t, err, context.Canceled)
	var pf *world.ProviderFault
	assert.False(t, errors.As(err, &pf), "a cancelled proposer is not a provider failure: %v", err)
}
