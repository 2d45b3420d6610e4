package main

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// statusOptions are acr status's flags: it has none of its own.
type statusOptions struct{}

func newStatusCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "status",
		Short: "Show the run: cycle, disposition and why, waits, approvals, commitments, budgets",
		Long: `Show the current state of the run. It reads the last checkpoint without
taking the run lock, so it works while another invocation is running.
With --json it prints the run-state object (acr.persistent-run-state/v0.1).`,
		Example: `  acr status
  acr status --json | jq .pending_approvals`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runStatus(cmd.Context(), statusOptions{}, a) },
	}
}

// runStatus prints the run's state from its last checkpoint, without the
// lock.
func runStatus(ctx context.Context, opts statusOptions, a *app) error {
	if a.cfg.NoLoadState {
		return runStatusSlate(a)
	}
	rs, err := a.readState()
	if err != nil {
		return err
	}
	r := rs.State.Run
	now := a.now()
	if a.cfg.JSON {
		return a.printStatusJSON(rs, now)
	}
	a.printf("run          %s (%s), started %s\n", r.RunID, r.Status, when(r.StartedAt, now))
	a.printf("cycle        %d, last change %s\n", r.CycleSeq, when(r.UpdatedAt, now))
	a.printf("disposition  %s: %s\n", r.LoopDisposition, meaning(r.LoopDisposition))
	a.printf("why          %s\n", orNone(strings.Join(r.ReasonCodes, ", ")))
	if w := r.Waiting; w != nil {
		line := fmt.Sprintf("waiting      %s since %s", w.Kind, when(w.Since, now))
		if w.Reason != "" {
			line += ": " + w.Reason
		}
		if w.Deadline != "" {
			line += ", deadline " + when(w.Deadline, now)
		}
		a.printf("%s\n", line)
	}
	since, serr := a.readSince(rs.Manifest)
	if serr != nil {
		a.printf("ledger       cannot read the ledger after the checkpoint: %v\n", serr)
	}
	if head, cycles := beyondCheckpoint(since); head != "" {
		a.printf("ledger       %s\n", head)
		for _, l := range cycles {
			a.printf("  %s\n", l)
		}
	}
	if line := a.lastFailure(rs, since, now); line != "" {
		a.printf("last error   %s\n", line)
	}
	a.printf("next wake    %s\n", nextWake(r, now))
	if nw := r.NextWake; nw != nil {
		for _, c := range nw.Conditions {
			a.printf("  wakes on   %s\n", c)
		}
	}
	queued, bad, inboxErr := a.readInbox(r)
	var pending []state.PendingApproval
	for _, p := range r.PendingApprovals {
		if p.Resolution == nil {
			pending = append(pending, p)
		}
	}
	if c := &rs.State.Contract; c.Signed() {
		a.printf("approvers    %s (answers must be signed: acr approve REF --by ID --sign-key KEY)\n", approverList(c))
	}
	if len(pending) > 0 {
		a.printf("approvals    %d pending\n", len(pending))
	}
	for _, p := range pending {
		check := ""
		if p.CheckID != "" {
			check = " (check " + p.CheckID + ")"
		}
		a.printf("  %s%s, requested in cycle %d, %s: %s\n", pendingAction(p), check, p.CycleSeq, when(p.RequestedAt, now), p.Reason)
		if p.Incident() {
			a.printf("    evidence (idempotency key %s):\n%s", p.Key, indentLines(evidenceText(p), "      ", 0))
		}
		for _, s := range p.Approvals {
			a.printf("    approved by %s (%s %s); more approvers needed\n", s.ID, s.KeyType, s.Fingerprint)
		}
		change, fresh, err := a.preview(ctx, rs.State, p)
		if rt := ruledTrial(p, fresh); rt != "" {
			a.printf("%s", indentLines(rt, "    ", 0))
		}
		if err != nil {
			a.printf("    change: cannot be shown: %v\n", err)
		} else {
			a.printf("    change:\n%s", indentLines(change, "      ", statusDiffLines))
		}
		if v := queuedVerdict(queued, p); v != "" {
			other := map[string]string{"approve": "deny", "deny": "approve"}[v]
			if other == "" {
				a.printf("    answered: %s is queued; the next acr run applies it\n", v)
				continue
			}
			a.printf("    answered: %s is queued; the next acr run applies it (until then, acr %s %s replaces it)\n", v, other, p.Ref)
			continue
		}
		if p.Incident() {
			a.printf("    ran:     acr resolve %s --ran       (recorded as done; nothing runs)\n", p.Ref)
			a.printf("    not ran: acr resolve %s --not-ran   (the item goes back to the agenda)\n", p.Ref)
			a.printf("    approve: acr approve %s   (runs it again)\n    deny:    acr deny %s\n", p.Ref, p.Ref)
			continue
		}
		a.printf("    approve: acr approve %s\n    deny:    acr deny %s\n", p.Ref, p.Ref)
	}
	if n := len(r.PendingAmendments); n > 0 {
		a.printf("amendments   %d pending\n", n)
	}
	for _, p := range r.PendingAmendments {
		a.printf("  %s %s -> %s, proposed in cycle %d by %s, %s\n", p.Target, p.Amends.Short(), p.NewRef.Short(), p.CycleSeq, p.By, when(p.CreatedAt, now))
		if s := p.Signer; s != nil {
			a.printf("    signed by %s (%s %s)\n", s.ID, s.KeyType, s.Fingerprint)
		}
		a.printf("    change:\n%s", indentLines(p.Diff, "      ", statusDiffLines))
		if v := queuedAnswer(queued, p.Ref, p.CycleSeq); v != "" {
			a.printf("    answered: %s is queued; the next acr run applies it\n", v)
			continue
		}
		a.printf("    approve: acr approve %s\n    deny:    acr deny %s\n", p.Ref, p.Ref)
	}
	cs := rs.State.Commitments.Commitments
	if len(cs) == 0 {
		a.printf("commitments  none live\n")
	} else {
		a.printf("commitments  %d live\n", len(cs))
	}
	for _, c := range cs {
		line := fmt.Sprintf("  %s v%d %s: %s", c.ID, c.Version, c.Status, c.Summary)
		if c.Standing != "" {
			line += "; standing " + c.Standing + " on " + strings.Join(c.Scope, ", ")
		}
		if c.Wake != nil {
			line += "; wakes on " + c.Wake.String()
		}
		if c.NextDue != "" {
			line += "; next look " + when(c.NextDue, now)
		}
		if c.Deadline != "" {
			line += "; deadline " + when(c.Deadline, now)
		}
		a.printf("%s\n", line)
	}
	for _, d := range r.Deferred {
		a.printf("deferred     %s until evidence %s (since %s)\n", d.ItemID, strings.Join(d.Evidence, ", "), when(d.Since, now))
	}
	for _, s := range r.Suppressed {
		a.printf("set aside    %s: %s\n", s.ItemID, s.Reason)
	}
	a.printInbox(queued, bad, inboxErr)
	a.printf("budget       %s\n", budgetLine(r.Budget, rs.State.Contract.Budgets))
	a.printf("world        %d of %d checks failing, in %s\n", failing(rs.State.Environment.Checks), len(rs.State.Environment.Checks), a.worldLine(ctx, rs.State.Spec))
	for _, f := range rs.State.Environment.Refused {
		a.printf("  refused    %s: %s\n", f.Path, f.Reason)
	}
	if r.CycleSeq > 0 {
		a.printf("history      acr log lists every cycle; acr audit %d explains the last one\n", r.CycleSeq)
	}
	if hint := nextCommand(rs.State, queued); hint != "" {
		a.printf("next: %s\n", hint)
	}
	return nil
}

