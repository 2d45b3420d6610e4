package inbox_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// TestSignatureCoversTheTrial: an approval's trial (the tree it binds
// to) is part of the signed statement, so a signature made for one tree
// does not count for another; an answer without a trial signs the same
// statement as before the trial existed.
func TestSignatureCoversTheTrial(t *testing.T) {
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	signer, err := ssh.NewSignerFromKey(priv)
	require.NoError(t, err)
	owner := func(key []byte) string {
		if string(key) == string(signer.PublicKey().Marshal()) {
			return "alice"
		}
		return ""
	}
	trial := &world.GitTrial{Head: "1111111111111111111111111111111111111111", Tree: "2222222222222222222222222222222222222222", Changed: []string{"main.go"}}
	a := &state.Approval{Schema: state.ApprovalSchema, ActionRef: "areq:sha256:00", RequestCycle: 3, Verdict: "approve", By: "alice", Trial: trial}
	require.NoError(t, inbox.Sign("run:x", a, "n", signer, rand.Reader))
	_, why := inbox.CheckSignature("run:x", a, owner)
	assert.Empty(t, why, "signed with its trial")

	other := *a
	other.Trial = &world.GitTrial{Head: trial.Head, Tree: "3333333333333333333333333333333333333333", Changed: trial.Changed}
	_, why = inbox.CheckSignature("run:x", &other, owner)
	assert.Equal(t, inbox.SigInvalid, why, "a signature for one tree does not count for another")
	other.Trial = nil
	_, why = inbox.CheckSignature("run:x", &other, owner)
	assert.Equal(t, inbox.SigInvalid, why, "nor for an answer without the trial")

	plain := state.Approval{Schema: state.ApprovalSchema, ActionRef: "areq:sha256:00", RequestCycle: 3, Verdict: "approve", By: "alice"}
	st, err := inbox.StatementOf("run:x", &plain, "n")
	require.NoError(t, err)
	b, err := st.Bytes()
	require.NoError(t, err)
	assert.NotContains(t, string(b), "trial", "an answer without a trial signs what it signed before")
}
