package sandbox

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/acr-project/acr/internal/diff"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Prepare computes what executing a under key would do, without doing it:
// the intent the caller must make durable before calling Commit. If the
// key already has a recorded outcome, that outcome is returned instead and
// nothing needs to run.
//
// Prepare and Commit split Execute for a caller that keeps its own durable
// log (the kernel puts the intent in the ledger, in the same fsync as the
// decision, and the outcome after it): the sandbox then writes no intent
// record of its own, and for a file effect no outcome record either, since
// the caller's intent and the target's hash rebuild it after a crash. Only
// a command leaves records in the table (see Commit).
func (w *World) Prepare(ctx context.Context, key string, a world.Action) (world.Intent, *world.Outcome, error) {
	h, err := keyHex(key)
	if err != nil {
		return world.Intent{}, nil, fmt.Errorf("prepare: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.prepared = nil
	target := resolveTarget(h, a)
	prior, err := w.priorOutcome(key, h, a, target, true, nil)
	if err != nil {
		return world.Intent{}, nil, fmt.Errorf("prepare %s: %w", key, err)
	}
	if prior != nil {
		return world.Intent{}, prior, nil
	}
	if err := w.validate(a); err != nil {
		return world.Intent{}, nil, fmt.Errorf("prepare %s: %w", key, err)
	}
	if a.OnSet() {
		in, err := w.prepareSet(key, a)
		if err != nil {
			return world.Intent{}, nil, fmt.Errorf("prepare %s: %w", key, err)
		}
		return in, nil, nil
	}
	cur, exists, readErr := w.readObserved(target)
	p, err := w.planOn(ctx, key, h, a, target, cur, exists, readErr)
	if err != nil {
		return world.Intent{}, nil, fmt.Errorf("prepare %s: %w", key, err)
	}
	in := world.Intent{Schema: world.IntentSchema, Key: key, Action: a, Changes: p.write, Planned: p.out}
	if p.write {
		in.Rollback = rollbackBundle(target, p)
		in.Diff = planDiff(target, p)
		w.prepared = &preparedPlan{key: key, target: target, action: a.Ref(), plan: p}
	}
	return in, nil, nil
}

// MaxDiffBytes bounds the diff an intent carries: past it the diff is cut
// at a line boundary and ends with a line saying how much was left out.
const MaxDiffBytes = 16 << 10

// planDiff is the unified diff of a planned write to target.
func planDiff(target string, p plan) string {
	after := p.content
	if p.remove {
		after = nil
	}
	d := diff.Unified("a/"+target, "b/"+target, p.before, after)
	if len(d) <= MaxDiffBytes {
		return d
	}
	cut := strings.LastIndexByte(d[:MaxDiffBytes], '\n') + 1
	return d[:cut] + fmt.Sprintf("... (diff cut here: %d more bytes)\n", len(d)-cut)
}

// preparedPlan remembers a Prepare's plan for the Commit of the same key.
type preparedPlan struct {
	key, target string
	action      codec.Ref
	plan        plan
}

// replan returns the plan for committing a on target, whose current bytes
// are content with fingerprint now. A plan depends on the action, the
// target's bytes and whether the target may be written (run_validation
// excepted: it reads other files), so the plan Prepare made for the same
// key, action and before-hash is the same plan while the target is still
// writable, and is reused; otherwise it is computed again.
func (w *World) replan(ctx context.Context, key, h string, a world.Action, target string, content []byte, exists bool, now codec.Fingerprint) (plan, error) {
	if pp := w.prepared; pp != nil && pp.key == key && pp.target == target && pp.action == a.Ref() &&
		a.Operation != world.OpRunValidation && pp.plan.out.BeforeSHA256 == now && w.checkWritable(target) == nil {
		return pp.plan, nil
	}
	return w.planOn(ctx, key, h, a, target, content, exists, nil)
}

// unapplied reports whether in is the intent of the plan this World's
// last Prepare made for key and nothing has applied since: Commit clears
// the plan before it applies it, and a new World (after a crash) has
// none, so only then is it known that the effect did not happen.
func (w *World) unapplied(key string, a world.Action, target string, in world.Intent) bool {
	pp := w.prepared
	return pp != nil && pp.key == key && pp.target == target && pp.action == a.Ref() && pp.plan.write &&
		pp.plan.out.BeforeSHA256 == in.Planned.BeforeSHA256 && pp.plan.out.AfterSHA256 == in.Planned.AfterSHA256
}

// MaxRollbackBytes bounds the pre-image a rollback bundle carries: the
// bundle lives in the ledger, and a target larger than this cannot be
// undone, so an action on it is blocked.
const MaxRollbackBytes = 1 << 20

// rollbackBundle takes the target's pre-image as a delta against the
// planned content, or returns nil when the replaced bytes cannot be
// carried as text (not UTF-8, or too large).
func rollbackBundle(target string, p plan) *world.RollbackBundle {
	b := &world.RollbackBundle{Target: target, Existed: p.existed, Before: p.out.BeforeSHA256, After: p.out.AfterSHA256}
	if p.existed && !p.remove {
		pre := commonPrefix(p.before, p.content)
		suf := commonSuffix(p.before[pre:], p.content[pre:])
		b.Prefix, b.Suffix = int64(pre), int64(suf)
		b.Content = string(p.before[pre : len(p.before)-suf])
	} else {
		b.Content = string(p.before)
	}
	if len(b.Content) > MaxRollbackBytes || !utf8.ValidString(b.Content) {
		return nil
	}
	return b
}

func commonPrefix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[i] != b[i] {
			return i
		}
	}
	return n
}

