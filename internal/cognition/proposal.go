package cognition

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// An external proposer (docs/providers.md) is a program acr asks for an
// action when the declared fixes are used up (or always, if the contract
// says so). It gets one ProposalRequest on stdin and answers one Proposal
// on stdout. The request is built here from the run's state, purely; the
// driver adds the files' content, runs the program and hands back a Reply
// that is recorded in the ledger before anything is decided on it. Replay
// and audit read the Reply; the proposer is never asked again for a
// recorded cycle.
//
// A proposer can only propose: every action it names is drafted here into
// an ordinary action request, critiqued, and taken to governance like any
// other. It cannot name a command the environment does not declare, widen
// authority, or approve anything.

// Schema names of the proposer protocol.
const (
	ProposalRequestSchema = "acr.proposal-request/v0.1"
	ProposalSchema        = "acr.proposal/v0.1"
	ReplySchema           = "acr.proposal-reply/v0.1"
)

// Bounds on what a request carries.
const (
	// MaxProposalFiles bounds the files a request shows.
	MaxProposalFiles = 8
	// MaxProposalFileBytes bounds each file's content in a request.
	MaxProposalFileBytes = 64 << 10
)

// ProposalRequest is what a proposer is asked.
type ProposalRequest struct {
	Schema   string       `json:"schema"`
	RunID    string       `json:"run_id"`
	CycleSeq int64        `json:"cycle_seq"`
	Goal     RequestGoal  `json:"goal"`
	Item     RequestItem  `json:"item"`
	Files    []FileShown  `json:"files"`
	Allowed  AllowedActs  `json:"allowed"`
	Commands []CommandFix `json:"commands"`
	Attempts []Tried      `json:"attempts"`
}

// RequestGoal is the run's intent in words.
type RequestGoal struct {
	Mission     string   `json:"mission"`
	Objectives  []string `json:"objectives"`
	NonGoals    []string `json:"non_goals"`
	Constraints []string `json:"constraints"`
}

// RequestItem is the agenda item to act on: its check and what the check
// last observed (a command check's output included).
type RequestItem struct {
	ID     string            `json:"id"`
	Check  world.Check       `json:"check"`
	Result world.CheckResult `json:"result"`
}

// FileShown is a world file shown to the proposer. Content is empty in the
// request skeleton and in the recorded Reply (which keeps the hash and the
// size of what was sent); the driver fills it for the program only.
type FileShown struct {
	Path      string            `json:"path"`
	SHA256    codec.Fingerprint `json:"sha256"`
	Bytes     int64             `json:"bytes"`
	Truncated bool              `json:"truncated,omitempty"`
	Content   string            `json:"content,omitempty"`
}

// AllowedActs is what a proposal may contain and what the contract says
// about it (governance decides all the same).
type AllowedActs struct {
	Operations []world.Operation `json:"operations"`
	Authority  string            `json:"authority"`
	Autonomy   string            `json:"autonomy"`
	Rules      []AllowedRule     `json:"rules"`
}

// AllowedRule is one contract rule as the proposer sees it.
type AllowedRule struct {
	Operation string   `json:"operation"`
	Paths     []string `json:"paths"`
	Effect    string   `json:"effect"`
}

// CommandFix is a declared command a proposal may ask to run, by id.
type CommandFix struct {
	ID         string   `json:"id"`
	Check      string   `json:"check"`
	Argv       []string `json:"argv"`
	Touches    []string `json:"touches"`
	Idempotent bool     `json:"idempotent"`
}

// Tried is an earlier attempt on the item and how it went.
type Tried struct {
	Action   string `json:"action"`
	Count    int    `json:"count"`
	Failures int    `json:"failures"`
	Result   string `json:"result,omitempty"`
	// DeniedBy and Reason say that a person denied the action, and why
	// (their acr deny --reason): something else is wanted.
	DeniedBy string `json:"denied_by,omitempty"`
	Reason   string `json:"reason,omitempty"`
}

// Proposal is a proposer's answer. An empty Actions list with a rationale
// means "nothing to do".
type Proposal struct {
	Schema    string           `json:"schema"`
	Actions   []ProposedAction `json:"actions"`
	Rationale []string         `json:"rationale"`
}

// ProposedAction is one action a proposal names. Which fields apply
// depends on the operation: apply_local_patch (target, find, replace,
// occurrences), record_artifact (target, content), run_command (fix).
type ProposedAction struct {
	Operation   world.Operation `json:"operation"`
	Target      string          `json:"target,omitempty"`
	Find        string          `json:"find,omitempty"`
	Replace     string          `json:"replace,omitempty"`
	Occurrences int             `json:"occurrences,omitempty"`
	Content     string          `json:"content,omitempty"`
	Fix         string          `json:"fix,omitempty"`
}

