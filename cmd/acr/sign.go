package main

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/agent"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/sshsig"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// signOptions are the flags of the commands whose answers prove who gave
// them (acr approve, deny, resolve, amend): docs/operations.md, "Who may
// answer".
type signOptions struct {
	// SignKey is a private key file, or a public key whose private half
	// the ssh agent holds (also ACR_SIGNING_KEY).
	SignKey string `flag:"sign-key"`
	// ToSign writes the statement to sign there and queues nothing, for a
	// person who signs with ssh-keygen -Y sign.
	ToSign string `flag:"to-sign"`
	// Signed queues the statement in this file with the signature
	// ssh-keygen wrote beside it (FILE.sig).
	Signed string `flag:"signed"`
}

// addSignFlags declares signOptions' flags on cmd.
func addSignFlags(cmd *cobra.Command) {
	f := cmd.Flags()
	f.String("sign-key", "", "sign with this ssh key: a private key file, or a public key the ssh agent holds (env ACR_SIGNING_KEY)")
	f.String("to-sign", "", "write the statement to sign to FILE (for ssh-keygen -Y sign -n acr) and queue nothing")
	f.String("signed", "", "queue the statement in FILE, signed by ssh-keygen in FILE.sig")
}

// signHelp is the part of the help of the answering commands that says
// how answers are signed.
const signHelp = `

When the run's contract lists approvers, an answer counts only if it is
signed by an approver's ssh key and --by is that approver's id
(docs/operations.md, "Who may answer"). acr signs with --sign-key PATH (or
ACR_SIGNING_KEY): a private key file, or a public key whose private half
the ssh agent holds; without either, with the ssh agent (SSH_AUTH_SOCK) if
it holds a key the contract lists for --by. A person can also sign with
ssh-keygen alone: --to-sign FILE writes the statement, ssh-keygen -Y sign
-n acr -f KEY FILE signs it, and --signed FILE queues it. An answer the
contract would not take (unsigned, a key it does not list, or listed for
another id) exits 65 and queues nothing. The private key never enters the
run.`

// fill takes by and reason, where the command line leaves them out, from
// the statement a person signed (--signed FILE), so that the answer
// drafted is the one signed.
func (o signOptions) fill(by, reason *string) error {
	if o.Signed == "" {
		return nil
	}
	st, err := readStatement(o.Signed)
	if err != nil {
		return err
	}
	if *by == "" {
		*by = st.By
	}
	if *reason == "" {
		*reason = st.Reason
	}
	return nil
}

// signedTrial is the trial in the statement a person signed (--signed
// FILE): nil without --signed, or when the statement binds to none.
func (o signOptions) signedTrial() (*world.GitTrial, error) {
	if o.Signed == "" {
		return nil, nil
	}
	st, err := readStatement(o.Signed)
	if err != nil {
		return nil, err
	}
	return st.Trial, nil
}

// readStatement reads a statement a person signed with ssh-keygen.
func readStatement(path string) (inbox.Statement, error) {
	var st inbox.Statement
	b, err := os.ReadFile(path)
	if err != nil {
		return st, err
	}
	if err := codec.UnmarshalCanonical(bytes.TrimSuffix(b, []byte("\n")), &st); err != nil {
		return st, &runstore.ValidationError{File: path, Err: err}
	}
	return st, nil
}

// sign signs v (a *state.Approval or *state.Amendment, drafted for run
// runID under contract c) as opts say. done reports that nothing is to be
// queued: --to-sign wrote the statement to sign instead. When c lists
// approvers, an unsigned answer and one c would not take are refused
// here, before anything is queued; the loop checks again when it consumes
// the answer, whoever queued it.
func (a *app) sign(opts signOptions, runID string, c *governance.Contract, v any, by string) (done bool, err error) {
	if opts.ToSign != "" && opts.Signed != "" {
		return false, usagef("--to-sign and --signed go in two steps, not together")
	}
	nonce := make([]byte, 16)
	if _, err := rand.Read(nonce); err != nil {
		return false, err
	}
	switch {
	case opts.Signed != "":
		if err := a.attachSigned(opts.Signed, runID, v); err != nil {
			return false, err
		}
	case opts.ToSign != "":
		st, err := inbox.StatementOf(runID, v, hex.EncodeToString(nonce))
		if err != nil {
			return false, err
		}
		b, err := st.Bytes()
		if err != nil {
			return false, err
		}
		if err := os.WriteFile(opts.ToSign, b, 0o644); err != nil {
			return false, err
		}
		a.report(map[string]any{"effect": "none", "queued": false, "to_sign": opts.ToSign},
			"wrote the statement to sign to %s; nothing queued\n", opts.ToSign)
		a.next(fmt.Sprintf("ssh-keygen -Y sign -n %s -f KEY %s, then the same command with --signed %s", inbox.Namespace, opts.ToSign, opts.ToSign))
		return true, nil
	default:
		signer, err := findSigner(opts.SignKey, c, by)
		if err != nil {
			return false, err
		}
		if signer == nil {
			if c.Signed() {
				return false, dataf("the run's contract lists approvers: sign the answer (--sign-key PATH, ACR_SIGNING_KEY, a key of %q in the ssh agent, or --to-sign and --signed with ssh-keygen)", by)
			}
			return false, nil
		}
		if err := inbox.Sign(runID, v, hex.EncodeToString(nonce), signer, rand.Reader); err != nil {
			return false, fmt.Errorf("sign the answer: %w", err)
		}
	}
	if c.Signed() {
		if signer, why := inbox.CheckSignature(runID, v, c.KeyOwner); why != "" {
			key := ""
			if signer != nil {
				key = " (key " + signer.Fingerprint + ")"
			}
			return false, dataf("the run's contract would not take this answer: %s%s; it lists: %s", strings.ReplaceAll(why, "_", " "), key, approverList(c))
		}
	}
	return false, nil
}

