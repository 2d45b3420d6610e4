package validate

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
)

// Gates lists the Phase-12 completion gates (seed §18) in order, and
// acr's own gate U, which holds the loop to every stop source of seed
// §15 (stops.go).
func Gates() []GateDef {
	return []GateDef{
		{"A", "Single-input bootstrap", gateA},
		{"B", "No busy-loop", gateB},
		{"C", "Wake correctness", gateC},
		{"D", "Commitment continuity", gateD},
		{"E", "Direct path honesty", gateE},
		{"F", "Strategic path integration", gateF},
		{"G", "Governance boundary integrity", gateG},
		{"H", "Sandbox action idempotency", gateH},
		{"I", "Crash recovery before commit", gateI},
		{"J", "Crash recovery after commit", gateJ},
		{"K", "CTCL causal continuity", gateK},
		{"L", "Context compaction recovery", gateL},
		{"M", "Budget boundedness", gateM},
		{"N", "Explicit stop", gateN},
		{"O", "Fault isolation", gateO},
		{"P", "Phase 0-11 freeze", gateP},
		{"Q", "External strategy-source provenance", gateQ},
		{"R", "No private CoT dependency", gateR},
		{"S", "100-cycle mixed run", gateS},
		{"T", "Replay determinism", gateT},
		{"U", "Every stop source", gateU},
	}
}

// cycle is one completed cycle's events (recovery bookkeeping excluded).
type cycle struct {
	seq    int64
	events []event.Record
	record state.CycleRecord
}

// cycles groups a run's records into completed cycles.
func (r *Run) cycles() []cycle {
	var out []cycle
	var cur []event.Record
	for _, rec := range r.Records {
		if rec.Event.Type.OutOfBand() {
			continue
		}
		if rec.Event.Type == event.CycleStarted {
			cur = nil
		}
		cur = append(cur, rec)
		if rec.Event.Type == event.CycleCompleted {
			c := cycle{seq: rec.Event.CycleSeq, events: cur}
			_ = rec.Event.Object.Decode(&c.record)
			out = append(out, c)
			cur = nil
		}
	}
	return out
}

func (c cycle) has(typ event.Kind) bool {
	return slices.ContainsFunc(c.events, func(r event.Record) bool { return r.Event.Type == typ })
}

func (c cycle) find(typ event.Kind) (event.Record, bool) {
	for _, r := range c.events {
		if r.Event.Type == typ {
			return r, true
		}
	}
	return event.Record{}, false
}

// findCheckpoint returns the cycle's checkpoint record (either name, see
// event.Kind.CheckpointRecord).
func (c cycle) findCheckpoint() (event.Record, bool) {
	for _, r := range c.events {
		if r.Event.Type.CheckpointRecord() {
			return r, true
		}
	}
	return event.Record{}, false
}

func (c cycle) manifest() event.Inputs {
	var m event.Inputs
	if r, ok := c.find(event.CycleStarted); ok {
		_ = r.Event.Object.Decode(&m)
	}
	return m
}

// wakeOutcome is what the cycle did with a consumed wake signal: the type
// of the persistent.wake.* event that names it, or "".
func (c cycle) wakeOutcome(ref codec.Ref) event.Kind {
	for _, r := range c.events {
		if r.Event.Type.In("persistent.wake") && r.Event.Refs["item"] == ref {
			return r.Event.Type
		}
	}
	return ""
}

func gateP(ev *Evidence) Gate {
	f := ev.Freeze
	switch {
	case len(f.Mismatches) > 0:
		return fail(append([]string{"changed without regenerating the release manifest (make release-manifest):"}, f.Mismatches...)...)
	case f.Missing != "":
		return inconclusive(f.Missing)
	}
	return pass(fmt.Sprintf("%d schema and source hashes equal the frozen release manifest", f.Checked))
}

