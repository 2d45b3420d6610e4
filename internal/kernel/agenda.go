package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/semantic"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// The agenda stage: candidates from reactivated commitments and observed
// issues, what is blocked and why, and the deterministic resolution; work
// decided in an earlier cycle put first; what is set aside, and what was
// fixed.

// work is the agenda and commitment part of a cycle's builder: the agenda's
// resolution and the item it selected, the check, remedy and evidence the
// cycle works on, the effect governance authorized for it; and the run's
// memory of its items: the commitments (commitments.go), what is set aside
// and why, what was tried, proposed and fixed.
type work struct {
	s *EngineState
	*recorder
	*intake
	res        agenda.Resolution
	resRef     codec.Ref
	candidates int
	item       string
	check      world.Check
	fp         string // the remedy's fingerprint (cognition.Fingerprint)
	evidence   string // the hash the remedy was derived from
	effect     *Effect
	woken      []string // commitments whose condition or deadline came
}

// blocked lists items that must not be proposed now, with the reason.
func (b *work) blocked() map[string]string {
	rs := &b.s.Run
	out := map[string]string{}
	for _, sp := range rs.Suppressed {
		out[sp.ItemID] = sp.Reason
	}
	for _, p := range rs.PendingApprovals {
		out[p.ItemID] = "awaiting_approval"
	}
	for _, d := range rs.Deferred {
		out[d.ItemID] = "awaiting_evidence"
	}
	for _, c := range b.s.Commitments.Commitments {
		if c.Status == commitment.Suspended && c.ItemID != "" {
			out[c.ItemID] = "commitment_suspended"
		}
	}
	return out
}

func (b *work) resolveAgenda(sem semantic.Encoded) {
	in := agenda.Inputs{CycleSeq: b.cycle, Blocked: b.blocked()}
	for _, f := range sem.Failing() {
		summary := f.Subject
		if i := slices.IndexFunc(b.s.Spec.Checks, func(c world.Check) bool { return c.ID == f.Subject }); i >= 0 {
			summary = b.s.Spec.Checks[i].Summary
		}
		in.Issues = append(in.Issues, agenda.Issue{CheckID: f.Subject, Priority: f.Priority, Summary: summary})
	}
	for _, c := range b.s.Commitments.Commitments {
		switch {
		case c.Status != commitment.Active:
		case c.Standing != "":
			// A standing commitment puts the failing checks of its scope
			// on the agenda; one whose checks pass asks for nothing.
			for _, id := range c.Failing(b.s.Environment) {
				in.Reactivated = append(in.Reactivated, agenda.Work{CommitmentID: c.ID, CheckID: id, Summary: c.Summary})
			}
		default:
			in.Reactivated = append(in.Reactivated, agenda.Work{CommitmentID: c.ID, CheckID: c.CheckID, Summary: c.Summary})
		}
	}
	b.res = agenda.Resolve(in)
	b.candidates = len(b.res.Candidates)
	typ := event.AgendaSelected
	if b.res.Outcome == agenda.NoAgenda {
		typ = event.AgendaEmpty
	}
	b.emit(event.CandidatesProposed, nil, nil, fmt.Sprintf("candidates_%d", len(b.res.Candidates)))
	b.resRef = b.record(typ, "ares", b.res, nil, b.res.ReasonCodes...)
	b.rec.AgendaResolutionRef = b.resRef
	b.s.Run.ActiveAgendaResolutionRef = b.resRef
	if b.res.Selected != nil {
		b.sum.Agenda = b.res.Selected.ItemID
	}
}

// gapDemonstrated reports a capability gap for the current item: it keeps
// failing after fixes (drift), or no remedy exists for it.
func (b *work) gapDemonstrated() (string, bool) {
	rs := &b.s.Run
	for _, f := range rs.Fixed {
		if f.ItemID == b.item && f.Times >= 2 {
			return "recurring_drift", true
		}
	}
	for _, sp := range rs.Suppressed {
		if sp.ItemID == b.item && sp.Reason == "no_acceptable_remedy" {
			return "no_acceptable_remedy", true
		}
	}
	return "", false
}

// noteFixed remembers that the current item was fixed, for drift.
func (b *work) noteFixed() {
	rs := &b.s.Run
	i := slices.IndexFunc(rs.Fixed, func(f state.FixedItem) bool { return f.ItemID == b.item })
	if i < 0 {
		rs.Fixed = append(rs.Fixed, state.FixedItem{ItemID: b.item})
		i = len(rs.Fixed) - 1
	}
	rs.Fixed[i].Cycle = b.cycle
	rs.Fixed[i].Times++
	slices.SortFunc(rs.Fixed, func(a, c state.FixedItem) int { return strings.Compare(a.ItemID, c.ItemID) })
}

// drifted lists failing checks whose items this run had fixed before.
func (b *work) drifted(failing []string) []string {
	var out []string
	for _, id := range failing {
		if slices.ContainsFunc(b.s.Run.Fixed, func(f state.FixedItem) bool { return f.ItemID == "check:"+id }) {
			out = append(out, id)
		}
	}
	return out
}

// selectRecorded makes work decided in an earlier cycle (an approved
// action, a required undo) this cycle's agenda, ahead of anything new.
func (b *work) selectRecorded(itemID, checkID string, source agenda.Source, reason string, refs map[string]codec.Ref) {
	b.item = itemID
	if ci := slices.IndexFunc(b.s.Spec.Checks, func(c world.Check) bool { return c.ID == checkID }); ci >= 0 {
		b.check = b.s.Spec.Checks[ci]
	}
	b.res = agenda.Resolution{Schema: agenda.Schema, CycleSeq: b.cycle, Candidates: []agenda.Candidate{}, Excluded: []agenda.Exclusion{},
		Outcome: agenda.Selected, Selected: &agenda.Candidate{ItemID: itemID, CheckID: checkID, Source: source}, ReasonCodes: []string{reason}}
	b.resRef = b.record(event.AgendaSelected, "ares", b.res, refs, b.res.ReasonCodes...)
	b.rec.AgendaResolutionRef = b.resRef
	b.s.Run.ActiveAgendaResolutionRef = b.resRef
	b.sum.Agenda = itemID
}

// suppress sets an item aside (replacing an earlier record of it) until
// what sp waits for changes; the list stays in item order.
func (b *work) suppress(sp state.Suppression) {
	rs := &b.s.Run
	rs.Suppressed = slices.DeleteFunc(rs.Suppressed, func(x state.Suppression) bool { return x.ItemID == sp.ItemID })
	rs.Suppressed = append(rs.Suppressed, sp)
	slices.SortFunc(rs.Suppressed, func(a, c state.Suppression) int { return strings.Compare(a.ItemID, c.ItemID) })
}
