// Package semantic turns a raw observation into typed facts the rest of a
// cycle reasons over, and describes the loop's own situation as public,
// structured self-observation (SelfObservation != HiddenCoT): budget use,
// pending approvals, deferred work, recent failures. Both are recorded by
// ref so a later audit sees exactly what the cycle saw.
package semantic

import (
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Schema names.
const (
	StateSchema = "acr.semantic-state/v0.1"
	SelfSchema  = "acr.self-observation/v0.1"
)

// FactKind names a kind of fact.
type FactKind string

// The fact kinds.
const (
	CheckFailing    FactKind = "check_failing"
	CheckPassing    FactKind = "check_passing"
	EvidencePresent FactKind = "evidence_present"
	EvidenceMissing FactKind = "evidence_missing"
)

// Fact is one typed statement about the world.
type Fact struct {
	Kind     FactKind          `json:"kind"`
	Subject  string            `json:"subject"`
	Path     string            `json:"path,omitempty"`
	Detail   string            `json:"detail,omitempty"`
	Priority int               `json:"priority"`
	Hash     codec.Fingerprint `json:"hash,omitempty"`
}

// Encoded is the SemanticState of one cycle.
type Encoded struct {
	Schema         string    `json:"schema"`
	ObservationRef codec.Ref `json:"observation_ref"`
	Facts          []Fact    `json:"facts"`
}

// Encode derives facts from an observation. Facts are sorted by kind and
// subject so that the same observation always encodes the same way.
func Encode(obs world.Observation, spec *world.Spec) Encoded {
	s := Encoded{Schema: StateSchema, ObservationRef: obs.Ref(), Facts: []Fact{}}
	for _, r := range obs.Checks {
		f := Fact{Kind: CheckPassing, Subject: r.ID, Detail: r.Detail, Hash: r.TargetSHA256}
		if r.Status == world.CheckFail {
			f.Kind = CheckFailing
		}
		if i := slices.IndexFunc(spec.Checks, func(c world.Check) bool { return c.ID == r.ID }); i >= 0 {
			f.Priority, f.Path = spec.Checks[i].Priority, spec.Checks[i].Path
		}
		s.Facts = append(s.Facts, f)
	}
	for _, e := range obs.Evidence {
		f := Fact{Kind: EvidenceMissing, Subject: e.ID}
		if e.Present {
			f.Kind, f.Hash = EvidencePresent, e.SHA256
		}
		s.Facts = append(s.Facts, f)
	}
	slices.SortFunc(s.Facts, func(a, b Fact) int {
		if c := strings.Compare(string(a.Kind), string(b.Kind)); c != 0 {
			return c
		}
		return strings.Compare(a.Subject, b.Subject)
	})
	return s
}

// Failing returns the failing check facts.
func (s Encoded) Failing() []Fact {
	var out []Fact
	for _, f := range s.Facts {
		if f.Kind == CheckFailing {
			out = append(out, f)
		}
	}
	return out
}

// Fact returns the fact about a check, if any.
func (s Encoded) Fact(checkID string) (Fact, bool) {
	for _, f := range s.Facts {
		if (f.Kind == CheckFailing || f.Kind == CheckPassing) && f.Subject == checkID {
			return f, true
		}
	}
	return Fact{}, false
}

// ItemFailures counts failed attempts on one agenda item.
type ItemFailures struct {
	ItemID   string `json:"item_id"`
	Failures int    `json:"failures"`
}

// Self is the loop's public observation of itself.
type Self struct {
	Schema           string            `json:"schema"`
	CycleSeq         int64             `json:"cycle_seq"`
	PriorDisposition state.Disposition `json:"prior_disposition"`
	Budget           state.BudgetUsage `json:"budget"`
	PendingApprovals int               `json:"pending_approvals"`
	Deferred         int               `json:"deferred"`
	Suppressed       int               `json:"suppressed"`
	LiveCommitments  int               `json:"live_commitments"`
	RecentFailures   []ItemFailures    `json:"recent_failures"`
}

// Observe builds the self-observation from the run state.
func Observe(rs *state.RunState, cycleSeq int64, liveCommitments int) Self {
	s := Self{
		Schema: SelfSchema, CycleSeq: cycleSeq, PriorDisposition: rs.LoopDisposition, Budget: rs.Budget,
		PendingApprovals: len(rs.PendingApprovals), Deferred: len(rs.Deferred), Suppressed: len(rs.Suppressed),
		LiveCommitments: liveCommitments, RecentFailures: []ItemFailures{},
	}
	for _, item := range FailuresByItem(rs.Attempts) {
		s.RecentFailures = append(s.RecentFailures, item)
	}
	return s
}

// FailuresByItem sums failures per item, sorted by item id.
func FailuresByItem(attempts []state.Attempt) []ItemFailures {
	m := map[string]int{}
	for _, a := range attempts {
		if a.Failures > 0 {
			m[a.ItemID] += a.Failures
		}
	}
	var out []ItemFailures
	for id, n := range m {
		out = append(out, ItemFailures{ItemID: id, Failures: n})
	}
	slices.SortFunc(out, func(a, b ItemFailures) int { return strings.Compare(a.ItemID, b.ItemID) })
	return out
}
