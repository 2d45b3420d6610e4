// Package governance is the boundary every world-facing action crosses. The
// Contract, pinned at init, says which sandbox operations on which paths are
// allowed, need a person's approval, or are forbidden, what evidence an
// operation needs, the run's authority and autonomy, and its budgets.
// Decide rules on one action request and returns a Decision (EXECUTE,
// REFUSE, DEFER, IDLE or ESCALATE) with a DecisionReceipt. Nothing a cycle
// produces can change the Contract, and the loop's scheduler state is
// derived from a decision without altering it.
package governance

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/sshsig"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Schema names.
const (
	ContractSchema = "acr.contract/v0.1"
	DecisionSchema = "acr.governance-decision/v0.1"
	ReceiptSchema  = "acr.decision-receipt/v0.1"
)

// Contract is what the run may do. It is pinned by ref at init.
type Contract struct {
	Schema      string      `json:"schema"`
	ID          string      `json:"id"`
	Authority   Authority   `json:"authority"`
	Coordinates Coordinates `json:"coordinates"`
	// Rules are matched in order; the first whose operation and path match
	// decides. No match means forbidden.
	Rules   []Rule     `json:"rules"`
	Budgets budget.Run `json:"budgets"`
	// CycleBudget bounds each single cycle (the controller's budgets);
	// Budgets bound the whole run.
	CycleBudget *budget.Cycle `json:"cycle_budget,omitempty"`
	Policy      Policy        `json:"policy"`
	// Proposer is an external program cognition may ask for a proposal
	// (docs/providers.md). It proposes; governance still decides.
	Proposer *Proposer `json:"proposer,omitempty"`
	// ValidUntil, when set (RFC 3339), is when the contract lapses: no
	// cycle runs under it from then on, and the run stops (STOPPED,
	// contract_invalidated, contract_expired) until a person amends the
	// contract.
	ValidUntil string `json:"valid_until,omitempty"`
	// Revoked withdraws the contract. A person revokes by amending the
	// contract with it set: the next cycle stops the run (STOPPED,
	// contract_invalidated, contract_revoked); a later amendment that
	// clears it resumes the run. A run cannot start under a revoked
	// contract.
	Revoked bool `json:"revoked,omitempty"`
	// Approvers are the people who may answer the run's requests. When
	// any are listed, an answer (approve, deny, ran, not_ran) and an
	// amendment count only if signed by a listed key whose id is the
	// answer's by (docs/operations.md, "Who may answer"); without them
	// anyone who can write the inbox answers, as --by says.
	Approvers []Approver `json:"approvers,omitempty"`
}

// Approver is one person's ssh public key, under the id their answers
// give as by. One id may have several keys (a new one while the old is
// retired); one key belongs to one id.
type Approver struct {
	ID string `json:"id"`
	// PublicKey is the key as an authorized_keys line:
	// "ssh-ed25519 AAAA... alice@laptop" (ed25519, ECDSA or RSA).
	PublicKey string `json:"public_key"`
}

// Signed reports whether answers to the run must be signed.
func (c *Contract) Signed() bool { return len(c.Approvers) > 0 }

// KeyOwner returns the id a public key (its SSH wire form) is listed
// under, or "" when the contract does not list it.
func (c *Contract) KeyOwner(key []byte) string {
	for _, a := range c.Approvers {
		if pub, err := sshsig.ParsePublicKey(a.PublicKey); err == nil && bytes.Equal(pub.Marshal(), key) {
			return a.ID
		}
	}
	return ""
}

// Answerers says who may answer a request about action a, and how many
// different approvers must approve it: the deciding rule's approvers (all
// the listed ones when it names none) and its approvals (at least 1). ops
// is the run's operation catalog, which the deciding rule is found with.
func (c *Contract) Answerers(ops world.Catalog, a world.Action) (ids []string, approvals int) {
	approvals = 1
	if rl := c.Rule(ops, a); rl.Rule >= 0 {
		r := c.Rules[rl.Rule]
		ids, approvals = r.Approvers, max(1, r.Approvals)
	}
	if len(ids) == 0 {
		ids = c.ApproverIDs()
	}
	return ids, approvals
}

