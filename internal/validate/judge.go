package validate

import (
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
)

// This file is the validator's own reading of the rules the gates judge
// by: how a pinned contract governs an action, which wake payloads claim
// authority, which wake signals a loop may accept, and when a commitment's
// wake condition holds. It shares no code with the governance, inbox,
// commitment or kernel packages on purpose. A gate that judged with the
// kernel's own functions would agree with the kernel whatever the kernel
// did; this code re-derives each property from the recorded inputs (the
// contract and environment pinned in the ledger, the recorded signals,
// approvals and observations), so a kernel that breaks a rule is caught
// even when it breaks it consistently.
//
// The recorded objects are read with encoding/json into small views that
// name only the fields the rules need, so a field added elsewhere does not
// change what the gates see.

// pinnedContract is the part of a pinned contract the rules read.
type pinnedContract struct {
	ID        string `json:"id"`
	Authority struct {
		ID   string `json:"id"`
		Mode string `json:"mode"`
	} `json:"authority"`
	Coordinates struct {
		Autonomy string `json:"autonomy"`
	} `json:"coordinates"`
	Rules   []pinnedRule         `json:"rules"`
	Budgets map[string]limitView `json:"budgets"`
}

// limitView is one budget's soft and hard level (0: none).
type limitView struct {
	Soft int64 `json:"soft"`
	Hard int64 `json:"hard"`
}

type pinnedRule struct {
	Operation        string   `json:"operation"`
	Paths            []string `json:"paths"`
	Effect           string   `json:"effect"`
	RequiresEvidence []string `json:"requires_evidence"`
}

// pinnedSpec is the part of the pinned environment the rules read: what
// evidence each check needs before it may be fixed, and the commands its
// fixes declare.
type pinnedSpec struct {
	Checks []struct {
		ID               string        `json:"id"`
		RequiresEvidence []string      `json:"requires_evidence"`
		Fixes            []declaredFix `json:"fixes"`
	} `json:"checks"`
}

// declaredFix is a fix as the environment declares it (run_command's
// fields; the others do not matter to the rules).
type declaredFix struct {
	ID             string   `json:"id"`
	Operation      string   `json:"operation"`
	Argv           []string `json:"argv"`
	Touches        []string `json:"touches"`
	TimeoutSeconds int      `json:"timeout_seconds"`
	Idempotent     bool     `json:"idempotent"`
}

// actionView is an action request as recorded. A command (run_command)
// acts on the set of paths its touches may reach rather than on a target.
type actionView struct {
	Operation      string   `json:"operation"`
	Target         string   `json:"target"`
	CheckID        string   `json:"check_id"`
	FixID          string   `json:"fix_id"`
	Argv           []string `json:"argv"`
	Touches        []string `json:"touches"`
	TimeoutSeconds int      `json:"timeout_seconds"`
	Idempotent     bool     `json:"idempotent"`
}

func (a actionView) onSet() bool { return a.Operation == "run_command" || len(a.Touches) > 0 }

// paths are the path patterns the action may change: its target, or its
// touches (a command that names none may change anything).
func (a actionView) paths() []string {
	switch {
	case !a.onSet():
		return []string{a.Target}
	case len(a.Touches) == 0:
		return []string{"**"}
	}
	return a.Touches
}

// changed is the key an effect on the action's paths is remembered by, so
// that a restore can be matched with the change it undoes.
func (a actionView) changed() string { return strings.Join(a.paths(), "\x00") }

// observationView is the evidence and check part of a recorded
// observation.
type observationView struct {
	Evidence []evidenceFact `json:"evidence"`
	Checks   []struct {
		ID     string `json:"id"`
		Status string `json:"status"`
	} `json:"checks"`
}

// passes reports whether the observation has the check, passing.
func (o observationView) passes(id string) bool {
	for _, c := range o.Checks {
		if c.ID == id {
			return c.Status == "pass"
		}
	}
	return false
}

type evidenceFact struct {
	ID      string `json:"id"`
	Present bool   `json:"present"`
}

func (o observationView) present(id string) bool {
	return slices.ContainsFunc(o.Evidence, func(e evidenceFact) bool { return e.ID == id && e.Present })
}

