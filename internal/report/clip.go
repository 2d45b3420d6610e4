package report

import (
	"fmt"
	"slices"
	"unicode/utf8"

	"github.com/acr-project/acr/internal/codec"
)

// Clipping keeps any one ledger value from inflating the page. Lengths
// are measured as the bytes the value takes once HTML-escaped, so even a
// string of quotes stays within them.
const (
	maxString = 160  // one value
	maxList   = 8    // values of one list (reasons, notes, changes)
	maxTitle  = 320  // one tooltip
	maxDetail = 1400 // KiB of estimated markup for the cycles shown in full
	maxDiff   = 4096 // one cycle's diff (the ledger keeps it whole: acr audit)
)

// escapedLen is the length of a rune once html/template has escaped it.
func escapedLen(r rune) int {
	switch r {
	case '"', '\'', '<', '>', '&', 0:
		return 5
	}
	return utf8.RuneLen(max(r, 0))
}

func cost(s string) int {
	n := 0
	for _, r := range s {
		n += escapedLen(r)
	}
	return n
}

// clipTo cuts s so that, escaped, it takes at most limit bytes, marking
// the cut with an ellipsis. It reads at most limit bytes of s.
func clipTo(s string, limit int) string {
	if len(s) <= limit/5 {
		return s
	}
	n, cut := 0, -1
	for i, r := range s {
		if cut < 0 && n+escapedLen(r)+len("…") > limit {
			cut = i
		}
		if n += escapedLen(r); n > limit {
			return s[:cut] + "…"
		}
	}
	return s
}

func clip(s string) string { return clipTo(s, maxString) }

func clipList(ss []string) []string {
	if len(ss) > maxList {
		ss = append(slices.Clone(ss[:maxList-1]), fmt.Sprintf("… %d more", len(ss)-maxList+1))
	} else {
		ss = slices.Clone(ss)
	}
	for i := range ss {
		ss[i] = clip(ss[i])
	}
	return ss
}

func clipCycle(c Cycle) Cycle {
	c.At, c.Agenda, c.AgendaSummary, c.Action = clip(c.At), clip(c.Agenda), clip(c.AgendaSummary), clip(c.Action)
	c.Decision, c.Outcome, c.Evaluation = clip(c.Decision), clip(c.Outcome), clip(c.Evaluation)
	c.Diff = clipTo(c.Diff, maxDiff)
	c.Reasons, c.WokeBy, c.AgendaReasons, c.DecisionReasons = clipList(c.Reasons), clipList(c.WokeBy), clipList(c.AgendaReasons), clipList(c.DecisionReasons)
	notes := c.Notes
	if len(c.Commitments) > maxList {
		notes = append(slices.Clone(notes), fmt.Sprintf("%d more commitment changes", len(c.Commitments)-maxList))
		c.Commitments = c.Commitments[:maxList]
	}
	if len(c.Approvals) > maxList {
		notes = append(slices.Clone(notes), fmt.Sprintf("%d more approval events", len(c.Approvals)-maxList))
		c.Approvals = c.Approvals[:maxList]
	}
	c.Inbox, c.Notes = clipList(c.Inbox), clipList(notes)
	c.Failing, c.Passing = clipList(c.Failing), nil // the checks table has them all
	if c.Review != nil {
		c.Review = clipList(c.Review)
	}
	c.Commitments = slices.Clone(c.Commitments)
	for i := range c.Commitments {
		cc := &c.Commitments[i]
		cc.ID, cc.Event, cc.Status, cc.Summary, cc.Reason = clip(cc.ID), clip(cc.Event), clip(cc.Status), clip(cc.Summary), clip(cc.Reason)
	}
	c.Approvals = slices.Clone(c.Approvals)
	for i := range c.Approvals {
		ap := &c.Approvals[i]
		ap.Kind, ap.ActionRef, ap.Action = clip(ap.Kind), codec.Ref(clip(string(ap.ActionRef))), clip(ap.Action)
		ap.Reason, ap.Verdict, ap.By = clip(ap.Reason), clip(ap.Verdict), clip(ap.By)
	}
	if c.Compaction != nil {
		cp := *c.Compaction
		cp.Trigger, cp.Block = clip(cp.Trigger), clip(cp.Block)
		c.Compaction = &cp
	}
	if c.Budget != nil {
		b := *c.Budget
		b.SoftWarned = nil // the budgets section reads the soft levels from the contract
		c.Budget = &b
	}
	return c
}

// weight estimates the markup of a cycle shown in full: its text appears
// in the summary line and in the detail list, plus fixed markup.
func weight(c *Cycle) int {
	n := cost(c.At) + cost(c.Agenda) + cost(c.AgendaSummary) + cost(c.Action) + cost(c.Decision) + cost(c.Outcome) + cost(c.Evaluation) + cost(c.Diff)
	for _, l := range [][]string{c.Reasons, c.WokeBy, c.AgendaReasons, c.DecisionReasons, c.Inbox, c.Notes, c.Review, c.Failing} {
		for _, s := range l {
			n += cost(s) + 8
		}
	}
	for _, cc := range c.Commitments {
		n += cost(cc.ID) + cost(cc.Event) + cost(cc.Status) + cost(cc.Summary) + cost(cc.Reason) + 80
	}
	for _, ap := range c.Approvals {
		n += cost(ap.Kind) + cost(string(ap.ActionRef)) + cost(ap.Action) + cost(ap.Reason) + cost(ap.Verdict) + cost(ap.By) + 80
	}
	if c.Compaction != nil {
		n += cost(c.Compaction.Trigger) + cost(c.Compaction.Block) + 80
	}
	return 2*n + 1200
}

func clipHead(h Head) Head {
	h.RunID, h.Status, h.UpdatedAt, h.GoalID, h.Mission, h.ContractID = clip(h.RunID), clip(h.Status), clip(h.UpdatedAt), clip(h.GoalID), clip(h.Mission), clip(h.ContractID)
	h.World = clip(h.World)
	h.Reasons = clipList(h.Reasons)
	h.Budget.SoftWarned = clipList(h.Budget.SoftWarned)
	if len(h.Pending) > maxList {
		h.Pending = h.Pending[:maxList]
	}
	h.Pending = slices.Clone(h.Pending)
	for i := range h.Pending {
		p := &h.Pending[i]
		p.Ref, p.Action, p.Reason, p.RequestedAt = codec.Ref(clip(string(p.Ref))), clip(p.Action), clip(p.Reason), clip(p.RequestedAt)
		p.Change = clipTo(p.Change, maxDiff)
	}
	return h
}
