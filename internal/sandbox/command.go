package sandbox

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/command"
	"github.com/acr-project/acr/internal/world"
)

// This file holds what the sandbox does with programs: command checks,
// run_command fixes, and the set of files a command touches (its before and
// after hashes, its rollback bundle, the readback and the restore).
//
// A command is not a single-file replace, so the hash protocol of file
// effects cannot tell after a crash whether it ran. A started marker does
// instead: it is appended to the idempotency table, durably, right before
// the program starts. No marker means the program never started and may
// run now; a marker without an outcome means it may have run, and then the
// fix's check decides (passing: the effect is taken as done), or the fix's
// own word that running it twice is harmless, or a person (ErrUncertain).
// The outcome is appended after the program ended, without fsync: if a
// crash loses it, the marker and these rules stand in for it.

// StartedSchema names the marker written before a command starts.
const StartedSchema = "acr.sandbox-command-started/v0.1"

type startedRecord struct {
	Schema    string    `json:"schema"`
	Key       string    `json:"idempotency_key"`
	ActionRef codec.Ref `json:"action_ref"`
	// IntentRef is the ref of the intent the caller recorded in its own
	// log (the ledger's action intent object), binding the marker to it.
	IntentRef codec.Ref `json:"intent_ref,omitempty"`
}

// started reports whether a started marker is recorded for key. A marker
// that names another action or another intent than in is not this
// intent's: whether the program ran for it is unknown (ErrUncertain).
func (w *World) started(key, h string, a world.Action, in world.Intent) (bool, error) {
	var rec startedRecord
	ok, name, err := w.readRecord(h, kindStarted, &rec, false)
	if err != nil || !ok {
		return false, err
	}
	if rec.Schema != StartedSchema || rec.Key != key {
		return false, fmt.Errorf("started marker in %s: schema %q, key %q: not the marker of %s", name, rec.Schema, rec.Key, key)
	}
	if rec.ActionRef != a.Ref() || (rec.IntentRef != "" && rec.IntentRef != intentRef(in)) {
		return false, fmt.Errorf("%w: the started marker of %s in %s names action %s and intent %s, not %s and %s as recorded",
			ErrUncertain, key, name, rec.ActionRef, orAbsent(rec.IntentRef), a.Ref(), intentRef(in))
	}
	return true, nil
}

// intentRef is the ref the caller's log gives the intent (the kernel
// records it as the object of its action intent event, kind "intent").
func intentRef(in world.Intent) codec.Ref {
	ref, _, err := codec.RefOf("intent", in)
	if err != nil {
		return ""
	}
	return ref
}

func orAbsent(r codec.Ref) string {
	if r == "" {
		return "(none)"
	}
	return string(r)
}

// checkCommandOutcome decides whether a command outcome found in the table
// may be reused for the intent in: a record is only ever appended by this
// process after the program ended, so it must be bound to this very
// intent, start from its before hash, agree with the files as they are
// now (nothing ran since), and say what its own command result says. A
// record edited after the fact (committed turned into failed, another
// intent's outcome copied in) fails one of these, and then whether the
// effect happened is for a person to decide (ErrUncertain), never a
// silent verdict. in is nil when the caller has no intent for the key
// (Prepare), and then the record is checked against the world only.
func (w *World) checkCommandOutcome(key string, a world.Action, in *world.Intent, rec outcomeRecord) error {
	out := rec.Outcome
	var why []string
	if rec.ActionRef != a.Ref() {
		why = append(why, fmt.Sprintf("it names action %s, not %s", rec.ActionRef, a.Ref()))
	}
	if in != nil {
		if rec.IntentRef != "" && rec.IntentRef != intentRef(*in) {
			why = append(why, fmt.Sprintf("it names intent %s, the recorded intent is %s", rec.IntentRef, intentRef(*in)))
		}
		if out.BeforeSHA256 != in.Planned.BeforeSHA256 {
			why = append(why, fmt.Sprintf("its before hash is %s, the intent planned from %s", describe(out.BeforeSHA256), describe(in.Planned.BeforeSHA256)))
		}
	}
	facts, _, _, err := w.scan(touchedBy(a), false)
	if err != nil {
		return err
	}
	if now := world.SetHash(facts); now != out.AfterSHA256 {
		why = append(why, fmt.Sprintf("its after hash is %s, the files hash to %s", describe(out.AfterSHA256), describe(now)))
	}
	if want, ok := commandStatus(out); !ok {
		why = append(why, "its fields do not describe a command that ran or was recovered")
	} else if want != out.Status {
		why = append(why, fmt.Sprintf("its status is %s, its own command result says %s", out.Status, want))
	}
	if len(why) == 0 {
		return nil
	}
	return fmt.Errorf("%w: the outcome record of run_command %s (%s) in %s does not agree with the run: %s; a person decides (acr resolve --ran records it as done, --not-ran as not done; approve runs it again, deny sets the item aside)",
		ErrUncertain, a.FixID, key, TableName, strings.Join(why, "; "))
}

