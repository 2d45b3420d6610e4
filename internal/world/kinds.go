package world

import (
	"bytes"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
)

// This file is the pure side of the seam for operations and check kinds:
// everything the functional core (validation, cognition, governance, the
// controller's fitness contract) needs to know about one of them is its
// entry here. The other side is the sandbox, which carries operations out
// (World.planOn for single-file operations, command.go for commands and
// the file sets they touch) and evaluates checks (World.evaluateTimed).
// Adding an operation or a check kind is one entry here, its executor
// there, and its JSON Schema; nothing in the kernel, governance or
// cognition changes.

// OperationKind describes one operation to the pure core.
type OperationKind struct {
	Op Operation
	// Writes says the operation changes the world, so it needs
	// project_write authority.
	Writes bool
	// ValidateFix checks a declared fix of this operation against the
	// check it remedies; nil when the operation cannot be a fix.
	ValidateFix func(f Fix, c Check) error
	// Draft builds the action request a declared fix implies, from the
	// check and its observed result (whose TargetSHA256 is the hash the
	// action expects to find).
	Draft func(c Check, r CheckResult, f Fix) Action
	// Paths are the world paths the action may change or read: what
	// governance rules on.
	Paths func(a Action) []string
	// Criteria are the FitnessContract criteria an effect of this kind is
	// judged by, beyond the readback agreeing with the executor.
	Criteria func(a Action) []string
	// Describe says what the action does in a few words.
	Describe func(a Action) string
	// NamedRule says only a contract rule that names the operation may
	// allow it; a rule for "*" still forbids it or asks for approval.
	NamedRule bool
	// Declared, when set, says whether the environment declares the
	// action: "" when it does, else the reason code governance refuses
	// with. Only what the environment's author wrote down may run.
	Declared func(spec *Spec, a Action) string
}

// Kind returns the description of an operation; ok is false for an
// unknown one.
func Kind(op Operation) (OperationKind, bool) {
	k := OperationKind{Op: op, Writes: true, Paths: targetPath, Criteria: noCriteria, Describe: opAndTarget}
	switch op {
	case OpInspect:
		k.Writes = false
	case OpRunValidation:
	case OpMarkIssue:
		k.ValidateFix = func(Fix, Check) error { return nil }
		k.Draft = draftMarkIssue
		k.Paths = func(Action) []string { return []string{IssuesFile} }
		k.Criteria = func(Action) []string { return []string{"issue_recorded"} }
	case OpApplyPatch:
		k.ValidateFix = validatePatchFix
		k.Draft = draftPatch
		k.Criteria = fixCriteria
	case OpRecordArtifact:
		k.ValidateFix = validateArtifactFix
		k.Draft = draftArtifact
		k.Criteria = fixCriteria
	case OpRestore:
		k.Paths = func(a Action) []string {
			if len(a.Touches) > 0 {
				return slices.Clone(a.Touches)
			}
			return []string{a.Target}
		}
		k.Criteria = func(Action) []string { return []string{"snapshot_restored"} }
		k.Describe = func(a Action) string {
			if len(a.Touches) > 0 {
				return fmt.Sprintf("%s %s", a.Operation, strings.Join(a.Touches, " "))
			}
			return opAndTarget(a)
		}
	case OpRunCommand:
		k.ValidateFix = validateCommandFix
		k.Draft = func(c Check, _ CheckResult, f Fix) Action { return CommandAction(c.ID, f) }
		k.Paths = func(a Action) []string {
			if len(a.Touches) == 0 {
				return []string{"**"}
			}
			return slices.Clone(a.Touches)
		}
		k.Criteria = fixCriteria
		k.NamedRule = true
		k.Describe = func(a Action) string {
			return fmt.Sprintf("%s %s (%s)", a.Operation, a.FixID, strings.Join(a.Argv, " "))
		}
		k.Declared = func(spec *Spec, a Action) string {
			f, _, ok := spec.FixByID(a.FixID)
			if ok && f.Operation == OpRunCommand && slices.Equal(f.Argv, a.Argv) && slices.Equal(f.Touches, a.Touches) &&
				f.TimeoutSeconds == a.TimeoutSeconds && f.Idempotent == a.Idempotent {
				return ""
			}
			return "undeclared_command"
		}
	default:
		return OperationKind{}, false
	}
	return k, true
}

// kind is Kind for operations already known to be valid (an unknown one
// gets the description of a write on its target, the safe reading).
func kind(op Operation) OperationKind {
	if k, ok := Kind(op); ok {
		return k
	}
	return OperationKind{Op: op, Writes: true, Paths: targetPath, Criteria: noCriteria, Describe: opAndTarget}
}

func targetPath(a Action) []string { return []string{a.Target} }
func noCriteria(Action) []string   { return nil }
func opAndTarget(a Action) string  { return string(a.Operation) + " " + a.Target }
func fixCriteria(a Action) []string {
	if a.CheckID != "" {
		return []string{"check_passes", "no_regression"}
	}
	return []string{"no_regression"}
}