// ApproverIDs lists the ids of the contract's approvers, once each.
func (c *Contract) ApproverIDs() []string {
	var ids []string
	for _, ap := range c.Approvers {
		if !slices.Contains(ids, ap.ID) {
			ids = append(ids, ap.ID)
		}
	}
	return ids
}

// Invalidated says why the contract does not hold at now: the reason code
// contract_revoked or contract_expired, or "" while it holds (seed §15:
// contract invalidated is a stop source).
func (c *Contract) Invalidated(now time.Time) string {
	switch {
	case c.Revoked:
		return "contract_revoked"
	case c.ValidUntil != "":
		if t, err := state.ParseTime(c.ValidUntil); err != nil || !now.Before(t) {
			return "contract_expired"
		}
	}
	return ""
}

// Proposer names the external proposer and when it is asked.
type Proposer struct {
	// Argv is the program; it reads one acr.proposal-request/v0.1 on
	// stdin and writes one acr.proposal/v0.1 on stdout.
	Argv []string `json:"argv"`
	// TimeoutSeconds bounds one proposal (0: DefaultProposerTimeout).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// Mode is "fallback" (the default: asked when the selected item has
	// no untried declared fix left) or "always".
	Mode string `json:"mode,omitempty"`
	// PassEnv names environment variables the proposer receives beyond
	// PATH, HOME and LANG (an API key, say).
	PassEnv []string `json:"pass_env,omitempty"`
}

// Proposer modes.
const (
	ProposerFallback = "fallback"
	ProposerAlways   = "always"
)

// DefaultProposerTimeout bounds a proposer without a timeout of its own.
const DefaultProposerTimeout = 120

// Always reports whether the proposer is asked even when a declared fix
// is left to try.
func (p *Proposer) Always() bool { return p != nil && p.Mode == ProposerAlways }

// AuthorityRef is the ref of the contract's authority: what the run state
// and every decision name as the authority they act under.
func (c *Contract) AuthorityRef() codec.Ref { return codec.MustRefOf("authority", c.Authority) }

// Cycle returns the cycle budget in force, defaults filled in.
func (c *Contract) Cycle() budget.Cycle {
	if c.CycleBudget == nil {
		return budget.Cycle{}.Defaults()
	}
	return c.CycleBudget.Defaults()
}

// Authority is the authority the run holds, fixed for its lifetime.
type Authority struct {
	ID   string        `json:"id"`
	Mode AuthorityMode `json:"mode"`
}

// AuthorityMode is the controller's authority coordinate.
type AuthorityMode string

// The authority modes, weakest first.
const (
	AuthNone           AuthorityMode = "none"
	AuthRead           AuthorityMode = "read"
	AuthPropose        AuthorityMode = "propose"
	AuthProjectWrite   AuthorityMode = "project_write"
	AuthExternalAction AuthorityMode = "external_action"
)

func authorityModes() []AuthorityMode {
	return []AuthorityMode{AuthNone, AuthRead, AuthPropose, AuthProjectWrite, AuthExternalAction}
}

// Rank orders authority modes; -1 for an unknown mode.
func (m AuthorityMode) Rank() int { return slices.Index(authorityModes(), m) }

// Coordinates are the controller's other operating coordinates. No
// coordinate implies another: high autonomy with read authority still
// cannot write.
type Coordinates struct {
	Readiness      string `json:"readiness"`       // L0..L3
	Autonomy       string `json:"autonomy"`        // A0..A4
	CognitiveDepth string `json:"cognitive_depth"` // D0..D3, the deepest allowed
}

// Level returns the numeric part of a coordinate such as "A2" (or -1).
func Level(coord string, prefix byte) int {
	if len(coord) != 2 || coord[0] != prefix || coord[1] < '0' || coord[1] > '4' {
		return -1
	}
	return int(coord[1] - '0')
}

// Effect is what a rule does to a matching action.
type Effect string

// The rule effects.
const (
	Allow   Effect = "allow"
	Approve Effect = "approve"
	Forbid  Effect = "forbid"
)

