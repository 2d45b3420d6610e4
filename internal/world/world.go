// Package world is the shared vocabulary of the sandbox world: what the
// initial Environment declares (files, checks, evidence), what an
// observation reports, what an action asks for and what its outcome was.
// It holds types and pure functions only; the sandbox package does the I/O
// and the kernel's subsystems consume the results.
package world

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
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
	// A spec has Files or Root, never both.
	Files map[string]string `json:"files,omitempty"`
	// Root makes an existing directory the world: the loop observes and
	// acts on it in place instead of on a sandbox copy. Once the document
	// is read it is absolute (a relative root is resolved against the
	// environment file's directory), so the pinned spec names one place.
	Root string `json:"root,omitempty"`
	// Git makes a branch of a git repository the world (GitSpec). It
	// excludes Files and Root: the world is neither a sandbox copy nor a
	// directory of this host, but the remote's branch, which any host
	// that reaches the remote can run.
	Git *GitSpec `json:"git,omitempty"`
	// Checks define health; a failing check is an observed issue.
	Checks []Check `json:"checks"`
	// Evidence names artifacts that may appear in the world later and that
	// work can wait for.
	Evidence []EvidenceSpec `json:"evidence,omitempty"`
	// Exclude adds path patterns that observation must never read, on top
	// of DefaultExclude().
	Exclude []string `json:"exclude,omitempty"`
	// PassEnv names environment variables that commands (checks, fixes)
	// receive beyond PATH, HOME and LANG. Everything else is scrubbed.
	PassEnv []string `json:"pass_env,omitempty"`
	// Limits bound one observation of the world; nil takes the defaults.
	Limits *Limits `json:"limits,omitempty"`
	// Label names the group of workers that may run the run (acr worker
	// --label): the hosts that see its world. Empty: any worker.
	Label string `json:"label,omitempty"`
}

// Limits bound what one observation may walk. The world is untrusted
// content: past a limit observation stops with a reason rather than slow
// every cycle down. Zero fields take DefaultLimits' values.
type Limits struct {
	// MaxDepth bounds how many directories deep a path may be.
	MaxDepth int `json:"max_depth,omitempty"`
	// MaxEntries bounds the files and directories observed.
	MaxEntries int `json:"max_entries,omitempty"`
	// MaxBytes bounds the bytes hashed in one observation.
	MaxBytes int64 `json:"max_bytes,omitempty"`
}

// DefaultLimits are the observation bounds of a spec without limits.
func DefaultLimits() Limits {
	return Limits{MaxDepth: 64, MaxEntries: 100_000, MaxBytes: 2 << 30}
}

// ObservationLimits returns the spec's limits with defaults filled in.
func (s *Spec) ObservationLimits() Limits {
	l, d := Limits{}, DefaultLimits()
	if s.Limits != nil {
		l = *s.Limits
	}
	if l.MaxDepth == 0 {
		l.MaxDepth = d.MaxDepth
	}
	if l.MaxEntries == 0 {
		l.MaxEntries = d.MaxEntries
	}
	if l.MaxBytes == 0 {
		l.MaxBytes = d.MaxBytes
	}
	return l
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
	// CheckCommand runs Argv in the world: exit 0 passes, 1 or 2 fail
	// (the Nagios plugin convention of WARNING and CRITICAL), anything
	// else is a fault of the provider, not an answer about the world.
	CheckCommand CheckKind = "command"
)