// signalView is a recorded wake signal.
type signalView struct {
	Source       string          `json:"source"`
	Ref          string          `json:"ref"`
	DedupKey     string          `json:"dedup_key"`
	CausalParent string          `json:"causal_parent"`
	ExpiresAt    string          `json:"expires_at"`
	Payload      json.RawMessage `json:"payload"`
}

// approvalView is a recorded approval resolution.
type approvalView struct {
	ActionRef string `json:"action_ref"`
	Verdict   string `json:"verdict"`
	By        string `json:"by"`
}

// conditionView is a commitment's recorded wake condition.
type conditionView struct {
	Kind       string `json:"kind"`
	EvidenceID string `json:"evidence_id"`
	At         string `json:"at"`
	ActionRef  string `json:"action_ref"`
	Source     string `json:"source"`
	Ref        string `json:"ref"`
}

// commitmentView is a commitment as one lifecycle event recorded it.
type commitmentView struct {
	ID             string         `json:"id"`
	Status         string         `json:"status"`
	Wake           *conditionView `json:"wake"`
	CheckID        string         `json:"check_id"`
	Deadline       string         `json:"deadline"`
	Standing       string         `json:"standing"`
	DeclarationRef string         `json:"declaration_ref"`
	Scope          []string       `json:"scope"`
	EverySeconds   int64          `json:"every_seconds"`
	NextDue        string         `json:"next_due"`
	MovedBy        string         `json:"moved_by"`
}

// protectedView is one protected ref of working memory, as a compaction
// recorded it.
type protectedView struct {
	Kind string `json:"kind"`
	Ref  string `json:"ref"`
}

func decodeView(o *event.Object, v any) error {
	if o == nil {
		return fmt.Errorf("no object")
	}
	return json.Unmarshal(o.Body, v)
}

// authorityModes are the contract's authority modes, weakest first (the
// cycle controller's authority coordinate).
var authorityModes = []string{"none", "read", "propose", "project_write", "external_action"}

// readOnlyOperations are the sandbox operations that change nothing; every
// other operation, including one this list does not know, writes.
var readOnlyOperations = []string{"inspect"}

// loopRoles are the controller's own roles: an approval signed by one of
// them is the loop approving its own plan, never a person's approval.
var loopRoles = []string{"intent_custodian", "observer", "distiller", "executor", "evaluator", "promoter"}

// wakeSources are the sources a wake signal may name (seed §4.4).
var wakeSources = []string{"new_environment_observation", "commitment_wake_condition", "commitment_deadline_due",
	"approval_resolved", "external_event", "scheduled_tick", "budget_replenished", "knowledge_source_changed", "manual_resume"}

// authorityWords are payload keys that claim authority, a contract, a
// budget or an approval. A wake signal is evidence that the scheduler may
// look again; it never carries any of these (seed: WakeSignal !=
// AuthorityGrant).
var authorityWords = []string{"authority", "authority_mode", "autonomy", "contract", "contract_ref", "budget", "budgets",
	"permission", "permissions", "grant", "grants", "approve", "approval", "approved", "rules", "policy"}

// authorityClaim returns the path of the first payload key that claims
// authority, or "" when the payload claims none. A payload that is not
// JSON claims everything it might hold: "payload".
func authorityClaim(raw json.RawMessage) string {
	if len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return "payload"
	}
	return claimIn(v, "payload")
}

func claimIn(v any, at string) string { return keyIn(v, at, authorityWords) }

// keyIn returns the path of the first key (in sorted order, depth first)
// of v that is one of words, case aside, or "".
func keyIn(v any, at string, words []string) string {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for _, k := range keys {
			if slices.Contains(words, strings.ToLower(k)) {
				return at + "." + k
			}
			if c := keyIn(x[k], at+"."+k, words); c != "" {
				return c
			}
		}
	case []any:
		for i, e := range x {
			if c := keyIn(e, fmt.Sprintf("%s[%d]", at, i), words); c != "" {
				return c
			}
		}
	}
	return ""
}