// readInbox returns what waits in the inbox for the next cycle (approvals,
// wake signals, stop requests written by acr approve, wake and stop), so
// that status does not ask for an approval that is already given.
func (a *app) readInbox(r state.RunState) ([]inbox.Item, []inbox.Rejected, error) {
	q, err := a.queue()
	if err != nil {
		return nil, nil, fmt.Errorf("open state directory: %w", err)
	}
	items, bad, err := q.List()
	if err != nil {
		return nil, nil, err
	}
	var queued []inbox.Item
	for _, it := range items {
		if !slices.Contains(r.InboxSeen, it.ID) && !slices.Contains(r.AnswersConsumed, it.ID) {
			queued = append(queued, it)
		}
	}
	return queued, bad, nil
}

// queuedVerdict is the verdict of the queued answer that the next cycle
// resolves request p with, or "".
func queuedVerdict(queued []inbox.Item, p state.PendingApproval) string {
	if it := inbox.Answer(queued, p.Ref, p.CycleSeq); it != nil {
		return it.Approval.Verdict
	}
	return ""
}

// printInbox lists the queued inbox items and any inbox file the next cycle
// will reject.
func (a *app) printInbox(queued []inbox.Item, bad []inbox.Rejected, err error) {
	if err != nil {
		a.printf("inbox        unreadable: %v\n", err)
		return
	}
	if len(queued) > 0 {
		a.printf("inbox        %d queued for the next cycle\n", len(queued))
	}
	for _, it := range queued {
		switch it.Kind {
		case inbox.KindApproval:
			replaces := ""
			if it.Approval.Replaces != "" {
				replaces = ", replaces " + it.Approval.Replaces
			}
			a.printf("  %s %s (by %s%s)\n", it.Approval.Verdict, it.Approval.ActionRef, it.Approval.By, replaces)
		case inbox.KindWake:
			line := "  wake " + it.Wake.Source
			if it.Wake.Ref != "" {
				line += " " + it.Wake.Ref
			}
			a.printf("%s (by %s, expires %s)\n", line, it.Wake.By, it.Wake.ExpiresAt)
		case inbox.KindAmendment:
			a.printf("  amendment of the %s %s (by %s)\n", it.Amendment.Target, it.Amendment.Amends.Short(), it.Amendment.By)
		case inbox.KindStop:
			kill := ""
			if it.Stop.Kill {
				kill = ", kill switch"
			}
			a.printf("  stop (by %s%s)\n", it.Stop.By, kill)
		}
	}
	for _, b := range bad {
		a.printf("inbox        %s rejected: %s\n", b.Name, b.Reason)
	}
}

