// Package world is the shared vocabulary of the sandbox world: what the
// initial Environment declares (files, checks, evidence), what an
// observation reports, what an action asks for and what its outcome was.
// It holds types and pure functions only; the sandbox package does the I/O
// and the kernel's subsystems consume the results.
package world

import (
	"bytes"
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/state"
)

// Schema names.
const (
	SpecSchema        = "acr.environment/v0.1"
	ObservationSchema = "acr.observation/v0.1"
	ActionSchema      = "acr.action-request/v0.1"
	OutcomeSchema     = "acr.world-outcome/v0.1"
)

// Spec is the initial Environment a person gives acr once: the files the
// sandbox world starts with, the checks that define a healthy world, and the
// evidence that work may depend on.
type Spec struct {
	Schema string `json:"schema"`
	// Files is the initial content of the sandbox world, path to text.
	Files map[string]string `json:"files"`
	// Checks define health; a failing check is an observed issue.
	Checks []Check `json:"checks"`
	// Evidence names artifacts that may appear in the world later and that
	// work can wait for.
	Evidence []EvidenceSpec `json:"evidence,omitempty"`
	// Exclude adds path patterns that observation must never read, on top
	// of DefaultExclude().
	Exclude []string `json:"exclude,omitempty"`
}

// DefaultExclude returns the path patterns observation never reads: version
// control internals and the usual places secrets live.
func DefaultExclude() []string {
	return []string{".git", ".git/**", "**/.git/**", ".env", "**/.env", "*.pem", "**/*.pem", "*key*", "**/*key*", "*secret*", "**/*secret*"}
}

// CheckKind says what a check asserts about its path.
type CheckKind string

// The check kinds.
const (
	CheckAbsentText  CheckKind = "absent_text"  // the file must not contain Text
	CheckPresentText CheckKind = "present_text" // the file must contain Text
	CheckFileExists  CheckKind = "file_exists"  // the file must exist
)

// Check is one health assertion about the world.
type Check struct {
	ID       string    `json:"id"`
	Summary  string    `json:"summary"`
	Kind     CheckKind `json:"kind"`
	Path     string    `json:"path"`
	Text     string    `json:"text,omitempty"`
	Priority int       `json:"priority"`
	// Fixes are alternative remedies in order of preference. A check with
	// none can only be reported (mark_issue).
	Fixes []Fix `json:"fixes,omitempty"`
	// RequiresEvidence lists evidence ids that must be present before any
	// fix is attempted.
	RequiresEvidence []string `json:"requires_evidence,omitempty"`
}

// Fix is one remedy for a failing check, expressed as a sandbox operation.
type Fix struct {
	Operation Operation `json:"operation"`
	Find      string    `json:"find,omitempty"`    // apply_local_patch
	Replace   string    `json:"replace,omitempty"` // apply_local_patch
	// Occurrences limits apply_local_patch to the first N occurrences
	// (0: all of them).
	Occurrences int    `json:"occurrences,omitempty"`
	Content     string `json:"content,omitempty"` // record_artifact
	Note        string `json:"note,omitempty"`    // mark_issue
}

// EvidenceSpec declares where a piece of evidence appears when it exists.
type EvidenceSpec struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Summary string `json:"summary,omitempty"`
}

// Operation is a sandbox operation.
type Operation string

// The sandbox operations.
const (
	OpInspect        Operation = "inspect"
	OpMarkIssue      Operation = "mark_issue"
	OpApplyPatch     Operation = "apply_local_patch"
	OpRunValidation  Operation = "run_validation"
	OpRecordArtifact Operation = "record_artifact"
	// OpRestore puts a target back as a rollback bundle recorded it: the
	// executor's undo of the run's own effect. It is never a fix.
	OpRestore Operation = "restore_snapshot"
)

// Operations lists every operation, in a fixed order.
func Operations() []Operation {
	return []Operation{OpInspect, OpMarkIssue, OpApplyPatch, OpRunValidation, OpRecordArtifact, OpRestore}
}

// IssuesFile is where mark_issue appends its reports inside the world.
const IssuesFile = "ISSUES.md"

// ValidationDir is where run_validation writes its reports inside the world.
const ValidationDir = ".acr-validation"

var idPattern = regexp.MustCompile(`^[a-z0-9][a-z0-9._-]{0,63}$`)