// globMatch matches a slash path against a contract path pattern: a "**"
// segment matches any number of whole segments (none included); any other
// segment matches exactly one segment by path.Match ("*" never crosses a
// "/"). So "**" is every path, "docs/**" docs and everything below it, and
// "**/x.md" x.md at any depth.
func globMatch(pattern, p string) bool {
	ps, ss := strings.Split(pattern, "/"), strings.Split(p, "/")
	// memo[i][j] caches whether ps[i:] matches ss[j:]: 0 unknown, 1 yes, 2 no.
	memo := make([][]uint8, len(ps)+1)
	for i := range memo {
		memo[i] = make([]uint8, len(ss)+1)
	}
	var match func(i, j int) bool
	match = func(i, j int) bool {
		if i == len(ps) {
			return j == len(ss)
		}
		if m := memo[i][j]; m != 0 {
			return m == 1
		}
		ok := false
		if ps[i] == "**" {
			ok = match(i+1, j) || (j < len(ss) && match(i, j+1))
		} else if j < len(ss) {
			seg, err := path.Match(ps[i], ss[j])
			ok = err == nil && seg && match(i+1, j+1)
		}
		memo[i][j] = 2
		if ok {
			memo[i][j] = 1
		}
		return ok
	}
	return match(0, 0)
}

// namedOnly are the operations only a rule that names them may allow: a
// "*" rule can still forbid a command or ask approval for it, never allow
// it.
var namedOnly = []string{"run_command"}

func (r pinnedRule) applies(op string) bool {
	return r.Operation == op || (r.Operation == "*" && (!slices.Contains(namedOnly, op) || r.Effect != "allow"))
}

// wildcard reports whether a pattern segment is more than a literal name.
func wildcard(seg string) bool { return strings.ContainsAny(seg, "*?[\\") }

// mayOverlap reports whether some path might match both patterns. It errs
// towards yes: two segments that are not both literal are taken to be able
// to match one name.
func mayOverlap(p, q string) bool {
	ps, qs := strings.Split(p, "/"), strings.Split(q, "/")
	memo := map[[2]int]bool{}
	seen := map[[2]int]bool{}
	var ov func(i, j int) bool
	ov = func(i, j int) bool {
		k := [2]int{i, j}
		if seen[k] {
			return memo[k]
		}
		seen[k] = true
		r := false
		switch {
		case i == len(ps) && j == len(qs):
			r = true
		case i < len(ps) && ps[i] == "**":
			r = ov(i+1, j) || (j < len(qs) && ov(i, j+1))
		case j < len(qs) && qs[j] == "**":
			r = ov(i, j+1) || (i < len(ps) && ov(i+1, j))
		case i < len(ps) && j < len(qs):
			a, b := ps[i], qs[j]
			same := a == b || wildcard(a) || wildcard(b)
			r = same && ov(i+1, j+1)
		}
		memo[k] = r
		return r
	}
	return ov(0, 0)
}

// governing returns the first rule whose operation and paths cover the
// action (rules are read in order), and its index; -1 when none does.
func (c pinnedContract) governing(op, target string) (pinnedRule, int) {
	for i, r := range c.Rules {
		if !r.applies(op) {
			continue
		}
		for _, p := range r.Paths {
			if globMatch(p, target) {
				return r, i
			}
		}
	}
	return pinnedRule{}, -1
}

// actionContext is what the contract's rules look at besides the action:
// the evidence observed in the cycle that acted, the approvals people gave
// so far, and the targets the run itself changed before.
type actionContext struct {
	observation observationView
	approvals   []approvalView
	changed     map[string]bool
}

// approvedByPerson reports whether the latest resolution of the action by
// someone other than the loop's own roles approved it.
func (ac actionContext) approvedByPerson(actionRef codec.Ref) bool {
	verdict := ""
	for _, a := range ac.approvals {
		if a.ActionRef == string(actionRef) && !slices.Contains(loopRoles, strings.ToLower(strings.TrimSpace(a.By))) {
			verdict = a.Verdict
		}
	}
	return verdict == "approve"
}