func commonSuffix(a, b []byte) int {
	n := min(len(a), len(b))
	for i := range n {
		if a[len(a)-1-i] != b[len(b)-1-i] {
			return i
		}
	}
	return n
}

// Readback reads what an effect changed, and the checks on it, through the
// observation path, for the observer's report after the effect: the
// outcome's target, or the set of files a command touches. It never goes
// through the executor's records.
func (w *World) Readback(ctx context.Context, a world.Action, out world.Outcome) (world.Readback, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if a.OnSet() {
		return w.readbackSet(ctx, a)
	}
	rb, err := w.readbackFile(ctx, out.Target)
	if err != nil {
		return rb, err
	}
	// A command check is about no one file: when the action addressed
	// one, it is run again, so that the evaluator sees whether the change
	// made it pass.
	if c, ok := w.checkByID(a.CheckID); ok {
		if k, _ := world.CheckKindOf(c.Kind); !k.OnFile {
			err = w.judgeInto(ctx, &rb, c)
		}
	}
	return rb, err
}

func (w *World) readbackFile(ctx context.Context, target string) (world.Readback, error) {
	rb := world.Readback{Schema: world.ReadbackSchema, Target: target, Passing: []string{}, Failing: []string{}}
	content, fi, err := w.readStat(target, true)
	exists := fi != nil
	if err != nil && !refused(err) {
		return rb, fmt.Errorf("readback %s: %w", target, err)
	}
	if err == nil {
		rb.SHA256 = hashOf(content, exists)
	}
	readErr := err
	judged := false
	for _, c := range w.spec.Checks {
		if c.Path != target {
			continue
		}
		if k, ok := world.CheckKindOf(c.Kind); ok && k.OnFile {
			judged = true
		}
		// The checks judge the bytes just read; a path that could not be
		// read is evaluated again for the refusal's detail.
		r := world.Evaluate(c, content, exists)
		if readErr != nil {
			if r, err = w.evaluate(ctx, c); err != nil {
				return rb, fmt.Errorf("readback %s: %w", target, err)
			}
		}
		if r.Status == world.CheckPass {
			rb.Passing = append(rb.Passing, c.ID)
		} else {
			rb.Failing = append(rb.Failing, c.ID)
		}
	}
	slices.Sort(rb.Passing)
	slices.Sort(rb.Failing)
	if readErr == nil && exists {
		// The next observation may list the target from this read; it
		// needs the bytes themselves only when a check judges them.
		var data []byte
		if judged {
			data = bytes.Clone(content)
		}
		w.toObserve = newHandoff(target, fi, rb.SHA256, int64(len(content)), data)
	}
	return rb, nil
}

// Commit carries out a prepared intent at most once. The target's current
// hash decides: the planned after-hash means the effect already happened
// (a crash came between the effect and the caller's record of its
// outcome: reused is true), the before-hash means it did not (it is applied now), anything
// else means something else changed the target, and Commit returns
// ErrUncertain without touching it. The caller's durable intent and the
// world are what recovery trusts, so nothing is recorded for a file effect
// or a restore. A run_command is the exception, because its effect has no
// single before and after: a started marker is appended durably before the
// program starts and its outcome, unsynced, after it ended (command.go).
func (w *World) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (out world.Outcome, reused bool, err error) {
	return w.CommitWhen(ctx, key, a, in, nil)
}

