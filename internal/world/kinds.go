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
// controller's fitness contract, the kernel's settlement) needs to know
// about one of them is its entry here. The other side is the executor, the
// sandbox, which carries operations out (World.planOn for single-file
// operations, command.go for commands and the file sets they touch) and
// evaluates checks (World.evaluateTimed). Adding an operation is one
// entry here, its executor there, and its JSON Schema; nothing in the
// kernel, governance, cognition or the controller names an operation.
//
// The entries of the built-in operations are Kind's. A run reads them
// through a Catalog, a value it carries, so that a world able to carry out
// more operations (a test's, a new kind of world) brings their entries
// with it, without anything registered in a package variable.

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
	// action expects to find). Nil: the operation on the check's path.
	Draft func(c Check, r CheckResult, f Fix) Action
	// DescribeFix says what a declared fix of this operation does, for
	// the proposer told about earlier attempts. Nil: the drafted action's
	// Describe.
	DescribeFix func(c Check, f Fix) string
	// Paths are the world paths the action may change or read: what
	// governance rules on. Nil: the target.
	Paths func(a Action) []string
	// Criteria are the FitnessContract criteria an effect of this kind is
	// judged by, beyond the readback agreeing with the executor. Nil: none.
	Criteria func(a Action) []string
	// Describe says what the action does in a few words. Nil: the
	// operation and the target.
	Describe func(a Action) string
	// NamedRule says only a contract rule that names the operation may
	// allow it; a rule for "*" still forbids it or asks for approval.
	NamedRule bool
	// Declared, when set, says whether the environment declares the
	// action: "" when it does, else the reason code governance refuses
	// with. Only what the environment's author wrote down may run.
	Declared func(spec *Spec, a Action) string
	// Command says the operation runs a program the environment declares
	// as a fix: it acts on the set of files its touches match rather than
	// on one target (Catalog.OnSet), its fixes alone carry argv, touches,
	// a timeout and idempotent, a proposer names one by its fix id, and
	// the program is told the run and the cycle it runs in.
	Command bool
	// Undoes says the operation puts back what one of the run's own
	// effects changed, from that effect's rollback bundle. It needs no
	// contract rule beyond the one that allowed the effect; it is needed
	// even when its check passes; the context's trust does not hold it
	// back (it removes doubt rather than adding to it); its effect is
	// judged restored or not; and an accepted one sets the item aside
	// instead of counting as a fix.
	Undoes bool
	// Reports says the operation reports an item for a person instead of
	// changing what the check is about. Cognition ranks it last: it
	// offers it only for a check with no declared fix, as the remedy of
	// last resort. It writes a place of its own, not the checked file, so
	// a check without a path can be reported; a committed report is
	// judged "reported, not fixed" and sets the item aside until the
	// checked file changes; and from ledger format 3 on its note says why
	// and quotes the failing output.
	Reports bool
	// Proposal, when set, says an external proposer may name the
	// operation, and how a proposed action of it is checked and drafted.
	Proposal *ProposalKind
}

// ProposalKind says how an external proposer names an operation
// (docs/providers.md).
type ProposalKind struct {
	// Validate checks that a proposed action has the fields the operation
	// needs (a proposer that answers otherwise failed as a provider). The
	// error's field is relative to the action: "" for the action itself.
	Validate func(p Proposed) error
	// Draft completes the action request a proposed action amounts to.
	// It is given the request so far: the operation and the check, and,
	// for an operation on one target (not Command), the proposed target,
	// already found to be a world path that is neither excluded nor
	// refused, and the hash it held. It returns the request as far as it
	// got and the reason code the critic rejects it with ("" when it
	// stands).
	Draft func(spec *Spec, a Action, p Proposed) (Action, string)
}

// Proposed is one action an external proposer named, in the catalog's
// terms: the fix it amounts to (its operation and fields; a command's ID
// names the declared fix), the target it names, and how many times a
// patch's find text occurs in that target now.
type Proposed struct {
	Fix    Fix
	Target string
	Finds  int
}