// meaning says in a few words what a disposition means for the operator,
// so that status reads without the design notes at hand.
func meaning(d state.Disposition) string {
	switch d {
	case state.Continue:
		return "more work is due; the next acr run goes on"
	case state.Idle:
		return "nothing to do until the world changes or a wake signal arrives"
	case state.Sleep:
		return "asleep until a wake condition holds"
	case state.WaitApproval:
		return "an action waits for a person to approve or deny it"
	case state.Deferred:
		return "known work waits for evidence that is not there yet"
	case state.Stopped:
		return "the run has stopped and does nothing more"
	case state.Faulted:
		return "the run stopped on repeated failures and needs a person"
	}
	return "unknown"
}

// nextWake says when the loop looks again by itself: an absolute time with
// its distance from now, or what it waits for instead.
func nextWake(r state.RunState, now time.Time) string {
	if nw := r.NextWake; nw != nil && nw.At != "" {
		if t, err := state.ParseTime(nw.At); err == nil && !t.After(now) {
			return fmt.Sprintf("due now (it was due at %s, %s ago); the next acr run looks", nw.At, humanDuration(now.Sub(t)))
		}
		s := when(nw.At, now)
		if len(nw.Conditions) > 0 {
			s += ", or earlier on a condition below"
		}
		return s
	}
	switch r.LoopDisposition {
	case state.Continue:
		return "now: cycles are due"
	case state.Stopped:
		return "never: the run is stopped"
	case state.Faulted:
		return "never by itself: fix the cause, then acr wake --signal manual_resume"
	case state.WaitApproval:
		return "when the approval is resolved"
	}
	if r.NextWake != nil && len(r.NextWake.Conditions) > 0 {
		return "no time set; on a condition below"
	}
	return "no time set; when the world changes or a wake signal arrives"
}