// commandStatus is the status runCommand and recoverCommand give an
// outcome with these fields, and whether the fields are any they give.
func commandStatus(out world.Outcome) (world.OutcomeStatus, bool) {
	if out.Command == nil {
		switch {
		case strings.HasPrefix(out.Detail, "could not be started: "):
			return world.OutcomeFailed, true
		case out.PostCheck != nil && out.PostCheck.Status == world.CheckPass:
			return world.OutcomeCommitted, true // recovered: the check passed
		}
		return "", false
	}
	cr := out.Command
	switch {
	case cr.TimedOut, cr.Signal != "", cr.ExitCode != 0:
		return world.OutcomeFailed, true
	case out.AfterSHA256 != out.BeforeSHA256 || len(out.Changed) > 0:
		return world.OutcomeCommitted, true
	}
	return world.OutcomeNoChange, true
}

// env builds the environment of a program the world runs.
func (w *World) env(extra map[string]string) []string {
	return command.Environment(w.Environ, w.spec.PassEnv, extra)
}

func timeout(seconds int) time.Duration { return time.Duration(world.Timeout(seconds)) * time.Second }

// evaluateCommand runs a command check: exit 0 passes, 1 or 2 fail (the
// Nagios plugin convention, so monitoring plugins work as checks). A
// timeout, a signal, any other exit code or a program that cannot start is
// a *world.ProviderFault: the check gave no verdict about the world.
func (w *World) evaluateCommand(ctx context.Context, c world.Check) (world.CheckResult, int64, error) {
	src := "check:" + c.ID
	// The program may write files: no read made before it stands for one after.
	if err := w.beforeChange(); err != nil {
		return world.CheckResult{}, 0, fmt.Errorf("check %s: %w", c.ID, err)
	}
	res, err := command.Run(ctx, command.Spec{Argv: c.Argv, Dir: w.dir, Env: w.env(nil), Timeout: timeout(c.TimeoutSeconds)})
	if errors.Is(err, command.ErrStart) {
		return world.CheckResult{}, 0, &world.ProviderFault{Source: src, Reason: err.Error()}
	}
	if err != nil {
		return world.CheckResult{}, 0, fmt.Errorf("check %s: %w", c.ID, err)
	}
	cr := res.CommandResult
	cr.DurationMS = 0 // a check's duration is not part of what it observed
	r := world.CheckResult{ID: c.ID, Command: &cr, TargetSHA256: world.CommandVerdict(c, cr)}
	fault := func(reason string) (world.CheckResult, int64, error) {
		return world.CheckResult{}, 0, &world.ProviderFault{Source: src, Reason: reason, Command: &cr}
	}
	switch {
	case cr.TimedOut:
		return fault(fmt.Sprintf("timed out after %d s; its process group was killed", world.Timeout(c.TimeoutSeconds)))
	case cr.Signal != "":
		return fault("killed by signal " + cr.Signal)
	case cr.ExitCode == 0:
		r.Status = world.CheckPass
	case cr.ExitCode == 1 || cr.ExitCode == 2:
		r.Status = world.CheckFail
		level := map[int]string{1: "warning", 2: "critical"}[cr.ExitCode]
		r.Detail = fmt.Sprintf("exit %d (%s)", cr.ExitCode, level)
		if line := firstLine(cr.Stdout, cr.Stderr); line != "" {
			r.Detail += ": " + line
		}
	default:
		return fault(fmt.Sprintf("exit %d is neither a pass (0) nor a fail (1 warning, 2 critical): %s", cr.ExitCode, firstLine(cr.Stderr, cr.Stdout)))
	}
	return r, res.Duration.Milliseconds(), nil
}

