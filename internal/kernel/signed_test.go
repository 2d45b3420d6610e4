package kernel

import (
	"crypto/ed25519"
	"crypto/rand"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/crypto/ssh"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/sshsig"
	"github.com/acr-project/acr/internal/state"
)

// testKey is a fixed ed25519 key, one per name, so that the tests are
// deterministic.
func testKey(t *testing.T, name string) ssh.Signer {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	copy(seed, name)
	s, err := ssh.NewSignerFromKey(ed25519.NewKeyFromSeed(seed))
	require.NoError(t, err)
	return s
}

func approverOf(t *testing.T, id string, key ssh.Signer) governance.Approver {
	t.Helper()
	return governance.Approver{ID: id, PublicKey: sshsig.AuthorizedKey(key.PublicKey()) + " " + id + "@laptop"}
}

// signedWaiting is waitingForApproval under a contract that lists
// approvers, its rule naming who may answer and how many must approve.
func signedWaiting(t *testing.T, approvers []governance.Approver, ruleApprovers []string, approvals int) (EngineState, Inputs) {
	t.Helper()
	spec := testSpec(patchCheck("a", "a.txt"))
	failing := observe(spec, map[string]bool{"a": true}, false)
	c := testContract(governance.Rule{Operation: "*", Paths: []string{"**"}, Effect: governance.Approve, Approvers: ruleApprovers, Approvals: approvals})
	c.Approvers = approvers
	require.NoError(t, c.Validate())
	s := newState(t, spec, c, observe(spec, map[string]bool{}, false))
	p, err := Begin(s, Inputs{Now: t0.Add(time.Minute), Observation: failing})
	require.NoError(t, err)
	r, err := Finish(p, Settlement{})
	require.NoError(t, err)
	require.Len(t, r.State.Run.PendingApprovals, 1)
	return r.State, Inputs{Now: t0.Add(2 * time.Minute), Observation: failing}
}

// signedAnswer is an answer by by, signed with key for run runID (nil key:
// unsigned); edit changes the answer after it was signed.
func signedAnswer(t *testing.T, runID string, ref codec.Ref, cycle int64, verdict, by string, key ssh.Signer, edit func(*state.Approval)) inbox.Item {
	t.Helper()
	a := &state.Approval{Schema: state.ApprovalSchema, ActionRef: ref, RequestCycle: cycle, Verdict: verdict, By: by, CreatedAt: "2026-01-01T00:01:30Z"}
	if key != nil {
		require.NoError(t, inbox.Sign(runID, a, "nonce-"+by+"-"+verdict, key, rand.Reader))
	}
	if edit != nil {
		edit(a)
	}
	id, body, err := inbox.Seal(a)
	require.NoError(t, err)
	return inbox.Item{ID: id, Kind: inbox.KindApproval, Approval: a, Body: body}
}

func consume(t *testing.T, s EngineState, in Inputs, items ...inbox.Item) *Pending {
	t.Helper()
	in.Inbox, in.InboxPresent = items, nil
	for _, it := range items {
		in.InboxPresent = append(in.InboxPresent, it.ID)
	}
	p, err := Begin(s, in)
	require.NoError(t, err)
	return p
}

// signersOf decodes the signers recorded on the events of kind k.
func signersOf(t *testing.T, evs []event.Event, k event.Kind) []state.Signer {
	t.Helper()
	var out []state.Signer
	for _, ev := range eventsOf(evs, k) {
		if ev.Object == nil {
			continue
		}
		var s state.Signer
		require.NoError(t, ev.Object.Decode(&s))
		out = append(out, s)
	}
	return out
}