func (w *World) commitIntent(ctx context.Context, key, h string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	if in.Schema != world.IntentSchema || in.Key != key || in.Action.Ref() != a.Ref() {
		return world.Outcome{}, false, fmt.Errorf("the intent given is not the intent of this action and key")
	}
	target := resolveTarget(h, a)
	prior, err := w.priorOutcome(key, h, a, target, true, &in)
	if err != nil {
		return world.Outcome{}, false, err
	}
	if prior != nil {
		return *prior, true, nil
	}
	if a.OnSet() {
		return w.commitSet(ctx, key, h, a, in)
	}
	if !in.Changes {
		out := in.Planned
		if out.PostCheck, err = w.postCheck(ctx, a.CheckID); err != nil {
			return world.Outcome{}, false, err
		}
		out, err = w.settle(h, a, out, recordNothing)
		return out, false, err
	}
	content, exists, err := w.readFile(target)
	if err != nil {
		if refused(err) {
			return world.Outcome{}, false, fmt.Errorf("%w: %s on %s: the target can no longer be read: %w", ErrUncertain, a.Operation, target, err)
		}
		return world.Outcome{}, false, err
	}
	switch now := hashOf(content, exists); now {
	case in.Planned.AfterSHA256:
		if err := w.syncFound(target); err != nil {
			return world.Outcome{}, false, err
		}
		out := in.Planned
		if out.PostCheck, err = w.postCheck(ctx, a.CheckID); err != nil {
			return world.Outcome{}, false, err
		}
		out, err = w.settle(h, a, out, recordNothing)
		return out, err == nil, err
	case in.Planned.BeforeSHA256:
		p, err := w.replan(ctx, key, h, a, target, content, exists, now)
		w.prepared = nil
		if err != nil {
			return world.Outcome{}, false, err
		}
		if !p.write || p.out.AfterSHA256 != in.Planned.AfterSHA256 {
			return world.Outcome{}, false, fmt.Errorf("%w: %s on %s: planning again from the same bytes gives a different result", ErrUncertain, a.Operation, target)
		}
		w.beforeCommit()
		if err := w.applyPlan(target, &p); err != nil {
			return world.Outcome{}, false, err
		}
		if p.out.PostCheck, err = w.postCheckWritten(ctx, a.CheckID, target, p); err != nil {
			return world.Outcome{}, false, err
		}
		out, err := w.settle(h, a, p.out, recordNothing)
		return out, false, err
	default:
		if w.unapplied(key, a, target, in) {
			// This World planned the effect and has not applied it, so
			// it certainly did not happen: the target changed between
			// the plan and now, as a target that changed before the plan
			// makes Prepare's outcome stale.
			w.prepared = nil
			out := world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, Target: target,
				Status: world.OutcomeStale, BeforeSHA256: now, AfterSHA256: now,
				Detail: fmt.Sprintf("target changed since the effect was planned: expected %s, found %s", describe(in.Planned.BeforeSHA256), describe(now))}
			out, err := w.settle(h, a, out, recordNothing)
			return out, false, err
		}
		return world.Outcome{}, false, fmt.Errorf("%w: %s on %s: the target's hash is %s, neither %s from before the effect nor %s from after it; something else changed it, so whether the effect happened is for a person to decide",
			ErrUncertain, a.Operation, target, describe(now), describe(in.Planned.BeforeSHA256), describe(in.Planned.AfterSHA256))
	}
}

// recording says how settle records an outcome.
type recording uint8

const (
	// recordNothing: the caller's log records the outcome, and the world
	// (with the caller's durable intent) rebuilds it after a crash, as for
	// a file effect of Commit.
	recordNothing recording = iota + 1
	// recordUnsynced: appended without fsync. A command's outcome: if a
	// crash loses it, its durable started marker and the recovery rules
	// (the check passes, or the command is idempotent, or a person
	// decides) stand in for it.
	recordUnsynced
	// recordDurably: appended and fsynced, the commit point of Execute.
	recordDurably
)

// settle records out as told, marks StageAfterActionCommit, and returns
// the outcome as decoded from its canonical record bytes: a fresh outcome,
// one looked up later and one rebuilt by recovery are then equal field for
// field (a nil and an empty list, say, encode alike and decode alike).
func (w *World) settle(h string, a world.Action, out world.Outcome, how recording) (world.Outcome, error) {
	return w.settleRecord(h, outcomeRecord{Schema: OutcomeSchema, ActionRef: a.Ref(), Outcome: out}, how)
}

// settleCommand records a command's outcome, unsynced, bound to the
// intent it carried out (see checkCommandOutcome).
func (w *World) settleCommand(h string, a world.Action, in world.Intent, out world.Outcome) (world.Outcome, error) {
	return w.settleRecord(h, outcomeRecord{Schema: OutcomeSchema, ActionRef: a.Ref(), IntentRef: intentRef(in), Outcome: out}, recordUnsynced)
}

func (w *World) settleRecord(h string, rec outcomeRecord, how recording) (world.Outcome, error) {
	// An outcome, and StageAfterActionCommit, come after the intent even
	// where nothing changed (a gated Commit: see CommitWhen).
	if err := w.proceed(); err != nil {
		return world.Outcome{}, err
	}
	var data []byte
	var err error
	switch how {
	case recordNothing:
		data, err = codec.Marshal(rec)
		if err != nil {
			err = fmt.Errorf("encode outcome: %w", err)
		}
	case recordUnsynced, recordDurably:
		data, err = w.appendRecord(h, kindOutcome, rec, how == recordDurably)
	default:
		err = fmt.Errorf("settle: recording %d is not a way to record", how)
	}
	if err != nil {
		return world.Outcome{}, err
	}
	var back outcomeRecord
	if err := codec.UnmarshalCanonical(data, &back); err != nil {
		return world.Outcome{}, fmt.Errorf("decode outcome just encoded: %w", err)
	}
	w.stage(StageAfterActionCommit)
	return back.Outcome, nil
}