// Rule governs one operation (or "*") on paths matching any glob in Paths.
type Rule struct {
	Operation        string   `json:"operation"`
	Paths            []string `json:"paths"`
	Effect           Effect   `json:"effect"`
	RequiresEvidence []string `json:"requires_evidence,omitempty"`
	Reason           string   `json:"reason,omitempty"`
	// Approvers names the contract's approvers who may answer the
	// requests this rule decides (empty: any of them).
	Approvers []string `json:"approvers,omitempty"`
	// Approvals is how many different approvers must approve such a
	// request before the loop acts (0 or 1: one). One denial refuses it.
	Approvals int `json:"approvals,omitempty"`
}

// Policy tunes the loop within the contract. Zero values take defaults.
type Policy struct {
	// MaxProviderFailures: consecutive failed cycle starts before FAULTED.
	MaxProviderFailures int `json:"max_provider_failures,omitempty"`
	// CompactAfterUnits: compact when working memory holds more units.
	CompactAfterUnits int `json:"compact_after_units,omitempty"`
	// CompactEveryCycles: compact at least this often.
	CompactEveryCycles int `json:"compact_every_cycles,omitempty"`
	// KeepSummaryBlocks: summary blocks kept in working memory.
	KeepSummaryBlocks int `json:"keep_summary_blocks,omitempty"`
	// DeferTo says what missing evidence leads to: "sleep" promotes the
	// item to a commitment suspended until the evidence arrives (SLEEP);
	// "defer" leaves it deferred without a commitment (DEFERRED).
	DeferTo string `json:"defer_to,omitempty"`
	// RepeatLimit: tries of one action on unchanged evidence before the
	// forever-loop guard suppresses the item.
	RepeatLimit int `json:"repeat_limit,omitempty"`
	// FailureThreshold: failures of one item that make strategic tension.
	FailureThreshold int `json:"failure_threshold,omitempty"`
	// CommitmentDeadlineSeconds: deadline given to promoted commitments
	// (0: none).
	CommitmentDeadlineSeconds int64 `json:"commitment_deadline_seconds,omitempty"`
	// IdleSleepSeconds: when set, an idle run sleeps this long and then
	// takes a scheduled look even if nothing changed.
	IdleSleepSeconds int64 `json:"idle_sleep_seconds,omitempty"`
	// SignalTTLSeconds: default lifetime of a wake signal.
	SignalTTLSeconds int64 `json:"signal_ttl_seconds,omitempty"`
	// StopOnTerminalFailure stops the run (STOPPED, goal_terminal_failure)
	// once the goal has failed for good under the contract: it does not
	// hold, the loop has set every check it needs aside (refused, found
	// without a remedy, reported, caught repeating), and nothing it waits
	// for (an answer, evidence, a commitment's condition, an amendment)
	// could bring new work. Without it such a run rests and keeps
	// watching for a change.
	StopOnTerminalFailure bool `json:"stop_on_terminal_failure,omitempty"`
}

// Defaults returns the policy with zero values replaced by defaults.
func (p Policy) Defaults() Policy {
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&p.MaxProviderFailures, 3)
	def(&p.CompactAfterUnits, 64)
	def(&p.CompactEveryCycles, 50)
	def(&p.KeepSummaryBlocks, 8)
	def(&p.RepeatLimit, 3)
	def(&p.FailureThreshold, 2)
	if p.DeferTo == "" {
		p.DeferTo = "sleep"
	}
	if p.SignalTTLSeconds == 0 {
		p.SignalTTLSeconds = 7 * 24 * 3600
	}
	return p
}

// Validate checks the contract against the built-in operations. Errors
// are *codec.FieldError.
func (c *Contract) Validate() error { return c.ValidateFor(world.Catalog{}) }

