package kernel

import (
	"cmp"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// Eligible decides, before anything is recorded, whether a cycle should
// run at all (DESIGN §4): CONTINUE, a new inbox item (wake signal,
// approval, stop), a fresh knowledge update, a due wake time, or a changed
// world. With none of these, the invocation reports the current
// disposition and writes nothing: no agenda is not a busy loop. A run
// resting on a used-up soft budget is eligible only for a
// budget_replenished signal, a stop or the kill switch. The reasons say why
// (or, when not eligible, what the run is doing).
//
// The world has changed when its verdict has (world.Observation.Verdict):
// a file's hash, a check's verdict, evidence. An observation that differs
// from the last one only in what a command check printed (a timing, an
// address) wakes nothing, so a failing test that prints its duration does
// not make every invocation a cycle while an approval waits. Deciding it
// needs s.Environment, the last observation (Driver.Step decodes it).
func Eligible(s EngineState, in Inputs) (bool, []string) {
	ok, why := wakeReasons(s, in)
	if ok && slices.Equal(why, []string{"environment_changed"}) && in.Observation.Verdict() == s.Environment.Verdict() {
		return false, []string{"nothing_eligible", s.Run.LoopDisposition.String()}
	}
	return ok, why
}

// wakeReasons is Eligible without its last rule: any difference in the
// observation is environment_changed. It is what a cycle records as its
// reasons for waking (persistent.loop.woke), as it always has, so that
// the cycles of a ledger written before the rule replay byte for byte;
// and what Begin checks, so that such a cycle is still derived.
func wakeReasons(s EngineState, in Inputs) (bool, []string) {
	rs := &s.Run
	if rs.Status == state.RunStopped {
		if amendable(rs) && slices.ContainsFunc(in.Inbox, func(it inbox.Item) bool { return amendsRun(rs, it) }) {
			return true, []string{"amendment"}
		}
		return false, []string{"run_stopped"}
	}
	if rs.Status == state.RunFaulted {
		for _, it := range in.Inbox {
			if it.Kind == inbox.KindStop || (it.Kind == inbox.KindWake && it.Wake.Source == "manual_resume") {
				return true, []string{"manual_resume"}
			}
		}
		return false, []string{"run_faulted"}
	}
	if restsOnBudget(rs) && !in.KillSwitch && !slices.ContainsFunc(in.Inbox, resumesBudget) &&
		!slices.ContainsFunc(in.Inbox, func(it inbox.Item) bool { return amendsRun(rs, it) }) {
		// A temporarily exhausted budget spends nothing more, not even a
		// cycle, until it is replenished or the run is stopped.
		why := slices.DeleteFunc(slices.Clone(rs.ReasonCodes), func(r string) bool { return !strings.HasPrefix(r, "budget_") })
		return false, append(why, rs.LoopDisposition.String())
	}
	var why []string
	if in.KillSwitch {
		why = append(why, "kill_switch")
	}
	if rs.LoopDisposition == state.Continue {
		why = append(why, "continue")
	}
	for _, it := range in.Inbox {
		switch it.Kind {
		case inbox.KindStop:
			why = append(why, "stop_requested")
		case inbox.KindApproval:
			why = append(why, "approval_resolved")
		case inbox.KindAmendment:
			why = append(why, "amendment_proposed")
		default:
			why = append(why, "wake_"+it.Wake.Source)
		}
	}
	if _, fresh := strategy.Receive(s.Strategy, in.Knowledge, ""); len(fresh) > 0 {
		why = append(why, "knowledge_source_changed")
	}
	if rs.NextWake != nil && rs.NextWake.At != "" && expired(rs.NextWake.At, in.Now) {
		// The run's own clock wakes it: a commitment's deadline or period
		// (commitment_deadline_due), a time a commitment waits for, or a
		// scheduled look.
		why = append(why, cmp.Or(rs.NextWake.Source, "wake_time_reached"))
	}
	if in.Observation.Ref() != rs.EnvironmentRef {
		why = append(why, "environment_changed")
	}
	if len(why) == 0 {
		return false, []string{"nothing_eligible", rs.LoopDisposition.String()}
	}
	slices.Sort(why)
	return true, slices.Compact(why)
}

// schedule is the part of a cycle's builder that decides where the run
// goes next: the budgets (spent, exhausted, replenished), the disposition
// the cycle concludes with and the one it rests in, and the wake it
// waits for.
type schedule struct {
	s *EngineState
	*recorder
	*work
	// the stop or rest decided at the cycle's start
	stoppedAtStart bool
	pausedAtStart  []string
}

// resting is the disposition when there is no work to do now: waiting for
// a person beats waiting for a known condition, which beats waiting for
// evidence, which beats idling.
func (b *schedule) resting() state.Disposition {
	rs := &b.s.Run
	switch {
	case slices.ContainsFunc(rs.PendingApprovals, func(p state.PendingApproval) bool { return p.Resolution == nil }):
		return state.WaitApproval
	case b.hasSleepingCommitment() || b.s.Commitments.Due(b.now) != "" || b.idleSleep() != "":
		// A known future wake (a condition, a commitment's deadline or
		// period, a scheduled look) is a sleep, not an idle (seed §5.2).
		return state.Sleep
	case len(rs.Deferred) > 0:
		return state.Deferred
	}
	return state.Idle
}

func (b *schedule) restingReasons() []string {
	switch b.resting() {
	case state.WaitApproval:
		return []string{"no_positive_agenda", "awaiting_approval"}
	case state.Sleep:
		if b.hasSleepingCommitment() {
			return []string{"no_positive_agenda", "commitment_wake_condition_pending"}
		}
		if b.s.Commitments.Due(b.now) != "" {
			return []string{"no_positive_agenda", "commitment_deadline_pending"}
		}
		return []string{"no_positive_agenda", "scheduled_tick_pending"}
	case state.Deferred:
		return []string{"no_positive_agenda", "awaiting_evidence"}
	}
	return []string{"no_positive_agenda", "nothing_due"}
}

func (b *schedule) hasSleepingCommitment() bool {
	return slices.ContainsFunc(b.s.Commitments.Commitments, func(c commitment.Commitment) bool {
		return c.Status == commitment.Suspended && c.Wake != nil
	})
}

// idleSleep returns the scheduled look time when the policy asks an idle
// run to look again after a while.
func (b *schedule) idleSleep() string {
	if n := b.s.Contract.Policy.IdleSleepSeconds; n > 0 {
		return state.FormatTime(b.now.Add(time.Duration(n) * time.Second))
	}
	return ""
}

// setWaiting computes next_wake and the waiting record for disposition d.
func (b *schedule) setWaiting(d state.Disposition) {
	rs := &b.s.Run
	var wake state.Wake
	// earliest keeps the earliest time still to come, and its source. A
	// time already past is no wake: waking on it would wake every
	// invocation (the cycle that reaches the commitments stage deals with
	// a past deadline).
	earliest := func(t, source string) {
		if t > b.at && (wake.At == "" || t < wake.At) {
			wake.At, wake.Source = t, source
		}
	}
	earliest(b.s.Commitments.Due(b.now), "commitment_deadline_due")
	var deadline string
	for _, c := range b.s.Commitments.Commitments {
		if c.Deadline != "" && (deadline == "" || c.Deadline < deadline) {
			deadline = c.Deadline
		}
		if c.Status == commitment.Suspended && c.Wake != nil {
			if c.Wake.Kind == commitment.WakeTime {
				earliest(c.Wake.At, "commitment_wake_condition")
			}
			wake.Conditions = append(wake.Conditions, c.ID+": "+c.Wake.String())
		}
	}
	for _, p := range rs.PendingApprovals {
		if p.Resolution == nil {
			wake.Conditions = append(wake.Conditions, "approval of "+string(p.Ref))
		}
	}
	for _, di := range rs.Deferred {
		for _, e := range di.Evidence {
			wake.Conditions = append(wake.Conditions, di.ItemID+": evidence "+e+" observed")
		}
	}
	for _, n := range softExhausted(b.s, b.now) {
		wake.Conditions = append(wake.Conditions, "budget "+n+": budget_replenished signal")
	}
	if d == state.Idle || d == state.Sleep {
		earliest(b.idleSleep(), "")
	}
	if vu := b.s.Contract.ValidUntil; vu != "" {
		// The run wakes when its contract lapses, to stop then and say
		// so, not at the next look someone happens to take.
		if t, err := state.ParseTime(vu); err == nil {
			earliest(state.FormatTime(t), "contract_expiry")
		}
	}
	slices.Sort(wake.Conditions)
	rs.NextWake = nil
	if !d.Terminal() && (wake.At != "" || len(wake.Conditions) > 0) {
		wake.Reason = d.String()
		rs.NextWake = &wake
	}

	kind := map[state.Disposition]string{state.WaitApproval: "approval", state.Sleep: "sleep", state.Deferred: "deferral", state.Idle: "idle"}[d]
	if kind == "" {
		rs.Waiting = nil
		return
	}
	since := b.at
	if rs.Waiting != nil && rs.Waiting.Kind == kind {
		since = rs.Waiting.Since
	}
	reason := ""
	if len(b.reasons) > 0 {
		reason = b.reasons[len(b.reasons)-1]
	}
	rs.Waiting = &state.Waiting{Kind: kind, Reason: reason, Since: since, Deadline: deadline}
}

// Budgets (seed §14, docs/formats.md). A hard level is never exceeded: it
// is checked where the budget is spent, before spending, with the cost of
// the next step. The next step is a cycle (cost 1: the run stops at the end
// of the cycle that used the last one), a cognitive program (its operation
// count, before it runs), an action (1, before the effect), a compaction
// (1, before compacting) or more wall-clock time (at the start of a cycle;
// the watchdog also keeps an effect from running past the run's deadline).
// When the next step does not fit, the run stops without spending it:
// STOPPED, reasons budget_limit and budget_<name>.
//
// A soft level is an allowance between replenishments. Once a budget's use
// since its last replenishment reaches its soft level, the budget is
// temporarily exhausted: the run rests DEFERRED, spends nothing, and waits
// for a budget_replenished wake signal, which starts a new allowance of the
// size the contract fixed (the signal carries no amount, and no cycle can
// send itself one). A stop request is still honoured while it waits.

// exhausts reports whether spending cost more of a budget would take it
// past its hard level.
func (b *schedule) exhausts(name string, cost int64) bool {
	l, used := budget.Of(b.s.Contract.Budgets, &b.s.Run, name, b.now)
	return l.Overrun(used, cost)
}

// hardBudgetAtStart checks, before a cycle does anything, the budgets the
// cycle itself would spend: the wall clock (the run's deadline reached) and
// the cycles (used up, which a run only finds when it resumes from FAULTED
// after its last allowed cycle). A cycle stopped here spends nothing.
func (b *schedule) hardBudgetAtStart() (string, bool) {
	b.s.Run.Budget.WallClockSeconds = budget.WallClock(&b.s.Run, b.now)
	for _, n := range []string{"wall_clock_seconds", "cycles"} {
		if l, used := budget.Of(b.s.Contract.Budgets, &b.s.Run, n, b.now); l.UsedUp(used) {
			return n, true
		}
	}
	return "", false
}

// softExhausted lists the budgets temporarily exhausted at now: their use
// since the last replenishment has reached their soft level.
func softExhausted(s *EngineState, now time.Time) []string {
	var out []string
	for _, n := range budget.Names() {
		if l, used := budget.Of(s.Contract.Budgets, &s.Run, n, now); l.SoftReached(used, s.Run.Budget.SoftBase[n]) {
			out = append(out, n)
		}
	}
	return out
}

// budgetReasons are the reason codes of a rest on exhausted soft budgets.
func budgetReasons(names []string) []string {
	out := []string{"budget_soft_limit"}
	for _, n := range names {
		out = append(out, "budget_"+n)
	}
	return out
}

// restsOnBudget reports whether the last cycle left the run resting on a
// temporarily exhausted budget. (Eligibility is decided on the run state
// alone, before the contract is decoded; a soft level the wall clock
// reaches while the run waits is found by the next cycle at its start.)
func restsOnBudget(rs *state.RunState) bool {
	return rs.LoopDisposition == state.Deferred && slices.Contains(rs.ReasonCodes, "budget_soft_limit")
}

// resumesBudget reports whether an inbox item may start a cycle while a
// soft budget is exhausted: a replenishment, or a stop.
func resumesBudget(it inbox.Item) bool {
	return it.Kind == inbox.KindStop || (it.Kind == inbox.KindWake && it.Wake.Source == "budget_replenished")
}

// replenish starts a new soft allowance for the budgets an accepted
// budget_replenished signal names: the one its ref names, or, without a
// ref, every budget with a soft level.
func (b *schedule) replenish(w state.WakeSignal, refs map[string]codec.Ref) {
	rs := &b.s.Run
	var done []string
	for _, n := range budget.Names() {
		l, used := budget.Of(b.s.Contract.Budgets, &b.s.Run, n, b.now)
		if l.Soft == 0 || (w.Ref != "" && w.Ref != n) {
			continue
		}
		base := maps.Clone(rs.Budget.SoftBase)
		if base == nil {
			base = map[string]int64{}
		}
		base[n] = used
		rs.Budget.SoftBase = base
		done = append(done, "budget_"+n)
	}
	if len(done) == 0 {
		b.emit(event.BudgetReplenishIgnored, nil, refs, "no_soft_budget_named")
		return
	}
	b.emit(event.BudgetReplenished, nil, refs, done...)
}

// softPause rests a run that is not stopping DEFERRED at the end of a cycle
// when a budget is temporarily exhausted.
func (b *schedule) softPause() {
	names := softExhausted(b.s, b.now)
	if len(names) == 0 || b.s.Run.LoopDisposition.Terminal() {
		return
	}
	b.softReached(names, b.pausedAtStart)
	reasons := slices.Clone(b.reasons)
	for _, r := range budgetReasons(names) {
		if !slices.Contains(reasons, r) {
			reasons = append(reasons, r)
		}
	}
	b.conclude(state.Deferred, reasons)
}

// softReached records that the soft level of each named budget was
// reached, except for those already known exhausted.
func (b *schedule) softReached(names, known []string) {
	rs := &b.s.Run
	for _, n := range names {
		if slices.Contains(known, n) {
			continue
		}
		if !slices.Contains(rs.Budget.SoftWarned, n) {
			rs.Budget.SoftWarned = append(rs.Budget.SoftWarned, n)
			slices.Sort(rs.Budget.SoftWarned)
		}
		b.emit(event.BudgetSoftLimitReached, nil, nil, "budget_"+n)
	}
}

// restingOn lists the budgets the run was already resting on when the
// cycle began.
func restingOn(rs *state.RunState) []string {
	var out []string
	if restsOnBudget(rs) {
		for _, r := range rs.ReasonCodes {
			if n, ok := strings.CutPrefix(r, "budget_"); ok && n != "soft_limit" {
				out = append(out, n)
			}
		}
	}
	return out
}

// seedDisposition records, from ledger format 3 on, the disposition seed
// §10.3 gives the cycle's governance decision, beside the loop's own.
func (b *schedule) seedDisposition(d state.Disposition) {
	if b.s.Run.Format() >= state.LedgerFormat3 {
		b.rec.GovernanceDisposition = d
	}
}

// orResting is CONTINUE when other agenda candidates remain this cycle,
// else the resting disposition.
func (b *schedule) orResting(more bool) state.Disposition {
	if more {
		return state.Continue
	}
	return b.resting()
}

// afterSetback is the disposition after an item was set aside.
func (b *schedule) afterSetback() state.Disposition { return b.orResting(b.candidates > 1) }

// conclude sets the cycle's disposition and reasons. A later call (the
// end-of-cycle budget stop) may override it.
func (b *schedule) conclude(d state.Disposition, reasons []string) {
	b.s.Run.LoopDisposition = d
	b.reasons = slices.DeleteFunc(slices.Clone(reasons), func(s string) bool { return s == "" })
}

// terminalFailure reports whether the goal has failed for good under the
// contract (seed §15, "goal terminal failure under policy"): the cycle
// comes to rest with the goal not holding, every check the goal needs
// that fails is set aside, and nothing the run waits for could bring new
// work: no answer pending, no evidence awaited, no commitment suspended
// on a condition, no undo queued, no amendment to decide on.
func (b *schedule) terminalFailure() bool {
	rs := &b.s.Run
	switch d := rs.LoopDisposition; {
	case d == state.Continue || d.Terminal():
		return false
	case intent.Satisfied(&b.s.Goal, b.s.Environment):
		return false
	case slices.ContainsFunc(rs.PendingApprovals, func(p state.PendingApproval) bool { return p.Resolution == nil }),
		len(rs.Deferred) > 0, len(rs.Rollbacks) > 0, len(rs.PendingAmendments) > 0, b.hasSleepingCommitment():
		return false
	}
	for _, r := range b.s.Environment.Checks {
		if r.Status != world.CheckFail || !b.goalNeeds(r.ID) {
			continue
		}
		item := agenda.ItemID(r.ID)
		if !slices.ContainsFunc(rs.Suppressed, func(sp state.Suppression) bool { return sp.ItemID == item }) {
			return false
		}
	}
	return true
}

// goalNeeds reports whether the goal's success condition names a check.
func (b *schedule) goalNeeds(id string) bool {
	return b.s.Goal.Success.AllChecksPass || slices.Contains(b.s.Goal.Success.Checks, id)
}

// emitDisposition records the scheduler transition (seed §11 names).
func (b *schedule) emitDisposition(d state.Disposition) {
	switch d {
	case state.Idle:
		b.emit(event.LoopIdled, nil, nil, b.reasons...)
	case state.Sleep:
		b.emit(event.LoopSlept, nil, nil, b.reasons...)
	case state.Deferred:
		b.emit(event.LoopDeferred, nil, nil, b.reasons...)
	case state.WaitApproval:
		b.emit(event.LoopWaitingApproval, nil, nil, b.reasons...)
	case state.Stopped:
		b.emit(event.RunStopped, nil, nil, b.reasons...)
	case state.Faulted:
		b.emit(event.RunFaulted, nil, nil, b.reasons...)
	}
}