// ValidID reports whether s can name a check or evidence item.
func ValidID(s string) bool { return idPattern.MatchString(s) }

// CleanPath validates a slash-separated world-relative path: no absolute
// paths, no "..", no empty or dot components, no backslashes.
func CleanPath(p string) (string, error) {
	if p == "" {
		return "", fmt.Errorf("empty path")
	}
	if strings.HasPrefix(p, "/") || strings.Contains(p, "\\") || strings.ContainsRune(p, 0) {
		return "", fmt.Errorf("path %q must be relative, slash-separated", p)
	}
	for _, part := range strings.Split(p, "/") {
		if part == "" || part == "." || part == ".." {
			return "", fmt.Errorf("path %q must not contain empty, '.' or '..' components", p)
		}
	}
	return p, nil
}

// Validate checks a Spec and returns a *state.FieldError naming the field.
func (s *Spec) Validate() error {
	if s.Schema != SpecSchema {
		return &state.FieldError{Path: "schema", Err: fmt.Errorf("want %q, found %q", SpecSchema, s.Schema)}
	}
	for _, p := range sortedKeys(s.Files) {
		if _, err := CleanPath(p); err != nil {
			return &state.FieldError{Path: "files." + p, Err: err}
		}
		if s.Excluded(p) {
			return &state.FieldError{Path: "files." + p, Err: fmt.Errorf("path is excluded from observation (secret-like name); acr will not manage it")}
		}
	}
	seen := map[string]bool{}
	for i, c := range s.Checks {
		at := fmt.Sprintf("checks[%d]", i)
		if !ValidID(c.ID) {
			return &state.FieldError{Path: at + ".id", Err: fmt.Errorf("%q is not a valid id (lower-case letters, digits, . _ -)", c.ID)}
		}
		if seen[c.ID] {
			return &state.FieldError{Path: at + ".id", Err: fmt.Errorf("duplicate check id %q", c.ID)}
		}
		seen[c.ID] = true
		if _, err := CleanPath(c.Path); err != nil {
			return &state.FieldError{Path: at + ".path", Err: err}
		}
		if s.Excluded(c.Path) {
			return &state.FieldError{Path: at + ".path", Err: fmt.Errorf("path is excluded from observation")}
		}
		switch c.Kind {
		case CheckAbsentText, CheckPresentText:
			if c.Text == "" {
				return &state.FieldError{Path: at + ".text", Err: fmt.Errorf("required for kind %s", c.Kind)}
			}
		case CheckFileExists:
		default:
			return &state.FieldError{Path: at + ".kind", Err: fmt.Errorf("unknown kind %q (want absent_text, present_text or file_exists)", c.Kind)}
		}
		if c.Priority < 0 || c.Priority > 1000 {
			return &state.FieldError{Path: at + ".priority", Err: fmt.Errorf("must be between 0 and 1000")}
		}
		for j, f := range c.Fixes {
			if err := f.validate(c); err != nil {
				return &state.FieldError{Path: fmt.Sprintf("%s.fixes[%d]", at, j), Err: err}
			}
		}
	}
	evSeen := map[string]bool{}
	for i, e := range s.Evidence {
		at := fmt.Sprintf("evidence[%d]", i)
		if !ValidID(e.ID) || evSeen[e.ID] {
			return &state.FieldError{Path: at + ".id", Err: fmt.Errorf("%q is not a valid, unique id", e.ID)}
		}
		evSeen[e.ID] = true
		if _, err := CleanPath(e.Path); err != nil {
			return &state.FieldError{Path: at + ".path", Err: err}
		}
		if s.Excluded(e.Path) {
			return &state.FieldError{Path: at + ".path", Err: fmt.Errorf("path is excluded from observation, so the evidence could never be seen")}
		}
	}
	for i, c := range s.Checks {
		for j, id := range c.RequiresEvidence {
			if !evSeen[id] {
				return &state.FieldError{Path: fmt.Sprintf("checks[%d].requires_evidence[%d]", i, j), Err: fmt.Errorf("unknown evidence id %q", id)}
			}
		}
	}
	for i, pat := range s.Exclude {
		if err := ValidPattern(pat); err != nil {
			return &state.FieldError{Path: fmt.Sprintf("exclude[%d]", i), Err: err}
		}
	}
	return nil
}