// budgetLine renders each budget as used/limit. A limit whose soft level
// was passed says so, because that is the operator's early warning.
func budgetLine(b state.BudgetUsage, l budget.Run) string {
	soft := func(name string, lim budget.Limit) string {
		if lim.Soft > 0 && slices.Contains(b.SoftWarned, name) {
			return fmt.Sprintf(" (past soft %d)", lim.Soft)
		}
		return ""
	}
	parts := []string{
		"cycles " + usage(b.Cycles, l.Cycles) + soft("cycles", l.Cycles),
		"actions " + usage(b.Actions, l.Actions) + soft("actions", l.Actions),
		"cognitive ops " + usage(b.CognitiveOperations, l.CognitiveOperations) + soft("cognitive_operations", l.CognitiveOperations),
		"compactions " + usage(b.Compactions, l.Compactions) + soft("compactions", l.Compactions),
		"wall clock " + secondsUsage(b.WallClockSeconds, l.WallClockSeconds) + soft("wall_clock_seconds", l.WallClockSeconds),
	}
	return strings.Join(parts, ", ")
}

func usage(used int64, l budget.Limit) string {
	if l.Hard > 0 {
		return fmt.Sprintf("%d/%d", used, l.Hard)
	}
	return fmt.Sprintf("%d/unlimited", used)
}

func secondsUsage(used int64, l budget.Limit) string {
	u := humanDuration(time.Duration(used) * time.Second)
	if l.Hard > 0 {
		return u + "/" + humanDuration(time.Duration(l.Hard)*time.Second)
	}
	return u + "/unlimited"
}

func orNone(s string) string {
	if s == "" {
		return "(none recorded)"
	}
	return s
}

func failing(cs []world.CheckResult) int {
	n := 0
	for _, c := range cs {
		if c.Status == world.CheckFail {
			n++
		}
	}
	return n
}

// nextCommand suggests the most useful next command for a run that waits,
// or "" when the run needs nothing from anybody (IDLE). queued is what
// waits in the inbox: an approval already given is not asked for again.
func nextCommand(s kernel.EngineState, queued []inbox.Item) string {
	r := s.Run
	for _, p := range r.PendingApprovals {
		if p.Resolution == nil && queuedVerdict(queued, p) == "" && p.Incident() {
			return "acr resolve " + string(p.Ref) + " --ran   (or --not-ran; the evidence is in acr status; acr approve runs it again)"
		}
		if p.Resolution == nil && queuedVerdict(queued, p) == "" {
			return "acr approve " + string(p.Ref) + "   (or acr deny ...)"
		}
	}
	for _, p := range r.PendingAmendments {
		if queuedAnswer(queued, p.Ref, p.CycleSeq) == "" {
			return "acr approve " + string(p.Ref) + "   (accepts the amendment; or acr deny ...)"
		}
	}
	if len(queued) > 0 && (!r.LoopDisposition.Terminal() || kernel.Amendable(&r)) {
		return "acr run   (the next cycle consumes what is queued; a scheduled run does too)"
	}
	switch r.LoopDisposition {
	case state.Sleep:
		return "acr run (it resumes by itself when a wake condition holds; acr wake --signal manual_resume to look now)"
	case state.Deferred:
		if slices.Contains(r.ReasonCodes, "budget_soft_limit") {
			return "acr wake --signal budget_replenished   (a soft budget is used up; the signal starts a new allowance)"
		}
		return "acr wake --signal new_environment_observation   (once the missing evidence is in place)"
	case state.Faulted:
		return "acr wake --signal manual_resume   (after fixing the cause; see acr log)"
	case state.Stopped:
		if kernel.Amendable(&r) {
			// A hard budget stopped it: an amended contract resumes it,
			// where a new run would start over.
			return "acr amend --contract FILE   (a contract with more budget resumes the run; acr approve then accepts it)"
		}
		return "acr log   (what the run did; acr init --force starts a new run)"
	case state.Continue:
		return "acr run --max-cycles 20"
	}
	return ""
}

