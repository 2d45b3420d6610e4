package controller

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// ContextSchema names a cycle's context record.
const ContextSchema = "acr.controller-context/v0.1"

// Context is the controller's part of a cycle's ContextSnapshot: the
// three controller inputs of the seed that acr computes from what it has
// pinned and observed instead of being handed them. Which sources speak
// with authority (and whether a person is changing one), how far the
// context can be trusted, and what the run can actually do. It is made
// in the observe state, after the inbox was read, and every later stage
// of the cycle reads it: tension (capability gaps, opportunities),
// preflight (trust against readiness, unresolved source authority).
type Context struct {
	Schema       string       `json:"schema"`
	CycleID      string       `json:"cycle_id"`
	Sources      []Source     `json:"source_authority"`
	Trust        Trust        `json:"trust_state"`
	Capabilities []Capability `json:"available_capabilities"`
}

// The kinds of authority a source has over a cycle.
const (
	// AuthorityIntent: the accepted goal says what the run is for.
	AuthorityIntent = "intent"
	// AuthorityGrant: the contract says what the run may do.
	AuthorityGrant = "grant"
	// AuthorityDeclaration: the environment says what health is and
	// which remedies exist.
	AuthorityDeclaration = "declaration"
	// AuthorityData: the world is read, never obeyed; nothing in a file
	// is an instruction.
	AuthorityData = "data_only"
	// AuthoritySignal: the inbox holds a person's signals. A wake signal
	// grants nothing (one that names an authority is rejected), an answer
	// binds to the one request it names, an amendment is a proposal until
	// a later cycle accepts a person's answer to it.
	AuthoritySignal = "operator_signal"
	// AuthorityAdvisory: the proposer proposes; governance decides.
	AuthorityAdvisory = "advisory"
	// AuthorityCandidate: knowledge updates are candidates, never active
	// truth, until a review accepts them.
	AuthorityCandidate = "candidate"
)

// Source is one source a cycle reads and the authority it has.
type Source struct {
	Name      string    `json:"source"`
	Ref       codec.Ref `json:"ref,omitempty"`
	Authority string    `json:"authority"`
	// Pending are amendments of this source a person proposed and has
	// not answered yet, against the version pinned now. While one is
	// pending, an action whose authority depends on the answer is not
	// taken (see Contested).
	Pending []codec.Ref `json:"pending_amendments,omitempty"`
}

// Sources lists a cycle's sources: the pinned goal, contract and
// environment (each with the live amendments proposed against it), the
// observed world, the inbox, the knowledge source and, when the contract
// names one, the proposer.
func Sources(goal, contract, env, observation codec.Ref, pending []state.PendingAmendment, proposer bool) []Source {
	live := func(target string, pinned codec.Ref) []codec.Ref {
		var out []codec.Ref
		for _, p := range pending {
			if p.Target == target && p.Amends == pinned {
				out = append(out, p.Ref)
			}
		}
		return out
	}
	out := []Source{
		{Name: "goal", Ref: goal, Authority: AuthorityIntent, Pending: live(state.AmendGoal, goal)},
		{Name: "contract", Ref: contract, Authority: AuthorityGrant, Pending: live(state.AmendContract, contract)},
		{Name: "environment", Ref: env, Authority: AuthorityDeclaration, Pending: live(state.AmendEnvironment, env)},
		{Name: "world", Ref: observation, Authority: AuthorityData},
		{Name: "inbox", Authority: AuthoritySignal},
		{Name: "knowledge", Authority: AuthorityCandidate},
	}
	if proposer {
		out = append(out, Source{Name: "proposer", Authority: AuthorityAdvisory})
	}
	return out
}

// Trust is how far a cycle can trust its context, on the scale of the
// readiness coordinate: L3 when nothing is in doubt, down to L0 where a
// part of the world is unknown. Level is the trust of the least trusted
// part; For says how far one action's paths can be trusted.
type Trust struct {
	Level    string    `json:"level"`
	Concerns []Concern `json:"concerns"`
}

// The reasons for a trust concern.
const (
	// ConcernUncertainEffect: recovery could not tell whether an effect
	// happened, and a person has not said yet: the state of its paths is
	// unknown (L0).
	ConcernUncertainEffect = "uncertain_effect"
	// ConcernEffectUnderReview: an effect's readback disagreed with the
	// executor, or a command changed files outside its touches, and a
	// person has not reviewed it yet: its paths were read, but what the
	// run did to them is disputed (L1).
	ConcernEffectUnderReview = "effect_under_review"
	// ConcernObservationRefused: observation would not read a path (a
	// symlink, a special file, a file with other hard links, too deep):
	// what is there is unknown (L0).
	ConcernObservationRefused = "observation_refused"
	// ConcernRefusalsUnlisted: observation refused more paths than it
	// lists, so some unknown part of the world may be unreadable: the
	// context as a whole is not beyond doubt (L2).
	ConcernRefusalsUnlisted = "observation_refusals_unlisted"
)