// CheckKinds lists every check kind, in a fixed order.
func CheckKinds() []CheckKind {
	return []CheckKind{CheckAbsentText, CheckPresentText, CheckFileExists, CheckCommand}
}

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
	// Argv is what a command check runs, with the world as its working
	// directory and no shell unless Argv names one.
	Argv []string `json:"argv,omitempty"`
	// TimeoutSeconds bounds a command check (0: DefaultCommandTimeout).
	TimeoutSeconds int `json:"timeout_seconds,omitempty"`
	// Files name world files a command check is about, so that a proposer
	// is shown them (files its output names are shown too).
	Files []string `json:"files,omitempty"`
	// CompareOutput makes a command check's output part of its verdict:
	// output that differs from the last observation's is a changed world,
	// as a different exit code is. Without it only the exit code counts;
	// the output is kept as evidence (real tools print timings and
	// addresses that differ on every run). Normalize lists regular
	// expressions (Go syntax) whose matches are removed from the output
	// before it is compared.
	CompareOutput bool     `json:"compare_output,omitempty"`
	Normalize     []string `json:"normalize,omitempty"`
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
	// ID names the fix, so that a proposer can ask for it. Required for
	// run_command, unique across the spec.
	ID string `json:"id,omitempty"`
	// Argv, Touches, TimeoutSeconds and Idempotent describe run_command:
	// the program, the path patterns it may change (none: it may change
	// anything), its time limit, and whether running it twice is harmless
	// (which lets recovery run it again when it cannot tell whether an
	// interrupted run happened).
	Argv           []string `json:"argv,omitempty"`
	Touches        []string `json:"touches,omitempty"`
	TimeoutSeconds int      `json:"timeout_seconds,omitempty"`
	Idempotent     bool     `json:"idempotent,omitempty"`
}

// EvidenceSpec declares where a piece of evidence appears when it exists.
type EvidenceSpec struct {
	ID      string `json:"id"`
	Path    string `json:"path"`
	Summary string `json:"summary,omitempty"`
}

// Operation is a sandbox operation.
type Operation string

// The built-in operations (Kind describes each; a Catalog may add more).
const (
	OpInspect        Operation = "inspect"
	OpMarkIssue      Operation = "mark_issue"
	OpApplyPatch     Operation = "apply_local_patch"
	OpRunValidation  Operation = "run_validation"
	OpRecordArtifact Operation = "record_artifact"
	// OpRestore puts a target back as a rollback bundle recorded it: the
	// executor's undo of the run's own effect. It is never a fix.
	OpRestore Operation = "restore_snapshot"
	// OpRunCommand runs a command the environment declares as a fix.
	OpRunCommand Operation = "run_command"
)