// ValidPattern checks a path pattern of the glob dialect MatchAny speaks.
// A malformed pattern never matches anything, which would silently turn a
// forbid rule or an exclusion into nothing.
func ValidPattern(pat string) error {
	if pat == "" {
		return fmt.Errorf("empty pattern")
	}
	core := strings.TrimSuffix(strings.TrimPrefix(pat, "**/"), "/**")
	if core == "**" {
		return nil
	}
	if _, err := path.Match(core, "x"); err != nil {
		return fmt.Errorf("pattern %q: %w", pat, err)
	}
	return nil
}

func (f Fix) validate(c Check) error {
	switch f.Operation {
	case OpApplyPatch:
		if f.Find == "" {
			return fmt.Errorf("apply_local_patch needs find")
		}
		if f.Occurrences < 0 {
			return fmt.Errorf("occurrences must be 0 (all) or more")
		}
		if c.Kind == CheckFileExists {
			return fmt.Errorf("apply_local_patch cannot fix a file_exists check")
		}
	case OpRecordArtifact:
		if c.Kind != CheckFileExists && c.Kind != CheckPresentText {
			return fmt.Errorf("record_artifact fixes file_exists or present_text checks")
		}
	case OpMarkIssue:
	default:
		return fmt.Errorf("operation %q cannot be a fix (want apply_local_patch, record_artifact or mark_issue)", f.Operation)
	}
	return nil
}

// Excluded reports whether observation must skip p: p itself or any
// directory above it matches an exclusion (observation never enters an
// excluded directory, so nothing below one can be managed either).
func (s *Spec) Excluded(p string) bool {
	pats := slices.Concat(DefaultExclude(), s.Exclude)
	for q := p; q != "" && q != "."; q = parentPath(q) {
		for _, pat := range pats {
			if matchGlob(pat, q) {
				return true
			}
		}
	}
	return false
}

func parentPath(p string) string {
	if i := strings.LastIndexByte(p, '/'); i >= 0 {
		return p[:i]
	}
	return ""
}

// matchGlob matches slash paths: "**" matches everything, a leading "**/"
// matches any number of directories, a trailing "/**" everything below a
// directory, and anything else is path.Match.
func matchGlob(pat, p string) bool {
	if pat == "**" {
		return true
	}
	if rest, ok := strings.CutPrefix(pat, "**/"); ok {
		parts := strings.Split(p, "/")
		for i := range parts {
			if matchGlob(rest, strings.Join(parts[i:], "/")) {
				return true
			}
		}
		return false
	}
	if strings.HasSuffix(pat, "/**") {
		prefix := strings.TrimSuffix(pat, "/**")
		return p == prefix || strings.HasPrefix(p, prefix+"/")
	}
	if ok, _ := path.Match(pat, p); ok {
		return true
	}
	return false
}

// MatchAny reports whether p matches any of the patterns (the same glob
// dialect as exclusions: "**/" prefix, "/**" suffix, path.Match otherwise).
func MatchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if matchGlob(pat, p) {
			return true
		}
	}
	return false
}

func sortedKeys[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	slices.Sort(ks)
	return ks
}

// CheckStatus is the result of evaluating a check.
type CheckStatus string

// The check statuses.
const (
	CheckPass CheckStatus = "pass"
	CheckFail CheckStatus = "fail"
)

// Evaluate runs a check against the content of its file (nil when the file
// does not exist).
func Evaluate(c Check, content []byte, exists bool) CheckResult {
	r := CheckResult{ID: c.ID, Status: CheckPass}
	if exists {
		r.TargetSHA256 = state.FingerprintOf(content)
	}
	switch c.Kind {
	case CheckFileExists:
		if !exists {
			r.Status, r.Detail = CheckFail, "file is missing"
		}
	case CheckAbsentText:
		if exists && bytes.Contains(content, []byte(c.Text)) {
			r.Status, r.Detail = CheckFail, fmt.Sprintf("found %d occurrence(s) of the forbidden text", bytes.Count(content, []byte(c.Text)))
		}
	case CheckPresentText:
		if !exists {
			r.Status, r.Detail = CheckFail, "file is missing"
		} else if !bytes.Contains(content, []byte(c.Text)) {
			r.Status, r.Detail = CheckFail, "required text is missing"
		}
	}
	return r
}