// ValidateFor is Validate for a run whose world carries out the
// operations of ops: a rule may name any of them.
func (c *Contract) ValidateFor(ops world.Catalog) error {
	if c.Schema != ContractSchema {
		return &codec.FieldError{Path: "schema", Err: fmt.Errorf("want %q, found %q", ContractSchema, c.Schema)}
	}
	if !world.ValidID(c.ID) {
		return &codec.FieldError{Path: "id", Err: fmt.Errorf("%q is not a valid id", c.ID)}
	}
	if !world.ValidID(c.Authority.ID) {
		return &codec.FieldError{Path: "authority.id", Err: fmt.Errorf("%q is not a valid id", c.Authority.ID)}
	}
	if c.Authority.Mode.Rank() < 0 {
		return &codec.FieldError{Path: "authority.mode", Err: fmt.Errorf("unknown mode %q (want none, read, propose, project_write or external_action)", c.Authority.Mode)}
	}
	if Level(c.Coordinates.Readiness, 'L') < 0 || Level(c.Coordinates.Readiness, 'L') > 3 {
		return &codec.FieldError{Path: "coordinates.readiness", Err: fmt.Errorf("want L0..L3, found %q", c.Coordinates.Readiness)}
	}
	if Level(c.Coordinates.Autonomy, 'A') < 0 {
		return &codec.FieldError{Path: "coordinates.autonomy", Err: fmt.Errorf("want A0..A4, found %q", c.Coordinates.Autonomy)}
	}
	if Level(c.Coordinates.CognitiveDepth, 'D') < 0 || Level(c.Coordinates.CognitiveDepth, 'D') > 3 {
		return &codec.FieldError{Path: "coordinates.cognitive_depth", Err: fmt.Errorf("want D0..D3, found %q", c.Coordinates.CognitiveDepth)}
	}
	for i, r := range c.Rules {
		at := fmt.Sprintf("rules[%d]", i)
		if r.Operation != "*" && !slices.Contains(ops.Operations(), world.Operation(r.Operation)) {
			return &codec.FieldError{Path: at + ".operation", Err: fmt.Errorf("unknown operation %q", r.Operation)}
		}
		if len(r.Paths) == 0 {
			return &codec.FieldError{Path: at + ".paths", Err: fmt.Errorf("required (use [\"**\"] for every path)")}
		}
		for j, pat := range r.Paths {
			if err := world.ValidPattern(pat); err != nil {
				return &codec.FieldError{Path: fmt.Sprintf("%s.paths[%d]", at, j), Err: err}
			}
		}
		switch r.Effect {
		case Allow, Approve, Forbid:
		default:
			return &codec.FieldError{Path: at + ".effect", Err: fmt.Errorf("unknown effect %q (want allow, approve or forbid)", r.Effect)}
		}
	}
	if err := c.validateApprovers(); err != nil {
		return err
	}
	for _, l := range []struct {
		name string
		l    budget.Limit
	}{{"cycles", c.Budgets.Cycles}, {"cognitive_operations", c.Budgets.CognitiveOperations}, {"actions", c.Budgets.Actions},
		{"compactions", c.Budgets.Compactions}, {"wall_clock_seconds", c.Budgets.WallClockSeconds}} {
		if l.l.Soft < 0 || l.l.Hard < 0 || (l.l.Hard > 0 && l.l.Soft > l.l.Hard) {
			return &codec.FieldError{Path: "budgets." + l.name, Err: fmt.Errorf("soft and hard must be >= 0 and soft <= hard")}
		}
	}
	cb := budget.Cycle{}
	if c.CycleBudget != nil {
		cb = *c.CycleBudget
	}
	for _, v := range []struct {
		name string
		n    int64
	}{{"max_wall_time_seconds", cb.MaxWallTimeSeconds}, {"max_events", cb.MaxEvents},
		{"max_recursive_depth", cb.MaxRecursiveDepth}, {"max_branches", cb.MaxBranches},
		{"max_tool_actions", cb.MaxToolActions}, {"max_files_touched", cb.MaxFilesTouched},
		{"max_cost", cb.MaxCost}, {"max_cascade_fanout", cb.MaxCascadeFanout}} {
		if v.n < 0 {
			return &codec.FieldError{Path: "cycle_budget." + v.name, Err: fmt.Errorf("must be >= 0 (0 takes the default)")}
		}
	}
	if cb.MaxRecursiveDepth > 3 {
		return &codec.FieldError{Path: "cycle_budget.max_recursive_depth", Err: fmt.Errorf("must be at most 3 (D3)")}
	}
	if p := c.Proposer; p != nil {
		if len(p.Argv) == 0 || p.Argv[0] == "" {
			return &codec.FieldError{Path: "proposer.argv", Err: fmt.Errorf("required: the program that proposes, e.g. [\"examples/proposers/openai-compatible/proposer\"]")}
		}
		if p.TimeoutSeconds < 0 || p.TimeoutSeconds > world.MaxCommandTimeout {
			return &codec.FieldError{Path: "proposer.timeout_seconds", Err: fmt.Errorf("must be between 0 (the default, %d s) and %d", DefaultProposerTimeout, world.MaxCommandTimeout)}
		}
		switch p.Mode {
		case "", ProposerFallback, ProposerAlways:
		default:
			return &codec.FieldError{Path: "proposer.mode", Err: fmt.Errorf("want fallback or always, found %q", p.Mode)}
		}
		for i, name := range p.PassEnv {
			if err := world.ValidEnvName(name); err != nil {
				return &codec.FieldError{Path: fmt.Sprintf("proposer.pass_env[%d]", i), Err: err}
			}
		}
	}
	if c.ValidUntil != "" {
		if _, err := state.ParseTime(c.ValidUntil); err != nil {
			return &codec.FieldError{Path: "valid_until", Err: err}
		}
	}
	switch c.Policy.DeferTo {
	case "", "sleep", "defer":
	default:
		return &codec.FieldError{Path: "policy.defer_to", Err: fmt.Errorf("want sleep or defer, found %q", c.Policy.DeferTo)}
	}
	for _, v := range []struct {
		name string
		n    int64
	}{{"max_provider_failures", int64(c.Policy.MaxProviderFailures)}, {"compact_after_units", int64(c.Policy.CompactAfterUnits)},
		{"compact_every_cycles", int64(c.Policy.CompactEveryCycles)}, {"keep_summary_blocks", int64(c.Policy.KeepSummaryBlocks)},
		{"repeat_limit", int64(c.Policy.RepeatLimit)}, {"failure_threshold", int64(c.Policy.FailureThreshold)},
		{"commitment_deadline_seconds", c.Policy.CommitmentDeadlineSeconds}, {"idle_sleep_seconds", c.Policy.IdleSleepSeconds},
		{"signal_ttl_seconds", c.Policy.SignalTTLSeconds}} {
		if v.n < 0 {
			return &codec.FieldError{Path: "policy." + v.name, Err: fmt.Errorf("must be >= 0")}
		}
	}
	return nil
}