// when renders a timestamp with its distance from now, so that status
// answers both "when exactly" and "how long ago" at a glance.
func when(ts string, now time.Time) string {
	t, err := state.ParseTime(ts)
	if err != nil || ts == "" {
		return ts
	}
	d := now.Sub(t).Round(time.Second)
	switch {
	case d > 0:
		return fmt.Sprintf("%s (%s ago)", ts, humanDuration(d))
	case d < 0:
		return fmt.Sprintf("%s (in %s)", ts, humanDuration(-d))
	}
	return ts + " (now)"
}

// humanDuration keeps the two largest units that matter: "45s", "12m5s",
// "3h20m", "12d4h". Go's own format ("7993h16m46s") is exact but makes a
// person do arithmetic.
func humanDuration(d time.Duration) string {
	d = d.Round(time.Second)
	day := 24 * time.Hour
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%ds", int64(d/time.Second))
	case d < time.Hour:
		return trimZero(fmt.Sprintf("%dm%ds", int64(d/time.Minute), int64(d%time.Minute/time.Second)))
	case d < 2*day:
		return trimZero(fmt.Sprintf("%dh%dm", int64(d/time.Hour), int64(d%time.Hour/time.Minute)))
	}
	return trimZero(fmt.Sprintf("%dd%dh", int64(d/day), int64(d%day/time.Hour)))
}

// trimZero drops a trailing zero unit: "2h0m" reads better as "2h".
func trimZero(s string) string {
	for _, suffix := range []string{"m0s", "h0m", "d0h"} {
		if strings.HasSuffix(s, suffix) {
			return s[:len(s)-len(suffix)+1]
		}
	}
	return s
}

// pendingAction says what a pending approval would do, in a few words.
func pendingAction(p state.PendingApproval) string {
	var a world.Action
	if err := codec.DecodeValue(p.Action, &a); err != nil {
		return p.Operation + " " + p.Target
	}
	return a.Describe()
}

// queuedAnswer is the verdict of the answer queued for a request (an
// action's or an amendment's ref and the cycle that asked), or "".
func queuedAnswer(queued []inbox.Item, ref codec.Ref, cycle int64) string {
	if it := inbox.Answer(queued, ref, cycle); it != nil {
		return it.Approval.Verdict
	}
	return ""
}

// statusJSON is acr status --json: the run-state object, and beside its
// fields what a reader of the checkpoint alone would miss: the cycles the
// ledger holds beyond it (which the next run recovers) and the last
// provider failure, when that is the last thing recorded.
type statusJSON struct {
	state.RunState
	BeyondCheckpoint *beyondJSON `json:"beyond_checkpoint,omitempty"`
	LastError        string      `json:"last_error,omitempty"`
	LedgerError      string      `json:"ledger_error,omitempty"`
}

// beyondJSON is the ledger ahead of the checkpoint, as status says it.
type beyondJSON struct {
	Summary string   `json:"summary"`
	Cycles  []string `json:"cycles"`
}

func (a *app) printStatusJSON(rs runState, now time.Time) error {
	out := statusJSON{RunState: rs.State.Run}
	since, err := a.readSince(rs.Manifest)
	if err != nil {
		out.LedgerError = err.Error()
	}
	if head, cycles := beyondCheckpoint(since); head != "" {
		out.BeyondCheckpoint = &beyondJSON{Summary: head, Cycles: cycles}
	}
	out.LastError = a.lastFailure(rs, since, now)
	a.printJSON(out)
	return nil
}

