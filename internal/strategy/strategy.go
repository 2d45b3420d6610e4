// Package strategy decides when the loop should step back and reconsider
// how it works, and what a review may change. Most cycles take the direct
// path: the review trigger says NO_REVIEW unless public signals show a
// material tension (the same work failing again, commitments pulling on the
// same target, a knowledge source that changed). A review retrieves lens
// candidates from a versioned registry and may produce a routing overlay
// that reorders cognitive operations or skips a remedy that keeps failing.
// A review never changes an operator's or a domain's identity, never makes
// a candidate lens active, and never promotes new knowledge: candidates stay
// candidates (LensCandidate != ActiveLens, Candidate != StrategyGraphPromotion).
package strategy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
)

// Schema names.
const (
	StateSchema     = "acr.strategy-state/v0.1"
	TensionSchema   = "acr.strategic-tension/v0.1"
	TriggerSchema   = "acr.review-trigger/v0.1"
	RetrievalSchema = "acr.lens-retrieval/v0.1"
	OverlaySchema   = "acr.routing-overlay/v0.1"
	KnowledgeSchema = "acr.knowledge-update-candidate/v0.1"
)

// TensionClass names a kind of strategic tension.
type TensionClass string

// The tension classes acr detects.
const (
	RepeatedFailure        TensionClass = "repeated_failure"
	ConflictingCommitments TensionClass = "conflicting_commitments"
	StaleKnowledge         TensionClass = "stale_knowledge"
)

// Lens is a versioned way of looking at a tension. SourceRef and
// SourceVersion pin the exact text it came from, so history can always say
// which version of a source shaped a decision.
type Lens struct {
	ID            string         `json:"id"`
	Summary       string         `json:"summary,omitempty"`
	SourceRef     string         `json:"source_ref"`
	SourceVersion string         `json:"source_version"`
	AppliesTo     []TensionClass `json:"applies_to"`
	Routing       Routing        `json:"routing"`
}

// Routing is what a lens may change about how cognition proceeds.
type Routing struct {
	// PreferNextFix skips remedies that already failed on the item.
	PreferNextFix bool `json:"prefer_next_fix,omitempty"`
	// CritiqueFirst moves the critique before drafting.
	CritiqueFirst bool `json:"critique_first,omitempty"`
}

// DefaultLenses is the built-in registry, used when the goal brings none.
func DefaultLenses() []Lens {
	return []Lens{
		{ID: "alternative-remedy", Summary: "when a remedy keeps failing, try the next one and critique before acting",
			SourceRef: "src:acr-builtin-lenses", SourceVersion: "1", AppliesTo: []TensionClass{RepeatedFailure},
			Routing: Routing{PreferNextFix: true, CritiqueFirst: true}},
		{ID: "one-promise-per-target", Summary: "when commitments pull on one target, critique before acting",
			SourceRef: "src:acr-builtin-lenses", SourceVersion: "1", AppliesTo: []TensionClass{ConflictingCommitments},
			Routing: Routing{CritiqueFirst: true}},
		{ID: "source-refresh-review", Summary: "a changed knowledge source is reviewed as a candidate, never adopted",
			SourceRef: "src:acr-builtin-lenses", SourceVersion: "1", AppliesTo: []TensionClass{StaleKnowledge}},
	}
}

// ValidateLenses checks a lens registry.
func ValidateLenses(ls []Lens, at string) error {
	seen := map[string]bool{}
	for i, l := range ls {
		p := fmt.Sprintf("%s[%d]", at, i)
		if l.ID == "" || seen[l.ID] {
			return &codec.FieldError{Path: p + ".id", Err: fmt.Errorf("missing or duplicate lens id %q", l.ID)}
		}
		seen[l.ID] = true
		if l.SourceRef == "" {
			return &codec.FieldError{Path: p + ".source_ref", Err: fmt.Errorf("required: a lens must name its source")}
		}
		if l.SourceVersion == "" {
			return &codec.FieldError{Path: p + ".source_version", Err: fmt.Errorf("required: a lens must pin its source version")}
		}
		if len(l.AppliesTo) == 0 {
			return &codec.FieldError{Path: p + ".applies_to", Err: fmt.Errorf("required")}
		}
		for j, c := range l.AppliesTo {
			switch c {
			case RepeatedFailure, ConflictingCommitments, StaleKnowledge:
			default:
				return &codec.FieldError{Path: fmt.Sprintf("%s.applies_to[%d]", p, j), Err: fmt.Errorf("unknown tension class %q", c)}
			}
		}
	}
	return nil
}