// firstLine returns the first non-empty line of the first non-empty text,
// cut to a readable length.
func firstLine(texts ...string) string {
	for _, t := range texts {
		for _, line := range strings.Split(t, "\n") {
			if line = strings.TrimSpace(line); line != "" {
				if len(line) > 200 {
					line = strings.ToValidUTF8(line[:200], "") + "…"
				}
				return line
			}
		}
	}
	return ""
}

// touchedBy returns the patterns a set action covers ("**" for a command
// that declares none).
func touchedBy(a world.Action) []string { return a.Paths() }

// validateCommand refuses a run_command that the spec does not declare, in
// exactly this form: the sandbox runs only what the environment's author
// wrote down, whatever proposed it.
func (w *World) validateCommand(a world.Action) error {
	k, _ := world.Kind(a.Operation)
	if code := k.Declared(&w.spec, a); code != "" {
		return fmt.Errorf("run_command %q: %s: not a command fix the environment declares in this form", a.FixID, code)
	}
	return nil
}

// scan walks the world like Observe and returns the files matching
// patterns. With keep it also returns their content, as long as all of it
// fits in MaxRollbackBytes as text (complete says whether it did).
func (w *World) scan(patterns []string, keep bool) (facts []world.FileFact, images []world.FileImage, complete bool, err error) {
	var obs world.Observation
	wk := walker{w: w, obs: &obs, limits: w.spec.ObservationLimits(), match: patterns}
	complete = keep
	var size int
	if keep {
		wk.keep = func(p string, data []byte) {
			size += len(data)
			if !complete || size > MaxRollbackBytes || !utf8.Valid(data) {
				complete, images = false, nil
				return
			}
			images = append(images, world.FileImage{Path: p, SHA256: codec.FingerprintOf(data), Content: string(data)})
		}
	}
	if err := wk.dir(".", 0); err != nil {
		return nil, nil, false, err
	}
	slices.SortFunc(obs.Files, func(a, b world.FileFact) int { return strings.Compare(a.Path, b.Path) })
	slices.SortFunc(images, func(a, b world.FileImage) int { return strings.Compare(a.Path, b.Path) })
	if len(obs.Refused) > 0 && keep {
		// A refused path under the touches (a symlink, say) cannot be put
		// back, so the set has no complete pre-image.
		for _, r := range obs.Refused {
			if world.MatchAny(patterns, r.Path) {
				complete, images = false, nil
			}
		}
	}
	return obs.Files, images, complete, nil
}

