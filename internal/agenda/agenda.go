// Package agenda forms and resolves the Agenda: what, if anything, is worth
// working on this cycle. Candidates come from observed issues (failing
// checks) and from reactivated work (live commitments). Resolution is
// deterministic and says why, and "no agenda" is a first-class outcome,
// not an error (NoAgenda != Error). An agenda candidate is not an action
// candidate, and selecting one grants no authority.
package agenda

import (
	"cmp"
	"slices"
	"strings"
)

// Schema is the resolution's schema name.
const Schema = "acr.agenda-resolution/v0.1"

// Source says where a candidate came from.
type Source string

// The candidate sources.
const (
	FromCommitment Source = "commitment"
	FromIssue      Source = "observed_issue"
)

// Candidate is one piece of work the loop could take up.
type Candidate struct {
	ItemID       string `json:"item_id"`
	CheckID      string `json:"check_id"`
	CommitmentID string `json:"commitment_id,omitempty"`
	Source       Source `json:"source"`
	Priority     int    `json:"priority"`
	Summary      string `json:"summary,omitempty"`
}

// Exclusion is a candidate left out, with the reason.
type Exclusion struct {
	ItemID string `json:"item_id"`
	Reason string `json:"reason"`
}

// Outcome says whether resolution selected work.
type Outcome string

// The resolution outcomes.
const (
	Selected Outcome = "selected"
	NoAgenda Outcome = "no_agenda"
)

// Resolution is the AgendaResolution of one cycle.
type Resolution struct {
	Schema      string      `json:"schema"`
	CycleSeq    int64       `json:"cycle_seq"`
	Candidates  []Candidate `json:"candidates"`
	Excluded    []Exclusion `json:"excluded"`
	Outcome     Outcome     `json:"outcome"`
	Selected    *Candidate  `json:"selected"`
	ReasonCodes []string    `json:"reason_codes"`
}

// Issue is a failing check as the agenda sees it.
type Issue struct {
	CheckID  string
	Priority int
	Summary  string
}

// Work is reactivated work from a live, active commitment.
type Work struct {
	CommitmentID string
	CheckID      string
	Summary      string
}

// Inputs are what the agenda is formed from. Blocked maps item ids that
// must not be proposed now to the reason (suppressed, awaiting approval,
// deferred for evidence, held by a suspended commitment).
type Inputs struct {
	CycleSeq    int64
	Issues      []Issue
	Reactivated []Work
	Blocked     map[string]string
}

// ItemID is the agenda item id for work on a check.
func ItemID(checkID string) string { return "check:" + checkID }

// Resolve forms candidates and selects one. Reactivated commitments come
// before novel issues (a promise is not forgotten because something new
// turned up), then higher priority, then item id.
func Resolve(in Inputs) Resolution {
	r := Resolution{Schema: Schema, CycleSeq: in.CycleSeq, Candidates: []Candidate{}, Excluded: []Exclusion{}}
	seen := map[string]bool{}
	consider := func(c Candidate) {
		if seen[c.ItemID] {
			return
		}
		seen[c.ItemID] = true
		if why, ok := in.Blocked[c.ItemID]; ok {
			r.Excluded = append(r.Excluded, Exclusion{ItemID: c.ItemID, Reason: why})
			return
		}
		r.Candidates = append(r.Candidates, c)
	}
	issuePriority := map[string]int{}
	for _, is := range in.Issues {
		issuePriority[is.CheckID] = is.Priority
	}
	for _, w := range in.Reactivated {
		consider(Candidate{ItemID: ItemID(w.CheckID), CheckID: w.CheckID, CommitmentID: w.CommitmentID,
			Source: FromCommitment, Priority: issuePriority[w.CheckID], Summary: w.Summary})
	}
	for _, is := range in.Issues {
		consider(Candidate{ItemID: ItemID(is.CheckID), CheckID: is.CheckID, Source: FromIssue, Priority: is.Priority, Summary: is.Summary})
	}
	slices.SortStableFunc(r.Candidates, func(a, b Candidate) int {
		if a.Source != b.Source {
			if a.Source == FromCommitment {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(b.Priority, a.Priority), strings.Compare(a.ItemID, b.ItemID))
	})
	slices.SortFunc(r.Excluded, func(a, b Exclusion) int { return strings.Compare(a.ItemID, b.ItemID) })
	if len(r.Candidates) == 0 {
		r.Outcome = NoAgenda
		r.ReasonCodes = []string{"no_positive_agenda"}
		if len(r.Excluded) > 0 {
			r.ReasonCodes = append(r.ReasonCodes, "all_candidates_blocked")
		}
		return r
	}
	sel := r.Candidates[0]
	r.Selected, r.Outcome = &sel, Selected
	if sel.Source == FromCommitment {
		r.ReasonCodes = []string{"reactivated_commitment_first"}
	} else {
		r.ReasonCodes = []string{"highest_priority_issue"}
	}
	return r
}