// Operations lists every built-in operation, in a fixed order.
func Operations() []Operation {
	return []Operation{OpInspect, OpMarkIssue, OpApplyPatch, OpRunValidation, OpRecordArtifact, OpRestore, OpRunCommand}
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

// ValidPattern checks a path pattern of the glob dialect MatchGlob speaks.
// A malformed pattern never matches anything, which would silently turn a
// forbid rule or an exclusion into nothing.
func ValidPattern(pat string) error {
	if pat == "" {
		return fmt.Errorf("empty pattern")
	}
	for _, seg := range segments(pat) {
		if seg == "" {
			return fmt.Errorf("pattern %q has an empty segment", pat)
		}
		if seg == "**" {
			continue
		}
		if _, err := path.Match(seg, "x"); err != nil {
			return fmt.Errorf("pattern %q: %w", pat, err)
		}
	}
	return nil
}

// Excluded reports whether observation must skip p: p itself or any
// directory above it matches an exclusion (observation never enters an
// excluded directory, so nothing below one can be managed either). Its
// cost is linear in the depth of p for each pattern.
func (s *Spec) Excluded(p string) bool {
	var mb matchBuf
	segs := splitInto(mb.segs[:0], p)
	for _, list := range [2][]string{DefaultExclude(), s.Exclude} {
		for _, pat := range list {
			if pat == "**" || matchesPrefix(pat, segs, mb.rows[:0]) {
				return true
			}
		}
	}
	return false
}

// matchesPrefix reports whether the pattern matches the path made of the
// first k segments for some k >= 1: the path or one of its parents.
func matchesPrefix(pat string, ss []string, buf []bool) bool {
	return slices.Contains(reachable(pat, ss, buf)[1:], true)
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

// Observation is what one look at the world found. It is an input of a
// cycle and is recorded in the ledger by ref, so the cycle can be replayed.
type Observation struct {
	Schema   string         `json:"schema"`
	Files    []FileFact     `json:"files"`
	Checks   []CheckResult  `json:"checks"`
	Evidence []EvidenceFact `json:"evidence"`
	// Excluded counts entries skipped because they match an exclusion.
	Excluded int `json:"excluded"`
	// Refused lists paths observation would not read because they could
	// lead outside the world (symlinks, special files, files with other
	// hard links), at most MaxRefusedListed of them, in path order.
	Refused []Refusal `json:"refused,omitempty"`
	// Git is the commit and tree of a git world's branch head the
	// observation looked at (nil for any other world). The files' hashes
	// already say what the tree holds, so it is not part of the verdict:
	// a new commit with the same tree is the same world.
	Git *GitHead `json:"git,omitempty"`
	// Runs are the durations of the command checks run for this
	// observation. They are not part of what was observed (a slower run
	// of the same check sees the same world), so they are not encoded
	// with it; the driver records them with the cycle's inputs.
	Runs []CommandRun `json:"-"`
}

// Refusal is a path observation refused, and why.
type Refusal struct {
	Path   string `json:"path"`
	Reason string `json:"reason"`
}

// MaxRefusedListed bounds Observation.Refused.
const MaxRefusedListed = 64

// CommandRun is how long one command ran.
type CommandRun struct {
	Check      string `json:"check"`
	DurationMS int64  `json:"duration_ms"`
}

// FileFact is one file seen in the world.
type FileFact struct {
	Path   string            `json:"path"`
	SHA256 codec.Fingerprint `json:"sha256"`
	Size   int64             `json:"size"`
}

// CheckResult is the evaluation of one check.
type CheckResult struct {
	ID           string            `json:"id"`
	Status       CheckStatus       `json:"status"`
	Detail       string            `json:"detail,omitempty"`
	TargetSHA256 codec.Fingerprint `json:"target_sha256,omitempty"`
	// Command is what a command check's run printed and how it ended.
	Command *CommandResult `json:"command,omitempty"`
}

// MaxOutputBytes bounds the stdout and stderr a command result keeps; the
// hashes and sizes always cover everything the command wrote.
const MaxOutputBytes = 64 << 10

// DefaultCommandTimeout bounds a command without a timeout of its own.
const DefaultCommandTimeout = 60

// MaxCommandTimeout bounds any command's timeout.
const MaxCommandTimeout = 3600

// CommandResult is how a command ended and what it printed. Output is
// kept up to MaxOutputBytes per stream, made valid UTF-8 (invalid bytes
// become U+FFFD); the hash and size are of the bytes as written.
type CommandResult struct {
	Argv         []string          `json:"argv"`
	ExitCode     int               `json:"exit_code"`
	Signal       string            `json:"signal,omitempty"`
	TimedOut     bool              `json:"timed_out,omitempty"`
	Stdout       string            `json:"stdout"`
	Stderr       string            `json:"stderr"`
	StdoutSHA256 codec.Fingerprint `json:"stdout_sha256"`
	StderrSHA256 codec.Fingerprint `json:"stderr_sha256"`
	StdoutBytes  int64             `json:"stdout_bytes"`
	StderrBytes  int64             `json:"stderr_bytes"`
	// DurationMS is set on an action's result, never on a check's (see
	// Observation.Runs).
	DurationMS int64 `json:"duration_ms,omitempty"`
}

// Ended reports whether the command ran to an exit of its own (not a
// timeout or a signal).
func (r CommandResult) Ended() bool { return !r.TimedOut && r.Signal == "" && r.ExitCode >= 0 }

// EvidenceFact says whether a declared piece of evidence is present.
type EvidenceFact struct {
	ID      string            `json:"id"`
	Present bool              `json:"present"`
	SHA256  codec.Fingerprint `json:"sha256,omitempty"`
}

// Ref returns the observation's content ref.
func (o Observation) Ref() codec.Ref { return codec.MustRefOf("obs", o) }

// Verdict returns the ref of what the observation found that can change
// the world's state: every file's hash, every check's verdict (its status
// and the hash its verdict rests on: a file check's file, a command
// check's exit code, and its normalized output when it compares output),
// the evidence present and the paths refused. A check's detail and a
// command's output are left out: they are evidence of a verdict, and a
// tool that prints a timing would otherwise make every look a change. Two
// observations with the same verdict describe the same world.
func (o Observation) Verdict() codec.Ref {
	type verdict struct {
		ID     string            `json:"id"`
		Status CheckStatus       `json:"status"`
		SHA256 codec.Fingerprint `json:"target_sha256,omitempty"`
	}
	checks := make([]verdict, len(o.Checks))
	for i, c := range o.Checks {
		checks[i] = verdict{c.ID, c.Status, c.TargetSHA256}
	}
	return codec.MustRefOf("verdict", map[string]any{"files": o.Files, "checks": checks, "evidence": o.Evidence,
		"excluded": o.Excluded, "refused": o.Refused})
}

// CommandVerdict is the hash a command check's verdict rests on (its
// result's TargetSHA256): the exit code, and, when the check compares its
// output, the hashes of its stdout and stderr as kept (up to
// MaxOutputBytes each) with every match of the check's normalize patterns
// removed. The patterns are compiled by the spec's validation, so one
// that does not compile here is left out.
func CommandVerdict(c Check, r CommandResult) codec.Fingerprint {
	v := map[string]any{"exit_code": r.ExitCode}
	if c.CompareOutput {
		v["stdout_sha256"] = codec.FingerprintOf([]byte(NormalizeOutput(c.Normalize, r.Stdout)))
		v["stderr_sha256"] = codec.FingerprintOf([]byte(NormalizeOutput(c.Normalize, r.Stderr)))
	}
	return codec.MustFingerprintOf(v)
}

// NormalizeOutput removes every match of the patterns from text, in
// order.
func NormalizeOutput(patterns []string, text string) string {
	for _, p := range patterns {
		if re, err := regexp.Compile(p); err == nil {
			text = re.ReplaceAllString(text, "")
		}
	}
	return text
}

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
	ExpectSHA256 codec.Fingerprint `json:"expect_sha256,omitempty"`
	Find         string            `json:"find,omitempty"`
	Replace      string            `json:"replace,omitempty"`
	Occurrences  int               `json:"occurrences,omitempty"`
	Content      string            `json:"content,omitempty"`
	Note         string            `json:"note,omitempty"`
	// Quote, for mark_issue, are lines quoted below the issue's entry:
	// the start of the check's failing output (ledger format 3 on).
	Quote []string `json:"quote,omitempty"`
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
	RestoreSHA256 codec.Fingerprint `json:"restore_sha256,omitempty"`
	// FixID, Argv, Touches, TimeoutSeconds and Idempotent are run_command's
	// (copied from the declared fix, so that the action's ref, which an
	// approval binds to, covers the exact command line). Touches is also
	// the set a restore_snapshot of a command's effect puts back, and
	// Files that set's content before the command ran.
	FixID          string      `json:"fix_id,omitempty"`
	Argv           []string    `json:"argv,omitempty"`
	Touches        []string    `json:"touches,omitempty"`
	TimeoutSeconds int         `json:"timeout_seconds,omitempty"`
	Idempotent     bool        `json:"idempotent,omitempty"`
	Files          []FileImage `json:"files,omitempty"`
}

// FileImage is one file's content in a snapshot.
type FileImage struct {
	Path    string            `json:"path"`
	SHA256  codec.Fingerprint `json:"sha256"`
	Content string            `json:"content"`
}

// Ref returns the action's content ref, the ref approvals bind to.
func (a Action) Ref() codec.Ref { return codec.MustRefOf("areq", a) }

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
	BeforeSHA256 codec.Fingerprint `json:"before_sha256,omitempty"`
	AfterSHA256  codec.Fingerprint `json:"after_sha256,omitempty"`
	// PostCheck is the addressed check evaluated right after the effect:
	// the observed effect, kept apart from the expected one.
	PostCheck *CheckResult `json:"post_check,omitempty"`
	// Results holds run_validation's check results.
	Results []CheckResult `json:"results,omitempty"`
	// Command is how a run_command's command ended and what it printed.
	Command *CommandResult `json:"command,omitempty"`
	// Changed lists the files a run_command changed, created or removed
	// (when the world's state before it is known), and Outside those of
	// them its touches do not cover: a command that reaches beyond what
	// it declared is for a person to review.
	Changed []string `json:"changed,omitempty"`
	Outside []string `json:"outside,omitempty"`
	// Git, in a git world, is the commit that carries the effect on the
	// run's branch (committed), or the head the branch had moved to
	// instead (stale): the ledger alone then says which commit each
	// cycle made.
	Git *GitHead `json:"git_commit,omitempty"`
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
	// Diff is the change as a unified diff of the target, for the people
	// who read the ledger (acr audit, acr report); nothing decides by it.
	// Empty for a command and for an action that changes nothing; cut at
	// a line boundary past a bound, with a last line that says so.
	Diff string `json:"diff,omitempty"`
	// RunID and CycleSeq, set for run_command only, name the cycle the
	// command runs in; it gets them as ACR_RUN_ID and ACR_CYCLE.
	RunID    string `json:"run_id,omitempty"`
	CycleSeq int64  `json:"cycle_seq,omitempty"`
	// Git, in a git world, is the branch head the effect is carried out
	// on: its commit goes on top of it, and is pushed only while the
	// branch is still there. RunID and CycleSeq are then set for every
	// operation (the commit's trailers name them).
	Git *GitHead `json:"git_head,omitempty"`
	// Approved, for a command fix of a git world a person approved after
	// seeing its trial, is that trial: the effect is carried out only on
	// its head and committed only if it produces its tree; otherwise
	// nothing is pushed (the outcome is stale, and the item is decided,
	// and asked about, again).
	Approved *GitTrial `json:"approved_tree,omitempty"`
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
	Before  codec.Fingerprint `json:"before_sha256,omitempty"`
	After   codec.Fingerprint `json:"after_sha256,omitempty"`
	// Touches and Files are a command's bundle (Target is empty): the
	// path patterns it may change and every file they matched before it
	// ran, whole. Before and After are then set hashes (SetHash).
	Touches []string    `json:"touches,omitempty"`
	Files   []FileImage `json:"files,omitempty"`
}

