package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"golang.org/x/crypto/ssh"

	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/sshsig"
)

// TestSignedAnswersNATS: on a nats:// store an answer proves its author
// as in a state directory: an unsigned one and one signed with a key the
// contract does not list are refused and queue nothing, and alice's
// signed approval is applied and recorded as hers.
func TestSignedAnswersNATS(t *testing.T) {
	t.Parallel()
	h, _ := newHarness(t, "signed answers on nats://", 0x5167)
	root, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "quickstart"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	key := func(name string) (string, string) {
		_, priv, err := ed25519.GenerateKey(rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		block, err := ssh.MarshalPrivateKey(priv, name)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, pem.EncodeToMemory(block), 0o600); err != nil {
			t.Fatal(err)
		}
		s, err := ssh.NewSignerFromKey(priv)
		if err != nil {
			t.Fatal(err)
		}
		return path, sshsig.AuthorizedKey(s.PublicKey())
	}
	alice, alicePub := key("alice")
	bob, _ := key("bob")
	b, err := os.ReadFile(filepath.Join(root, "contract.json"))
	if err != nil {
		t.Fatal(err)
	}
	var c map[string]any
	if err := json.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	c["approvers"] = []map[string]string{{"id": "alice", "public_key": alicePub}}
	contract := filepath.Join(dir, "contract.json")
	if b, err = json.Marshal(c); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(contract, b, 0o644); err != nil {
		t.Fatal(err)
	}

	srv := natstest.Start(t)
	h.env = []string{"ACR_STORE=" + srv.ClientURL() + "/signed", "ACR_RUN_ID=run:signed"}
	host := filepath.Join(t.TempDir(), "host")
	h.acr(host, nil, "init", "--goal", filepath.Join(root, "goal.json"), "--contract", contract, "--env", filepath.Join(root, "environment.json"))
	h.acr(host, nil, "run", "--max-cycles", "20")
	var st struct {
		Pending []struct {
			Ref string `json:"ref"`
		} `json:"pending_approvals"`
	}
	if err := json.Unmarshal([]byte(h.acr(host, nil, "status", "--json")), &st); err != nil || len(st.Pending) != 1 {
		t.Fatalf("status: %v, %+v", err, st)
	}
	ref := st.Pending[0].Ref
	for _, args := range [][]string{{"--by", "alice"}, {"--by", "alice", "--sign-key", bob}} {
		err := h.command(host, nil, append([]string{"approve", ref}, args...)...).Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 65 {
			t.Fatalf("approve %v: %v, want exit 65", args, err)
		}
	}
	if out := h.acr(host, nil, "run", "--max-cycles", "20"); !regexp.MustCompile(`no cycle eligible`).MatchString(out) {
		t.Fatalf("a refused answer queued something:\n%s", out)
	}
	h.acr(host, nil, "approve", ref, "--by", "alice", "--sign-key", alice)
	out := h.acr(host, nil, "run", "--max-cycles", "20")
	if !regexp.MustCompile(`cycle 4 .*EXECUTE .*check:debug-off .*\[committed\]`).MatchString(out) {
		t.Fatalf("alice's approval was not applied:\n%s", out)
	}
	audit := h.acr(host, nil, "audit", "4")
	if !regexp.MustCompile(`answer +approval\.resolved \(verdict_approve, signed_by_approver\) signed by alice \(ssh-ed25519 SHA256:`).MatchString(audit) {
		t.Fatalf("audit does not say alice signed:\n%s", audit)
	}
}