// Observation is what one look at the world found. It is an input of a
// cycle and is recorded in the ledger by ref, so the cycle can be replayed.
type Observation struct {
	Schema   string         `json:"schema"`
	Files    []FileFact     `json:"files"`
	Checks   []CheckResult  `json:"checks"`
	Evidence []EvidenceFact `json:"evidence"`
	// Excluded counts entries skipped because they match an exclusion.
	Excluded int `json:"excluded"`
}

// FileFact is one file seen in the world.
type FileFact struct {
	Path   string            `json:"path"`
	SHA256 state.Fingerprint `json:"sha256"`
	Size   int64             `json:"size"`
}

// CheckResult is the evaluation of one check.
type CheckResult struct {
	ID           string            `json:"id"`
	Status       CheckStatus       `json:"status"`
	Detail       string            `json:"detail,omitempty"`
	TargetSHA256 state.Fingerprint `json:"target_sha256,omitempty"`
}

// EvidenceFact says whether a declared piece of evidence is present.
type EvidenceFact struct {
	ID      string            `json:"id"`
	Present bool              `json:"present"`
	SHA256  state.Fingerprint `json:"sha256,omitempty"`
}

// Ref returns the observation's content ref.
func (o Observation) Ref() state.Ref { return state.MustRefOf("obs", o) }

// Check returns the result for a check id.
func (o Observation) Check(id string) (CheckResult, bool) {
	for _, c := range o.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return CheckResult{}, false
}

// EvidencePresent reports whether evidence id is present.
func (o Observation) EvidencePresent(id string) bool {
	for _, e := range o.Evidence {
		if e.ID == id {
			return e.Present
		}
	}
	return false
}

// Action is a request to change (or look at) the sandbox world. It is what
// cognition proposes and governance rules on; it is not a commit.
type Action struct {
	Schema    string    `json:"schema"`
	Operation Operation `json:"operation"`
	// Target is the world-relative path the operation touches.
	Target string `json:"target"`
	// CheckID is the check this action addresses ("" for none).
	CheckID string `json:"check_id,omitempty"`
	// ExpectSHA256 is the target's content hash when the action was derived
	// ("" if it did not exist). Execution refuses a stale target.
	ExpectSHA256 state.Fingerprint `json:"expect_sha256,omitempty"`
	Find         string            `json:"find,omitempty"`
	Replace      string            `json:"replace,omitempty"`
	Occurrences  int               `json:"occurrences,omitempty"`
	Content      string            `json:"content,omitempty"`
	Note         string            `json:"note,omitempty"`
	// Checks lists check ids for run_validation.
	Checks []string `json:"checks,omitempty"`
	// Absent, for restore_snapshot, says the snapshot is the target's
	// absence: restoring removes the file the undone action created.
	Absent bool `json:"absent,omitempty"`
	// KeepPrefix and KeepSuffix, for restore_snapshot, are the bytes of the
	// current target kept around Content; RestoreSHA256 is the hash the
	// restored target must have.
	KeepPrefix    int64             `json:"keep_prefix,omitempty"`
	KeepSuffix    int64             `json:"keep_suffix,omitempty"`
	RestoreSHA256 state.Fingerprint `json:"restore_sha256,omitempty"`
}

// Ref returns the action's content ref, the ref approvals bind to.
func (a Action) Ref() state.Ref { return state.MustRefOf("areq", a) }

// Writes reports whether the operation changes the world.
func (op Operation) Writes() bool { return op != OpInspect }

// OutcomeStatus says what executing an action did.
type OutcomeStatus string

// The outcome statuses.
const (
	OutcomeCommitted OutcomeStatus = "committed" // the effect was applied
	OutcomeNoChange  OutcomeStatus = "no_change" // nothing needed changing
	OutcomeStale     OutcomeStatus = "stale"     // the target changed since the action was derived
	OutcomeFailed    OutcomeStatus = "failed"    // the operation could not be carried out
)

// Outcome is the world's answer to an executed action, stored in the
// idempotency table under the action's key and returned again, never
// re-applied, when the same key is executed twice.
type Outcome struct {
	Schema       string            `json:"schema"`
	Key          string            `json:"idempotency_key"`
	Operation    Operation         `json:"operation"`
	Target       string            `json:"target"`
	Status       OutcomeStatus     `json:"status"`
	Detail       string            `json:"detail,omitempty"`
	BeforeSHA256 state.Fingerprint `json:"before_sha256,omitempty"`
	AfterSHA256  state.Fingerprint `json:"after_sha256,omitempty"`
	// PostCheck is the addressed check evaluated right after the effect:
	// the observed effect, kept apart from the expected one.
	PostCheck *CheckResult `json:"post_check,omitempty"`
	// Results holds run_validation's check results.
	Results []CheckResult `json:"results,omitempty"`
}