// judgeAction says why the pinned contract does not allow an action that
// was carried out, or "" when it does: the authority the operation needs,
// an autonomy that may act, the first rule that governs the operation on
// the target (none, or forbid, refuses; approve needs a person's approval
// of this exact action), and the evidence the rule and the addressed check
// require. Undoing the run's own earlier change needs no rule.
func judgeAction(c pinnedContract, spec pinnedSpec, a actionView, actionRef codec.Ref, ac actionContext) string {
	need := "project_write"
	if slices.Contains(readOnlyOperations, a.Operation) {
		need = "read"
	}
	if slices.Index(authorityModes, c.Authority.Mode) < slices.Index(authorityModes, need) {
		return fmt.Sprintf("%s on %s needs %s authority; the contract grants %q", a.Operation, a.Target, need, c.Authority.Mode)
	}
	if lvl := autonomyLevel(c.Coordinates.Autonomy); lvl < 2 {
		return fmt.Sprintf("%s on %s carried out at autonomy %q, which may not act", a.Operation, a.Target, c.Coordinates.Autonomy)
	}
	if a.Operation == "run_command" && !declared(spec, a) {
		return fmt.Sprintf("run_command of fix %q is not a command the pinned environment declares, exactly as declared", a.FixID)
	}
	var requires []string
	if a.Operation == "restore_snapshot" {
		if !ac.changed[a.changed()] {
			return fmt.Sprintf("restore_snapshot of %v, which the run never changed", a.paths())
		}
	} else if a.onSet() {
		if why := judgeSet(c, a, actionRef, ac); why != "" {
			return why
		}
	} else {
		r, i := c.governing(a.Operation, a.Target)
		switch {
		case i < 0:
			return fmt.Sprintf("no rule of the pinned contract allows %s on %s", a.Operation, a.Target)
		case r.Effect == "forbid":
			return fmt.Sprintf("rules[%d] of the pinned contract forbids %s on %s", i, a.Operation, a.Target)
		case r.Effect == "approve" && !ac.approvedByPerson(actionRef):
			return fmt.Sprintf("rules[%d] needs a person's approval of %s on %s; none was given", i, a.Operation, a.Target)
		case r.Effect != "allow" && r.Effect != "approve":
			return fmt.Sprintf("rules[%d] has effect %q, which allows nothing", i, r.Effect)
		}
		requires = r.RequiresEvidence
	}
	for _, ch := range spec.Checks {
		if ch.ID == a.CheckID && a.CheckID != "" {
			requires = append(slices.Clone(requires), ch.RequiresEvidence...)
		}
	}
	for _, e := range requires {
		if !ac.observation.present(e) {
			return fmt.Sprintf("%s on %s needs evidence %s, which the cycle did not observe", a.Operation, a.Target, e)
		}
	}
	return ""
}

// judgeSet judges an action on a set of path patterns (a command). The
// gate claims only what it is sure of: a forbid rule for the operation that
// certainly reaches a touched path, a touched path no rule for the
// operation may even reach, or an approve rule that certainly reaches one
// without a person's approval.
func judgeSet(c pinnedContract, a actionView, actionRef codec.Ref, ac actionContext) string {
	for _, p := range a.paths() {
		reached := false
		for i, r := range c.Rules {
			if !r.applies(a.Operation) {
				continue
			}
			certain, may := false, false
			for _, pat := range r.Paths {
				certain = certain || globMatch(pat, p)
				may = may || mayOverlap(pat, p)
			}
			switch {
			case certain && r.Effect == "forbid":
				return fmt.Sprintf("rules[%d] of the pinned contract forbids %s reaching %s", i, a.Operation, p)
			case certain && r.Effect == "approve" && !ac.approvedByPerson(actionRef):
				return fmt.Sprintf("rules[%d] needs a person's approval of %s reaching %s; none was given", i, a.Operation, p)
			}
			reached = reached || (may && r.Effect != "forbid")
		}
		if !reached {
			return fmt.Sprintf("no rule of the pinned contract allows %s to reach %s", a.Operation, p)
		}
	}
	return ""
}