// Reply is what the driver learned from asking the proposer, recorded in
// the ledger as the cycle's cognition input.
type Reply struct {
	Schema string `json:"schema"`
	// Request is the ref of the exact bytes the proposer read.
	Request codec.Ref `json:"request_ref"`
	// Files are the files shown, without their content.
	Files []FileShown `json:"files"`
	// Proposal is the answer, decoded strictly.
	Proposal Proposal `json:"proposal"`
	// Targets says, for each proposed action in order, what its target
	// held when the answer came: the world facts the critic judges by.
	Targets []TargetFact `json:"targets"`
	// DurationMS is how long the proposer took.
	DurationMS int64 `json:"duration_ms"`
}

// TargetFact is a proposed action's target as the world held it.
type TargetFact struct {
	Path string `json:"path"`
	// SHA256 is the target's hash ("" when it does not exist or could not
	// be read).
	SHA256 codec.Fingerprint `json:"sha256,omitempty"`
	// Finds counts the occurrences of a patch's find text.
	Finds int `json:"finds"`
	// Refused is why the target could not be read ("" when it could).
	Refused string `json:"refused,omitempty"`
}

// ProposalOperations are the operations a proposal may name: those of
// the run's catalog ops that have a Proposal entry.
func ProposalOperations(ops world.Catalog) []world.Operation { return ops.Proposable() }

// Validate checks a Proposal's shape against the built-in operations (see
// ValidateFor).
func (p Proposal) Validate() error { return p.ValidateFor(world.Catalog{}) }

// ValidateFor checks a Proposal's shape: the schema, operations of ops
// that a proposer may name, the fields each needs. A proposer that
// answers something else has failed as a provider; what its actions mean
// is the critic's to judge.
func (p Proposal) ValidateFor(ops world.Catalog) error {
	if p.Schema != ProposalSchema {
		return &codec.FieldError{Path: "schema", Err: fmt.Errorf("want %q, found %q", ProposalSchema, p.Schema)}
	}
	if p.Actions == nil {
		return &codec.FieldError{Path: "actions", Err: fmt.Errorf("required (an empty list with a rationale means nothing to do)")}
	}
	if len(p.Actions) == 0 && len(p.Rationale) == 0 {
		return &codec.FieldError{Path: "rationale", Err: fmt.Errorf("an empty proposal must say why")}
	}
	for i, a := range p.Actions {
		at := fmt.Sprintf("actions[%d]", i)
		k, ok := ops.Kind(a.Operation)
		if !ok || k.Proposal == nil {
			return &codec.FieldError{Path: at + ".operation", Err: fmt.Errorf("%q cannot be proposed (want %s)", a.Operation, world.OrList(ops.Proposable()))}
		}
		if err := k.Proposal.Validate(a.proposed(TargetFact{})); err != nil {
			return codec.Under(at, err)
		}
		if a.Occurrences < 0 {
			return &codec.FieldError{Path: at + ".occurrences", Err: fmt.Errorf("must be 0 (all) or more")}
		}
	}
	return nil
}

// FilesNamed picks the world files a request shows: the check's own path
// and files, then files its output names (a compiler's "main.go:12:3: ..."),
// as far as the world holds them, at most MaxProposalFiles.
func FilesNamed(c world.Check, r world.CheckResult, obs world.Observation) []FileShown {
	known := make(map[string]world.FileFact, len(obs.Files))
	for _, f := range obs.Files {
		known[f.Path] = f
	}
	var out []FileShown
	add := func(p string) {
		f, ok := known[p]
		if !ok || len(out) >= MaxProposalFiles || slices.ContainsFunc(out, func(s FileShown) bool { return s.Path == p }) {
			return
		}
		out = append(out, FileShown{Path: p, SHA256: f.SHA256, Bytes: f.Size, Truncated: f.Size > MaxProposalFileBytes})
	}
	if c.Path != "" {
		add(c.Path)
	}
	for _, p := range c.Files {
		add(p)
	}
	if r.Command != nil {
		for _, tok := range strings.FieldsFunc(r.Command.Stdout+"\n"+r.Command.Stderr, func(r rune) bool {
			return r == ' ' || r == '\n' || r == '\t' || r == ':' || r == '(' || r == ')' || r == '"' || r == '\'' || r == ','
		}) {
			add(strings.TrimPrefix(tok, "./"))
		}
	}
	if out == nil {
		out = []FileShown{}
	}
	return out
}