// SourceVersion is a lens's pinned source, as carried in state and history.
type SourceVersion struct {
	LensID        string `json:"lens_id"`
	SourceRef     string `json:"source_ref"`
	SourceVersion string `json:"source_version"`
}

// KnowledgeUpdate is what a knowledge-source refresh provider reports
// (seed §8.1): a source whose observed version differs from the one in use.
// It is a candidate for review, never a promotion.
type KnowledgeUpdate struct {
	Schema             string   `json:"schema"`
	SourceRef          string   `json:"source_ref"`
	PriorVersionRef    string   `json:"prior_version_ref"`
	ObservedVersionRef string   `json:"observed_version_ref"`
	EvidenceRefs       []string `json:"evidence_refs"`
}

// KnowledgeCandidate is a received update awaiting (or after) review.
type KnowledgeCandidate struct {
	Update     KnowledgeUpdate `json:"update"`
	ReceivedAt string          `json:"received_at"`
	Reviewed   bool            `json:"reviewed"`
	// Status is always "candidate": nothing in a cycle can promote it.
	Status string `json:"status"`
}

// Memory is the strategy state kept in the checkpoint.
type Memory struct {
	Schema string `json:"schema"`
	// Active lists the lenses in force and their exact source versions.
	Active []SourceVersion `json:"active_lenses"`
	// LastReviewed is the fingerprint of the last tension reviewed, so the
	// same tension is not reviewed every cycle.
	LastReviewed string `json:"last_reviewed"`
	// Overlay is the routing overlay in force, if a review produced one.
	Overlay    *Overlay             `json:"overlay"`
	Candidates []KnowledgeCandidate `json:"knowledge_candidates"`
	Reviews    int64                `json:"reviews"`
}

// NewState returns the initial strategy state for a lens registry.
func NewState(lenses []Lens) Memory {
	s := Memory{Schema: StateSchema, Active: []SourceVersion{}, Candidates: []KnowledgeCandidate{}}
	for _, l := range lenses {
		s.Active = append(s.Active, SourceVersion{LensID: l.ID, SourceRef: l.SourceRef, SourceVersion: l.SourceVersion})
	}
	return s
}

// Signal is one public observation that contributes to tension.
type Signal struct {
	Class   TensionClass `json:"class"`
	Subject string       `json:"subject"`
	Count   int          `json:"count"`
}

// Tension is the StrategicTensionState of one cycle.
type Tension struct {
	Schema   string   `json:"schema"`
	CycleSeq int64    `json:"cycle_seq"`
	Signals  []Signal `json:"signals"`
}

// Fingerprint identifies the tension's content, cycle excluded.
func (t Tension) Fingerprint() string {
	return string(codec.MustFingerprintOf(t.Signals))
}

// Inputs are the public facts tension is computed from.
type Inputs struct {
	CycleSeq int64
	// Failures maps an item to how many times work on it failed.
	Failures map[string]int
	// Targets maps each live commitment to its target path.
	Targets map[string]string
	// Candidates are the knowledge candidates not yet reviewed.
	Candidates []KnowledgeCandidate
	// FailureThreshold is how many failures make a repeated failure.
	FailureThreshold int
}

// Assess builds the tension state. It only reads its inputs.
func Assess(in Inputs) Tension {
	t := Tension{Schema: TensionSchema, CycleSeq: in.CycleSeq, Signals: []Signal{}}
	threshold := max(in.FailureThreshold, 2)
	for _, item := range sortedKeys(in.Failures) {
		if n := in.Failures[item]; n >= threshold {
			t.Signals = append(t.Signals, Signal{Class: RepeatedFailure, Subject: item, Count: n})
		}
	}
	byTarget := map[string]int{}
	for _, c := range sortedKeys(in.Targets) {
		byTarget[in.Targets[c]]++
	}
	for _, target := range sortedKeys(byTarget) {
		if byTarget[target] > 1 {
			t.Signals = append(t.Signals, Signal{Class: ConflictingCommitments, Subject: target, Count: byTarget[target]})
		}
	}
	for _, c := range in.Candidates {
		if !c.Reviewed {
			t.Signals = append(t.Signals, Signal{Class: StaleKnowledge, Subject: c.Update.SourceRef, Count: 1})
		}
	}
	return t
}