// declared reports whether a command is one the environment declares,
// exactly as declared.
func declared(spec pinnedSpec, a actionView) bool {
	for _, ch := range spec.Checks {
		for _, f := range ch.Fixes {
			if f.ID == a.FixID && f.Operation == "run_command" && slices.Equal(f.Argv, a.Argv) && slices.Equal(f.Touches, a.Touches) &&
				f.TimeoutSeconds == a.TimeoutSeconds && f.Idempotent == a.Idempotent {
				return true
			}
		}
	}
	return false
}

// autonomyLevel reads "A<n>"; -1 when it is not one.
func autonomyLevel(s string) int {
	if len(s) != 2 || s[0] != 'A' || s[1] < '0' || s[1] > '4' {
		return -1
	}
	return int(s[1] - '0')
}

// signalFault says why a loop must not accept a wake signal at time at, or
// "": an unknown source, an expiry reached, no causal parent, a payload
// claiming authority, or a dedup key already accepted and not yet expired
// (seen maps accepted keys to their expiry).
func signalFault(w signalView, at time.Time, seen map[string]time.Time) string {
	if !slices.Contains(wakeSources, w.Source) {
		return "unknown source " + w.Source
	}
	exp, err := time.Parse(time.RFC3339, w.ExpiresAt)
	if err != nil || !at.Before(exp) {
		return "expired at " + w.ExpiresAt
	}
	if w.CausalParent == "" {
		return "no causal parent"
	}
	if c := authorityClaim(w.Payload); c != "" {
		return "claims authority at " + c
	}
	if until, ok := seen[w.DedupKey]; ok && at.Before(until) {
		return "duplicate dedup key " + w.DedupKey
	}
	return ""
}

// wakeInputs are a cycle's recorded inputs a wake condition is judged on.
type wakeInputs struct {
	at          time.Time
	observation observationView
	signals     []signalView // the signals the loop could accept
	approvals   []approvalView
}

// conditionHolds says whether a recorded wake condition holds in a
// cycle's recorded inputs, and what made it hold.
func conditionHolds(w conditionView, in wakeInputs) (bool, string) {
	switch w.Kind {
	case "evidence":
		return in.observation.present(w.EvidenceID), "evidence " + w.EvidenceID + " observed"
	case "time":
		t, err := time.Parse(time.RFC3339, w.At)
		return err == nil && !in.at.Before(t), "time " + w.At + " reached"
	case "approval":
		return slices.ContainsFunc(in.approvals, func(a approvalView) bool {
			return a.ActionRef == w.ActionRef && !slices.Contains(loopRoles, strings.ToLower(strings.TrimSpace(a.By)))
		}), "approval of " + w.ActionRef + " resolved"
	case "signal":
		return slices.ContainsFunc(in.signals, func(s signalView) bool {
			return s.Source == w.Source && (w.Ref == "" || s.Ref == w.Ref)
		}), "signal " + w.Source + " " + w.Ref + " accepted"
	}
	return false, "unknown condition kind " + w.Kind
}

// objects indexes every object a run's ledger carries by its ref.
func (r *Run) objects() map[codec.Ref]*event.Object {
	out := map[codec.Ref]*event.Object{}
	for _, rec := range r.Records {
		if o := rec.Event.Object; o != nil {
			if _, ok := out[o.Ref]; !ok {
				out[o.Ref] = o
			}
		}
	}
	return out
}

// pinned reads the contract and the environment the run was started with
// from its ledger, and checks that the contract its run state pins now is
// the one the ledger leaves in force (the pinned one, or the last
// contract amendment it accepted).
func (r *Run) pinned() (pinnedContract, pinnedSpec, error) {
	f, err := r.inForce()
	if err != nil {
		return pinnedContract{}, pinnedSpec{}, err
	}
	c, sp := f.contract, f.spec
	for _, rec := range r.Records {
		f.follow(rec)
	}
	if f.contractRef != r.Final.Run.ContractRef {
		return c, sp, fmt.Errorf("the run state pins contract %s, the ledger leaves %s in force", r.Final.Run.ContractRef, f.contractRef)
	}
	return c, sp, nil
}