// prepareSet computes the intent of a set action: the set's hash before,
// and for a command the set's whole pre-image as its rollback bundle
// (nil when it is too large to carry, which blocks the command).
func (w *World) prepareSet(key string, a world.Action) (world.Intent, error) {
	touches := touchedBy(a)
	facts, images, complete, err := w.scan(touches, a.Operation == world.OpRunCommand)
	if err != nil {
		return world.Intent{}, err
	}
	before := world.SetHash(facts)
	out := world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, BeforeSHA256: before}
	in := world.Intent{Schema: world.IntentSchema, Key: key, Action: a, Changes: true}
	if a.Operation == world.OpRestore {
		switch before {
		case a.RestoreSHA256:
			out.Status, out.Detail, out.AfterSHA256, in.Changes = world.OutcomeNoChange, "the files already are as the snapshot", before, false
		case a.ExpectSHA256:
			out.Status, out.AfterSHA256 = world.OutcomeCommitted, a.RestoreSHA256
		default:
			out.Status, out.Detail, out.AfterSHA256, in.Changes = world.OutcomeStale,
				fmt.Sprintf("the files changed since the undone command: expected %s, found %s", describe(a.ExpectSHA256), describe(before)), before, false
		}
		in.Planned = out
		if in.Changes {
			// The restore undoes the run's own effect; its bundle is the
			// set as the command left it, which is what Expect names.
			in.Rollback = &world.RollbackBundle{Touches: touches, Before: a.ExpectSHA256, After: a.RestoreSHA256, Files: []world.FileImage{}}
			if cur, imgs, ok, err := w.scan(touches, true); err == nil && ok && world.SetHash(cur) == a.ExpectSHA256 {
				in.Rollback.Files = imgs
			} else if err != nil {
				return world.Intent{}, err
			} else {
				in.Rollback = nil
			}
		}
		return in, nil
	}
	out.Status, out.Detail = world.OutcomeCommitted, "what the command changes is known once it ran"
	in.Planned = out
	if complete {
		if images == nil {
			images = []world.FileImage{}
		}
		in.Rollback = &world.RollbackBundle{Touches: touches, Before: before, Files: images}
	}
	return in, nil
}

// commitSet carries out a set action's intent at most once.
func (w *World) commitSet(ctx context.Context, key, h string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	if !in.Changes {
		out, err := w.settle(h, a, in.Planned, recordNothing)
		return out, false, err
	}
	if a.Operation == world.OpRestore {
		return w.commitRestoreSet(key, h, a, in)
	}
	started, err := w.started(key, h, a, in)
	if err != nil {
		return world.Outcome{}, false, err
	}
	if started {
		return w.recoverCommand(ctx, key, h, a, in)
	}
	facts, _, _, err := w.scan(touchedBy(a), false)
	if err != nil {
		return world.Outcome{}, false, err
	}
	if now := world.SetHash(facts); now != in.Planned.BeforeSHA256 {
		out := in.Planned
		out.Status, out.AfterSHA256 = world.OutcomeStale, now
		out.Detail = fmt.Sprintf("the files the command touches changed since it was planned: expected %s, found %s", describe(in.Planned.BeforeSHA256), describe(now))
		out, err := w.settle(h, a, out, recordNothing)
		return out, false, err
	}
	out, err := w.runCommand(ctx, key, h, a, in)
	return out, false, err
}

