package main

import (
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/crypto/ssh"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/sshsig"
)

// cmdKeygen makes an ssh key pair NAME and NAME.pub in the work
// directory: with ssh-keygen when it is installed (ed25519, or the type
// given), else an ed25519 key made in Go.
//
//	keygen alice
//	keygen carol ecdsa
func cmdKeygen(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 1 || len(args) > 2 {
		ts.Fatalf("usage: keygen NAME [TYPE]")
	}
	path := ts.MkAbs(args[0])
	typ := "ed25519"
	if len(args) == 2 {
		typ = args[1]
	}
	if _, err := exec.LookPath("ssh-keygen"); err == nil {
		out, err := exec.Command("ssh-keygen", "-q", "-t", typ, "-N", "", "-C", args[0]+"@laptop", "-f", path).CombinedOutput()
		if err != nil {
			ts.Fatalf("ssh-keygen: %v\n%s", err, out)
		}
		return
	}
	if typ != "ed25519" {
		ts.Fatalf("keygen: without ssh-keygen only ed25519 keys are made")
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	ts.Check(err)
	block, err := ssh.MarshalPrivateKey(priv, args[0]+"@laptop")
	ts.Check(err)
	ts.Check(os.WriteFile(path, pem.EncodeToMemory(block), 0o600))
	sp, err := ssh.NewPublicKey(pub)
	ts.Check(err)
	ts.Check(os.WriteFile(path+".pub", []byte(sshsig.AuthorizedKey(sp)+" "+args[0]+"@laptop\n"), 0o644))
}

// cmdApprovers writes a copy of a contract that lists approvers, each
// ID=PUBFILE (a public key file):
//
//	approvers $SCENARIOS/quickstart/contract.json contract.json alice=alice.pub
func cmdApprovers(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 3 {
		ts.Fatalf("usage: approvers IN OUT ID=PUBFILE...")
	}
	b, err := os.ReadFile(ts.MkAbs(args[0]))
	ts.Check(err)
	var c map[string]any
	ts.Check(json.Unmarshal(b, &c))
	var list []map[string]string
	for _, a := range args[2:] {
		id, file, ok := strings.Cut(a, "=")
		if !ok {
			ts.Fatalf("approvers: %q is not ID=PUBFILE", a)
		}
		pub, err := os.ReadFile(ts.MkAbs(file))
		ts.Check(err)
		list = append(list, map[string]string{"id": id, "public_key": strings.TrimSpace(string(pub))})
	}
	c["approvers"] = list
	out, err := json.MarshalIndent(c, "", "  ")
	ts.Check(err)
	ts.Check(os.WriteFile(ts.MkAbs(args[1]), append(out, '\n'), 0o644))
}

// cmdForge does to every answer waiting in a state directory's inbox what
// someone who can write the inbox, but holds no approver's key, could:
// strip its signature, sign it again with another key, or edit its reason
// (each re-sealed under the id its new content implies, as acr would):
//
//	forge engine_state unsign
//	forge engine_state resign bob
//	forge engine_state reason "edited"
func cmdForge(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: forge STATE_DIR unsign | resign KEYFILE | reason TEXT")
	}
	dir := ts.MkAbs(args[0])
	s, _, err := runstore.ReadState(dir)
	ts.Check(err)
	names, err := filepath.Glob(filepath.Join(dir, dirstore.InboxDir, "approval-*.json"))
	ts.Check(err)
	if len(names) == 0 {
		ts.Fatalf("forge: no answer in %s", dir)
	}
	for _, name := range names {
		b, err := os.ReadFile(name)
		ts.Check(err)
		it, err := inbox.Decode(strings.TrimSuffix(filepath.Base(name), ".json"), b)
		ts.Check(err)
		a := it.Approval
		switch {
		case args[1] == "unsign" && len(args) == 2:
			a.Signature = nil
		case args[1] == "resign" && len(args) == 3:
			key, err := os.ReadFile(ts.MkAbs(args[2]))
			ts.Check(err)
			signer, err := ssh.ParsePrivateKey(key)
			ts.Check(err)
			ts.Check(inbox.Sign(s.Run.RunID, a, a.Signature.Nonce, signer, rand.Reader))
		case args[1] == "reason" && len(args) == 3:
			a.Reason = args[2]
		default:
			ts.Fatalf("usage: forge STATE_DIR unsign | resign KEYFILE | reason TEXT")
		}
		id, body, err := inbox.Seal(a)
		ts.Check(err)
		ts.Check(os.Remove(name))
		ts.Check(os.WriteFile(filepath.Join(filepath.Dir(name), id+".json"), body, 0o644))
	}
}
