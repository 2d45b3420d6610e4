package kernel

import (
	"slices"
	"time"

	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
)

// Eligible decides, before anything is recorded, whether a cycle should
// run at all (DESIGN §4): CONTINUE, a new inbox item (wake signal,
// approval, stop), a fresh knowledge update, a due wake time, or a changed
// environment observation. With none of these, the invocation reports the
// current disposition and writes nothing: no agenda is not a busy loop.
// The reasons say why (or, when not eligible, what the run is doing).
func Eligible(s State, in Inputs) (bool, []string) {
	rs := &s.Run
	if rs.Status == state.RunStopped {
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
		default:
			why = append(why, "wake_"+it.Wake.Source)
		}
	}
	if _, fresh := strategy.Receive(s.Strategy, in.Knowledge, ""); len(fresh) > 0 {
		why = append(why, "knowledge_source_changed")
	}
	if rs.NextWake != nil && rs.NextWake.At != "" && expired(rs.NextWake.At, in.Now) {
		why = append(why, "wake_time_reached")
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

// resting is the disposition when there is no work to do now: waiting for
// a person beats waiting for a known condition, which beats waiting for
// evidence, which beats idling.
func (b *builder) resting() state.Disposition {
	rs := &b.s.Run
	switch {
	case slices.ContainsFunc(rs.PendingApprovals, func(p state.PendingApproval) bool { return p.Resolution == nil }):
		return state.WaitApproval
	case b.hasSleepingCommitment() || b.idleSleep() != "":
		return state.Sleep
	case len(rs.Deferred) > 0:
		return state.Deferred
	}
	return state.Idle
}

func (b *builder) restingReasons() []string {
	switch b.resting() {
	case state.WaitApproval:
		return []string{"no_positive_agenda", "awaiting_approval"}
	case state.Sleep:
		if b.hasSleepingCommitment() {
			return []string{"no_positive_agenda", "commitment_wake_condition_pending"}
		}
		return []string{"no_positive_agenda", "scheduled_tick_pending"}
	case state.Deferred:
		return []string{"no_positive_agenda", "awaiting_evidence"}
	}
	return []string{"no_positive_agenda", "nothing_due"}
}

func (b *builder) hasSleepingCommitment() bool {
	return slices.ContainsFunc(b.s.Commitments.Commitments, func(c commitment.Commitment) bool {
		return c.Status == commitment.Suspended && c.Wake != nil
	})
}

// idleSleep returns the scheduled look time when the policy asks an idle
// run to look again after a while.
func (b *builder) idleSleep() string {
	if n := b.s.Contract.Policy.IdleSleepSeconds; n > 0 {
		return state.FormatTime(b.now.Add(time.Duration(n) * time.Second))
	}
	return ""
}

// setWaiting computes next_wake and the waiting record for disposition d.
func (b *builder) setWaiting(d state.Disposition) {
	rs := &b.s.Run
	var wake state.Wake
	earliest := func(t string) {
		if t != "" && (wake.At == "" || t < wake.At) {
			wake.At = t
		}
	}
	var deadline string
	for _, c := range b.s.Commitments.Commitments {
		if c.Deadline != "" {
			earliest(c.Deadline)
			if deadline == "" || c.Deadline < deadline {
				deadline = c.Deadline
			}
		}
		if c.Status == commitment.Suspended && c.Wake != nil {
			if c.Wake.Kind == commitment.WakeTime {
				earliest(c.Wake.At)
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
	if d == state.Idle || d == state.Sleep {
		earliest(b.idleSleep())
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

// budgetLimit returns the contract's limit and the run's use of a budget.
func (b *builder) budgetLimit(name string) (governance.Limit, int64) {
	bu, u := b.s.Contract.Budgets, b.s.Run.Budget
	switch name {
	case "cycles":
		return bu.Cycles, u.Cycles
	case "cognitive_operations":
		return bu.CognitiveOperations, u.CognitiveOperations
	case "actions":
		return bu.Actions, u.Actions
	case "compactions":
		return bu.Compactions, u.Compactions
	default:
		return bu.WallClockSeconds, u.WallClockSeconds
	}
}

func budgetNames() []string {
	return []string{"cycles", "cognitive_operations", "actions", "compactions", "wall_clock_seconds"}
}

// hardBudget reports whether a budget's hard level is used up.
func (b *builder) hardBudget(name string) (string, bool) {
	l, used := b.budgetLimit(name)
	return name, l.Hard > 0 && used >= l.Hard
}

// hardBudgetAtStart checks the budgets that stop a run before any work:
// the wall clock, and anything already used up.
func (b *builder) hardBudgetAtStart() (string, bool) {
	if started, err := state.ParseTime(b.s.Run.StartedAt); err == nil {
		b.s.Run.Budget.WallClockSeconds = int64(b.now.Sub(started) / time.Second)
	}
	for _, n := range budgetNames() {
		if name, ok := b.hardBudget(n); ok {
			return name, true
		}
	}
	return "", false
}

// softBudgets records, once per budget, that its soft level was reached.
func (b *builder) softBudgets() {
	rs := &b.s.Run
	for _, n := range budgetNames() {
		l, used := b.budgetLimit(n)
		if l.Soft > 0 && used >= l.Soft && !slices.Contains(rs.Budget.SoftWarned, n) {
			rs.Budget.SoftWarned = append(rs.Budget.SoftWarned, n)
			slices.Sort(rs.Budget.SoftWarned)
			b.emit("budget.soft_limit.reached", nil, nil, "budget_"+n)
		}
	}
}