// Concern is one reason to doubt part of the context: the paths it
// covers (patterns) and the trust it leaves them.
type Concern struct {
	Reason string    `json:"reason"`
	Level  string    `json:"level"`
	Paths  []string  `json:"paths"`
	Detail string    `json:"detail,omitempty"`
	Ref    codec.Ref `json:"ref,omitempty"`
}

// AssessTrust computes the trust state from what the run itself knows
// about its context: the observation (what it refused to read) and the
// requests waiting for a person about effects in doubt. A torn ledger tail
// or a provider failure is not a concern: a cycle runs only on a complete
// observation and on state re-derived from the verified ledger, and an
// effect that recovery could not settle is an uncertain effect here. ops
// is the run's catalog: an effect's paths are its operation's.
func AssessTrust(ops world.Catalog, obs world.Observation, obsRef codec.Ref, pending []state.PendingApproval) Trust {
	t := Trust{Concerns: []Concern{}}
	for _, p := range pending {
		if p.Resolution != nil {
			continue
		}
		var c Concern
		switch p.Reason {
		case "uncertain_effect":
			c = Concern{Reason: ConcernUncertainEffect, Level: "L0"}
		case "evaluation_needs_operator_review":
			c = Concern{Reason: ConcernEffectUnderReview, Level: "L1"}
		default:
			continue
		}
		var a world.Action
		if err := codec.DecodeValue(p.Action, &a); err != nil {
			c.Paths = []string{"**"} // which paths it touched is unknown: all of them
		} else {
			c.Paths = ops.Paths(a)
		}
		c.Detail, c.Ref = p.ItemID, p.Ref
		t.Concerns = append(t.Concerns, c)
	}
	for _, r := range obs.Refused {
		lit := escapeGlob(r.Path)
		t.Concerns = append(t.Concerns, Concern{Reason: ConcernObservationRefused, Level: "L0", Paths: []string{lit, lit + "/**"},
			Detail: r.Reason, Ref: obsRef})
	}
	if len(obs.Refused) >= world.MaxRefusedListed {
		t.Concerns = append(t.Concerns, Concern{Reason: ConcernRefusalsUnlisted, Level: "L2", Paths: []string{"**"}, Ref: obsRef})
	}
	lvl := 3
	for _, c := range t.Concerns {
		lvl = min(lvl, governance.Level(c.Level, 'L'))
	}
	t.Level = levelName(lvl)
	return t
}

// For is the trust of an action that may touch paths: the level of the
// least trusted concern that covers one of them; a concern anywhere else
// still keeps it below L3, since the context as a whole is not beyond
// doubt; L3 when there is no concern at all.
func (t Trust) For(paths []string) string {
	lvl := 3
	for _, c := range t.Concerns {
		l := 2
		if overlaps(c.Paths, paths) {
			l = governance.Level(c.Level, 'L')
		}
		lvl = min(lvl, l)
	}
	return levelName(lvl)
}

// Ready reports whether a cycle declared at readiness may act on, or
// propose, an action whose context has the given trust: readiness is the
// trust a cycle needs, on the same L0..L3 scale.
//
//	L0  acts whatever is in doubt (the world's own confinement still
//	    refuses what it cannot touch)
//	L1  not where the state is unknown (an uncertain effect, a refused path)
//	L2  not where anything is in doubt (the default)
//	L3  only when nothing anywhere in the context is in doubt
func Ready(readiness, trust string) bool {
	r, t := governance.Level(readiness, 'L'), governance.Level(trust, 'L')
	return r >= 0 && t >= r
}

func levelName(l int) string { return fmt.Sprintf("L%d", max(l, 0)) }

// overlaps reports whether some path could match a pattern of both lists.
func overlaps(as, bs []string) bool {
	for _, a := range as {
		for _, b := range bs {
			if world.MayOverlap(a, b) {
				return true
			}
		}
	}
	return false
}