// Paths are the world paths an action may change or read, the ones
// governance rules on: the target, the files a command touches (all of
// them, "**", when it declares none), or the report and issue files the
// sandbox writes itself.
func (a Action) Paths() []string { return kind(a.Operation).Paths(a) }

// OnSet reports whether the action works on the set of files its touches
// match (run_command, and the restore that undoes one) rather than on one
// target file: its Paths are then patterns, and its hashes set hashes.
func (a Action) OnSet() bool { return a.Operation == OpRunCommand || len(a.Touches) > 0 }

// Describe is the action in a few words, for summaries and status lines.
func (a Action) Describe() string { return kind(a.Operation).Describe(a) }

// Criteria are the fitness criteria the action's effect is judged by,
// beyond the readback agreeing with the executor.
func (a Action) Criteria() []string { return kind(a.Operation).Criteria(a) }

// Writes reports whether the operation changes the world.
func (op Operation) Writes() bool { return kind(op).Writes }

// DraftFix builds the action request a declared fix implies.
func DraftFix(c Check, r CheckResult, f Fix) Action {
	if k := kind(f.Operation); k.Draft != nil {
		return k.Draft(c, r, f)
	}
	return Action{Schema: ActionSchema, Operation: f.Operation, Target: c.Path, CheckID: c.ID}
}

func draftPatch(c Check, r CheckResult, f Fix) Action {
	return Action{Schema: ActionSchema, Operation: OpApplyPatch, Target: c.Path, CheckID: c.ID,
		ExpectSHA256: r.TargetSHA256, Find: f.Find, Replace: f.Replace, Occurrences: f.Occurrences}
}

func draftArtifact(c Check, r CheckResult, f Fix) Action {
	return Action{Schema: ActionSchema, Operation: OpRecordArtifact, Target: c.Path, CheckID: c.ID, ExpectSHA256: r.TargetSHA256, Content: f.Content}
}

func draftMarkIssue(c Check, _ CheckResult, f Fix) Action {
	note := f.Note
	if note == "" {
		note = c.Summary
	}
	return Action{Schema: ActionSchema, Operation: OpMarkIssue, Target: IssuesFile, CheckID: c.ID, Note: note}
}

// CommandAction is the action request that runs a declared command fix,
// carrying its exact command line so that an approval binds to it.
func CommandAction(checkID string, f Fix) Action {
	return Action{Schema: ActionSchema, Operation: OpRunCommand, CheckID: checkID, FixID: f.ID,
		Argv: slices.Clone(f.Argv), Touches: slices.Clone(f.Touches), TimeoutSeconds: f.TimeoutSeconds, Idempotent: f.Idempotent}
}

func validatePatchFix(f Fix, c Check) error {
	switch {
	case f.Find == "":
		return fieldErr("find", "apply_local_patch needs find")
	case f.Occurrences < 0:
		return fieldErr("occurrences", "must be 0 (all) or more")
	case c.Kind == CheckFileExists:
		return fieldErr("operation", "apply_local_patch cannot fix a file_exists check")
	}
	return nil
}

func validateArtifactFix(_ Fix, c Check) error {
	if c.Kind != CheckFileExists && c.Kind != CheckPresentText && c.Kind != CheckCommand {
		return fieldErr("operation", "record_artifact fixes file_exists, present_text or command checks")
	}
	return nil
}

func validateCommandFix(f Fix, _ Check) error {
	switch {
	case f.ID == "":
		return fieldErr("id", "a run_command fix needs an id (a proposer asks for it by id)")
	case f.Find != "" || f.Replace != "" || f.Content != "" || f.Note != "" || f.Occurrences != 0:
		return fieldErr("operation", "run_command takes argv, touches, timeout_seconds and idempotent only")
	}
	if err := validArgv(f.Argv); err != nil {
		return fieldErr("argv", "%v", err)
	}
	if err := validTimeout(f.TimeoutSeconds); err != nil {
		return fieldErr("timeout_seconds", "%v", err)
	}
	for i, t := range f.Touches {
		if err := ValidPattern(t); err != nil {
			return fieldErr(fmt.Sprintf("touches[%d]", i), "%v", err)
		}
		if strings.HasPrefix(t, "/") || slices.Contains(segments(t), "..") || slices.Contains(segments(t), ".") {
			return fieldErr(fmt.Sprintf("touches[%d]", i), "pattern %q must be relative to the world, without . or ..", t)
		}
	}
	return nil
}