// TestSignedAnswers: with approvers listed, only an answer signed by a
// listed key whose id is its by counts; every other is recorded
// approval.ignored with its reason and the key's fingerprint, and the
// request stays open.
func TestSignedAnswers(t *testing.T) {
	alice, bob, carol := testKey(t, "alice"), testKey(t, "bob"), testKey(t, "carol")
	s, in := signedWaiting(t, []governance.Approver{approverOf(t, "alice", alice), approverOf(t, "carol", carol)}, nil, 0)
	p0 := s.Run.PendingApprovals[0]
	run := s.Run.RunID
	answer := func(by string, key ssh.Signer, edit func(*state.Approval)) inbox.Item {
		return signedAnswer(t, run, p0.Ref, p0.CycleSeq, "approve", by, key, edit)
	}
	otherRequest := signedAnswer(t, run, codec.MustRefOf("areq", "other"), p0.CycleSeq, "approve", "alice", alice, nil)
	cases := []struct {
		name    string
		item    inbox.Item
		ignored string
		signer  *ssh.Signer // whose fingerprint the ignored event records
	}{
		{"unsigned, by alice", answer("alice", nil, nil), inbox.SigMissing, nil},
		{"signed with bob's key, which is not listed", answer("alice", bob, nil), inbox.SigKeyNotListed, &bob},
		{"signed with carol's key, by alice", answer("alice", carol, nil), inbox.SigNotBy, &carol},
		{"alice's answer edited in the inbox", answer("alice", alice, func(a *state.Approval) { a.Reason = "edited" }), inbox.SigInvalid, &alice},
		{"alice's approval turned into a denial", answer("alice", alice, func(a *state.Approval) { a.Verdict = "deny" }), inbox.SigInvalid, &alice},
		{"alice's signature copied into another run", signedAnswer(t, "run:other", p0.Ref, p0.CycleSeq, "approve", "alice", alice, nil), inbox.SigInvalid, &alice},
		{"alice's signature copied from another request", answer("alice", nil, func(a *state.Approval) { a.Signature = otherRequest.Approval.Signature }), inbox.SigInvalid, &alice},
		{"a signature that does not decode", answer("alice", nil, func(a *state.Approval) { a.Signature = &state.Signature{Nonce: "n", SSHSig: "junk"} }), inbox.SigMalformed, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := consume(t, s.clone(), in, c.item)
			assert.Empty(t, eventsOf(p.Events, event.ApprovalResolved))
			assert.Equal(t, []string{c.ignored}, reasonsOf(p.Events, event.ApprovalIgnored))
			got := signersOf(t, p.Events, event.ApprovalIgnored)
			if c.signer == nil {
				assert.Empty(t, got)
			} else {
				require.Len(t, got, 1)
				assert.Equal(t, sshsig.Fingerprint((*c.signer).PublicKey()), got[0].Fingerprint)
			}
			assert.Nil(t, p.Effect, "nothing is executed")
			require.Len(t, p.b.s.Run.PendingApprovals, 1)
			assert.Nil(t, p.b.s.Run.PendingApprovals[0].Resolution, "the request stays open")
			assert.Contains(t, p.b.s.Run.AnswersConsumed, c.item.ID)
		})
	}
	t.Run("alice's signed approval", func(t *testing.T) {
		p := consume(t, s.clone(), in, answer("alice", alice, nil))
		assert.Equal(t, []string{"verdict_approve", "signed_by_approver"}, reasonsOf(p.Events, event.ApprovalResolved))
		assert.Equal(t, []state.Signer{{ID: "alice", Fingerprint: sshsig.Fingerprint(alice.PublicKey()), KeyType: ssh.KeyAlgoED25519}},
			signersOf(t, p.Events, event.ApprovalResolved))
		assert.NotNil(t, p.Effect, "the approved action is executed")
	})
	t.Run("a forged answer after alice's does not replace it", func(t *testing.T) {
		p := consume(t, s.clone(), in, answer("alice", alice, nil), signedAnswer(t, run, p0.Ref, p0.CycleSeq, "deny", "alice", bob, nil))
		assert.Equal(t, []string{"verdict_approve", "signed_by_approver"}, reasonsOf(p.Events, event.ApprovalResolved))
		assert.Equal(t, []string{inbox.SigKeyNotListed}, reasonsOf(p.Events, event.ApprovalIgnored))
		assert.NotNil(t, p.Effect)
	})
}

// TestSignedAnswersNeedAListedApproverOfTheRule: a rule that names its
// approvers takes answers from them only.
func TestSignedAnswersNeedAListedApproverOfTheRule(t *testing.T) {
	alice, carol := testKey(t, "alice"), testKey(t, "carol")
	s, in := signedWaiting(t, []governance.Approver{approverOf(t, "alice", alice), approverOf(t, "carol", carol)}, []string{"carol"}, 0)
	p0 := s.Run.PendingApprovals[0]
	p := consume(t, s.clone(), in, signedAnswer(t, s.Run.RunID, p0.Ref, p0.CycleSeq, "approve", "alice", alice, nil))
	assert.Equal(t, []string{"approver_not_allowed"}, reasonsOf(p.Events, event.ApprovalIgnored))
	assert.Nil(t, p.Effect)
	p = consume(t, s.clone(), in, signedAnswer(t, s.Run.RunID, p0.Ref, p0.CycleSeq, "approve", "carol", carol, nil))
	assert.Equal(t, []string{"verdict_approve", "signed_by_approver"}, reasonsOf(p.Events, event.ApprovalResolved))
}