// Kind returns the description of a built-in operation; ok is false for
// an unknown one. The core reads operations through the run's Catalog,
// whose zero value holds exactly these.
func Kind(op Operation) (OperationKind, bool) {
	k := OperationKind{Op: op, Writes: true}
	switch op {
	case OpInspect:
		k.Writes = false
	case OpRunValidation:
	case OpMarkIssue:
		k.ValidateFix = func(Fix, Check) error { return nil }
		k.Draft = draftMarkIssue
		k.Paths = func(Action) []string { return []string{IssuesFile} }
		k.Criteria = func(Action) []string { return []string{"issue_recorded"} }
		k.Reports = true
	case OpApplyPatch:
		k.ValidateFix = validatePatchFix
		k.Draft = draftPatch
		k.DescribeFix = func(c Check, f Fix) string {
			return fmt.Sprintf("%s %s (replace %q with %q)", OpApplyPatch, c.Path, f.Find, f.Replace)
		}
		k.Criteria = fixCriteria
		k.Proposal = &ProposalKind{Validate: validatePatchProposal, Draft: draftPatchProposal}
	case OpRecordArtifact:
		k.ValidateFix = validateArtifactFix
		k.Draft = draftArtifact
		k.Criteria = fixCriteria
		k.Proposal = &ProposalKind{Validate: validateArtifactProposal, Draft: func(_ *Spec, a Action, p Proposed) (Action, string) {
			a.Content = p.Fix.Content
			return a, ""
		}}
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
		k.Undoes = true
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
		k.Command = true
		k.Proposal = &ProposalKind{Validate: validateCommandProposal, Draft: draftCommandProposal}
	default:
		return OperationKind{}, false
	}
	return k.complete(), true
}

// complete fills the functions an entry left nil with their defaults: an
// action on its target, judged by no criteria of its own, described by
// its operation and target.
func (k OperationKind) complete() OperationKind {
	if k.Paths == nil {
		k.Paths = targetPath
	}
	if k.Criteria == nil {
		k.Criteria = noCriteria
	}
	if k.Describe == nil {
		k.Describe = opAndTarget
	}
	return k
}

// Catalog is the set of operations a run's world carries out, as the
// pure core knows them: the built-in ones (Kind) and any Added after
// them. It is a value the run carries (kernel.EngineState.Operations) and
// hands to whatever rules on an operation, never a registry: its zero
// value is the built-in catalog, and a catalog with more operations is
// made by whoever wires a world that can carry them out.
type Catalog struct {
	// Added are operations beyond the built-in ones, listed after them in
	// this order. An entry never replaces a built-in operation of the
	// same name: the built-in one is found first.
	Added []OperationKind
}

// With returns a catalog with the entries ks added.
func (c Catalog) With(ks ...OperationKind) Catalog {
	return Catalog{Added: slices.Concat(c.Added, ks)}
}

// Kind returns the description of an operation; ok is false for one the
// catalog does not hold.
func (c Catalog) Kind(op Operation) (OperationKind, bool) {
	if k, ok := Kind(op); ok {
		return k, true
	}
	for _, k := range c.Added {
		if k.Op == op {
			return k.complete(), true
		}
	}
	return OperationKind{}, false
}

// Of is Kind for operations already known to be valid: an unknown one
// gets the description of a write on its target, the safe reading.
func (c Catalog) Of(op Operation) OperationKind {
	if k, ok := c.Kind(op); ok {
		return k
	}
	return OperationKind{Op: op, Writes: true}.complete()
}

// Operations lists the catalog's operations: the built-in ones in their
// fixed order, then the added ones.
func (c Catalog) Operations() []Operation {
	out := Operations()
	for _, k := range c.Added {
		if _, builtin := Kind(k.Op); !builtin && !slices.Contains(out, k.Op) {
			out = append(out, k.Op)
		}
	}
	return out
}

// kinds lists the entries of the catalog's operations, in order.
func (c Catalog) kinds() []OperationKind {
	ops := c.Operations()
	out := make([]OperationKind, len(ops))
	for i, op := range ops {
		out[i] = c.Of(op)
	}
	return out
}

// Report is the operation that reports an item for a person (the first
// that Reports): the remedy of last resort.
func (c Catalog) Report() OperationKind {
	for _, k := range c.kinds() {
		if k.Reports {
			return k
		}
	}
	return OperationKind{}
}

// Proposable lists the operations a proposer may name, in catalog order.
func (c Catalog) Proposable() []Operation {
	var out []Operation
	for _, k := range c.kinds() {
		if k.Proposal != nil {
			out = append(out, k.Op)
		}
	}
	return out
}

// Fixes lists the operations a declared fix may name, in catalog order.
func (c Catalog) Fixes() []Operation {
	var out []Operation
	for _, k := range c.kinds() {
		if k.ValidateFix != nil {
			out = append(out, k.Op)
		}
	}
	return out
}

// Paths are the world paths an action may change or read, the ones
// governance rules on.
func (c Catalog) Paths(a Action) []string { return c.Of(a.Operation).Paths(a) }

// OnSet reports whether the action works on the set of files its touches
// match (a command, and the restore that undoes one) rather than on one
// target file: its Paths are then patterns, and its hashes set hashes.
func (c Catalog) OnSet(a Action) bool { return c.Of(a.Operation).Command || len(a.Touches) > 0 }