// runCommand starts the command, after making its started marker durable,
// and records what it did.
func (w *World) runCommand(ctx context.Context, key, h string, a world.Action, in world.Intent) (world.Outcome, error) {
	if _, err := w.appendRecord(h, kindStarted, startedRecord{Schema: StartedSchema, Key: key, ActionRef: a.Ref(), IntentRef: intentRef(in)}, true); err != nil {
		return world.Outcome{}, err
	}
	before := w.lastFiles
	if err := w.beforeChange(); err != nil {
		return world.Outcome{}, err
	}
	w.stage(StageBeforeActionCommit)
	extra := map[string]string{"ACR_IDEMPOTENCY_KEY": key, "ACR_RUN_ID": in.RunID, "ACR_CYCLE": strconv.FormatInt(in.CycleSeq, 10)}
	res, runErr := command.Run(ctx, command.Spec{Argv: a.Argv, Dir: w.dir, Env: w.env(extra), Timeout: timeout(a.TimeoutSeconds)})
	if runErr != nil && !errors.Is(runErr, command.ErrStart) {
		return world.Outcome{}, runErr
	}
	out := world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, BeforeSHA256: in.Planned.BeforeSHA256}
	facts, _, _, err := w.scan(touchedBy(a), false)
	if err != nil {
		return world.Outcome{}, err
	}
	out.AfterSHA256 = world.SetHash(facts)
	if before != nil {
		if out.Changed, err = w.changedSince(before); err != nil {
			return world.Outcome{}, err
		}
		if len(a.Touches) > 0 {
			for _, p := range out.Changed {
				if !world.MatchAny(a.Touches, p) {
					out.Outside = append(out.Outside, p)
				}
			}
		}
	}
	changed := out.AfterSHA256 != out.BeforeSHA256 || len(out.Changed) > 0
	switch {
	case runErr != nil:
		out.Status, out.Detail = world.OutcomeFailed, "could not be started: "+runErr.Error()
	default:
		cr := res.CommandResult
		cr.DurationMS = res.Duration.Milliseconds()
		out.Command = &cr
		switch {
		case cr.TimedOut:
			out.Status, out.Detail = world.OutcomeFailed, fmt.Sprintf("timed out after %d s; its process group was killed", world.Timeout(a.TimeoutSeconds))
		case cr.Signal != "":
			out.Status, out.Detail = world.OutcomeFailed, "killed by signal "+cr.Signal
		case cr.ExitCode != 0:
			out.Status, out.Detail = world.OutcomeFailed, fmt.Sprintf("exit %d", cr.ExitCode)
			if line := firstLine(cr.Stderr, cr.Stdout); line != "" {
				out.Detail += ": " + line
			}
		case changed:
			out.Status = world.OutcomeCommitted
		default:
			out.Status, out.Detail = world.OutcomeNoChange, "exit 0 and no file changed"
		}
	}
	return w.settleCommand(h, a, in, out)
}

// recoverCommand decides about a command whose started marker is durable
// but whose outcome is not: it may have run, in part or whole.
func (w *World) recoverCommand(ctx context.Context, key, h string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	facts, _, _, err := w.scan(touchedBy(a), false)
	if err != nil {
		return world.Outcome{}, false, err
	}
	now := world.SetHash(facts)
	if a.CheckID != "" {
		c, ok := w.checkByID(a.CheckID)
		if !ok {
			return world.Outcome{}, false, fmt.Errorf("unknown check id %q", a.CheckID)
		}
		r, err := w.evaluate(ctx, c)
		if err != nil {
			return world.Outcome{}, false, fmt.Errorf("recover %s: run check %s again: %w", a.FixID, c.ID, err)
		}
		if r.Status == world.CheckPass {
			out := world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: a.Operation, Status: world.OutcomeCommitted,
				Detail:       fmt.Sprintf("recovered: the run of %s was interrupted; check %s passes now, so its effect is taken as done", a.FixID, c.ID),
				BeforeSHA256: in.Planned.BeforeSHA256, AfterSHA256: now, PostCheck: &r}
			out, err := w.settleCommand(h, a, in, out)
			return out, err == nil, err
		}
	}
	if a.Idempotent {
		out, err := w.runCommand(ctx, key, h, a, in)
		return out, false, err
	}
	why := "it addresses no check"
	if a.CheckID != "" {
		why = "check " + a.CheckID + " still fails"
	}
	return world.Outcome{}, false, fmt.Errorf("%w: run_command %s was interrupted after it started and %s; it is not declared idempotent, so running it again could repeat its effect: a person decides (acr resolve --ran records it as done, --not-ran as not done; approve runs it again, deny sets the item aside)",
		ErrUncertain, a.FixID, why)
}

// changedSince lists the files whose content differs from before (the
// last observation's), created and removed ones included, in path order.
func (w *World) changedSince(before map[string]codec.Fingerprint) ([]string, error) {
	now, _, _, err := w.scan([]string{"**"}, false)
	if err != nil {
		return nil, err
	}
	var out []string
	seen := make(map[string]bool, len(now))
	for _, f := range now {
		seen[f.Path] = true
		if h, ok := before[f.Path]; !ok || h != f.SHA256 {
			out = append(out, f.Path)
		}
	}
	for p := range before {
		if !seen[p] {
			out = append(out, p)
		}
	}
	slices.Sort(out)
	return out, nil
}