// beyondCheckpoint says what the ledger holds beyond the checkpoint: the
// cycles an invocation ran since its last checkpoint (a run killed before
// it wrote the next one), each in a line as acr log shows it, the last one
// perhaps interrupted. The checkpoint is behind them until the next
// invocation recovers them. It is "" when the ledger is not ahead.
func beyondCheckpoint(recs []event.Record) (string, []string) {
	var cycles [][]event.Record
	open := false
	for _, r := range recs {
		switch {
		case r.Event.Type.OutOfBand():
			continue
		case r.Event.Type == event.CycleStarted:
			cycles = append(cycles, nil)
			open = true
		case len(cycles) == 0:
			continue // a fault recorded between cycles
		}
		cycles[len(cycles)-1] = append(cycles[len(cycles)-1], r)
		if r.Event.Type == event.CycleCompleted {
			open = false
		}
	}
	if len(cycles) == 0 {
		return "", nil
	}
	var lines []string
	for i, c := range cycles {
		l := summarise(c)
		line := fmt.Sprintf("cycle %d %s %s", l.Cycle, orDashStr(l.Disposition), l.Decision) + workDone(l.Agenda, l.Action, l.Outcome)
		if i == len(cycles)-1 && open {
			line += "  (interrupted: recovery finishes it)"
		}
		lines = append(lines, line)
	}
	first, last := cycles[0][0].Event.CycleSeq, cycles[len(cycles)-1][0].Event.CycleSeq
	what := fmt.Sprintf("cycle %d", first)
	if last != first {
		what = fmt.Sprintf("cycles %d to %d", first, last)
	}
	if open {
		what += fmt.Sprintf(", %d interrupted", last)
	}
	return fmt.Sprintf("%d cycle(s) beyond the last checkpoint (%s); the next run recovers them", len(cycles), what), lines
}

// lastFailure describes the provider failures recorded since the last
// cycle (recs are the records beyond the checkpoint), which leave the
// checkpoint as it was (the run did not advance): the last error, what
// failed, how many in a row and how many fault the run. It is "" when the
// last thing recorded is a cycle.
func (a *app) lastFailure(rs runState, recs []event.Record, now time.Time) string {
	var last *event.Record
	for i := range recs {
		switch recs[i].Event.Type {
		case event.ProviderFailed:
			last = &recs[i]
		case event.CycleCompleted:
			last = nil
		}
	}
	if last == nil {
		return ""
	}
	var body struct {
		Error       string          `json:"error"`
		Consecutive int             `json:"consecutive"`
		Fault       json.RawMessage `json:"fault,omitempty"`
	}
	if last.Event.Object == nil || last.Event.Object.Decode(&body) != nil {
		return fmt.Sprintf("a provider failure at ledger seq %d (acr log shows it)", last.Seq)
	}
	limit := rs.State.Contract.Policy.Defaults().MaxProviderFailures
	return fmt.Sprintf("%s (%s; %d in a row, the run faults at %d)", body.Error, when(last.Event.At, now), body.Consecutive, limit)
}

// changedList names a trial's changed paths, "nothing" when there are
// none.
func changedList(paths []string) string {
	if len(paths) == 0 {
		return "nothing"
	}
	return strings.Join(paths, ", ")
}

// ruledTrial says which trial of a git world's command fix governance
// ruled on when it asked (the cycle's own, recorded in the ledger), and
// whether the change tried again now (fresh, nil when none) differs from
// it; "" when the request carries no trial.
func ruledTrial(p state.PendingApproval, fresh *world.GitTrial) string {
	t := p.Trial
	if t == nil {
		return ""
	}
	out := fmt.Sprintf("ruled on: the trial of cycle %d on %s: tree %s, changed %s\n", p.CycleSeq, t.Head, t.Tree, changedList(t.Changed))
	if fresh != nil && !sameTrial(fresh, t) {
		out += fmt.Sprintf("differs:  tried again now, it gives the tree %s on %s: an approval binds to the change shown below\n", fresh.Tree, fresh.Head)
	}
	return out
}