func gateQ(ev *Evidence) Gate {
	var bad []string
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		want := strategy.NewState(run.Final.Goal.Registry()).Active
		if !slices.Equal(run.Final.Strategy.Active, want) {
			bad = append(bad, fmt.Sprintf("%s: lenses in force %v differ from the pinned registry %v", name, run.Final.Strategy.Active, want))
		}
		for _, c := range run.Final.Strategy.Candidates {
			if c.Status != "candidate" {
				bad = append(bad, fmt.Sprintf("%s: knowledge update %s promoted (%s)", name, c.Update.SourceRef, c.Status))
			}
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	p15, g := need(ev, "p15-knowledge-refresh")
	if g != nil {
		return *g
	}
	if len(p15.Final.Strategy.Candidates) == 0 {
		return inconclusive("p15-knowledge-refresh received no knowledge update")
	}
	return pass("every run keeps the exact lens source versions it was pinned with, through compaction, checkpoints and recovery",
		fmt.Sprintf("p15-knowledge-refresh: %d changed source version(s) held as review candidates, none promoted", len(p15.Final.Strategy.Candidates)))
}

// hiddenKeys name fields that would hold private reasoning.
func hiddenKeys() []string {
	return []string{"chain_of_thought", "cot", "reasoning", "thoughts", "thinking", "scratchpad", "hidden", "private_notes"}
}

func hasHiddenKey(v codec.Value) string {
	switch v.Kind {
	case codec.KindObject:
		for _, m := range v.Obj {
			if slices.Contains(hiddenKeys(), strings.ToLower(m.Key)) {
				return m.Key
			}
			if k := hasHiddenKey(m.Val); k != "" {
				return k
			}
		}
	case codec.KindArray:
		for _, e := range v.Arr {
			if k := hasHiddenKey(e); k != "" {
				return k
			}
		}
	}
	return ""
}

func gateR(ev *Evidence) Gate {
	var bad []string
	replayed := int64(0)
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		for _, r := range run.Records {
			if r.Event.Object == nil {
				continue
			}
			if v, err := codec.ParseCanonical(r.Event.Object.Body); err == nil {
				if k := hasHiddenKey(v); k != "" {
					bad = append(bad, fmt.Sprintf("%s seq %d carries a %q field", name, r.Seq, k))
				}
			}
		}
		rep, err := kernel.Replay(run.Records, 1)
		switch {
		case err != nil:
			bad = append(bad, fmt.Sprintf("%s: replay from the ledger failed: %v", name, err))
		case !rep.OK:
			bad = append(bad, fmt.Sprintf("%s: replay diverges at cycle %d field %s", name, rep.Divergence.Cycle, rep.Divergence.Field))
		default:
			replayed += rep.CyclesVerified
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	return pass(fmt.Sprintf("%d cycles re-derived from the public records in the ledger alone", replayed),
		"no record carries a private-reasoning field; cognition is recorded as public turns")
}

// requiredClasses are the transition classes §19 requires of the long run,
// with every commitment transition §17 P14 names (create, modify,
// suspend, resume, and the terminal ones: completed and abandoned).
func requiredClasses() []string {
	return []string{"strategic_review", "direct_path", "agenda_selected", "no_agenda", "idle", "sleep", "wake", "deferred",
		"commitment_transition", "commitment_created", "commitment_modified", "commitment_suspended", "commitment_resumed",
		"commitment_completed", "commitment_abandoned", "context_compaction", "governance_boundary", "crash_recovery", "idempotent_outcome_recovery"}
}

func gateS(ev *Evidence) Gate {
	run, g := need(ev, "p14-mixed-100")
	if g != nil {
		return *g
	}
	var missing []string
	for _, c := range requiredClasses() {
		if run.Result.TransitionClasses[c] == 0 {
			missing = append(missing, c)
		}
	}
	stoppedEarly := run.Final.Run.Status == state.RunStopped
	if run.Result.Cycles < 100 && !stoppedEarly {
		missing = append(missing, fmt.Sprintf("only %d cycles", run.Result.Cycles))
	}
	if len(missing) > 0 || !run.Result.Passed {
		return fail(append(missing, run.Result.Failures...)...)
	}
	var counts []string
	for _, c := range requiredClasses() {
		counts = append(counts, fmt.Sprintf("%s=%d", c, run.Result.TransitionClasses[c]))
	}
	return pass(fmt.Sprintf("p14-mixed-100: %d cycles, final %s", run.Result.Cycles, run.Result.FinalDisposition), strings.Join(counts, " "))
}

func gateT(ev *Evidence) Gate {
	var bad []string
	for _, name := range sortedNames(ev) {
		a, b := ev.Runs[name].Result.Fingerprints, ev.Second[name]
		if b == nil || a != b.Fingerprints {
			bad = append(bad, fmt.Sprintf("%s: fingerprints differ between two runs", name))
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	return pass(fmt.Sprintf("all %d scenarios ran twice with identical history, world and run-state fingerprints", len(ev.Runs)))
}

func isCommitmentChange(k event.Kind) bool {
	_, ok := k.CommitmentVerb()
	return ok
}
