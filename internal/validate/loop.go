// Gates A to F: the loop itself (one bootstrap, no busy loop, wakes,
// commitments kept, the direct and the strategic path).

package validate

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
)

// gateA: one bootstrap, then cycles that need no new human input. Every
// run's ledger must begin as one acr init leaves it: the goal, the
// contract and the environment pinned once each, the first observation,
// and persistent.run.started naming exactly those, before any cycle and
// never again; and some cycle must follow another with no inbox item in
// either.
func gateA(ev *Evidence) Gate {
	selfDriven, runs := 0, 0
	where := ""
	var bad []string
	for _, name := range sortedNames(ev) {
		if why := singleBootstrap(ev.Runs[name]); why != "" {
			bad = append(bad, name+": "+why)
			continue
		}
		runs++
		cs := ev.Runs[name].cycles()
		for i := 1; i < len(cs); i++ {
			if cs[i-1].record.LoopDisposition == state.Continue && len(cs[i].manifest().InboxItems) == 0 && len(cs[i-1].manifest().InboxItems) == 0 {
				selfDriven++
				if where == "" {
					where = fmt.Sprintf("%s cycles %d-%d", name, cs[i-1].seq, cs[i].seq)
				}
			}
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	if selfDriven == 0 {
		return fail("no cycle followed another without a new human input")
	}
	return pass(fmt.Sprintf("%d cycles ran on from the previous cycle with no new human input (first: %s)", selfDriven, where),
		fmt.Sprintf("each of the %d runs' ledgers begins with one bootstrap: goal, contract and environment pinned once, before any cycle, and persistent.run.started naming them", runs))
}

// singleBootstrap says how a run's ledger does not begin with exactly one
// bootstrap, or "".
func singleBootstrap(run *Run) string {
	pinned := map[event.Kind]codec.Ref{}
	starts := 0
	var start event.Record
	cycled := false
	for _, r := range run.Records {
		switch r.Event.Type {
		case event.GoalPinned, event.ContractPinned, event.SpecPinned:
			if _, twice := pinned[r.Event.Type]; twice || cycled {
				return fmt.Sprintf("%s recorded again at seq %d", r.Event.Type, r.Seq)
			}
			if r.Event.Object == nil {
				return fmt.Sprintf("%s at seq %d carries no document", r.Event.Type, r.Seq)
			}
			pinned[r.Event.Type] = r.Event.Object.Ref
		case event.RunStarted:
			starts++
			start = r
			if cycled {
				return fmt.Sprintf("persistent.run.started after a cycle, at seq %d", r.Seq)
			}
		case event.CycleStarted:
			cycled = true
		}
	}
	if starts != 1 || len(pinned) != 3 {
		return fmt.Sprintf("%d starts and %d of the three documents pinned", starts, len(pinned))
	}
	for k, name := range map[event.Kind]string{event.GoalPinned: "goal", event.ContractPinned: "contract", event.SpecPinned: "environment_spec"} {
		if start.Event.Refs[name] != pinned[k] {
			return fmt.Sprintf("persistent.run.started names %s %s, the ledger pinned %s", name, start.Event.Refs[name], pinned[k])
		}
	}
	return ""
}

func gateB(ev *Evidence) Gate {
	var bad []string
	resting, woken := 0, 0
	for _, name := range sortedNames(ev) {
		cs := ev.Runs[name].cycles()
		for i, c := range cs {
			if c.has(event.AgendaEmpty) && c.record.LoopDisposition == state.Continue {
				bad = append(bad, fmt.Sprintf("%s cycle %d: no agenda, yet CONTINUE", name, c.seq))
			}
			if i == 0 {
				continue
			}
			if prev := cs[i-1].record.LoopDisposition; prev != state.Continue {
				resting++
				w, ok := c.find(event.LoopWoke)
				if !ok || len(w.Event.Reasons) == 0 {
					bad = append(bad, fmt.Sprintf("%s cycle %d ran after %s without a recorded wake reason", name, c.seq, prev))
				} else {
					woken++
				}
			}
		}
	}
	if p02, g := need(ev, "p02-healthy-idle"); g != nil {
		return *g
	} else if p02.Result.Cycles != 1 {
		bad = append(bad, fmt.Sprintf("p02-healthy-idle ran %d cycles; a healthy idle run must run one and then none", p02.Result.Cycles))
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	return pass(fmt.Sprintf("%d cycles after a resting disposition, each woken by a recorded reason", woken),
		"no cycle without agenda ended in CONTINUE", "p02-healthy-idle: three invocations, one cycle")
}

// gateC re-checks every commitment resume against the wake condition the
// commitment recorded before it, in the resuming cycle's recorded inputs,
// with the validator's own condition matcher (judge.go), not
// commitment.Matched: the observation it ran on, the clock, the approvals
// people gave, and only the wake signals a loop may accept. It also holds
// the loop to wake hygiene: no signal that is unknown, expired, orphaned,
// claims authority or repeats an accepted dedup key is ever accepted. And
// it follows the goal's standing commitments with its own reading
// (commitments.go): each one taken up as declared, judged no earlier than
// its deadline and on its checks, its deadline moved only by the signal
// its declaration names, its period and scope re-derived, none left past
// its time by a cycle that evaluated commitments, and no resting run
// sleeping past one.
func gateC(ev *Evidence) Gate {
	var bad []string
	resumes, held, rejected := 0, 0, 0
	var judges []*commitmentJudge
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		objs := run.objects()
		last := map[string]commitmentView{}
		live := map[string]commitmentView{}
		seen := map[string]time.Time{}
		j := newCommitmentJudge(run)
		judges = append(judges, j)
		for _, c := range run.cycles() {
			m := c.manifest()
			in := wakeInputs{}
			in.at, _ = time.Parse(time.RFC3339, m.At)
			if o, ok := objs[m.ObservationRef]; ok {
				_ = decodeView(o, &in.observation)
			}
			for _, r := range c.events {
				if r.Event.Type != event.InboxConsumed || r.Event.Object == nil {
					continue
				}
				switch r.Event.Object.Ref.Kind() {
				case "sig":
					var w signalView
					if decodeView(r.Event.Object, &w) != nil {
						continue
					}
					fault := signalFault(w, in.at, seen)
					accepted := c.wakeOutcome(r.Event.Object.Ref) == event.WakeAccepted
					switch {
					case fault != "" && accepted:
						bad = append(bad, fmt.Sprintf("%s cycle %d: accepted a wake signal it must refuse (%s)", name, c.seq, fault))
					case fault != "":
						rejected++
					case accepted:
						in.signals = append(in.signals, w)
						exp, _ := time.Parse(time.RFC3339, w.ExpiresAt)
						seen[w.DedupKey] = exp
					}
				case "apr":
					var a approvalView
					if decodeView(r.Event.Object, &a) == nil {
						in.approvals = append(in.approvals, a)
					}
				}
			}
			resumed := false
			for _, r := range c.events {
				if r.Event.Type.In("amendment") {
					j.amendment(r)
				}
				if _, ok := r.Event.Type.CommitmentVerb(); !ok || r.Event.Object == nil {
					continue
				}
				var cm commitmentView
				if decodeView(r.Event.Object, &cm) != nil {
					continue
				}
				before, known := last[cm.ID]
				j.judge(c.seq, r.Event.Type, r.Event.Reasons, before, known, cm, in)
				if slices.Contains([]string{"completed", "expired", "abandoned"}, cm.Status) {
					delete(live, cm.ID)
				} else {
					live[cm.ID] = cm
				}
				if r.Event.Type == event.CommitmentResumed {
					resumed = true
					resumes++
					before, ok := last[cm.ID]
					switch {
					case !ok || before.Status != "suspended" || before.Wake == nil:
						bad = append(bad, fmt.Sprintf("%s cycle %d: commitment %s resumed without having been suspended on a wake condition", name, c.seq, cm.ID))
					default:
						if ok, what := conditionHolds(*before.Wake, in); !ok {
							bad = append(bad, fmt.Sprintf("%s cycle %d: commitment %s resumed, but its wake condition (%s) does not hold in the cycle's recorded inputs", name, c.seq, cm.ID, what))
						}
					}
				}
				last[cm.ID] = cm
			}
			if c.has(event.ConditionsEvaluated) {
				j.due(c.seq, live, in.at)
			}
			j.wake(c.seq, live, in.at, c)
			if !resumed && c.has(event.LoopWoke) {
				for _, cm := range last {
					if cm.Status == "suspended" {
						held++
						break
					}
				}
			}
		}
	}
	total := &commitmentJudge{}
	for _, j := range judges {
		bad = append(bad, j.bad...)
		total.created += j.created
		total.judged += j.judged
		total.moved += j.moved
		total.periods += j.periods
		total.scopes += j.scopes
		total.wakes += j.wakes
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	if resumes == 0 {
		return inconclusive("no commitment was resumed in any scenario")
	}
	if total.judged == 0 || total.moved == 0 || total.periods == 0 || total.scopes == 0 {
		return inconclusive("no scenario judged a standing commitment at its deadline, moved its deadline, brought its period due and changed its scope: " + total.summary())
	}
	return pass(fmt.Sprintf("%d resumes, each with its recorded wake condition holding in that cycle's recorded inputs (judged by the gate's own matcher)", resumes),
		fmt.Sprintf("%d woken cycles kept a suspended commitment suspended; %d wake signals the loop had to refuse were all refused", held, rejected),
		"standing commitments, each change re-derived from the goal and environment in force and the cycle's recorded clock, observation and signals: "+total.summary(),
		"no cycle that evaluated commitments left one past its deadline or period; no resting run slept past a commitment's time")
}

// gateD follows every commitment through its lifecycle events and requires
// each one live at a compaction to be among the refs that compaction
// protected (the gate reads the compaction record itself, not the
// compaction's own check), and each one live at the end to be in the
// checkpoint and protected in working memory; a terminal one must be gone.
func gateD(ev *Evidence) Gate {
	var bad []string
	live, kept := 0, 0
	terminal := []string{"completed", "expired", "abandoned"}
	protects := func(ps []protectedView, id string) bool {
		return slices.ContainsFunc(ps, func(p protectedView) bool { return p.Kind == "commitment" && strings.HasPrefix(p.Ref, id+"@") })
	}
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		status := map[string]string{}
		for _, r := range run.Records {
			switch {
			case isCommitmentChange(r.Event.Type) && r.Event.Object != nil:
				var cm commitmentView
				if decodeView(r.Event.Object, &cm) == nil {
					status[cm.ID] = cm.Status
				}
			case r.Event.Type == event.CompactionCompleted:
				var comp struct {
					Protected []protectedView `json:"protected"`
				}
				if decodeView(r.Event.Object, &comp) != nil {
					bad = append(bad, fmt.Sprintf("%s seq %d: undecodable compaction", name, r.Seq))
					continue
				}
				for _, id := range slices.Sorted(maps.Keys(status)) {
					if slices.Contains(terminal, status[id]) {
						continue
					}
					kept++
					if !protects(comp.Protected, id) {
						bad = append(bad, fmt.Sprintf("%s cycle %d: the compaction dropped live commitment %s from the protected refs", name, r.Event.CycleSeq, id))
					}
				}
			}
		}
		for _, id := range slices.Sorted(maps.Keys(status)) {
			st := status[id]
			_, inStore := run.Final.Commitments.Get(id)
			done := slices.Contains(terminal, st)
			switch {
			case !done && !inStore:
				bad = append(bad, fmt.Sprintf("%s: live commitment %s (%s) is missing from the checkpoint", name, id, st))
			case done && inStore:
				bad = append(bad, fmt.Sprintf("%s: terminal commitment %s still in the checkpoint", name, id))
			case !done:
				live++
				ps := make([]protectedView, 0, len(run.Final.Context.Protected))
				for _, p := range run.Final.Context.Protected {
					ps = append(ps, protectedView{Kind: p.Kind, Ref: p.Ref})
				}
				if !protects(ps, id) {
					bad = append(bad, fmt.Sprintf("%s: live commitment %s is not protected in working memory", name, id))
				}
			}
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	if p09, g := need(ev, "p09-compaction"); g != nil {
		return *g
	} else if p09.Result.TransitionClasses["context_compaction"] == 0 || len(p09.Final.Commitments.Commitments) == 0 || kept == 0 {
		return inconclusive("p09-compaction did not compact with a live commitment")
	}
	return pass(fmt.Sprintf("%d live commitments across all runs are in their checkpoint and protected in working memory", live),
		fmt.Sprintf("every compaction protected every commitment live at the time (%d checks)", kept),
		"p09-compaction: the commitment promoted early survived compaction and every restart")
}

func gateE(ev *Evidence) Gate {
	selected, direct, reviewed := 0, 0, 0
	for _, name := range sortedNames(ev) {
		for _, c := range ev.Runs[name].cycles() {
			if c.has(event.ReviewRequested) {
				reviewed++
			}
			if c.has(event.AgendaSelected) {
				selected++
				if !c.has(event.ReviewRequested) {
					direct++
				}
			}
		}
	}
	p07, g := need(ev, "p07-direct-path")
	if g != nil {
		return *g
	}
	if p07.Result.TransitionClasses["strategic_review"] != 0 {
		return fail("p07-direct-path, a scenario without tension, reviewed strategy")
	}
	if direct == 0 || reviewed >= selected {
		return fail(fmt.Sprintf("%d cycles selected work, %d on the direct path, %d reviews", selected, direct, reviewed))
	}
	return pass(fmt.Sprintf("%d of %d cycles that selected work took the direct path; %d reviews in all", direct, selected, reviewed))
}

// gateF: a strategic review may change how the loop works (the order of
// cognition), never who it works for or under what. Every routing overlay
// names each lens with its exact source version and holds nothing but
// routing (no key naming an operator, an authority, a contract, a goal, a
// domain or a role); no cycle that reviewed accepted an amendment; the
// goal, contract and authority a run ends under are the ones its start
// named unless a person's amendment of that document was accepted; and
// some overlay reordered a later cognitive program.
func gateF(ev *Evidence) Gate {
	overlays, influenced, reviewed := 0, 0, 0
	var bad []string
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		var pending []codec.Ref
		for _, c := range run.cycles() {
			if c.has(event.ReviewRequested) || c.has(event.RoutingOverlaid) {
				reviewed++
				if c.has(event.AmendmentAccepted) {
					bad = append(bad, fmt.Sprintf("%s cycle %d: a reviewing cycle accepted an amendment", name, c.seq))
				}
			}
		}
		for _, r := range run.Records {
			switch r.Event.Type {
			case event.RoutingOverlaid:
				var ov strategy.Overlay
				if r.Event.Object.Decode(&ov) != nil {
					continue
				}
				overlays++
				for _, sv := range ov.Lenses {
					if sv.SourceRef == "" || sv.SourceVersion == "" {
						bad = append(bad, fmt.Sprintf("%s: overlay names a lens without an exact source version", name))
					}
				}
				var body any
				if json.Unmarshal(r.Event.Object.Body, &body) == nil {
					if k := identityKey(body, "overlay"); k != "" {
						bad = append(bad, fmt.Sprintf("%s cycle %d: routing overlay names an identity at %s", name, r.Event.CycleSeq, k))
					}
				}
				pending = append(pending, ov.Ref())
			case event.ProgramCompiled:
				var p cognition.Program
				if r.Event.Object.Decode(&p) != nil || !slices.Contains(pending, p.Routing) {
					continue
				}
				if slices.Index(p.Steps, cognition.OpCritique) < slices.Index(p.Steps, cognition.OpSelect) {
					influenced++
					pending = slices.DeleteFunc(pending, func(x codec.Ref) bool { return x == p.Routing })
				}
			}
		}
		if why := identityKept(run); why != "" {
			bad = append(bad, name+": "+why)
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	if overlays == 0 {
		return inconclusive("no strategic review produced a routing overlay")
	}
	if influenced == 0 {
		return fail(fmt.Sprintf("%d routing overlays, none changed the order of a later cognitive program", overlays))
	}
	return pass(fmt.Sprintf("%d routing overlays; %d reordered a later cognitive program (critique before selection)", overlays, influenced),
		fmt.Sprintf("every overlay names each lens with its exact source version and no operator, authority, contract, goal, domain or role; none of the %d reviewing cycles accepted an amendment; every run ends under the goal, contract and authority its start named, or a person's accepted amendment of them", reviewed))
}

// identityWords are keys that would name who the loop works for or under
// what; a routing overlay has no business with any of them.
var identityWords = []string{"operator", "authority", "authority_ref", "contract", "contract_ref", "goal", "goal_ref", "domain", "identity", "role", "roles", "mission"}

// identityKey returns the path of the first key in v that names an
// identity, or "".
func identityKey(v any, at string) string { return keyIn(v, at, identityWords) }

// identityKept says how a run ends under a goal, contract or authority
// other than the ones persistent.run.started named, with no accepted
// amendment of that document to account for it, or "".
func identityKept(run *Run) string {
	var start map[string]codec.Ref
	amended := map[string]bool{}
	for _, r := range run.Records {
		switch r.Event.Type {
		case event.RunStarted:
			start = r.Event.Refs
		case event.AmendmentAccepted:
			for _, t := range []string{"goal", "contract"} {
				if slices.Contains(r.Event.Reasons, "target_"+t) {
					amended[t] = true
				}
			}
		}
	}
	fin := run.Final.Run
	goal := codec.Ref("")
	if len(fin.GoalRefs) > 0 {
		goal = fin.GoalRefs[0]
	}
	for _, x := range []struct {
		name, target string
		now          codec.Ref
	}{{"goal", "goal", goal}, {"contract", "contract", fin.ContractRef}, {"authority", "contract", fin.AuthorityRef}} {
		if start[x.name] != x.now && !amended[x.target] {
			return fmt.Sprintf("ends under %s %s, started under %s, with no accepted amendment of the %s", x.name, x.now, start[x.name], x.target)
		}
	}
	return ""
}