// attachSigned attaches the signature ssh-keygen wrote (path + ".sig") to
// v, once the statement in path is found to be exactly v's.
func (a *app) attachSigned(path, runID string, v any) error {
	st, err := readStatement(path)
	if err != nil {
		return err
	}
	want, err := inbox.StatementOf(runID, v, st.Nonce)
	if err != nil {
		return err
	}
	got, err := st.Bytes()
	if err != nil {
		return err
	}
	wb, err := want.Bytes()
	if err != nil {
		return err
	}
	if !bytes.Equal(got, wb) {
		return &runstore.ValidationError{File: path, Err: errors.New("this statement is not the answer this command gives (another run, request, verdict, by or reason)")}
	}
	armored, err := os.ReadFile(path + ".sig")
	if err != nil {
		return err
	}
	sig, err := sshsig.Decode(string(armored))
	if err != nil {
		return &runstore.ValidationError{File: path + ".sig", Err: err}
	}
	return inbox.Attach(v, &state.Signature{Nonce: st.Nonce, SSHSig: sig.Armor()})
}

// approverList names the contract's approvers and their keys'
// fingerprints, for a message.
func approverList(c *governance.Contract) string {
	var out []string
	for _, ap := range c.Approvers {
		if pub, err := sshsig.ParsePublicKey(ap.PublicKey); err == nil {
			out = append(out, ap.ID+" "+sshsig.Fingerprint(pub))
		}
	}
	return strings.Join(out, ", ")
}

// findSigner finds the key to sign with: the file at path (a private key; or
// a public key, or a private key behind a passphrase, whose private half
// the ssh agent holds), else the agent's key that c lists for by. nil
// when there is none.
func findSigner(path string, c *governance.Contract, by string) (ssh.Signer, error) {
	if path == "" {
		if os.Getenv("SSH_AUTH_SOCK") == "" || !c.Signed() {
			return nil, nil
		}
		signers, err := agentSigners()
		if err != nil {
			return nil, err
		}
		for _, s := range signers {
			if c.KeyOwner(s.PublicKey().Marshal()) == by {
				return s, nil
			}
		}
		return nil, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	s, err := ssh.ParsePrivateKey(b)
	if err == nil {
		return s, nil
	}
	var pub ssh.PublicKey
	var missing *ssh.PassphraseMissingError
	switch {
	case errors.As(err, &missing):
		pub = missing.PublicKey
	default:
		if pub, err = sshsig.ParsePublicKey(string(b)); err != nil {
			return nil, &runstore.ValidationError{File: path, Err: errors.New("neither an unencrypted ssh private key nor an ssh public key")}
		}
	}
	if os.Getenv("SSH_AUTH_SOCK") == "" {
		return nil, &runstore.ValidationError{File: path, Err: fmt.Errorf("the private key %s is not here unencrypted: add it to the ssh agent (ssh-add) and set SSH_AUTH_SOCK", sshsig.Fingerprint(pub))}
	}
	signers, err := agentSigners()
	if err != nil {
		return nil, err
	}
	for _, s := range signers {
		if bytes.Equal(s.PublicKey().Marshal(), pub.Marshal()) {
			return s, nil
		}
	}
	return nil, &runstore.ValidationError{File: path, Err: fmt.Errorf("the ssh agent does not hold the key %s (ssh-add it)", sshsig.Fingerprint(pub))}
}

// agentSigners lists the keys of the ssh agent at SSH_AUTH_SOCK.
func agentSigners() ([]ssh.Signer, error) {
	conn, err := net.Dial("unix", os.Getenv("SSH_AUTH_SOCK"))
	if err != nil {
		return nil, fmt.Errorf("ssh agent: %w", err)
	}
	// The connection stays open for the signers' use; the process is
	// short-lived.
	signers, err := agent.NewClient(conn).Signers()
	if err != nil {
		return nil, fmt.Errorf("ssh agent: %w", err)
	}
	return signers, nil
}