// documentsInForce follows the contract and environment a run is under,
// from the ones pinned at its start through every amendment a person
// accepted, from the ledger alone.
type documentsInForce struct {
	contract    pinnedContract
	contractDoc json.RawMessage
	contractRef codec.Ref
	spec        pinnedSpec
	goalDoc     json.RawMessage
	proposed    amendments
}

// inForce starts following the run's documents from the pinned ones.
func (r *Run) inForce() (*documentsInForce, error) {
	f := &documentsInForce{proposed: amendments{}}
	var contract, spec *event.Object
	for _, rec := range r.Records {
		switch rec.Event.Type {
		case event.ContractPinned:
			contract = rec.Event.Object
		case event.SpecPinned:
			spec = rec.Event.Object
		case event.GoalPinned:
			if rec.Event.Object != nil {
				f.goalDoc = json.RawMessage(rec.Event.Object.Body)
			}
		}
	}
	if contract == nil || spec == nil {
		return nil, fmt.Errorf("the ledger does not record the pinned contract and environment")
	}
	f.contractRef, f.contractDoc = contract.Ref, json.RawMessage(contract.Body)
	if err := decodeView(contract, &f.contract); err != nil {
		return nil, err
	}
	return f, decodeView(spec, &f.spec)
}

// follow takes in one record: an amendment proposed (its document) or
// accepted (it is in force from then on).
func (f *documentsInForce) follow(rec event.Record) {
	a, ok := f.proposed.accepted(rec)
	switch {
	case !ok:
	case a.Target == "contract":
		var c pinnedContract
		if json.Unmarshal(a.Document, &c) == nil {
			f.contract, f.contractDoc, f.contractRef = c, a.Document, rec.Event.Refs["new"]
		}
	case a.Target == "environment":
		var sp pinnedSpec
		if json.Unmarshal(a.Document, &sp) == nil {
			f.spec = sp
		}
	case a.Target == "goal":
		f.goalDoc = a.Document
	}
}

// judgeRule says why a governance decision's rule is not the one the
// contract's rules give its action, or "": for a single target, the first
// rule for the operation whose paths match it ("default" when none does)
// and its effect; for a set of paths (a command), only what the gate is
// sure of: a forbid needs a forbid rule for the operation that may reach a
// touched path, and "default" (no rule covers one) needs a touched path no
// rule for the operation certainly covers. A decision that stopped before
// the rules (an unknown operation, an invalid or excluded path, nothing to
// do, too little authority) names none, and an undo of the run's own
// effect needs none.
func judgeRule(c pinnedContract, a actionView, rule, effect string) string {
	switch {
	case rule == "none" || rule == "rollback_of_own_effect" || a.Operation == "restore_snapshot":
		return ""
	case !a.onSet():
		r, i := c.governing(a.Operation, a.Target)
		want, wantEffect := "default", ""
		if i >= 0 {
			want, wantEffect = fmt.Sprintf("rules[%d]", i), r.Effect
		}
		if rule != want || effect != wantEffect {
			return fmt.Sprintf("governance ruled %s on %s by %s (%q); the contract's first rule for it is %s (%q)", a.Operation, a.Target, rule, effect, want, wantEffect)
		}
	case effect == "forbid":
		for _, r := range c.Rules {
			if r.applies(a.Operation) && r.Effect == "forbid" && slices.ContainsFunc(r.Paths, func(pat string) bool {
				return slices.ContainsFunc(a.paths(), func(p string) bool { return mayOverlap(pat, p) })
			}) {
				return ""
			}
		}
		return fmt.Sprintf("governance forbade %s on %v by %s; no forbid rule of the contract may reach those paths", a.Operation, a.paths(), rule)
	case rule == "default":
		for _, p := range a.paths() {
			covered := slices.ContainsFunc(c.Rules, func(r pinnedRule) bool {
				return r.applies(a.Operation) && r.Effect != "forbid" && slices.ContainsFunc(r.Paths, func(pat string) bool { return globMatch(pat, p) })
			})
			if !covered {
				return ""
			}
		}
		return fmt.Sprintf("governance found no rule for %s on %v; the contract's rules cover every one of those paths", a.Operation, a.paths())
	}
	return ""
}