// Decision is the review trigger's verdict.
type Decision string

// The trigger verdicts.
const (
	Review   Decision = "REVIEW"
	NoReview Decision = "NO_REVIEW"
)

// Trigger records whether a cycle reviews strategy, and why.
type Trigger struct {
	Schema             string   `json:"schema"`
	CycleSeq           int64    `json:"cycle_seq"`
	Decision           Decision `json:"decision"`
	Reasons            []string `json:"reason_codes"`
	TensionFingerprint string   `json:"tension_fingerprint"`
}

// NeedsReview decides on a review: only for material tension that has not
// already been reviewed. Review is never mandatory.
func NeedsReview(t Tension, s Memory) Trigger {
	tr := Trigger{Schema: TriggerSchema, CycleSeq: t.CycleSeq, Decision: NoReview, TensionFingerprint: t.Fingerprint()}
	switch {
	case len(t.Signals) == 0:
		tr.Reasons = []string{"no_material_tension"}
	case tr.TensionFingerprint == s.LastReviewed:
		tr.Reasons = []string{"tension_already_reviewed"}
	default:
		tr.Decision = Review
		for _, sig := range t.Signals {
			tr.Reasons = append(tr.Reasons, "tension_"+string(sig.Class))
		}
		tr.Reasons = slices.Compact(tr.Reasons)
	}
	return tr
}

// LensCandidate is a lens retrieved for a review. It is a candidate: the
// routing it suggests applies only through an overlay.
type LensCandidate struct {
	SourceVersion
	Matched []TensionClass `json:"matched"`
}

// Correction is a concrete change a review proposes for one item.
type Correction struct {
	ItemID string `json:"item_id"`
	Kind   string `json:"kind"` // skip_failed_fixes
}

// Retrieval is the result of lens retrieval in a review.
type Retrieval struct {
	Schema      string          `json:"schema"`
	CycleSeq    int64           `json:"cycle_seq"`
	Candidates  []LensCandidate `json:"candidates"`
	Corrections []Correction    `json:"corrections"`
	// KnowledgeReviewed lists knowledge sources reviewed as candidates.
	KnowledgeReviewed []string `json:"knowledge_reviewed"`
}

// Overlay reorders cognitive operations and skips failed remedies. It is
// advice for routing, not strategy truth, and it names the lenses (with
// their source versions) it came from.
type Overlay struct {
	Schema        string          `json:"schema"`
	FromCycle     int64           `json:"from_cycle"`
	Lenses        []SourceVersion `json:"lenses"`
	CritiqueFirst bool            `json:"critique_first"`
	// SkipFailedFixes lists items whose failed remedies are skipped.
	SkipFailedFixes []string `json:"skip_failed_fixes"`
}

// Ref returns the overlay's ref.
func (o Overlay) Ref() codec.Ref { return codec.MustRefOf("route", o) }