// validateApprovers checks the approvers and what the rules say of them:
// every key parses and is listed once, every id a rule names is listed,
// and a rule asks for no more approvals than it has approvers.
func (c *Contract) validateApprovers() error {
	owner := map[string]string{}
	for i, a := range c.Approvers {
		at := fmt.Sprintf("approvers[%d]", i)
		if !world.ValidID(a.ID) {
			return &codec.FieldError{Path: at + ".id", Err: fmt.Errorf("%q is not a valid id", a.ID)}
		}
		pub, err := sshsig.ParsePublicKey(a.PublicKey)
		if err != nil {
			return &codec.FieldError{Path: at + ".public_key", Err: err}
		}
		fp := sshsig.Fingerprint(pub)
		if other, dup := owner[fp]; dup {
			return &codec.FieldError{Path: at + ".public_key", Err: fmt.Errorf("key %s is already listed for %q: a key belongs to one approver", fp, other)}
		}
		owner[fp] = a.ID
	}
	ids := map[string]bool{}
	for _, id := range owner {
		ids[id] = true
	}
	for i, r := range c.Rules {
		at := fmt.Sprintf("rules[%d]", i)
		if (len(r.Approvers) > 0 || r.Approvals != 0) && r.Effect == Forbid {
			return &codec.FieldError{Path: at + ".approvers", Err: errors.New("a forbidding rule has no requests to answer")}
		}
		for j, id := range r.Approvers {
			if !ids[id] {
				return &codec.FieldError{Path: fmt.Sprintf("%s.approvers[%d]", at, j), Err: fmt.Errorf("%q is not one of the contract's approvers", id)}
			}
		}
		n := len(ids)
		if len(r.Approvers) > 0 {
			n = len(slices.Compact(slices.Sorted(slices.Values(r.Approvers))))
		}
		if r.Approvals < 0 || r.Approvals > max(1, n) || (r.Approvals > 1 && len(ids) == 0) {
			return &codec.FieldError{Path: at + ".approvals", Err: fmt.Errorf("%d: want 1 to %d (the approvers who may answer this rule's requests)", r.Approvals, max(1, n))}
		}
	}
	return nil
}