// TestTwoApproverRule: a rule that needs two different approvers resolves
// its request with the second; the same approver twice does not count,
// and one denial refuses.
func TestTwoApproverRule(t *testing.T) {
	alice, bob, carol := testKey(t, "alice"), testKey(t, "bob"), testKey(t, "carol")
	s, in := signedWaiting(t, []governance.Approver{approverOf(t, "alice", alice), approverOf(t, "bob", bob), approverOf(t, "carol", carol)},
		[]string{"alice", "bob"}, 2)
	p0 := s.Run.PendingApprovals[0]
	run := s.Run.RunID
	by := func(who string, key ssh.Signer, verdict string) inbox.Item {
		return signedAnswer(t, run, p0.Ref, p0.CycleSeq, verdict, who, key, nil)
	}

	// Alice alone: recorded, the request stays open, nothing runs.
	p := consume(t, s.clone(), in, by("alice", alice, "approve"))
	assert.Equal(t, []string{"verdict_approve", "approvals_1_of_2"}, reasonsOf(p.Events, event.ApprovalRecorded))
	assert.Empty(t, eventsOf(p.Events, event.ApprovalResolved))
	assert.Nil(t, p.Effect)
	r, err := Finish(p, Settlement{})
	require.NoError(t, err)
	after := r.State
	require.Nil(t, after.Run.PendingApprovals[0].Resolution)
	require.Len(t, after.Run.PendingApprovals[0].Approvals, 1)
	assert.Equal(t, state.WaitApproval, after.Run.LoopDisposition)

	in2 := in
	in2.Now = in.Now.Add(time.Minute)
	// Alice again (a second signed approval): still one approver.
	again := signedAnswer(t, run, p0.Ref, p0.CycleSeq, "approve", "alice", alice, func(a *state.Approval) { a.CreatedAt = "2026-01-01T00:02:30Z" })
	p = consume(t, after.clone(), in2, again)
	assert.Equal(t, []string{"approver_already_approved"}, reasonsOf(p.Events, event.ApprovalIgnored))
	assert.Nil(t, p.Effect)
	// Carol is listed, but not an approver of this rule.
	p = consume(t, after.clone(), in2, by("carol", carol, "approve"))
	assert.Equal(t, []string{"approver_not_allowed"}, reasonsOf(p.Events, event.ApprovalIgnored))
	assert.Nil(t, p.Effect)
	// Bob: the second approver resolves the request, and the action runs.
	p = consume(t, after.clone(), in2, by("bob", bob, "approve"))
	assert.Equal(t, []string{"verdict_approve", "signed_by_approver"}, reasonsOf(p.Events, event.ApprovalResolved))
	assert.NotNil(t, p.Effect)

	// Both in one cycle: resolved once, by the second.
	p = consume(t, s.clone(), in, by("alice", alice, "approve"), by("bob", bob, "approve"))
	assert.Len(t, eventsOf(p.Events, event.ApprovalRecorded), 1)
	assert.Len(t, eventsOf(p.Events, event.ApprovalResolved), 1)
	assert.NotNil(t, p.Effect)
	// One denial refuses.
	p = consume(t, s.clone(), in, by("alice", alice, "approve"), by("bob", bob, "deny"))
	assert.Equal(t, []string{"verdict_deny", "signed_by_approver"}, reasonsOf(p.Events, event.ApprovalResolved))
	assert.Nil(t, p.Effect)
}

// TestUnsignedContractTakesAnswersAsBefore: without approvers, a signed
// answer is an answer like any other: nothing is checked or recorded of
// its signature.
func TestUnsignedContractTakesAnswersAsBefore(t *testing.T) {
	s, in := waitingForApproval(t)
	p0 := s.Run.PendingApprovals[0]
	p := consume(t, s, in, signedAnswer(t, "run:elsewhere", p0.Ref, p0.CycleSeq, "approve", "alice", testKey(t, "bob"), nil))
	assert.Equal(t, []string{"verdict_approve"}, reasonsOf(p.Events, event.ApprovalResolved))
	assert.Nil(t, eventsOf(p.Events, event.ApprovalResolved)[0].Object)
}