// Apply runs a review: it retrieves the lenses that match the tension,
// derives corrections and a routing overlay, and marks knowledge candidates
// as reviewed (still candidates). It returns the new strategy state.
func Apply(t Tension, tr Trigger, registry []Lens, s Memory) (Memory, Retrieval, *Overlay) {
	r := Retrieval{Schema: RetrievalSchema, CycleSeq: t.CycleSeq, Candidates: []LensCandidate{}, Corrections: []Correction{}, KnowledgeReviewed: []string{}}
	classes := map[TensionClass]bool{}
	for _, sig := range t.Signals {
		classes[sig.Class] = true
	}
	ov := Overlay{Schema: OverlaySchema, FromCycle: t.CycleSeq, Lenses: []SourceVersion{}, SkipFailedFixes: []string{}}
	for _, l := range registry {
		var matched []TensionClass
		for _, c := range l.AppliesTo {
			if classes[c] {
				matched = append(matched, c)
			}
		}
		if len(matched) == 0 {
			continue
		}
		sv := SourceVersion{LensID: l.ID, SourceRef: l.SourceRef, SourceVersion: l.SourceVersion}
		r.Candidates = append(r.Candidates, LensCandidate{SourceVersion: sv, Matched: matched})
		if l.Routing.CritiqueFirst || l.Routing.PreferNextFix {
			ov.Lenses = append(ov.Lenses, sv)
			ov.CritiqueFirst = ov.CritiqueFirst || l.Routing.CritiqueFirst
			if l.Routing.PreferNextFix {
				for _, sig := range t.Signals {
					if sig.Class == RepeatedFailure && !slices.Contains(ov.SkipFailedFixes, sig.Subject) {
						ov.SkipFailedFixes = append(ov.SkipFailedFixes, sig.Subject)
						r.Corrections = append(r.Corrections, Correction{ItemID: sig.Subject, Kind: "skip_failed_fixes"})
					}
				}
			}
		}
	}
	s.LastReviewed = tr.TensionFingerprint
	s.Reviews++
	s.Candidates = slices.Clone(s.Candidates)
	for i := range s.Candidates {
		if !s.Candidates[i].Reviewed {
			s.Candidates[i].Reviewed = true
			r.KnowledgeReviewed = append(r.KnowledgeReviewed, s.Candidates[i].Update.SourceRef)
		}
	}
	if len(ov.Lenses) == 0 {
		return s, r, nil
	}
	if s.Overlay != nil {
		ov.SkipFailedFixes = mergeSorted(s.Overlay.SkipFailedFixes, ov.SkipFailedFixes)
		ov.CritiqueFirst = ov.CritiqueFirst || s.Overlay.CritiqueFirst
		for _, sv := range s.Overlay.Lenses {
			if !slices.Contains(ov.Lenses, sv) {
				ov.Lenses = append(ov.Lenses, sv)
			}
		}
		slices.SortFunc(ov.Lenses, func(a, b SourceVersion) int { return strings.Compare(a.LensID, b.LensID) })
	}
	slices.Sort(ov.SkipFailedFixes)
	s.Overlay = &ov
	return s, r, &ov
}

// Settle drops overlay entries for items that no longer fail and removes
// the overlay when nothing is left of it.
func Settle(s Memory, resolved []string) Memory {
	if s.Overlay == nil || len(resolved) == 0 {
		return s
	}
	ov := *s.Overlay
	ov.SkipFailedFixes = slices.DeleteFunc(slices.Clone(ov.SkipFailedFixes), func(it string) bool { return slices.Contains(resolved, it) })
	if len(ov.SkipFailedFixes) == len(s.Overlay.SkipFailedFixes) {
		return s // none of the resolved items was in the overlay
	}
	if len(ov.SkipFailedFixes) == 0 {
		s.Overlay = nil
		s.LastReviewed = ""
		return s
	}
	s.Overlay = &ov
	return s
}

// Receive records knowledge updates as candidates. An update whose
// observed version is already known, or equals the prior version, is not a
// change. It returns the new state and the updates that were new.
func Receive(s Memory, updates []KnowledgeUpdate, now string) (Memory, []KnowledgeUpdate) {
	var fresh []KnowledgeUpdate
	s.Candidates = slices.Clone(s.Candidates)
	for _, u := range updates {
		if u.ObservedVersionRef == u.PriorVersionRef {
			continue
		}
		known := slices.ContainsFunc(s.Candidates, func(c KnowledgeCandidate) bool {
			return c.Update.SourceRef == u.SourceRef && c.Update.ObservedVersionRef == u.ObservedVersionRef
		})
		if known {
			continue
		}
		s.Candidates = append(s.Candidates, KnowledgeCandidate{Update: u, ReceivedAt: now, Status: "candidate"})
		fresh = append(fresh, u)
	}
	return s, fresh
}

// ValidateUpdate checks a knowledge update from a provider.
func ValidateUpdate(u KnowledgeUpdate) error {
	if u.Schema != KnowledgeSchema {
		return fmt.Errorf("knowledge update: schema %q, want %q", u.Schema, KnowledgeSchema)
	}
	if u.SourceRef == "" || u.ObservedVersionRef == "" {
		return fmt.Errorf("knowledge update: source_ref and observed_version_ref are required")
	}
	return nil
}

func mergeSorted(a, b []string) []string {
	out := slices.Concat(a, b)
	slices.Sort(out)
	return slices.Compact(out)
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.SortFunc(ks, strings.Compare)
	return ks
}
