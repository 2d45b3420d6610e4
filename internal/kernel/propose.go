package kernel

import (
	"fmt"
	"slices"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// This file is cognition's seam to an external proposer. A cycle whose
// selected item needs a proposal stops after compiling its program:
// Begin returns a Pending with Ask set, the driver asks the proposer (the
// only I/O involved), and Answer records the reply and goes on to the
// governance boundary. Both halves are pure; replay hands Answer the
// recorded reply, so a recorded cycle never asks the proposer again.

// Event types of the proposer stage.
const ()

// thinking is cognition's work on the selected item, kept across the
// proposer's answer.
type thinking struct {
	result       world.CheckResult // the check's observed result
	draft        world.CheckResult // the same, with the hash a fix is derived from
	routing      cognition.Routing
	failed       map[string]bool
	commitmentID string
	affs         []cognition.Affordance
	prog         cognition.Program
	progRef      codec.Ref
	request      cognition.ProposalRequest
	requestRef   codec.Ref
	reply        *cognition.Reply
}

// Answer goes on with a cycle that asked the proposer, given its reply
// and when it came (from ledger format 3 on, the records the cycle makes
// after it carry that time; zero keeps the cycle's own). Like Begin it is
// pure: the same pending cycle, reply and time give the same events.
func Answer(p *Pending, r cognition.Reply, at time.Time) (*Pending, error) {
	b := p.b
	if b.thought == nil || b.thought.reply != nil || p.Ask == nil {
		return nil, fmt.Errorf("cycle %d did not ask for a proposal", b.cycle)
	}
	if r.Schema != cognition.ReplySchema {
		return nil, fmt.Errorf("proposal reply: schema %q, want %q", r.Schema, cognition.ReplySchema)
	}
	b.thought.reply = &r
	b.tick(at)
	b.record(event.ProposalReceived, "prop", r, map[string]codec.Ref{"request": b.thought.requestRef}, "proposal_recorded_before_governance")
	b.decide()
	return b.pending()
}

// draftResult is the check result a fix is derived from. A text check's
// result carries its file's hash already; a command check's carries the
// hash of its output (its evidence), so a patch on the command check's
// path takes the path's hash from the observation instead.
func (b *thinker) draftResult(r world.CheckResult) world.CheckResult {
	if k, ok := world.CheckKindOf(b.check.Kind); !ok || k.OnFile {
		return r
	}
	r.TargetSHA256 = ""
	for _, f := range b.s.Environment.Files {
		if f.Path == b.check.Path {
			r.TargetSHA256 = f.SHA256
		}
	}
	return r
}

// needsProposal says whether the external proposer is asked for the
// selected item: always, when the contract says so; otherwise once every
// declared fix of the item has failed on it (or it has none).
func (b *thinker) needsProposal(affs []cognition.Affordance, failed map[string]bool) bool {
	pr := b.s.Contract.Proposer
	if pr == nil {
		return false
	}
	if pr.Always() {
		return true
	}
	return !slices.ContainsFunc(affs, func(a cognition.Affordance) bool { return a.FixIndex >= 0 && !failed[a.Fingerprint] })
}

// reportAction is the fallback when a proposal yields nothing: reporting
// the item, for an item without declared fixes.
func (b *thinker) reportAction(t *thinking) *world.Action {
	if len(b.check.Fixes) > 0 {
		return nil
	}
	a := cognition.ReportAction(b.s.Operations, b.check, t.draft)
	return &a
}

// proposalRequest builds what the proposer is asked, from state alone.
// File contents are the driver's to add: they are what the observation
// hashed, read again when the request is sent.
func (b *thinker) proposalRequest(result world.CheckResult) cognition.ProposalRequest {
	c, g := &b.s.Contract, &b.s.Goal
	req := cognition.ProposalRequest{
		Schema: cognition.ProposalRequestSchema, RunID: b.s.Run.RunID, CycleSeq: b.cycle,
		Goal:  cognition.RequestGoal{Mission: g.Mission, Objectives: nonNil(g.Objectives), NonGoals: nonNil(g.NonGoals), Constraints: nonNil(g.Constraints)},
		Item:  cognition.RequestItem{ID: b.item, Check: b.check, Result: result},
		Files: cognition.FilesNamed(b.check, result, b.s.Environment),
		Allowed: cognition.AllowedActs{Operations: cognition.ProposalOperations(b.s.Operations), Authority: string(c.Authority.Mode),
			Autonomy: c.Coordinates.Autonomy, Rules: []cognition.AllowedRule{}},
		Commands: []cognition.CommandFix{}, Attempts: []cognition.Tried{},
	}
	for _, r := range c.Rules {
		req.Allowed.Rules = append(req.Allowed.Rules, cognition.AllowedRule{Operation: r.Operation, Paths: r.Paths, Effect: string(r.Effect)})
	}
	for _, ch := range b.s.Spec.Checks {
		for _, f := range ch.Fixes {
			if b.s.Operations.Of(f.Operation).Command {
				req.Commands = append(req.Commands, cognition.CommandFix{ID: f.ID, Check: ch.ID, Argv: f.Argv, Touches: nonNil(f.Touches), Idempotent: f.Idempotent})
			}
		}
	}
	// Earlier attempts: declared fixes by their affordance, proposed
	// actions by what the run remembers of them.
	described := map[string]string{}
	for _, a := range b.thought.affs {
		if a.FixIndex >= 0 {
			described[a.Fingerprint] = fmt.Sprintf("declared fix %d: %s", a.FixIndex, b.s.Operations.DescribeFix(b.check, b.check.Fixes[a.FixIndex]))
		}
	}
	proposed := map[string]state.ProposedAttempt{}
	for _, pa := range b.s.Run.Proposed {
		if pa.ItemID == b.item {
			described[pa.Fingerprint], proposed[pa.Fingerprint] = "proposed: "+pa.Action, pa
		}
	}
	for _, a := range b.s.Run.Attempts {
		if a.ItemID != b.item {
			continue
		}
		what, ok := described[a.Fingerprint]
		if !ok {
			what = "action " + a.Fingerprint
		}
		pa := proposed[a.Fingerprint]
		req.Attempts = append(req.Attempts, cognition.Tried{Action: what, Count: a.Count, Failures: a.Failures, Result: pa.Result,
			DeniedBy: pa.DeniedBy, Reason: pa.Reason})
	}
	for _, pa := range b.s.Run.Proposed {
		// Proposals never tried (rejected before governance, or denied by
		// a person) are attempts too, as far as the proposer is concerned.
		if pa.ItemID == b.item && !slices.ContainsFunc(b.s.Run.Attempts, func(a state.Attempt) bool { return a.ItemID == b.item && a.Fingerprint == pa.Fingerprint }) {
			req.Attempts = append(req.Attempts, cognition.Tried{Action: "proposed: " + pa.Action, Result: pa.Result, DeniedBy: pa.DeniedBy, Reason: pa.Reason})
		}
	}
	return req
}

// proposalSituation is what cognition drafts a proposed action from
// outside the dialogue: the selected check, the spec and the catalog.
func (b *thinker) proposalSituation() cognition.Situation {
	return cognition.Situation{Check: b.check, Spec: &b.s.Spec, Operations: b.s.Operations}
}

// noteProposals remembers what the proposer proposed and what became of
// it so far: the critic's rejections, and the accepted action as proposed.
func (b *thinker) noteProposals(dlg cognition.Dialogue, action *world.Action) {
	t := b.thought
	for i, pa := range t.reply.Proposal.Actions {
		var fact cognition.TargetFact
		if i < len(t.reply.Targets) {
			fact = t.reply.Targets[i]
		}
		a, problem := cognition.DraftProposed(b.proposalSituation(), pa, fact)
		result := "proposed"
		switch {
		case problem != "":
			result = "rejected_" + problem
		case action == nil || a.Ref() != action.Ref():
			continue // not weighed this cycle
		}
		b.rememberProposed(state.ProposedAttempt{ItemID: b.item, Fingerprint: cognition.Fingerprint(a), Action: b.s.Operations.Describe(a), Cycle: b.cycle, Result: result})
		if action != nil && a.Ref() == action.Ref() {
			break
		}
	}
}

// rememberProposed records a proposed action, replacing an earlier record
// of the same action, keeping the most recent per item.
func (b *work) rememberProposed(pa state.ProposedAttempt) {
	rs := &b.s.Run
	rs.Proposed = slices.DeleteFunc(rs.Proposed, func(x state.ProposedAttempt) bool { return x.ItemID == pa.ItemID && x.Fingerprint == pa.Fingerprint })
	rs.Proposed = append(rs.Proposed, pa)
	var mine []int
	for i, x := range rs.Proposed {
		if x.ItemID == pa.ItemID {
			mine = append(mine, i)
		}
	}
	if drop := len(mine) - state.AttemptsKeptPerItem; drop > 0 {
		cut := map[int]bool{}
		for _, i := range mine[:drop] {
			cut[i] = true
		}
		kept := rs.Proposed[:0]
		for i, x := range rs.Proposed {
			if !cut[i] {
				kept = append(kept, x)
			}
		}
		rs.Proposed = kept
	}
}

// judgeProposed records what became of a proposed action: governance's
// verdict, or the evaluation of its effect. Actions no proposer proposed
// are not tracked.
func (b *work) judgeProposed(fp, result string) {
	for i, pa := range b.s.Run.Proposed {
		if pa.ItemID == b.item && pa.Fingerprint == fp {
			b.s.Run.Proposed[i].Result = result
		}
	}
}

// answerRecorded hands a replayed cycle that asked the proposer the reply
// its ledger records. ok is false when the reply is not there: the cycle's
// first batch never became durable, so nothing was decided on it.
func answerRecorded(p *Pending, recs []event.Record) (*Pending, bool, error) {
	for p.Ask != nil {
		i := slices.IndexFunc(recs, func(r event.Record) bool { return r.Event.Type == event.ProposalReceived && r.Event.Object != nil })
		if i < 0 {
			return p, false, nil
		}
		var r cognition.Reply
		if err := recs[i].Event.Object.Decode(&r); err != nil {
			return p, false, fmt.Errorf("recorded proposal reply: %w", err)
		}
		var err error
		if p, err = Answer(p, r, parseAt(recs[i].Event.At)); err != nil {
			return p, false, err
		}
		recs = recs[i+1:]
	}
	return p, true, nil
}