// validate checks a fix against the check it remedies.
func (f Fix) validate(c Check) error {
	k, ok := Kind(f.Operation)
	if !ok || k.ValidateFix == nil {
		return fieldErr("operation", "operation %q cannot be a fix (want apply_local_patch, record_artifact, mark_issue or run_command)", f.Operation)
	}
	if f.Operation != OpRunCommand {
		switch {
		case len(f.Argv) > 0 || len(f.Touches) > 0 || f.TimeoutSeconds != 0 || f.Idempotent:
			return fieldErr("argv", "argv, touches, timeout_seconds and idempotent belong to run_command fixes")
		case c.Path == "" && f.Operation != OpMarkIssue:
			return fieldErr("operation", "%s changes the check's path, and this check names none", f.Operation)
		}
	}
	return k.ValidateFix(f, c)
}

// CheckKindInfo describes one check kind to the pure core.
type CheckKindInfo struct {
	Kind CheckKind
	// OnFile says the check judges the content of its path (the sandbox
	// reads it and Evaluate decides); otherwise it runs a program (the
	// sandbox runs it, and its exit status decides).
	OnFile bool
	// Validate checks the kind's own fields of a check.
	Validate func(c Check) error
	// Judge decides a file check from its path's content (nil content and
	// exists=false when the file is missing).
	Judge func(c Check, content []byte, exists bool) (CheckStatus, string)
}

// CheckKindOf returns the description of a check kind.
func CheckKindOf(k CheckKind) (CheckKindInfo, bool) {
	noProgram := func(c Check) error {
		switch {
		case len(c.Argv) > 0:
			return fieldErr("argv", "only a command check runs a program")
		case c.TimeoutSeconds != 0:
			return fieldErr("timeout_seconds", "only a command check has a timeout")
		case len(c.Files) > 0:
			return fieldErr("files", "only a command check names files (a %s check is about its path)", c.Kind)
		case c.CompareOutput:
			return fieldErr("compare_output", "only a command check has output (a %s check's verdict rests on its file)", c.Kind)
		case len(c.Normalize) > 0:
			return fieldErr("normalize", "only a command check has output to normalize")
		}
		return nil
	}
	needText := func(c Check) error {
		if c.Text == "" {
			return fieldErr("text", "required for kind %s", c.Kind)
		}
		return noProgram(c)
	}
	switch k {
	case CheckAbsentText:
		return CheckKindInfo{Kind: k, OnFile: true, Validate: needText, Judge: func(c Check, content []byte, exists bool) (CheckStatus, string) {
			if exists && bytes.Contains(content, []byte(c.Text)) {
				return CheckFail, fmt.Sprintf("found %d occurrence(s) of the forbidden text", bytes.Count(content, []byte(c.Text)))
			}
			return CheckPass, ""
		}}, true
	case CheckPresentText:
		return CheckKindInfo{Kind: k, OnFile: true, Validate: needText, Judge: func(c Check, content []byte, exists bool) (CheckStatus, string) {
			switch {
			case !exists:
				return CheckFail, "file is missing"
			case !bytes.Contains(content, []byte(c.Text)):
				return CheckFail, "required text is missing"
			}
			return CheckPass, ""
		}}, true
	case CheckFileExists:
		return CheckKindInfo{Kind: k, OnFile: true, Validate: noProgram, Judge: func(_ Check, _ []byte, exists bool) (CheckStatus, string) {
			if !exists {
				return CheckFail, "file is missing"
			}
			return CheckPass, ""
		}}, true
	case CheckCommand:
		return CheckKindInfo{Kind: k, Validate: validateCommandCheck}, true
	}
	return CheckKindInfo{}, false
}

func validateCommandCheck(c Check) error {
	if err := validArgv(c.Argv); err != nil {
		return fieldErr("argv", "%v", err)
	}
	if c.Text != "" {
		return fieldErr("text", "a command check has no text: its exit status is the verdict")
	}
	if err := validTimeout(c.TimeoutSeconds); err != nil {
		return fieldErr("timeout_seconds", "%v", err)
	}
	for i, f := range c.Files {
		if _, err := CleanPath(f); err != nil {
			return fieldErr(fmt.Sprintf("files[%d]", i), "%v", err)
		}
	}
	if len(c.Normalize) > 0 && !c.CompareOutput {
		return fieldErr("normalize", "normalize applies to output that is compared: set compare_output to true, or drop normalize")
	}
	for i, p := range c.Normalize {
		if p == "" {
			return fieldErr(fmt.Sprintf("normalize[%d]", i), "empty pattern")
		}
		if _, err := regexp.Compile(p); err != nil {
			return fieldErr(fmt.Sprintf("normalize[%d]", i), "not a regular expression (Go syntax): %v", err)
		}
	}
	return nil
}

// Evaluate runs a file check against the content of its path (nil when
// the file does not exist). A command check is not evaluated here: its
// program's exit status decides, in the sandbox.
func Evaluate(c Check, content []byte, exists bool) CheckResult {
	r := CheckResult{ID: c.ID, Status: CheckPass}
	if exists {
		r.TargetSHA256 = codec.FingerprintOf(content)
	}
	if k, ok := CheckKindOf(c.Kind); ok && k.Judge != nil {
		r.Status, r.Detail = k.Judge(c, content, exists)
	}
	return r
}