// Describe is the action in a few words, for summaries and status lines.
func (c Catalog) Describe(a Action) string { return c.Of(a.Operation).Describe(a) }

// Criteria are the fitness criteria the action's effect is judged by,
// beyond the readback agreeing with the executor.
func (c Catalog) Criteria(a Action) []string { return c.Of(a.Operation).Criteria(a) }

// Writes reports whether the operation changes the world.
func (c Catalog) Writes(op Operation) bool { return c.Of(op).Writes }

// DraftFix builds the action request a declared fix implies.
func (c Catalog) DraftFix(ck Check, r CheckResult, f Fix) Action {
	if k := c.Of(f.Operation); k.Draft != nil {
		return k.Draft(ck, r, f)
	}
	return Action{Schema: ActionSchema, Operation: f.Operation, Target: ck.Path, CheckID: ck.ID}
}

// DescribeFix says what a declared fix does, in a few words.
func (c Catalog) DescribeFix(ck Check, f Fix) string {
	if k := c.Of(f.Operation); k.DescribeFix != nil {
		return k.DescribeFix(ck, f)
	}
	return c.Describe(c.DraftFix(ck, CheckResult{}, f))
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

// The methods below read the built-in catalog. The executor and the
// readers of a run's history use them; the core reads the run's catalog.

// Paths are the world paths an action may change or read, the ones
// governance rules on: the target, the files a command touches (all of
// them, "**", when it declares none), or the report and issue files the
// sandbox writes itself.
func (a Action) Paths() []string { return Catalog{}.Paths(a) }

// OnSet reports whether the action works on the set of files its touches
// match (run_command, and the restore that undoes one) rather than on one
// target file: its Paths are then patterns, and its hashes set hashes.
func (a Action) OnSet() bool { return Catalog{}.OnSet(a) }

// Describe is the action in a few words, for summaries and status lines.
func (a Action) Describe() string { return Catalog{}.Describe(a) }

// Criteria are the fitness criteria the action's effect is judged by,
// beyond the readback agreeing with the executor.
func (a Action) Criteria() []string { return Catalog{}.Criteria(a) }

// Writes reports whether the operation changes the world.
func (op Operation) Writes() bool { return Catalog{}.Writes(op) }

// DraftFix builds the action request a declared fix implies.
func DraftFix(c Check, r CheckResult, f Fix) Action { return Catalog{}.DraftFix(c, r, f) }

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

func validatePatchProposal(p Proposed) error {
	if p.Target == "" || p.Fix.Find == "" {
		return fieldErr("", "apply_local_patch needs target and find")
	}
	return nil
}

func draftPatchProposal(_ *Spec, a Action, p Proposed) (Action, string) {
	if a.ExpectSHA256 == "" || p.Finds == 0 {
		return a, "patch_does_not_apply"
	}
	if p.Fix.Find == p.Fix.Replace {
		return a, "patch_changes_nothing"
	}
	a.Find, a.Replace, a.Occurrences = p.Fix.Find, p.Fix.Replace, p.Fix.Occurrences
	return a, ""
}

func validateArtifactProposal(p Proposed) error {
	if p.Target == "" {
		return fieldErr("target", "record_artifact needs a target")
	}
	return nil
}

func validateCommandProposal(p Proposed) error {
	if p.Fix.ID == "" {
		return fieldErr("fix", "run_command names a declared command fix by id")
	}
	return nil
}

// draftCommandProposal runs the declared command fix the proposal names:
// a proposer names commands, it does not write them.
func draftCommandProposal(spec *Spec, a Action, p Proposed) (Action, string) {
	f, _, ok := spec.FixByID(p.Fix.ID)
	if !ok || f.Operation != OpRunCommand {
		return a, "undeclared_command"
	}
	return CommandAction(a.CheckID, f), ""
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
func (f Fix) validate(ops Catalog, c Check) error {
	k, ok := ops.Kind(f.Operation)
	if !ok || k.ValidateFix == nil {
		return fieldErr("operation", "operation %q cannot be a fix (want %s)", f.Operation, OrList(ops.Fixes()))
	}
	if !k.Command {
		switch {
		case len(f.Argv) > 0 || len(f.Touches) > 0 || f.TimeoutSeconds != 0 || f.Idempotent:
			return fieldErr("argv", "argv, touches, timeout_seconds and idempotent belong to run_command fixes")
		case c.Path == "" && !k.Reports:
			return fieldErr("operation", "%s changes the check's path, and this check names none", f.Operation)
		}
	}
	return k.ValidateFix(f, c)
}

// OrList names operations for a message: "a, b or c".
func OrList(ops []Operation) string {
	names := make([]string, len(ops))
	for i, op := range ops {
		names[i] = string(op)
	}
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
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