// RestoreAction is the action that undoes an effect through its bundle.
// after is the hash the effect left (a command's is known only once it
// ran; a file effect's bundle carries it already).
func (b RollbackBundle) RestoreAction(checkID string, after codec.Fingerprint) Action {
	if b.After == "" {
		b.After = after
	}
	a := Action{Schema: ActionSchema, Operation: OpRestore, Target: b.Target, CheckID: checkID,
		ExpectSHA256: b.After, Content: b.Content, Absent: !b.Existed, KeepPrefix: b.Prefix, KeepSuffix: b.Suffix, RestoreSHA256: b.Before}
	if len(b.Touches) > 0 {
		a.Absent, a.Touches, a.Files = false, slices.Clone(b.Touches), slices.Clone(b.Files)
		if a.Files == nil {
			a.Files = []FileImage{}
		}
	}
	return a
}

// SetHash is the hash of a set of files: of the canonical list of their
// paths and content hashes, in path order. It stands for "the files a
// command touches" wherever a single file's hash stands for one target.
func SetHash(files []FileFact) codec.Fingerprint {
	type entry struct {
		Path   string            `json:"path"`
		SHA256 codec.Fingerprint `json:"sha256"`
	}
	list := make([]entry, len(files))
	for i, f := range files {
		list[i] = entry{f.Path, f.SHA256}
	}
	slices.SortFunc(list, func(a, b entry) int { return strings.Compare(a.Path, b.Path) })
	return codec.MustFingerprintOf(list)
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
	SHA256  codec.Fingerprint `json:"sha256,omitempty"`
	Passing []string          `json:"passing"`
	Failing []string          `json:"failing"`
}

