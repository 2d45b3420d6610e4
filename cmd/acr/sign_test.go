package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/rsa"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/sshsig"
	"github.com/acr-project/acr/internal/state"
)

// serveAgent serves an ssh agent holding keys on a socket in a temporary
// directory and points SSH_AUTH_SOCK at it.
func serveAgent(t *testing.T, keys ...any) {
	t.Helper()
	kr := agent.NewKeyring()
	for _, k := range keys {
		require.NoError(t, kr.Add(agent.AddedKey{PrivateKey: k}))
	}
	sock := filepath.Join(t.TempDir(), "agent.sock")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() { _ = agent.ServeAgent(kr, c); c.Close() }()
		}
	}()
	t.Setenv("SSH_AUTH_SOCK", sock)
}

// TestSignWithTheAgent: without --sign-key, acr signs with the agent's
// key the contract lists for --by (an RSA key signs with rsa-sha2-512);
// a passphrase-protected key file, or a public key file, names the
// agent's key to use. The signature is one the loop takes.
func TestSignWithTheAgent(t *testing.T) {
	_, alicePriv, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)
	bobPriv, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	serveAgent(t, alicePriv, bobPriv)
	line := func(k any) string {
		s, err := ssh.NewSignerFromKey(k)
		require.NoError(t, err)
		return sshsig.AuthorizedKey(s.PublicKey())
	}
	c := &governance.Contract{Approvers: []governance.Approver{{ID: "alice", PublicKey: line(alicePriv)}, {ID: "bob", PublicKey: line(bobPriv)}}}
	answer := func(by string) *state.Approval {
		return &state.Approval{Schema: state.ApprovalSchema, ActionRef: "areq:sha256:00", RequestCycle: 3, Verdict: "approve", By: by}
	}
	for _, by := range []string{"alice", "bob"} {
		s, err := findSigner("", c, by)
		require.NoError(t, err)
		require.NotNil(t, s, by)
		a := answer(by)
		require.NoError(t, inbox.Sign("run:x", a, "n", s, rand.Reader))
		signer, why := inbox.CheckSignature("run:x", a, c.KeyOwner)
		assert.Empty(t, why, by)
		assert.Equal(t, by, signer.ID)
	}
	s, err := findSigner("", c, "carol")
	require.NoError(t, err)
	assert.Nil(t, s, "no key of carol's in the agent")

	dir := t.TempDir()
	block, err := ssh.MarshalPrivateKeyWithPassphrase(alicePriv, "alice@laptop", []byte("secret"))
	require.NoError(t, err)
	locked := filepath.Join(dir, "id_ed25519")
	require.NoError(t, os.WriteFile(locked, pem.EncodeToMemory(block), 0o600))
	pubFile := filepath.Join(dir, "bob.pub")
	require.NoError(t, os.WriteFile(pubFile, []byte(line(bobPriv)+" bob@laptop\n"), 0o644))
	for path, by := range map[string]string{locked: "alice", pubFile: "bob"} {
		s, err := findSigner(path, c, by)
		require.NoError(t, err, path)
		a := answer(by)
		require.NoError(t, inbox.Sign("run:x", a, "n", s, rand.Reader))
		_, why := inbox.CheckSignature("run:x", a, c.KeyOwner)
		assert.Empty(t, why, path)
	}

	t.Setenv("SSH_AUTH_SOCK", "")
	_, err = findSigner(locked, c, "alice")
	assert.ErrorContains(t, err, "add it to the ssh agent")
}
