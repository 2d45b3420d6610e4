// Gates M to O: what bounds the loop (budgets, an explicit stop, faults).

package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// budgetKinds are the run budgets (seed §14), each with the scenario that
// must stop exactly at its hard level.
func budgetKinds() [][2]string {
	return [][2]string{{"cycles", "p13-budget-stop"}, {"actions", "p13-budget-actions"},
		{"cognitive_operations", "p13-budget-cognitive-operations"}, {"compactions", "p13-budget-compactions"},
		{"wall_clock_seconds", "p13-budget-wall-clock"}}
}

// budgetTrace is a run's budget use re-derived from its ledger.
type budgetTrace struct {
	used         map[string]int64 // cycles, actions, cognitive_operations, compactions
	replenished  int              // replenishments after which the run worked again
	lastWall     int64            // wall clock at the start of the last cycle
	lastObserved bool             // whether the last cycle did any work
}

// traceBudgets re-derives, from the ledger alone and against the budgets of
// the contract in force (pinned in it, or accepted later as an amendment),
// what a run spent and whether it kept its limits: no hard level is ever
// exceeded (a cycle, an effect, a dialogue turn, a compaction each count
// one; a cycle stopped by a budget or an invalidated contract before it
// observed anything spends nothing); no cycle works at or past the
// wall-clock deadline; no cycle works while a budget's use since its last
// accepted budget_replenished signal has reached its soft level; and a
// cycle that leaves a soft level reached rests DEFERRED naming the budget.
func traceBudgets(run *Run, bad *[]string) budgetTrace {
	t := budgetTrace{used: map[string]int64{}}
	if _, _, err := run.pinned(); err != nil {
		*bad = append(*bad, fmt.Sprintf("%s: %v", run.Name, err))
		return t
	}
	// The budgets are the contract's in force: the pinned one, then each
	// contract amendment from the cycle after the one that accepted it.
	f, _ := run.inForce()
	contract := f.contract
	var started time.Time
	for _, r := range run.Records {
		if r.Event.Type == event.RunStarted {
			started, _ = time.Parse(time.RFC3339, r.Event.At)
		}
	}
	base := map[string]int64{}
	flag := func(format string, args ...any) { *bad = append(*bad, run.Name+": "+fmt.Sprintf(format, args...)) }
	over := map[string]bool{}
	soft := func(name string, wall int64) (int64, bool) {
		l := contract.Budgets[name]
		u := t.used[name]
		if name == "wall_clock_seconds" {
			u = wall
		}
		return u, l.Soft > 0 && u-base[name] >= l.Soft
	}
	names := []string{"cycles", "cognitive_operations", "actions", "compactions", "wall_clock_seconds"}
	pendingReplenish := false
	for _, c := range run.cycles() {
		at, _ := time.Parse(time.RFC3339, c.manifest().At)
		wall := int64(at.Sub(started) / time.Second)
		observed := c.has(event.SemanticEncoded)
		for _, r := range c.events {
			if r.Event.Type != event.InboxConsumed || r.Event.Object.Ref.Kind() != "sig" || c.wakeOutcome(r.Event.Object.Ref) != event.WakeAccepted {
				continue
			}
			var w signalView
			if decodeView(r.Event.Object, &w) != nil || w.Source != "budget_replenished" {
				continue
			}
			for _, n := range names {
				if contract.Budgets[n].Soft > 0 && (w.Ref == "" || w.Ref == n) {
					base[n], _ = soft(n, wall)
					pendingReplenish = true
				}
			}
		}
		if l := contract.Budgets["wall_clock_seconds"]; l.Hard > 0 && wall >= l.Hard && observed {
			flag("cycle %d worked at wall clock %ds, at or past the hard level %d", c.seq, wall, l.Hard)
		}
		for _, n := range names {
			if _, exhausted := soft(n, wall); exhausted && observed {
				flag("cycle %d worked while %s was used up to its soft level and not replenished", c.seq, n)
			}
		}
		if observed && pendingReplenish {
			t.replenished++
			pendingReplenish = false
		}
		// A cycle stopped at its start, before it observed anything, by a
		// budget or by a contract that no longer holds, spends nothing.
		if observed || !slices.ContainsFunc(c.record.ReasonCodes, func(r string) bool { return r == "budget_limit" || r == "contract_invalidated" }) {
			t.used["cycles"]++
		}
		for _, r := range c.events {
			switch r.Event.Type {
			case event.ActionCommitted, event.ActionNotApplied:
				t.used["actions"]++
			case event.CompactionCompleted:
				t.used["compactions"]++
			case event.DialogueCompleted:
				var d struct {
					Turns []json.RawMessage `json:"turns"`
				}
				if decodeView(r.Event.Object, &d) == nil {
					t.used["cognitive_operations"] += int64(len(d.Turns))
				}
			}
		}
		for _, n := range names[:4] {
			if l := contract.Budgets[n]; l.Hard > 0 && t.used[n] > l.Hard && !over[n] {
				over[n] = true
				flag("%s used %d by cycle %d, past the hard level %d", n, t.used[n], c.seq, l.Hard)
			}
		}
		if d := c.record.LoopDisposition; d != state.Stopped && d != state.Faulted {
			for _, n := range names {
				if _, exhausted := soft(n, wall); exhausted && (d != state.Deferred || !slices.Contains(c.record.ReasonCodes, "budget_"+n)) {
					flag("cycle %d left %s used up to its soft level but ended %s %v, not resting DEFERRED on it", c.seq, n, d, c.record.ReasonCodes)
				}
			}
		}
		t.lastWall, t.lastObserved = wall, observed
		for _, r := range c.events {
			f.follow(r)
		}
		contract = f.contract
	}
	u := run.Final.Run.Budget
	for _, x := range []struct {
		n    string
		kept int64
	}{{"cycles", u.Cycles}, {"actions", u.Actions}, {"cognitive_operations", u.CognitiveOperations}, {"compactions", u.Compactions}} {
		if x.kept != t.used[x.n] {
			flag("the run counts %d %s, its ledger shows %d", x.kept, x.n, t.used[x.n])
		}
	}
	return t
}

