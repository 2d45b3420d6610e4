package report

import (
	"slices"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// Notable kinds, in the order kindsOf reports them: a cycle of each kind
// keeps its detail even when it is not recent.
const numKinds = 6

func notableKinds() [numKinds]string {
	return [numKinds]string{"approval", "halt", "compaction", "review", "commitment", "refusal"}
}

func kindsOf(c *Cycle) [numKinds]bool {
	return [numKinds]bool{
		len(c.Approvals) > 0,
		c.Disposition == state.Faulted || c.Disposition == state.Stopped,
		c.Compaction != nil,
		c.Review != nil,
		len(c.Commitments) > 0,
		c.Decision == "REFUSE" || c.Decision == "DEFER",
	}
}

// Governance decisions, in legend and stacking order. A cycle that
// reached no decision is NONE; a name the report does not know is OTHER.
const numDec = 7

func decisionNames() [numDec]string {
	return [numDec]string{"EXECUTE", "ESCALATE", "REFUSE", "DEFER", "IDLE", "NONE", "OTHER"}
}

func decIndex(d string) int {
	names := decisionNames()
	if i := slices.Index(names[:], d); i >= 0 {
		return i
	}
	return numDec - 1
}

func decClass(d string) string { return "dec-" + decisionNames()[decIndex(d)] }

// numDisp covers every Disposition value, the invalid zero included (a
// cycle record that lacks one is counted, not dropped).
const numDisp = 8

// dispOrder is the stacking and legend order: the enum order, then the
// invalid value.
func dispOrder() []int {
	var out []int
	for _, d := range state.Dispositions() {
		out = append(out, int(d))
	}
	return append(out, 0)
}

func dispName(d int) string {
	if d <= 0 || d >= numDisp {
		return "UNKNOWN"
	}
	return state.Disposition(d).String()
}

func dispClass(d state.Disposition) string { return "disp-" + dispName(int(d)) }

// bar accumulates the cycles of one timeline bar.
type bar struct {
	from, to    int64
	counts      [numDisp]int64
	cycles      int64
	compactions int
	approvals   int
	reviews     int
	commitments int
	incidents   int
	halts       int
	budget      *state.BudgetUsage // at the bar's last cycle
	cycle       *Cycle             // the cycle, while bars are one cycle wide
	incidentTyp []event.Kind       // a few incident types, for the tooltip
	decisions   [numDec]int64
	// fromAt and toAt are the clock readings (Unix seconds) of the bar's
	// first and last cycle, if timed says they could be read.
	fromAt, toAt int64
	timed        bool
	// failing and checks are the failing and observed checks at the bar's
	// last cycle that observed the world, if observed.
	failing, checks int
	observed        bool
}

func (b *bar) absorb(o bar) {
	for i := range b.counts {
		b.counts[i] += o.counts[i]
	}
	b.cycles += o.cycles
	b.compactions += o.compactions
	b.approvals += o.approvals
	b.reviews += o.reviews
	b.commitments += o.commitments
	b.incidents += o.incidents
	b.halts += o.halts
	if o.budget != nil {
		b.budget = o.budget
	}
	for _, t := range o.incidentTyp {
		b.addIncident(t)
	}
	for i := range b.decisions {
		b.decisions[i] += o.decisions[i]
	}
	if o.timed {
		if !b.timed {
			b.fromAt = o.fromAt
		}
		b.toAt, b.timed = o.toAt, true
	}
	if o.observed {
		b.failing, b.checks, b.observed = o.failing, o.checks, true
	}
}

// at records the clock reading of a cycle of the bar.
func (b *bar) at(t int64) {
	if !b.timed {
		b.fromAt = t
	}
	b.toAt, b.timed = max(b.toAt, t), true
}

func (b *bar) addIncident(t event.Kind) {
	if !slices.Contains(b.incidentTyp, t) && len(b.incidentTyp) < 3 {
		b.incidentTyp = append(b.incidentTyp, t)
	}
}