// IntentSchema names an effect's intent record.
const IntentSchema = "acr.sandbox-intent/v0.1"

// Intent is what executing an action is going to do, computed from the
// world before the effect: the outcome it will have and, when it changes
// the world, the target's hash before and after. Made durable before the
// effect (the driver puts it in the ledger with the cycle's decision), it
// lets recovery tell for certain whether an interrupted effect happened:
// the target can only hold the before or the after bytes.
type Intent struct {
	Schema string `json:"schema"`
	Key    string `json:"idempotency_key"`
	Action Action `json:"action"`
	// Changes says whether the action changes the world.
	Changes bool `json:"changes"`
	// Planned is the outcome the action will have (without its post-check).
	Planned Outcome `json:"planned"`
	// Rollback is the pre-image of the target, taken before the effect, so
	// that the effect can be undone. Nil when the action changes nothing,
	// or when no bundle could be taken (then the action must not run).
	Rollback *RollbackBundle `json:"rollback,omitempty"`
}

// RollbackBundle holds what a target was before an effect, as a delta
// against what the effect left: the bytes the effect replaced (Content)
// between a prefix and a suffix it did not touch. A one-line patch to a
// large file thus costs a few bytes in the ledger, not the whole file.
// Existed false means the effect created the target.
type RollbackBundle struct {
	Target  string `json:"target"`
	Existed bool   `json:"existed"`
	// Prefix and Suffix are the lengths of the leading and trailing bytes
	// that are the same before and after the effect.
	Prefix  int64             `json:"prefix,omitempty"`
	Suffix  int64             `json:"suffix,omitempty"`
	Content string            `json:"content,omitempty"`
	Before  state.Fingerprint `json:"before_sha256,omitempty"`
	After   state.Fingerprint `json:"after_sha256,omitempty"`
}

// RestoreAction is the action that undoes an effect through its bundle.
func (b RollbackBundle) RestoreAction(checkID string) Action {
	return Action{Schema: ActionSchema, Operation: OpRestore, Target: b.Target, CheckID: checkID,
		ExpectSHA256: b.After, Content: b.Content, Absent: !b.Existed, KeepPrefix: b.Prefix, KeepSuffix: b.Suffix, RestoreSHA256: b.Before}
}

// Restore rebuilds the before bytes from the after bytes.
func (b RollbackBundle) Restore(after []byte) ([]byte, bool) {
	return Splice(after, b.Prefix, b.Suffix, b.Content)
}

// Splice returns cur with everything between its first prefix and last
// suffix bytes replaced by middle, or false when cur is too short.
func Splice(cur []byte, prefix, suffix int64, middle string) ([]byte, bool) {
	if prefix < 0 || suffix < 0 || prefix+suffix > int64(len(cur)) {
		return nil, false
	}
	out := make([]byte, 0, prefix+int64(len(middle))+suffix)
	out = append(out, cur[:prefix]...)
	out = append(out, middle...)
	return append(out, cur[int64(len(cur))-suffix:]...), true
}

// ReadbackSchema names an observer's readback.
const ReadbackSchema = "acr.observation-report/v0.1"

// Readback is the observer's own reading of a target after an effect,
// taken through the observation path, not the executor's: the evaluator
// compares it with what the executor reported.
type Readback struct {
	Schema  string            `json:"schema"`
	Target  string            `json:"target"`
	SHA256  state.Fingerprint `json:"sha256,omitempty"`
	Passing []string          `json:"passing"`
	Failing []string          `json:"failing"`
}

// IdempotencyKey derives the key of seed §10.2 from the run id, the cycle,
// the action request ref and the governance decision ref.
func IdempotencyKey(runID string, cycleSeq int64, actionRef, decisionRef state.Ref) string {
	b := state.MustMarshal(map[string]any{
		"run_id": runID, "cycle_seq": cycleSeq, "action_request_ref": actionRef, "boundary_decision_ref": decisionRef,
	})
	return "idem:sha256:" + state.Digest(b)
}
