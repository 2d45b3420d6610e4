package inbox

import (
	"fmt"
	"io"

	"golang.org/x/crypto/ssh"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/sshsig"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Namespace is the SSH signature namespace of acr's statements: a
// signature made for git, or for anything else, never counts here.
const Namespace = "acr"

// StatementSchema names the canonical statement a person signs.
const StatementSchema = "acr.signed-statement/v0.1"

// Statement is what a signature on an inbox item covers: the run, what
// the item says and who says it, and a nonce. An answer names the request
// (its ref and the cycle that asked) and its verdict; an amendment its
// target, the version it amends and the new document. Naming the run
// keeps a signature from counting in another run; naming the request,
// from counting for another request; the rest, from counting for an
// edited item.
type Statement struct {
	Schema string `json:"schema"`
	RunID  string `json:"run_id"`
	// Kind is "answer" or "amendment".
	Kind         string       `json:"kind"`
	Ref          codec.Ref    `json:"ref,omitempty"`
	RequestCycle int64        `json:"request_cycle,omitempty"`
	Verdict      string       `json:"verdict,omitempty"`
	Target       string       `json:"target,omitempty"`
	Amends       codec.Ref    `json:"amends,omitempty"`
	Document     *codec.Value `json:"document,omitempty"`
	By           string       `json:"by"`
	Reason       string       `json:"reason,omitempty"`
	// Trial is the trial an approval binds to (state.Approval.Trial):
	// signed with it, so that a signature never counts for another tree.
	Trial *world.GitTrial `json:"trial,omitempty"`
	Nonce string          `json:"nonce"`
}

// StatementOf is the statement an answer (*state.Approval) or amendment
// (*state.Amendment) to run runID is signed over, with nonce.
func StatementOf(runID string, v any, nonce string) (Statement, error) {
	st := Statement{Schema: StatementSchema, RunID: runID, Nonce: nonce}
	switch x := v.(type) {
	case *state.Approval:
		st.Kind, st.Ref, st.RequestCycle, st.Verdict, st.By, st.Reason = "answer", x.ActionRef, x.RequestCycle, x.Verdict, x.By, x.Reason
		st.Trial = x.Trial
	case *state.Amendment:
		doc := x.Document
		st.Kind, st.Target, st.Amends, st.Document, st.By, st.Reason = "amendment", x.Target, x.Amends, &doc, x.By, x.Reason
	default:
		return Statement{}, fmt.Errorf("inbox: %T is not signed", v)
	}
	return st, nil
}

// Bytes is the statement's canonical encoding: the exact bytes signed.
func (st Statement) Bytes() ([]byte, error) { return codec.Marshal(st) }

// Why an item's signature does not count (approval.ignored and
// amendment.refused record them).
const (
	// SigMissing: the contract lists approvers and the item is unsigned.
	SigMissing = "unsigned"
	// SigMalformed: the signature or its nonce does not decode.
	SigMalformed = "signature_malformed"
	// SigKeyNotListed: the key is not one of the contract's approvers'.
	SigKeyNotListed = "key_not_listed"
	// SigInvalid: the signature is not over this item's statement (an
	// edited item, or a signature copied from another run or request).
	SigInvalid = "signature_invalid"
	// SigNotBy: the key is listed, under another id than the item's by.
	SigNotBy = "signer_is_not_by"
)

// maxNonce bounds a nonce's length.
const maxNonce = 128

// CheckSignature verifies the signature of an answer or amendment v (a
// *state.Approval or *state.Amendment) to run runID. owner returns the id
// a key (its SSH wire form) is listed under, "" if none. It returns the
// signer (nil when there is no signature to read a key from) and "" when
// the signature counts, else the reason it does not (Sig*). Pure: the
// kernel calls it in a cycle, and replay again.
func CheckSignature(runID string, v any, owner func(key []byte) string) (*state.Signer, string) {
	var sig *state.Signature
	var by string
	switch x := v.(type) {
	case *state.Approval:
		sig, by = x.Signature, x.By
	case *state.Amendment:
		sig, by = x.Signature, x.By
	}
	if sig == nil {
		return nil, SigMissing
	}
	s, err := sshsig.Parse(sig.SSHSig)
	if err != nil {
		return nil, SigMalformed
	}
	signer := &state.Signer{Fingerprint: sshsig.Fingerprint(s.PublicKey), KeyType: s.PublicKey.Type(), ID: owner(s.PublicKey.Marshal())}
	if sig.Nonce == "" || len(sig.Nonce) > maxNonce {
		return signer, SigMalformed
	}
	if signer.ID == "" {
		return signer, SigKeyNotListed
	}
	st, err := StatementOf(runID, v, sig.Nonce)
	if err != nil {
		return signer, SigMalformed
	}
	b, err := st.Bytes()
	if err != nil {
		return signer, SigMalformed
	}
	if err := s.Verify(Namespace, b); err != nil {
		return signer, SigInvalid
	}
	if signer.ID != by {
		return signer, SigNotBy
	}
	return signer, ""
}

// Sign signs v (a *state.Approval or *state.Amendment) for run runID
// with signer and sets its Signature. rand feeds ECDSA signatures.
func Sign(runID string, v any, nonce string, signer ssh.Signer, rand io.Reader) error {
	st, err := StatementOf(runID, v, nonce)
	if err != nil {
		return err
	}
	b, err := st.Bytes()
	if err != nil {
		return err
	}
	s, err := sshsig.Sign(signer, Namespace, b, rand)
	if err != nil {
		return err
	}
	return Attach(v, &state.Signature{Nonce: nonce, SSHSig: s.Armor()})
}

// Attach sets v's signature (one made elsewhere, by ssh-keygen -Y sign
// over the statement's bytes).
func Attach(v any, sig *state.Signature) error {
	switch x := v.(type) {
	case *state.Approval:
		x.Signature = sig
	case *state.Amendment:
		x.Signature = sig
	default:
		return fmt.Errorf("inbox: %T is not signed", v)
	}
	return nil
}
