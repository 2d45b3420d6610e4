package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Execute applies action a at most once per idempotency key, following the
// intent → effect → outcome protocol described in the package comment.
// reused is true when the outcome was not produced by a fresh effect now:
// it came from the table, or from recovering an execution that a crash
// interrupted after its effect.
//
// The outcome's Target is the file whose hashes it reports: a.Target for
// inspect, apply_local_patch and record_artifact, world.IssuesFile for
// mark_issue, and the key's report under world.ValidationDir for
// run_validation (a.Target is ignored for those two).
//
// Errors: a malformed key or action, a path refused by confinement
// (wrapping ErrConfinement), a key reused for another action
// (ErrKeyConflict), an interrupted execution that cannot be classified
// (ErrUncertain), or I/O. None of them records anything. Reasons in the
// world's data (a directory where a file should be) are answered with a
// recorded outcome of status failed instead.
func (w *World) Execute(ctx context.Context, key string, a world.Action) (out world.Outcome, reused bool, err error) {
	h, err := keyHex(key)
	if err != nil {
		return world.Outcome{}, false, fmt.Errorf("execute: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	out, reused, err = w.execute(ctx, key, h, a)
	if err != nil {
		return world.Outcome{}, false, fmt.Errorf("execute %s: %w", key, err)
	}
	return out, reused, nil
}

func (w *World) execute(ctx context.Context, key, h string, a world.Action) (world.Outcome, bool, error) {
	if a.OnSet() {
		return world.Outcome{}, false, fmt.Errorf("%s runs through Prepare and Commit, whose intent the caller makes durable", a.Operation)
	}
	target := resolveTarget(h, a)
	prior, err := w.priorOutcome(key, h, a, target, false, nil)
	if err != nil {
		return world.Outcome{}, false, err
	}
	if prior != nil {
		return *prior, true, nil
	}
	if err := w.validate(a); err != nil {
		return world.Outcome{}, false, err
	}
	in, ok, err := w.readIntent(key, h)
	if err != nil {
		return world.Outcome{}, false, err
	}
	if ok {
		if err := sameAction(in.Action.Operation, in.Target, a.Operation, target); err != nil {
			return world.Outcome{}, false, err
		}
		out, done, err := w.recoverIntent(ctx, h, in)
		if err != nil || done {
			return out, done, err
		}
		// The effect provably did not happen: execute afresh. The new
		// intent replaces the old one.
	}
	p, err := w.plan(ctx, key, h, a, target)
	if err != nil {
		return world.Outcome{}, false, err
	}
	if p.write {
		intent := intentRecord{
			Schema:       IntentSchema,
			Key:          key,
			Action:       a,
			Target:       target,
			BeforeSHA256: p.out.BeforeSHA256,
			AfterSHA256:  p.out.AfterSHA256,
			Results:      p.out.Results,
		}
		if _, err := w.appendRecord(h, kindIntent, intent, true); err != nil {
			return world.Outcome{}, false, err
		}
		w.stage(StageBeforeActionCommit)
		if err := w.applyPlan(target, &p); err != nil {
			return world.Outcome{}, false, err
		}
	}
	if p.out.PostCheck, err = w.postCheck(ctx, a.CheckID); err != nil {
		return world.Outcome{}, false, err
	}
	out, err := w.commit(h, a, p.out)
	return out, false, err
}

func sameAction(recOp world.Operation, recTarget string, op world.Operation, target string) error {
	if recOp != op || recTarget != target {
		return fmt.Errorf("%w: recorded for %s on %q, now requested for %s on %q", ErrKeyConflict, recOp, recTarget, op, target)
	}
	return nil
}

func resolveTarget(h string, a world.Action) string {
	switch a.Operation {
	case world.OpMarkIssue:
		return world.IssuesFile
	case world.OpRunValidation:
		return reportPath(h)
	case world.OpRunCommand:
		return ""
	}
	if a.OnSet() {
		return ""
	}
	return a.Target
}

// validate rejects malformed actions before anything is read or recorded:
// they are programming errors upstream, not answers the table should keep.
func (w *World) validate(a world.Action) error {
	switch a.Operation {
	case world.OpInspect, world.OpMarkIssue, world.OpRecordArtifact, world.OpRestore:
	case world.OpApplyPatch:
		if a.Find == "" {
			return fmt.Errorf("apply_local_patch needs a non-empty find text")
		}
	case world.OpRunValidation:
		for _, id := range a.Checks {
			if _, ok := w.checkByID(id); !ok {
				return fmt.Errorf("run_validation: unknown check id %q", id)
			}
		}
	case world.OpRunCommand:
		if err := w.validateCommand(a); err != nil {
			return err
		}
	default:
		return fmt.Errorf("unknown operation %q", a.Operation)
	}
	if a.CheckID != "" {
		if _, ok := w.checkByID(a.CheckID); !ok {
			return fmt.Errorf("unknown check id %q", a.CheckID)
		}
	}
	return nil
}

// recoverIntent classifies an execution interrupted between its intent and
// its outcome by the target's current hash. done is false when the effect
// provably did not happen and the caller should execute afresh.
func (w *World) recoverIntent(ctx context.Context, h string, in intentRecord) (out world.Outcome, done bool, err error) {
	content, exists, err := w.readFile(in.Target)
	if err != nil {
		if refused(err) {
			return world.Outcome{}, false, fmt.Errorf("%w: interrupted %s on %s: the target can no longer be read: %w", ErrUncertain, in.Action.Operation, in.Target, err)
		}
		return world.Outcome{}, false, err
	}
	switch now := hashOf(content, exists); now {
	case in.AfterSHA256:
		if err := w.syncFound(in.Target); err != nil {
			return world.Outcome{}, false, err
		}
		out := world.Outcome{
			Schema:       world.OutcomeSchema,
			Key:          in.Key,
			Operation:    in.Action.Operation,
			Target:       in.Target,
			Status:       world.OutcomeCommitted,
			BeforeSHA256: in.BeforeSHA256,
			AfterSHA256:  in.AfterSHA256,
			Results:      in.Results,
		}
		if out.PostCheck, err = w.postCheck(ctx, in.Action.CheckID); err != nil {
			return world.Outcome{}, false, err
		}
		out, err = w.commit(h, in.Action, out)
		return out, err == nil, err
	case in.BeforeSHA256:
		return world.Outcome{}, false, nil
	default:
		return world.Outcome{}, false, fmt.Errorf("%w: interrupted %s on %s: the target's hash is %s, neither %s from before the effect nor %s from after it; something else changed it, so whether the effect happened is for a person to decide",
			ErrUncertain, in.Action.Operation, in.Target, describe(now), describe(in.BeforeSHA256), describe(in.AfterSHA256))
	}
}

func describe(f codec.Fingerprint) string {
	if f == "" {
		return "(absent)"
	}
	return string(f)
}

func hashOf(content []byte, exists bool) codec.Fingerprint {
	if !exists {
		return ""
	}
	return codec.FingerprintOf(content)
}

func (w *World) postCheck(ctx context.Context, id string) (*world.CheckResult, error) {
	if id == "" {
		return nil, nil
	}
	c, ok := w.checkByID(id)
	if !ok {
		return nil, fmt.Errorf("unknown check id %q", id)
	}
	if c.Kind == world.CheckCommand {
		// Running a program again is not the executor's to do: the
		// observer's readback runs it, once.
		return nil, nil
	}
	r, err := w.evaluate(ctx, c)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// postCheckWritten is postCheck right after p was applied to target: a
// check on the target judges the bytes the write just put there (written,
// fsynced and renamed under w.mu a moment ago) rather than reading them
// back; the observer's readback is the independent reading. Anything else
// (a failed write, a check on another file) is postCheck.
func (w *World) postCheckWritten(ctx context.Context, id, target string, p plan) (*world.CheckResult, error) {
	c, ok := w.checkByID(id)
	if !ok || c.Path != target || !p.write || p.out.Status != world.OutcomeCommitted {
		return w.postCheck(ctx, id)
	}
	if k, ok := world.CheckKindOf(c.Kind); !ok || !k.OnFile {
		return w.postCheck(ctx, id)
	}
	r := world.Evaluate(c, p.content, !p.remove)
	return &r, nil
}

// commit records the outcome durably, the commit point, and returns it as
// decoded from the bytes written, so that a fresh execution and a later
// replay return values that are equal field for field. The intent record
// before it stays in the table: an outcome supersedes it, and it is never
// consulted again.
func (w *World) commit(h string, a world.Action, out world.Outcome) (world.Outcome, error) {
	return w.settle(h, a, out, recordDurably)
}

func (w *World) stage(name string) {
	if w.OnStage != nil {
		w.OnStage(name)
	}
}

// plan is what executing an action will do: its outcome (before PostCheck)
// and, when write is set, the target's complete new content.
type plan struct {
	out     world.Outcome
	write   bool
	remove  bool // the write removes the target (restoring an absence)
	content []byte
	before  []byte // the target's bytes before, for the rollback bundle
	existed bool
}

// plan computes the outcome and the new content from the current content.
// It has no effect on the world.
func (w *World) plan(ctx context.Context, key, h string, a world.Action, target string) (plan, error) {
	cur, exists, err := w.readFile(target)
	return w.planOn(ctx, key, h, a, target, cur, exists, err)
}

// planOn is plan over the target's content as already read (readErr is
// the read's error), for a caller that has just read it to check its hash.
func (w *World) planOn(ctx context.Context, key, h string, a world.Action, target string, cur []byte, exists bool, readErr error) (plan, error) {
	p := plan{out: world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, Target: target}}
	fail := func(err error) (plan, error) {
		var f *failure
		if !errors.As(err, &f) {
			return plan{}, err
		}
		p.out.Status, p.out.Detail = world.OutcomeFailed, f.detail
		return p, nil
	}
	if a.Operation.Writes() {
		if err := w.checkWritable(target); err != nil {
			return fail(err)
		}
	}
	if readErr != nil {
		return fail(readErr)
	}
	before := hashOf(cur, exists)
	p.out.BeforeSHA256, p.out.AfterSHA256 = before, before
	p.before, p.existed = cur, exists
	switch a.Operation {
	case world.OpInspect:
		p.out.Status = world.OutcomeNoChange
	case world.OpApplyPatch:
		switch {
		case a.ExpectSHA256 != before:
			p.out.Status, p.out.Detail = world.OutcomeStale, fmt.Sprintf("target changed since the action was derived: expected %s, found %s", describe(a.ExpectSHA256), describe(before))
		case !exists:
			p.out.Status, p.out.Detail = world.OutcomeFailed, "target does not exist"
		case !bytes.Contains(cur, []byte(a.Find)):
			p.out.Status, p.out.Detail = world.OutcomeNoChange, "find text is not present"
		default:
			n := -1 // every occurrence
			if a.Occurrences > 0 {
				n = a.Occurrences
			}
			p.change(bytes.Replace(cur, []byte(a.Find), []byte(a.Replace), n))
		}
	case world.OpMarkIssue:
		next := bytes.Clone(cur)
		if len(next) > 0 && next[len(next)-1] != '\n' {
			next = append(next, '\n')
		}
		next = fmt.Appendf(next, "- %s %s: %s\n", issueLineTag(h), a.CheckID, oneLine(a.Note))
		for _, l := range a.Quote {
			// Each quoted line stays one line below the entry.
			next = fmt.Appendf(next, "  > %s\n", strings.TrimRight(strings.Map(noControl, l), " "))
		}
		p.change(next)
	case world.OpRecordArtifact:
		switch {
		case !exists:
			p.change([]byte(a.Content))
		case bytes.Equal(cur, []byte(a.Content)):
			p.out.Status = world.OutcomeNoChange
		case a.ExpectSHA256 == before:
			p.change([]byte(a.Content))
		default:
			p.out.Status, p.out.Detail = world.OutcomeStale, fmt.Sprintf("target holds other content than the action expected: expected %s, found %s", describe(a.ExpectSHA256), describe(before))
		}
	case world.OpRestore:
		switch {
		case before == a.RestoreSHA256:
			p.out.Status, p.out.Detail = world.OutcomeNoChange, "the target already is as the snapshot"
		case before != a.ExpectSHA256:
			p.out.Status, p.out.Detail = world.OutcomeStale, fmt.Sprintf("target changed since the undone effect: expected %s, found %s", describe(a.ExpectSHA256), describe(before))
		case a.Absent:
			p.out.Status, p.out.AfterSHA256 = world.OutcomeCommitted, ""
			p.write, p.remove = true, true
		default:
			restored, ok := world.Splice(cur, a.KeepPrefix, a.KeepSuffix, a.Content)
			if !ok || codec.FingerprintOf(restored) != a.RestoreSHA256 {
				p.out.Status, p.out.Detail = world.OutcomeFailed, "the rollback bundle does not rebuild the recorded before state"
				break
			}
			p.change(restored)
		}
	case world.OpRunValidation:
		results := make([]world.CheckResult, 0, len(a.Checks))
		for _, id := range a.Checks {
			c, _ := w.checkByID(id) // validated
			r, err := w.evaluate(ctx, c)
			if err != nil {
				return plan{}, err
			}
			results = append(results, r)
		}
		report, err := codec.Marshal(results)
		if err != nil {
			return plan{}, fmt.Errorf("encode validation report: %w", err)
		}
		p.out.Results = results
		p.change(report)
		if p.out.Status == world.OutcomeNoChange {
			// The report is already there, byte for byte: the validation
			// still ran and its answer is the outcome.
			p.out.Status, p.out.Detail = world.OutcomeCommitted, ""
		}
	}
	return p, nil
}

// applyPlan carries out a planned write. A refusal or failure of the write
// itself becomes a failed outcome; only I/O errors of the machinery are
// returned. Failures are detected before the rename, so the world still
// holds the before state and the outcome can say so.
func (w *World) applyPlan(target string, p *plan) error {
	err := w.apply(target, *p)
	var f *failure
	if err != nil && !errors.As(err, &f) {
		return err
	}
	if err != nil {
		p.out.Status, p.out.Detail, p.out.AfterSHA256, p.out.Results = world.OutcomeFailed, f.detail, p.out.BeforeSHA256, nil
	}
	return nil
}

// apply carries out a planned write.
func (w *World) apply(target string, p plan) error {
	if p.remove {
		return w.remove(target)
	}
	return w.replace(target, p.content)
}

// change makes content the planned new content. If it equals the current
// bytes there is no effect to make, and none is planned: an intent whose
// before and after hashes were equal could not classify a crash.
func (p *plan) change(content []byte) {
	after := codec.FingerprintOf(content)
	if after == p.out.BeforeSHA256 {
		p.out.Status, p.out.Detail = world.OutcomeNoChange, "the change leaves the content as it is"
		return
	}
	p.out.Status, p.out.AfterSHA256 = world.OutcomeCommitted, after
	p.write, p.content = true, content
}

// oneLine keeps a note on one line: ISSUES.md holds one issue per line, and
// tests count lines to detect duplicated effects.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// noControl turns a control character (a newline, a tab, an escape) into a
// space, so that a quoted line of output stays one line of text.
func noControl(r rune) rune {
	if r < 0x20 || r == 0x7f {
		return ' '
	}
	return r
}