// commitRestoreSet puts a command's files back as its bundle recorded
// them: every snapshot file rewritten, every other file under the touches
// removed. The set's hash decides, as for a file effect: already restored
// means done, as the command left it means apply now, anything else is for
// a person.
func (w *World) commitRestoreSet(key, h string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	touches := touchedBy(a)
	facts, _, _, err := w.scan(touches, false)
	if err != nil {
		return world.Outcome{}, false, err
	}
	switch now := world.SetHash(facts); now {
	case a.RestoreSHA256:
		out, err := w.settle(h, a, in.Planned, recordNothing)
		return out, err == nil, err
	case a.ExpectSHA256:
	default:
		return world.Outcome{}, false, fmt.Errorf("%w: restore of %s: the files hash to %s, neither %s as the command left them nor %s as restored",
			ErrUncertain, strings.Join(touches, " "), describe(now), describe(a.ExpectSHA256), describe(a.RestoreSHA256))
	}
	w.beforeCommit()
	keep := map[string]bool{}
	for _, img := range a.Files {
		keep[img.Path] = true
		if codec.FingerprintOf([]byte(img.Content)) != img.SHA256 {
			return world.Outcome{}, false, fmt.Errorf("restore: snapshot of %s does not match its own hash", img.Path)
		}
		if err := w.checkWritable(img.Path); err != nil {
			return world.Outcome{}, false, err
		}
		if err := w.replace(img.Path, []byte(img.Content)); err != nil {
			return world.Outcome{}, false, err
		}
	}
	for _, f := range facts {
		if !keep[f.Path] {
			if err := w.remove(f.Path); err != nil {
				return world.Outcome{}, false, err
			}
		}
	}
	out := in.Planned
	after, _, _, err := w.scan(touches, false)
	if err != nil {
		return world.Outcome{}, false, err
	}
	if out.AfterSHA256 = world.SetHash(after); out.AfterSHA256 != a.RestoreSHA256 {
		out.Status, out.Detail = world.OutcomeFailed, "the files do not hash as the snapshot after restoring it"
	}
	out, err = w.settle(h, a, out, recordNothing)
	return out, false, err
}

// readbackSet is the observer's reading after a set action: the set's hash
// and the checks that could have changed (the addressed one, and those on
// files the touches cover).
func (w *World) readbackSet(ctx context.Context, a world.Action) (world.Readback, error) {
	touches := touchedBy(a)
	rb := world.Readback{Schema: world.ReadbackSchema, Passing: []string{}, Failing: []string{}}
	facts, _, _, err := w.scan(touches, false)
	if err != nil {
		return rb, err
	}
	rb.SHA256 = world.SetHash(facts)
	checks := w.checksOn(touches)
	if c, ok := w.checkByID(a.CheckID); ok && !slices.ContainsFunc(checks, func(x world.Check) bool { return x.ID == c.ID }) {
		checks = append(checks, c)
	}
	return rb, w.judgeInto(ctx, &rb, checks...)
}

// judgeInto evaluates checks for a readback, adding each to its passing or
// failing list.
func (w *World) judgeInto(ctx context.Context, rb *world.Readback, checks ...world.Check) error {
	for _, c := range checks {
		r, err := w.evaluate(ctx, c)
		if err != nil {
			return fmt.Errorf("readback: %w", err)
		}
		if r.Status == world.CheckPass {
			rb.Passing = append(rb.Passing, c.ID)
		} else {
			rb.Failing = append(rb.Failing, c.ID)
		}
	}
	slices.Sort(rb.Passing)
	slices.Sort(rb.Failing)
	return nil
}