// gateM re-derives every run's budget use from its ledger (traceBudgets),
// and requires, for each budget kind, a scenario that stops exactly at its
// hard level: with the whole allowance used for cycles, actions and
// compactions, never past it for cognitive operations (a program that
// does not fit does not run), and at the first cycle at or past the
// deadline, without working, for the wall clock.
func gateM(ev *Evidence) Gate {
	var bad []string
	traces := map[string]budgetTrace{}
	replenished := 0
	for _, name := range sortedNames(ev) {
		traces[name] = traceBudgets(ev.Runs[name], &bad)
		replenished += traces[name].replenished
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	var stops []string
	for _, k := range budgetKinds() {
		run, g := need(ev, k[1])
		if g != nil {
			return *g
		}
		r, t := run.Final.Run, traces[k[1]]
		contract, _, _ := run.pinned()
		hard := contract.Budgets[k[0]].Hard
		if r.Status != state.RunStopped || !slices.Contains(r.ReasonCodes, "budget_limit") || !slices.Contains(r.ReasonCodes, "budget_"+k[0]) {
			return fail(fmt.Sprintf("%s ended %s with %v, not stopped by its %s budget", k[1], r.Status, r.ReasonCodes, k[0]))
		}
		switch k[0] {
		case "cognitive_operations":
			if t.used[k[0]] == 0 || t.used[k[0]] > hard {
				return fail(fmt.Sprintf("%s stopped having used %d of %d cognitive operations", k[1], t.used[k[0]], hard))
			}
		case "wall_clock_seconds":
			if t.lastWall < hard || t.lastObserved {
				return fail(fmt.Sprintf("%s stopped at wall clock %ds (hard %d), working %t", k[1], t.lastWall, hard, t.lastObserved))
			}
		default:
			if t.used[k[0]] != hard {
				return fail(fmt.Sprintf("%s stopped having used %d of %d %s", k[1], t.used[k[0]], hard, k[0]))
			}
		}
		got := t.used[k[0]]
		if k[0] == "wall_clock_seconds" {
			got = t.lastWall
		}
		stops = append(stops, fmt.Sprintf("%s %d/%d", k[0], got, hard))
	}
	if replenished == 0 {
		return inconclusive("no run worked again after a budget_replenished signal")
	}
	return pass("every run's budget use, re-derived from its ledger, stays within the pinned hard levels and equals the run's own count; no cycle worked on a temporarily exhausted budget",
		"stopped at the limit: "+strings.Join(stops, ", "),
		fmt.Sprintf("%d times a soft budget rested the run DEFERRED and a budget_replenished signal resumed it", replenished))
}

func gateN(ev *Evidence) Gate {
	run, g := need(ev, "p12-explicit-stop")
	if g != nil {
		return *g
	}
	stopAt := int64(-1)
	for _, r := range run.Records {
		if r.Event.Type == event.RunStopped {
			stopAt = r.Event.CycleSeq
		}
		if r.Event.Type == event.CycleCompleted && stopAt >= 0 && r.Event.CycleSeq > stopAt {
			return fail(fmt.Sprintf("cycle %d ran after the stop", r.Event.CycleSeq))
		}
	}
	if stopAt < 0 || run.Final.Run.Status != state.RunStopped {
		return fail("p12-explicit-stop did not record a stop")
	}
	return pass(fmt.Sprintf("p12-explicit-stop: persistent.run.stopped at cycle %d, terminal checkpoint, nothing ran after", stopAt))
}

func gateO(ev *Evidence) Gate {
	run, g := need(ev, "p16-provider-fault")
	if g != nil {
		return *g
	}
	failures, faulted := 0, false
	lastCycle := int64(0)
	for _, r := range run.Records {
		switch r.Event.Type {
		case event.CycleCompleted:
			lastCycle = r.Event.CycleSeq
		case event.ProviderFailed:
			failures++
			if r.Event.CycleSeq != lastCycle {
				return fail(fmt.Sprintf("a provider failure at seq %d advanced the run to cycle %d", r.Seq, r.Event.CycleSeq))
			}
		case event.RunFaulted:
			faulted = true
		}
	}
	if failures == 0 || !faulted || !run.Result.Passed {
		return fail(fmt.Sprintf("p16-provider-fault: %d provider failures, faulted %t, passed %t", failures, faulted, run.Result.Passed))
	}
	return pass(fmt.Sprintf("p16-provider-fault: %d provider failures and garbage inputs recorded, none advanced the run state", failures),
		"failures past the policy's limit ended in FAULTED with a reason; a manual resume recovered")
}
