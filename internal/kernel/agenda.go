package kernel

import (
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/semantic"
	"github.com/acr-project/acr/internal/world"
)

// The agenda stage: candidates from reactivated commitments and observed
// issues, what is blocked and why, and the deterministic resolution.

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
