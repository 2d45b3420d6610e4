// Gates G to L: what must hold across the governance boundary and a
// crash (every effect governed, once per key, recovered before and after
// its commit, the causal chain, compaction).

package validate

import (
	"fmt"
	"strings"

	"github.com/acr-project/acr/internal/audit"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/world"
)

// gateG judges every world effect against the contract in force (pinned
// in the run's ledger, or accepted later as an amendment) with the
// validator's own reading of the rules (judge.go), not with
// governance.Decide: the authority and autonomy an action needs, the
// first rule that governs it, a person's approval where the rule asks for
// one, and the evidence it requires in the cycle that acted. It also
// re-reads the rule of every governance decision, so that a matcher that
// refuses (or asks about) what the contract allows fails as surely as one
// that allows what it forbids; requires governance's EXECUTE for that
// exact action in the same cycle, decisions made by governance under the
// contract in force, and every wake signal whose payload claims authority
// rejected (the gate reads the payload itself).
func gateG(ev *Evidence) Gate {
	var bad []string
	effects, decisions, refusals, claims, amended := 0, 0, 0, 0, 0
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		if run.Final.Run.AuthorityRef != run.Final.Contract.AuthorityRef() {
			bad = append(bad, name+": the run state's authority ref is not its contract's authority")
		}
		if _, _, err := run.pinned(); err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		f, _ := run.inForce()
		objs := run.objects()
		ac := actionContext{changed: map[string]bool{}}
		for _, c := range run.cycles() {
			if o, ok := objs[c.manifest().ObservationRef]; ok {
				ac.observation = observationView{}
				_ = decodeView(o, &ac.observation)
			}
			var execute map[codec.Ref]bool
			for _, r := range c.events {
				f.follow(r)
				switch r.Event.Type {
				case event.AmendmentAccepted:
					if r.Event.Refs["new"] == f.contractRef {
						amended++
					}
				case event.DecisionRecorded:
					var d governance.Decision
					if r.Event.Object.Decode(&d) != nil {
						bad = append(bad, fmt.Sprintf("%s cycle %d: undecodable decision", name, c.seq))
						continue
					}
					decisions++
					if d.Verdict == governance.Refuse {
						refusals++
					}
					if d.ContractRef != f.contractRef {
						bad = append(bad, fmt.Sprintf("%s cycle %d: decision under contract %s, the one in force is %s", name, c.seq, d.ContractRef, f.contractRef))
					}
					if d.Actor != "governance" {
						bad = append(bad, fmt.Sprintf("%s cycle %d: decision made by %q", name, c.seq, d.Actor))
					}
					var a actionView
					if err := decodeView(objs[d.ActionRef], &a); err != nil {
						bad = append(bad, fmt.Sprintf("%s cycle %d: the action %s of a decision is not recorded", name, c.seq, d.ActionRef))
					} else if why := judgeRule(f.contract, a, d.Rule, string(d.Effect)); why != "" {
						bad = append(bad, fmt.Sprintf("%s cycle %d: %s", name, c.seq, why))
					}
					if d.Verdict == governance.Execute {
						execute = map[codec.Ref]bool{d.ActionRef: true}
					}
				case event.ActionCommitted, event.ActionNotApplied:
					effects++
					ref := r.Event.Refs["action"]
					if !execute[ref] {
						bad = append(bad, fmt.Sprintf("%s cycle %d: world effect without an EXECUTE decision for that action", name, c.seq))
					}
					var a actionView
					if err := decodeView(objs[ref], &a); err != nil {
						bad = append(bad, fmt.Sprintf("%s cycle %d: the action %s of a world effect is not recorded", name, c.seq, ref))
						continue
					}
					if why := judgeAction(f.contract, f.spec, a, ref, ac); why != "" {
						bad = append(bad, fmt.Sprintf("%s cycle %d: %s", name, c.seq, why))
					}
					if r.Event.Type == event.ActionCommitted {
						ac.changed[a.changed()] = true
					}
				case event.InboxConsumed:
					switch r.Event.Object.Ref.Kind() {
					case "apr":
						var a approvalView
						if decodeView(r.Event.Object, &a) == nil {
							ac.approvals = append(ac.approvals, a)
						}
					case "sig":
						var w signalView
						if decodeView(r.Event.Object, &w) != nil {
							continue
						}
						if claim := authorityClaim(w.Payload); claim != "" {
							claims++
							if c.wakeOutcome(r.Event.Object.Ref) != event.WakeRejected {
								bad = append(bad, fmt.Sprintf("%s cycle %d: a wake signal claiming authority (%s) was not rejected", name, c.seq, claim))
							}
						}
					}
				}
			}
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	return pass(fmt.Sprintf("%d world effects, each allowed by the contract in force as the gate reads its rules, and preceded in its cycle by governance's EXECUTE for that exact action", effects),
		fmt.Sprintf("%d governance decisions (%d refusals), each made by governance under the contract in force and naming the rule the gate's own reading finds for its action: none refused or asked about what the contract allows", decisions, refusals),
		fmt.Sprintf("every run state's authority is its contract's; the contract changed only by %d accepted amendments; all %d wake signals claiming authority were rejected", amended, claims))
}

func gateH(ev *Evidence) Gate {
	total := 0
	var bad []string
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		keys := map[string]int{}
		for _, r := range run.Records {
			if r.Event.Type == event.ActionCommitted {
				var o world.Outcome
				if r.Event.Object.Decode(&o) == nil {
					keys[o.Key]++
					total++
				}
			}
		}
		for k, n := range keys {
			if n > 1 {
				bad = append(bad, fmt.Sprintf("%s: key %s committed %d times", name, k, n))
			}
		}
		if d := run.Result.Facts["duplicate_effects"]; d > 0 {
			bad = append(bad, fmt.Sprintf("%s: %v duplicate effects", name, d))
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	ch, g := need(ev, "crash-harness")
	if g != nil {
		return *g
	}
	if !ch.Result.Passed {
		return fail("crash-harness failed: " + strings.Join(ch.Result.Failures, "; "))
	}
	return pass(fmt.Sprintf("%d committed effects, no idempotency key committed twice", total),
		"crash-harness: crashes at all six failpoints, every finding reported exactly once in the world")
}

func recoveryGate(ev *Evidence, name, class string, reused bool) Gate {
	run, g := need(ev, name)
	if g != nil {
		return *g
	}
	if !run.Result.Passed {
		return fail(name + " failed: " + strings.Join(run.Result.Failures, "; "))
	}
	for _, rec := range run.Result.Recoveries {
		if rec.Classification == class && ((reused && rec.ActionsReused > 0) || (!reused && rec.ActionsApplied > 0 && rec.ActionsReused == 0)) {
			return pass(fmt.Sprintf("%s: recovery classified %s, actions reused %d, applied %d", name, class, rec.ActionsReused, rec.ActionsApplied),
				"the effect appears exactly once in the world")
		}
	}
	return fail(fmt.Sprintf("%s: no recovery classified %s", name, class))
}

func gateI(ev *Evidence) Gate {
	return recoveryGate(ev, "p10-crash-before-commit", "interrupted_before_action_commit", false)
}

func gateJ(ev *Evidence) Gate {
	return recoveryGate(ev, "p11-crash-after-commit", "interrupted_after_action_commit", true)
}

func gateK(ev *Evidence) Gate {
	var bad []string
	events := 0
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		var prevCycle codec.Ref
		for _, c := range run.cycles() {
			started := c.events[0]
			if started.Event.Refs["prior_cycle"] != prevCycle {
				bad = append(bad, fmt.Sprintf("%s cycle %d does not name the previous cycle %s", name, c.seq, prevCycle))
			}
			for i := 1; i < len(c.events); i++ {
				events++
				if len(c.events[i].Event.Parents) != 1 || c.events[i].Event.Parents[0] != c.events[i-1].Ref {
					bad = append(bad, fmt.Sprintf("%s seq %d (%s) is not linked to its causal parent", name, c.events[i].Seq, c.events[i].Event.Type))
				}
			}
			prevCycle = c.record.PriorCycleRef
			if rec, ok := c.find(event.CycleCompleted); ok {
				prevCycle = rec.Event.Object.Ref
			}
		}
		for i := 1; i < len(run.Records); i++ {
			if run.Records[i].Chain != run.Records[i-1].Hash || run.Records[i].Seq != run.Records[i-1].Seq+1 {
				bad = append(bad, fmt.Sprintf("%s: hash chain broken at seq %d", name, run.Records[i].Seq))
			}
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	return pass(fmt.Sprintf("%d events across all runs each linked to their causal parent; every cycle names its predecessor; every ledger's hash chain is intact", events))
}

func gateL(ev *Evidence) Gate {
	run, g := need(ev, "p09-compaction")
	if g != nil {
		return *g
	}
	var summarised []int64
	for _, r := range run.Records {
		if r.Event.Type == event.CompactionCompleted {
			if comp, err := memory.ViewCompaction(r.Event.Object.Body); err == nil {
				summarised = append(summarised, comp.Cycles...)
			}
		}
	}
	if len(summarised) == 0 {
		return fail("p09-compaction compacted nothing")
	}
	checked, withDecision := 0, 0
	for _, cyc := range summarised {
		rep, err := audit.Explain(run.History, cyc)
		if err != nil {
			return fail(fmt.Sprintf("audit of compacted cycle %d: %v", cyc, err))
		}
		if rep.Compaction == nil {
			return fail(fmt.Sprintf("audit of cycle %d does not find the compaction that summarised it", cyc))
		}
		if rep.Record.GovernanceDecisionRef != "" {
			if rep.Decision == nil || rep.Receipt == nil || rep.Receipt.DecisionRef != rep.DecisionRef {
				return fail(fmt.Sprintf("audit of cycle %d cannot recover its decision receipt", cyc))
			}
			withDecision++
		}
		checked++
	}
	return pass(fmt.Sprintf("p09-compaction: all %d compacted cycles audited from the ledger; %d decision receipts recovered", checked, withDecision),
		"the summary blocks are pointers into the ledger, never used as evidence")
}
