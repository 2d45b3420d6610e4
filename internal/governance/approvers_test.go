package governance_test

import (
	"crypto/ed25519"
	"errors"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/sshsig"
	"github.com/acr-project/acr/internal/world"
)

func keyLine(t *testing.T, name string) string {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, name)
	pub, err := ssh.NewPublicKey(ed25519.NewKeyFromSeed(seed).Public())
	require.NoError(t, err)
	return sshsig.AuthorizedKey(pub) + " " + name + "@laptop"
}

// TestApproversValidate: the approvers and what rules say of them are
// checked where the contract is read, naming the field.
func TestApproversValidate(t *testing.T) {
	alice, bob := keyLine(t, "alice"), keyLine(t, "bob")
	cases := []struct {
		name  string
		edit  func(c *governance.Contract)
		field string // "" valid
	}{
		{"two approvers, a rule of one of them needing one", func(c *governance.Contract) { c.Rules[1].Approvers = []string{"bob"} }, ""},
		{"a rule needing both", func(c *governance.Contract) { c.Rules[1].Approvals = 2 }, ""},
		{"one id with two keys (rotation)", func(c *governance.Contract) { c.Approvers[1].ID = "alice" }, ""},
		{"a key that does not parse", func(c *governance.Contract) { c.Approvers[0].PublicKey = "ssh-ed25519 AAAA" }, "approvers[0].public_key"},
		{"a key with options", func(c *governance.Contract) { c.Approvers[0].PublicKey = "restrict " + alice }, "approvers[0].public_key"},
		{"a bad id", func(c *governance.Contract) { c.Approvers[1].ID = "Bob Smith" }, "approvers[1].id"},
		{"one key under two ids", func(c *governance.Contract) { c.Approvers[1].PublicKey = alice }, "approvers[1].public_key"},
		{"a rule naming no approver of the contract", func(c *governance.Contract) { c.Rules[1].Approvers = []string{"carol"} }, "rules[1].approvers[0]"},
		{"more approvals than approvers", func(c *governance.Contract) { c.Rules[1].Approvals = 3 }, "rules[1].approvals"},
		{"more approvals than the rule's approvers", func(c *governance.Contract) {
			c.Rules[1].Approvers, c.Rules[1].Approvals = []string{"bob"}, 2
		}, "rules[1].approvals"},
		{"a forbidding rule with approvers", func(c *governance.Contract) { c.Rules[0].Approvers = []string{"bob"} }, "rules[0].approvers"},
		{"approvals without approvers", func(c *governance.Contract) { c.Approvers, c.Rules[1].Approvals = nil, 2 }, "rules[1].approvals"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c := quickstartContract()
			c.Approvers = []governance.Approver{{ID: "alice", PublicKey: alice}, {ID: "bob", PublicKey: bob}}
			c.Rules = slices.Clone(c.Rules)
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			var fe *codec.FieldError
			require.True(t, errors.As(err, &fe), "got %v", err)
			assert.Equal(t, tc.field, fe.Path)
		})
	}
}

// TestAnswerers: who may answer a request, and how many must approve, is
// the deciding rule's say; a rule that names none leaves it to every
// approver.
func TestAnswerers(t *testing.T) {
	c := quickstartContract()
	c.Approvers = []governance.Approver{{ID: "alice", PublicKey: keyLine(t, "alice")}, {ID: "bob", PublicKey: keyLine(t, "bob")}}
	c.Rules = slices.Clone(c.Rules)
	c.Rules[1].Approvers, c.Rules[1].Approvals = []string{"bob"}, 1
	ids, n := c.Answerers(world.Catalog{}, world.Action{Operation: world.OpApplyPatch, Target: "config/app.ini"})
	assert.Equal(t, []string{"bob"}, ids)
	assert.Equal(t, 1, n)
	ids, n = c.Answerers(world.Catalog{}, world.Action{Operation: world.OpApplyPatch, Target: "README.md"})
	assert.Equal(t, []string{"alice", "bob"}, ids)
	assert.Equal(t, 1, n)
	pub, err := sshsig.ParsePublicKey(keyLine(t, "bob"))
	require.NoError(t, err)
	assert.Equal(t, "bob", c.KeyOwner(pub.Marshal()))
	other, err := sshsig.ParsePublicKey(keyLine(t, "mallory"))
	require.NoError(t, err)
	assert.Equal(t, "", c.KeyOwner(other.Marshal()))
}