// IdempotencyKey derives the key of seed §10.2 from the run id, the cycle,
// the action request ref and the governance decision ref.
func IdempotencyKey(runID string, cycleSeq int64, actionRef, decisionRef codec.Ref) string {
	b := codec.MustMarshal(map[string]any{
		"run_id": runID, "cycle_seq": cycleSeq, "action_request_ref": actionRef, "boundary_decision_ref": decisionRef,
	})
	return "idem:sha256:" + codec.Digest(b)
}

// The statuses of a path in an uncertain effect's evidence.
const (
	PathChanged   = "changed"   // its hash now differs from the intent's (or it is new)
	PathUnchanged = "unchanged" // its hash now is the intent's
	PathMissing   = "missing"   // it was there when the intent was recorded and is gone
)

// PathEvidence is what the world shows about one path an interrupted
// effect may have touched, when recovery cannot tell whether the effect
// happened: its hash in the intent (from before the effect; "" when it did
// not exist), the hash the effect was to leave (a file effect's, when
// known), and its hash now. A person reads it before saying whether the
// effect ran (acr resolve).
type PathEvidence struct {
	Path    string            `json:"path"`
	Intent  codec.Fingerprint `json:"intent_sha256,omitempty"`
	Planned codec.Fingerprint `json:"planned_sha256,omitempty"`
	Now     codec.Fingerprint `json:"now_sha256,omitempty"`
	Status  string            `json:"status"`
}