// RunProposal is the self-dialogue over a proposer's reply: the observer
// states the item, the external proposer's actions are drafted in order,
// and the critic judges each against what cognition can know (a declared
// command, a target inside the world that is not excluded, a patch whose
// text is there); the first one that passes is the action request. It
// never reorders or edits what the proposer said.
//
// When the proposer has nothing acceptable and report is set (an item with
// no declared fix), the resolver reports the item for a person instead.
func RunProposal(p Program, programRef codec.Ref, sit Situation, reply Reply, report *world.Action) (Dialogue, *world.Action) {
	d := Dialogue{Schema: DialogueSchema, ProgramRef: programRef, Turns: []Turn{}, Result: "no_action"}
	say := func(role string, op Op, format string, args ...any) {
		d.Turns = append(d.Turns, Turn{Role: role, Op: op, Claim: fmt.Sprintf(format, args...)})
		d.Operations++
	}
	say("observer", OpObserveTarget, "check %s is %s (%s)", sit.Check.ID, sit.Result.Status, orNone(sit.Result.Detail))
	pr := reply.Proposal
	say("proposer", OpConsult, "external proposer answered %d action(s); rationale: %s", len(pr.Actions), orNone(strings.Join(pr.Rationale, " ")))
	reportInstead := func(why string) (Dialogue, *world.Action) {
		d.Reason = why
		if report == nil {
			say("resolver", OpFinalize, "no action: %s", why)
			return d, nil
		}
		d.Result, d.ActionRef, d.Affordance, d.Reason = "action", report.Ref(), "report", ""
		say("resolver", OpFinalize, "%s; report %s for a person instead", why, sit.Check.ID)
		return d, report
	}
	if len(pr.Actions) == 0 {
		return reportInstead("proposer_found_nothing_to_do")
	}
	for i, pa := range pr.Actions {
		var fact TargetFact
		if i < len(reply.Targets) {
			fact = reply.Targets[i]
		}
		a, problem := DraftProposed(sit, pa, fact)
		if problem != "" {
			say("critic", OpCritique, "reject proposed action %d (%s): %s", i, pa.Operation, problem)
			d.Reason = "proposal_rejected_" + problem
			continue
		}
		what := sit.Operations.Describe(a)
		say("critic", OpCritique, "accept proposed action %d: %s", i, what)
		d.Result, d.ActionRef, d.Affordance, d.Reason = "action", a.Ref(), fmt.Sprintf("proposal-%d", i), ""
		if rest := len(pr.Actions) - i - 1; rest > 0 {
			say("resolver", OpFinalize, "request %s for governance; %d later action(s) wait for the next cycle's proposal (one action per cycle)", what, rest)
		} else {
			say("resolver", OpFinalize, "request %s for governance", what)
		}
		return d, &a
	}
	return reportInstead(d.Reason)
}

// OpConsult is the cognitive operation of asking the external proposer.
const OpConsult Op = "consult_proposer"

// DraftProposed turns one proposed action into an action request, or says
// what is wrong with it (a reason code): the checks every action on one
// target needs here, what its operation needs in its catalog entry
// (world.ProposalKind.Draft).
func DraftProposed(sit Situation, pa ProposedAction, fact TargetFact) (world.Action, string) {
	a := world.Action{Schema: world.ActionSchema, Operation: pa.Operation, CheckID: sit.Check.ID}
	k := sit.Operations.Of(pa.Operation)
	if k.Command {
		return draftProposedKind(k, sit, a, pa, fact)
	}
	if _, err := world.CleanPath(pa.Target); err != nil {
		return a, "target_path_invalid"
	}
	if sit.Spec.Excluded(pa.Target) {
		return a, "target_excluded"
	}
	if fact.Refused != "" {
		return a, "target_refused"
	}
	a.Target, a.ExpectSHA256 = pa.Target, fact.SHA256
	return draftProposedKind(k, sit, a, pa, fact)
}

// draftProposedKind completes a by its operation's proposal entry (an
// operation without one keeps a as it is: the critic has nothing more to
// add, and governance refuses what it does not know).
func draftProposedKind(k world.OperationKind, sit Situation, a world.Action, pa ProposedAction, fact TargetFact) (world.Action, string) {
	if k.Proposal == nil || k.Proposal.Draft == nil {
		return a, ""
	}
	return k.Proposal.Draft(sit.Spec, a, pa.proposed(fact))
}

// proposed is the action in the catalog's terms.
func (pa ProposedAction) proposed(fact TargetFact) world.Proposed {
	return world.Proposed{Fix: world.Fix{Operation: pa.Operation, Find: pa.Find, Replace: pa.Replace, Occurrences: pa.Occurrences,
		Content: pa.Content, ID: pa.Fix}, Target: pa.Target, Finds: fact.Finds}
}
