package kernel

import (
	"fmt"
	"strings"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// The common tail of every cycle: working memory and compaction, budgets,
// the cycle and checkpoint records, and the disposition.

// finish is the common tail of every cycle: working memory and compaction,
// budgets, the cycle record, the run state, the checkpoint record, and the
// disposition events.
func (b *builder) finish() {
	rs := &b.s.Run
	pol := b.s.Contract.Policy.Defaults()
	if !b.stoppedAtStart {
		rs.Budget.Cycles++
	}
	rs.Budget.WallClockSeconds = budget.WallClock(rs, b.now)

	// Working memory: record this cycle, then compact if the cadence says so.
	// The unit lists the cycle's events except its controller transitions:
	// those hang off the cycle record (controller_transition_refs), and
	// listing them here would double working memory for nothing.
	unit := memory.Unit{CycleSeq: b.cycle, EventRefs: b.memoryRefs(), Item: b.item, Verdict: b.rec.GovernanceDecision, Disposition: rs.LoopDisposition.String()}
	b.s.Context = memory.Record(b.s.Context, unit, b.protected())
	mp := memory.Policy{MaxUnits: pol.CompactAfterUnits, EveryCycles: pol.CompactEveryCycles, KeepUnits: 8, KeepBlocks: pol.KeepSummaryBlocks}
	if due, trigger := memory.Due(b.s.Context, b.cycle, mp, b.compactReq); due && !rs.LoopDisposition.Terminal() {
		if b.exhausts("compactions", 1) {
			b.conclude(state.Stopped, []string{"budget_limit", "budget_compactions"})
		} else {
			nb, comp, err := memory.Compact(b.s.Context, b.protected(), b.cycle, trigger, mp)
			if err != nil {
				b.emit(event.CompactionFailed, nil, nil, err.Error())
				b.conclude(state.Faulted, []string{"compaction_failed"})
			} else {
				b.s.Context = nb
				rs.Budget.Compactions++
				var rec any = comp
				if rs.Format() != state.LedgerFormat1 {
					rec = comp.Pointed()
				}
				b.rec.ContextCompressionRef = b.record(event.CompactionCompleted, "ccomp", rec, nil, trigger)
				b.sum.Compacted = true
			}
		}
	}

	if b.exhausts("cycles", 1) && !rs.LoopDisposition.Terminal() {
		// No next cycle fits: stop at the end of the last one.
		b.conclude(state.Stopped, []string{"budget_limit", "budget_cycles"})
	}
	if pol.StopOnTerminalFailure && b.terminalFailure() {
		b.conclude(state.Stopped, []string{"goal_terminal_failure", "all_remaining_work_set_aside"})
	}
	b.softPause()

	d := rs.LoopDisposition
	switch d {
	case state.Stopped:
		rs.Status = state.RunStopped
	case state.Faulted:
		rs.Status = state.RunFaulted
	}
	if d == state.Faulted && b.ctl.State() != controller.Failed && b.ctl.State() != controller.Blocked {
		b.move(controller.Failed, strings.Join(b.reasons, ","))
	}
	from := b.ctl.State()
	b.moveAs(roleOf(from), controller.Sleep, "rest_"+strings.ToLower(d.String()), b.restUsed, b.restOut...)
	b.logMoves()
	rs.Controller = b.via.String()
	b.sum.Controller = rs.Controller
	b.setWaiting(d)
	rs.ReasonCodes = nonNil(b.reasons)
	rs.CycleSeq = b.cycle
	rs.UpdatedAt = b.at

	// The cycle record, then the checkpoint record that points at it.
	b.rec.LoopDisposition = d
	b.rec.ReasonCodes = rs.ReasonCodes
	cycObj, cycRef := b.object(kindCycle, b.rec) // recorded below, encoded once
	if rs.Format() != state.LedgerFormat1 {
		// The run state cannot name the checkpoint that will hold it (that
		// record holds its ref), so it names the one before: the last
		// checkpoint the run had when this state was made.
		rs.LastCheckpointRef = b.startCheckpointRef
	}
	rs.LastCycleRef = cycRef
	b.s.sealWith(b.envRef)
	b.emitDisposition(d)
	chk := state.Checkpoint{
		Schema: state.CheckpointSchema, RunID: rs.RunID, CycleSeq: b.cycle, RunStateRef: runStateRef(*rs), CycleRef: cycRef,
		ContextBindingRef: rs.ContextBindingRef, CommitmentStoreRef: rs.CommitmentStoreRef, EnvironmentRef: rs.EnvironmentRef,
		StrategyStateRef: rs.StrategyStateRef, LedgerFrontierRefs: []codec.Ref{b.last}, LastWorldCommitRef: b.s.Checkpoint.LastWorldCommitRef,
		NextWake: rs.NextWake, BudgetSnapshot: rs.Budget,
	}
	if b.rec.WorldOutcomeRef != "" && b.sum.Outcome == string(world.OutcomeCommitted) {
		chk.LastWorldCommitRef = b.rec.WorldOutcomeRef
	}
	b.s.Checkpoint = chk
	chkRef := b.record(checkpointKind(rs.Format()), kindCheckpoint, chk, map[string]codec.Ref{"cycle": cycRef})
	b.emit(event.CycleCompleted, cycObj, map[string]codec.Ref{"checkpoint": chkRef}, rs.LoopDisposition.String())

	b.sum.CycleRef = cycRef
	b.sum.LoopDisposition = d
	b.sum.ReasonCodes = rs.ReasonCodes
}

// protected lists what compaction must never drop.
func (b *builder) protected() []memory.Protected {
	rs := &b.s.Run
	ps := []memory.Protected{
		{Kind: "goal", Ref: string(codec.MustRefOf(kindGoal, b.s.Goal))},
		{Kind: "contract", Ref: string(codec.MustRefOf(kindContract, b.s.Contract))},
		{Kind: "authority", Ref: string(b.s.Contract.AuthorityRef())},
	}
	for _, c := range b.s.Commitments.Commitments {
		ps = append(ps, memory.Protected{Kind: "commitment", Ref: fmt.Sprintf("%s@v%d", c.ID, c.Version)})
	}
	for _, sv := range b.s.Strategy.Active {
		ps = append(ps, memory.Protected{Kind: "strategy_source", Ref: sv.SourceRef + "@" + sv.SourceVersion})
	}
	for _, p := range rs.PendingApprovals {
		ps = append(ps, memory.Protected{Kind: "pending_approval", Ref: string(p.Ref)})
	}
	for _, d := range rs.Deferred {
		for _, e := range d.Evidence {
			ps = append(ps, memory.Protected{Kind: "deferred_evidence", Ref: d.ItemID + "<-" + e})
		}
	}
	return ps
}