// NewPathEvidence compares a path's hash in the intent with its hash now.
func NewPathEvidence(path string, intent, planned, now codec.Fingerprint) PathEvidence {
	e := PathEvidence{Path: path, Intent: intent, Planned: planned, Now: now, Status: PathChanged}
	switch {
	case now == intent:
		e.Status = PathUnchanged
	case now == "":
		e.Status = PathMissing
	}
	return e
}

// String says what happened to the path in a few words, for a person:
// "counter.txt changed (intent 1a2b3c4d5e6f, now 5e6f7a8b9c0d)", the
// hashes cut to 12 hex digits.
func (e PathEvidence) String() string {
	short := func(f codec.Fingerprint) string {
		if f == "" {
			return "absent"
		}
		h := string(f)
		if i := strings.LastIndexByte(h, ':'); i >= 0 {
			h = h[i+1:]
		}
		return h[:min(12, len(h))]
	}
	s := fmt.Sprintf("%s %s (intent %s, now %s", e.Path, e.Status, short(e.Intent), short(e.Now))
	switch {
	case e.Planned == "":
	case e.Now == e.Planned:
		s += ", as the effect was to leave it"
	default:
		s += ", the effect was to leave " + short(e.Planned)
	}
	return s + ")"
}

// ProviderFault is a provider that gave no answer about the world: a
// command check that timed out, was killed, exited with a code that is
// neither a pass nor a fail, or could not be started. The kernel does not
// advance the run on it (the cycle does not happen) and counts it towards
// the policy's limit of provider failures.
type ProviderFault struct {
	// Source names the provider: "check:<id>", "proposer".
	Source string `json:"source"`
	// Reason says what went wrong, in words.
	Reason string `json:"reason"`
	// Command is the command's result, when it ran at all.
	Command *CommandResult `json:"command,omitempty"`
}

func (f *ProviderFault) Error() string { return f.Source + ": " + f.Reason }