// escapeGlob makes a path a pattern that matches exactly it.
func escapeGlob(p string) string {
	var sb strings.Builder
	for _, r := range p {
		if strings.ContainsRune(`*?[\`, r) {
			sb.WriteByte('\\')
		}
		sb.WriteRune(r)
	}
	return sb.String()
}

// The kinds of capability.
const (
	// CapabilityFix is a remedy the environment declares for a check.
	CapabilityFix = "fix"
	// CapabilityReport is reporting an item for a person (mark_issue).
	CapabilityReport = "report"
	// CapabilityProposer is asking the external proposer.
	CapabilityProposer = "proposer"
)

// How a capability can be carried out.
const (
	// ModeAct: governance lets the loop do it on its own.
	ModeAct = "act"
	// ModeApproval: the contract asks a person first.
	ModeApproval = "approval"
	// ModePropose: at A1 the loop proposes it and a person reviews it.
	ModePropose = "propose"
	// ModeAdvisory: the proposer's proposals are weighed like any
	// action; it decides nothing.
	ModeAdvisory = "advisory"
)

// Capability is one thing the run can do, and how.
type Capability struct {
	Kind      string          `json:"kind"`
	CheckID   string          `json:"check_id,omitempty"`
	Fix       string          `json:"fix,omitempty"`
	Operation world.Operation `json:"operation,omitempty"`
	Mode      string          `json:"mode"`
}

// FixName is how a capability names a check's fix: its id, or its place
// in the check's list (the cognitive program's affordance id).
func FixName(f world.Fix, i int) string {
	if f.ID != "" {
		return f.ID
	}
	return fmt.Sprintf("fix-%d", i)
}

// Capabilities lists what the run can actually do under the pinned
// contract: each fix the environment declares that governance would let
// the loop carry out (act), carry out with a person's approval (approval)
// or propose (A1), reporting for a person, and the proposer when the
// contract names one and the autonomy lets anything be proposed. Governance
// itself rules on each remedy, with the evidence the contract and checks
// name taken as present: waiting for evidence is not a missing capability.
// Nothing is available at A0, and a fix the contract forbids, or that
// needs more authority than the contract's mode, is not available. ops is
// the run's catalog of operations (the report is its Reports operation).
func Capabilities(ops world.Catalog, c *governance.Contract, spec *world.Spec) []Capability {
	evidence := map[string]bool{}
	for _, e := range spec.Evidence {
		evidence[e.ID] = true
	}
	for _, r := range c.Rules {
		for _, e := range r.RequiresEvidence {
			evidence[e] = true
		}
	}
	for _, ck := range spec.Checks {
		for _, e := range ck.RequiresEvidence {
			evidence[e] = true
		}
	}
	autonomy := governance.Level(c.Coordinates.Autonomy, 'A')
	mode := func(a world.Action) string {
		d := governance.Decide(c, spec, governance.Request{Action: a, StillNeeded: true, EvidencePresent: evidence, Operations: ops})
		switch {
		case d.Verdict == governance.Execute:
			return ModeAct
		case d.Verdict == governance.Escalate && autonomy <= 1:
			return ModePropose
		case d.Verdict == governance.Escalate:
			return ModeApproval
		}
		return ""
	}
	out := []Capability{}
	for _, ck := range spec.Checks {
		for i, f := range ck.Fixes {
			if m := mode(ops.DraftFix(ck, world.CheckResult{}, f)); m != "" {
				out = append(out, Capability{Kind: CapabilityFix, CheckID: ck.ID, Fix: FixName(f, i), Operation: f.Operation, Mode: m})
			}
		}
	}
	rk := ops.Report()
	report := ops.DraftFix(world.Check{Summary: "report"}, world.CheckResult{}, world.Fix{Operation: rk.Op})
	if m := mode(report); m != "" {
		out = append(out, Capability{Kind: CapabilityReport, Operation: rk.Op, Mode: m})
	}
	if c.Proposer != nil && autonomy >= 1 {
		out = append(out, Capability{Kind: CapabilityProposer, Mode: ModeAdvisory})
	}
	return out
}

// Gaps lists the failing checks the run has no way to fix: none of their
// declared fixes is an available capability (none declared, or the
// contract forbids them, or the authority or autonomy does not reach
// them) and there is no proposer to ask. Such a check can only be
// reported; a person, or a new capability, has to help.
func Gaps(failing []string, caps []Capability) []string {
	if slices.ContainsFunc(caps, func(c Capability) bool { return c.Kind == CapabilityProposer }) {
		return nil
	}
	var out []string
	for _, id := range failing {
		if !slices.ContainsFunc(caps, func(c Capability) bool { return c.Kind == CapabilityFix && c.CheckID == id }) {
			out = append(out, id)
		}
	}
	return out
}

// Opportunities finds leverage: one available fix that is the declared
// remedy of several failing checks, so that one action should make all of
// them pass. Two fixes are the same remedy when they would draft the same
// action apart from the check it is for (same operation, target, edit or
// command). Only remedies judged by their checks passing count (a report
// fixes nothing). Each opportunity is named by its checks, joined by "+",
// in the order the checks fail in.
func Opportunities(ops world.Catalog, spec *world.Spec, caps []Capability, failing []string) []string {
	var keys []codec.Fingerprint
	groups := map[codec.Fingerprint][]string{}
	for _, id := range failing {
		ck, ok := spec.CheckByID(id)
		if !ok {
			continue
		}
		for i, f := range ck.Fixes {
			name := FixName(f, i)
			if !slices.ContainsFunc(caps, func(c Capability) bool {
				return c.Kind == CapabilityFix && c.CheckID == id && c.Fix == name
			}) {
				continue
			}
			a := ops.DraftFix(ck, world.CheckResult{}, f)
			if !slices.Contains(ops.Criteria(a), "check_passes") {
				continue
			}
			a.CheckID, a.FixID = "", ""
			k := codec.MustFingerprintOf(a)
			if slices.Contains(groups[k], id) {
				continue
			}
			if _, seen := groups[k]; !seen {
				keys = append(keys, k)
			}
			groups[k] = append(groups[k], id)
		}
	}
	var out []string
	for _, k := range keys {
		if len(groups[k]) > 1 {
			out = append(out, strings.Join(groups[k], "+"))
		}
	}
	return out
}