// signedAmendment is amendItem signed with key (nil: unsigned) as by.
func signedAmendment(t *testing.T, runID string, doc any, amends codec.Ref, by string, key ssh.Signer) inbox.Item {
	t.Helper()
	it := amendItem(t, state.AmendContract, doc, amends)
	a := it.Amendment
	a.By = by
	if key != nil {
		require.NoError(t, inbox.Sign(runID, a, "nonce-"+by, key, rand.Reader))
	}
	id, body, err := inbox.Seal(a)
	require.NoError(t, err)
	return inbox.Item{ID: id, Kind: inbox.KindAmendment, Amendment: a, Body: body}
}

// TestAmendingTheApprovers: an amendment that adds a key is signed and
// accepted only by a key the pinned contract lists; one signed by the key
// it would add is refused, so a forged answer cannot add its own key.
func TestAmendingTheApprovers(t *testing.T) {
	alice, mallory := testKey(t, "alice"), testKey(t, "mallory")
	spec := testSpec(patchCheck("a", "a.txt"))
	ok := observe(spec, map[string]bool{}, false)
	c := testContract()
	c.Approvers = []governance.Approver{approverOf(t, "alice", alice)}
	s := newState(t, spec, c, ok)
	run := s.Run.RunID
	wider := c
	wider.Approvers = append(slices.Clone(c.Approvers), approverOf(t, "mallory", mallory))
	require.NoError(t, wider.Validate())
	at := func(m int) Inputs { return Inputs{Now: t0.Add(time.Duration(m) * time.Minute), Observation: ok} }

	// Proposed by mallory's key: refused, nothing pending.
	r, evs := step(t, s, withItems(at(1), signedAmendment(t, run, wider, s.Run.ContractRef, "mallory", mallory)))
	assert.Equal(t, []string{inbox.SigKeyNotListed, "target_contract"}, reasonsOf(evs, event.AmendmentRefused))
	assert.Empty(t, r.State.Run.PendingAmendments)
	// Unsigned: refused the same way.
	r, evs = step(t, r.State, withItems(at(2), signedAmendment(t, run, wider, s.Run.ContractRef, "alice", nil)))
	assert.Equal(t, []string{inbox.SigMissing, "target_contract"}, reasonsOf(evs, event.AmendmentRefused))
	assert.Empty(t, r.State.Run.PendingAmendments)

	// Proposed by alice: pending, with its signer.
	r, _ = step(t, r.State, withItems(at(3), signedAmendment(t, run, wider, s.Run.ContractRef, "alice", alice)))
	require.Len(t, r.State.Run.PendingAmendments, 1)
	pa := r.State.Run.PendingAmendments[0]
	require.NotNil(t, pa.Signer)
	assert.Equal(t, "alice", pa.Signer.ID)

	// Accepted with mallory's signature: ignored, still pending.
	forged := signedAnswer(t, run, pa.Ref, pa.CycleSeq, "approve", "mallory", mallory, nil)
	r, evs = step(t, r.State, withItems(at(4), forged))
	assert.Equal(t, []string{inbox.SigKeyNotListed}, reasonsOf(evs, event.ApprovalIgnored))
	assert.Empty(t, eventsOf(evs, event.AmendmentAccepted))
	require.Len(t, r.State.Run.PendingAmendments, 1)
	assert.Equal(t, c.Approvers, r.State.Contract.Approvers)

	// Accepted by alice: the contract now lists mallory, whose answers count from then on.
	r, evs = step(t, r.State, withItems(at(5), signedAnswer(t, run, pa.Ref, pa.CycleSeq, "approve", "alice", alice, nil)))
	assert.Equal(t, []string{"target_contract", "by_operator", "signed_by_approver"}, reasonsOf(evs, event.AmendmentAccepted))
	assert.Equal(t, wider.Approvers, r.State.Contract.Approvers)
}

func withItems(in Inputs, items ...inbox.Item) Inputs {
	for _, it := range items {
		in.Inbox = append(in.Inbox, it)
		in.InboxPresent = append(in.InboxPresent, it.ID)
	}
	return in
}