// Match returns the index of the first rule that governs op (a built-in
// operation) on target, or -1 when none does.
func (c *Contract) Match(op world.Operation, target string) int {
	k := world.Catalog{}.Of(op)
	for i, r := range c.Rules {
		if r.governs(k, r.Effect) && world.MatchAny(r.Paths, target) {
			return i
		}
	}
	return -1
}

// governs reports whether a rule speaks about op. A rule for "*" speaks
// about every operation, except that it never allows one that needs a
// named rule (run_command: running a program needs a rule that names
// run_command, so that a contract written before commands existed does
// not start allowing them). A "*" rule that forbids or asks for approval
// still applies.
func (r Rule) governs(k world.OperationKind, effect Effect) bool {
	if r.Operation == string(k.Op) {
		return true
	}
	return r.Operation == "*" && (!k.NamedRule || effect != Allow)
}

// Ruling is what the rules say about an action on all the paths it may
// touch.
type Ruling struct {
	// Effect is the strictest effect of the rules that apply: forbid over
	// approve over allow. Empty when some path is governed by no rule.
	Effect Effect
	// Rule is the index of the deciding rule (the forbidding one, else
	// the first that asks for approval, else the last that allowed), -1
	// when none applied.
	Rule int
	// Uncovered is the first path no rule covers ("" when all are).
	Uncovered string
	// RequiresEvidence is every applying rule's required evidence.
	RequiresEvidence []string
}

// Rule decides an action over every path it may touch (the Paths of its
// operation's entry in ops, the run's catalog).
// For each path pattern the rules are read in order: every rule that may
// apply to some path the pattern matches contributes its effect, and the
// first rule that covers the whole pattern ends the reading. A single file
// is thus governed by its first matching rule, as always; a command that
// touches **/*.go is forbidden by a forbid rule on vendor/** above a rule
// that allows **, because it could change vendor/x.go.
func (c *Contract) Rule(ops world.Catalog, a world.Action) Ruling {
	return c.RuleOn(ops, a, ops.Paths(a))
}

// RuleOn is Rule over the given paths instead of the ones the action's
// operation names: the paths a trial of the change actually changed.
func (c *Contract) RuleOn(ops world.Catalog, a world.Action, paths []string) Ruling {
	rl := Ruling{Rule: -1}
	rank := map[Effect]int{Allow: 1, Approve: 2, Forbid: 3}
	note := func(i int, e Effect) {
		if rank[e] > rank[rl.Effect] || (e == Allow && rl.Effect == Allow) {
			rl.Effect, rl.Rule = e, i
		}
		for _, ev := range c.Rules[i].RequiresEvidence {
			if !slices.Contains(rl.RequiresEvidence, ev) {
				rl.RequiresEvidence = append(rl.RequiresEvidence, ev)
			}
		}
	}
	k := ops.Of(a.Operation)
	for _, p := range paths {
		covered := false
		for i, r := range c.Rules {
			if !r.governs(k, r.Effect) {
				continue
			}
			overlaps, covers := false, false
			for _, pat := range r.Paths {
				overlaps = overlaps || world.MayOverlap(pat, p)
				covers = covers || world.Covers(pat, p)
			}
			if !overlaps {
				continue
			}
			note(i, r.Effect)
			if r.Effect == Forbid {
				return rl
			}
			if covers {
				covered = true
				break
			}
		}
		if !covered {
			rl.Effect, rl.Uncovered = "", p
			return rl
		}
	}
	return rl
}

// CheckEnvironment checks what the contract names in the environment it
// governs: every evidence id a rule requires must be evidence the
// environment declares. A rule waiting for evidence nothing declares would
// defer its actions for ever, so the typo is refused where it is made.
// Errors are *codec.FieldError naming the rule's field.
func (c *Contract) CheckEnvironment(spec *world.Spec) error {
	for i, r := range c.Rules {
		for j, id := range r.RequiresEvidence {
			if !slices.ContainsFunc(spec.Evidence, func(e world.EvidenceSpec) bool { return e.ID == id }) {
				return &codec.FieldError{Path: fmt.Sprintf("rules[%d].requires_evidence[%d]", i, j),
					Err: fmt.Errorf("unknown evidence id %q: the environment declares no such evidence", id)}
			}
		}
	}
	return nil
}
