package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// layout places the bars: one unit each on a cycle axis; on a wall-clock
// axis (Options.TimeAxis) each bar starts at its first cycle's clock
// reading and lasts until the next bar's, at least minTimeWidth units
// wide. A run whose cycles all share one instant, or whose clock readings
// do not parse, stays on the cycle axis.
type layout struct {
	time  bool
	width int
	x, w  []float64
	t0    int64 // first clock reading, on a wall-clock axis
	span  int64 // seconds from the first reading to the last
}

// minTimeWidth keeps a bar of a burst of cycles visible on a time axis.
const minTimeWidth = 0.5

func (a *aggregator) layout() layout {
	n := len(a.bars)
	l := layout{width: n, x: make([]float64, n), w: make([]float64, n)}
	for i := range a.bars {
		l.x[i], l.w[i] = float64(i), 1
	}
	if !a.o.TimeAxis || n == 0 || !a.bars[0].timed {
		return l
	}
	t0, t1 := a.bars[0].fromAt, a.bars[0].toAt
	for i := range a.bars {
		if !a.bars[i].timed || a.bars[i].fromAt < t0 {
			return l
		}
		t1 = max(t1, a.bars[i].toAt)
	}
	if t1 <= t0 {
		return l
	}
	scale := float64(TimeWidth) / float64(t1-t0)
	t := layout{time: true, width: TimeWidth, x: make([]float64, n), w: make([]float64, n), t0: t0, span: t1 - t0}
	for i := range a.bars {
		t.x[i] = float64(a.bars[i].fromAt-t0) * scale
	}
	for i := range a.bars {
		end := float64(a.bars[i].toAt-t0) * scale
		if i+1 < n {
			end = t.x[i+1]
		}
		t.w[i] = max(end-t.x[i], minTimeWidth)
		t.x[i] = min(t.x[i], TimeWidth-t.w[i])
	}
	return t
}

// num prints a coordinate: whole numbers as such, others to one decimal.
func num(f float64) string {
	return strconv.FormatFloat(math.Round(f*10)/10, 'f', -1, 64)
}

func percent(n, of int64) string {
	if of == 0 {
		return "0.0"
	}
	return fmt.Sprintf("%.1f", float64(n)*100/float64(of))
}

// details picks the cycles shown in full: the recent ones, newest first,
// then the notable ones, newest first, as long as their estimated markup
// fits maxDetail. It returns them in cycle order, and how many notable or
// recent cycles did not fit.
func (a *aggregator) details() ([]CycleView, int) {
	kinds := map[int64][]string{}
	cycles := map[int64]Cycle{}
	var order []int64 // candidates in priority order
	add := func(c Cycle, kind string) {
		if _, ok := cycles[c.Seq]; !ok {
			cycles[c.Seq] = c
			order = append(order, c.Seq)
		}
		kinds[c.Seq] = append(kinds[c.Seq], kind)
	}
	rec := a.recent.items()
	for i := len(rec) - 1; i >= 0; i-- {
		add(rec[i], "recent")
	}
	var notable []int64
	byKind := map[int64][]string{}
	names := notableKinds()
	for k := range a.notable {
		for _, c := range a.notable[k].items() {
			if _, ok := cycles[c.Seq]; !ok && byKind[c.Seq] == nil {
				notable = append(notable, c.Seq)
				cycles[c.Seq] = c
			}
			byKind[c.Seq] = append(byKind[c.Seq], names[k])
		}
	}
	slices.SortFunc(notable, func(x, y int64) int { return int(y - x) })
	for s, ks := range byKind {
		kinds[s] = append(kinds[s], ks...)
	}
	order = append(order, notable...)

	budget := maxDetail << 10
	var keep []int64
	omitted := 0
	for _, s := range order {
		c := cycles[s]
		w := weight(&c)
		if w > budget {
			omitted++
			continue
		}
		budget -= w
		keep = append(keep, s)
	}
	slices.Sort(keep)
	out := make([]CycleView, 0, len(keep))
	for _, s := range keep {
		c := cycles[s]
		out = append(out, CycleView{Cycle: c, Class: "cycle-detail " + dispClass(c.Disposition), DispClass: dispClass(c.Disposition),
			Kinds: kinds[s], Title: cycleTitle(&c)})
	}
	return out, omitted
}

// cycleTitle is the tooltip of a cycle: what it selected, decided, did
// and saw.
func cycleTitle(c *Cycle) string {
	var b strings.Builder
	fmt.Fprintf(&b, "cycle %d · %s · %s", c.Seq, dispName(int(c.Disposition)), c.At)
	if len(c.Reasons) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(c.Reasons, ", "))
	}
	if c.Agenda != "" {
		fmt.Fprintf(&b, "\nagenda: %s", c.Agenda)
	} else {
		b.WriteString("\nagenda: none")
		if len(c.AgendaReasons) > 0 {
			fmt.Fprintf(&b, " (%s)", strings.Join(c.AgendaReasons, ", "))
		}
	}
	fmt.Fprintf(&b, "\ndecision: %s", c.Decision)
	if len(c.DecisionReasons) > 0 {
		fmt.Fprintf(&b, " (%s)", strings.Join(c.DecisionReasons, ", "))
	}
	if c.Action != "" {
		fmt.Fprintf(&b, "\naction: %s", c.Action)
	}
	if c.Outcome != "" {
		fmt.Fprintf(&b, "\noutcome: %s", c.Outcome)
		if c.Evaluation != "" {
			fmt.Fprintf(&b, ", evaluation %s", c.Evaluation)
		}
	}
	for _, cc := range c.Commitments {
		fmt.Fprintf(&b, "\ncommitment %s %s", cc.ID, cc.Event)
	}
	for _, ap := range c.Approvals {
		fmt.Fprintf(&b, "\napproval %s", ap.Kind)
		if ap.Verdict != "" {
			fmt.Fprintf(&b, " (%s)", ap.Verdict)
		}
	}
	if c.Compaction != nil {
		fmt.Fprintf(&b, "\ncompaction (%s)", c.Compaction.Trigger)
	}
	if c.Review != nil {
		b.WriteString("\nstrategic review")
	}
	return clipTo(b.String(), maxTitle)
}

func cycleBar(x, w string, c *Cycle, linked bool) Bar {
	b := Bar{X: x, W: w, From: c.Seq, To: c.Seq, Class: "cycle " + dispClass(c.Disposition), Title: cycleTitle(c)}
	if linked {
		b.Href = fmt.Sprintf("#c%d", c.Seq)
	}
	return b
}

// strip draws the timeline: a bar per cycle while bars are one cycle
// wide, else one hover target per bucket over stacked paths, one path per
// disposition (a path per bar would cost far more bytes).
func (a *aggregator) strip(l layout, detailed map[int64]bool) Strip {
	s := Strip{Width: l.width}
	if a.width == 1 {
		for i := range a.bars {
			if c := a.bars[i].cycle; c != nil {
				s.Bars = append(s.Bars, cycleBar(num(l.x[i]), num(l.w[i]), c, detailed[c.Seq]))
			}
		}
		return s
	}
	var paths [numDisp]strings.Builder
	for i := range a.bars {
		b := &a.bars[i]
		to := min(b.to, a.last)
		var mix []string
		y := 100.0
		for _, d := range dispOrder() {
			n := b.counts[d]
			if n == 0 {
				continue
			}
			h := 100 * float64(n) / float64(b.cycles)
			y -= h
			fmt.Fprintf(&paths[d], "M%s %.1fh%sv%.1fh-%sz", num(l.x[i]), max(y, 0), num(l.w[i]), h, num(l.w[i]))
			mix = append(mix, fmt.Sprintf("%s %d", dispName(d), n))
		}
		if b.cycles == 0 {
			mix = append(mix, "no completed cycle")
		}
		decs := ""
		for d, n := range b.decisions {
			if n > 0 {
				decs += fmt.Sprintf(", %s %d", decisionNames()[d], n)
			}
		}
		if decs != "" {
			decs = "; decisions" + strings.TrimPrefix(decs, ",")
		}
		title := fmt.Sprintf("cycles %d–%d (%d): %s%s%s", b.from, to, b.cycles, strings.Join(mix, " · "), decs, b.extras())
		s.Bars = append(s.Bars, Bar{X: num(l.x[i]), W: num(l.w[i]), From: b.from, To: to, Class: "bucket", Title: clipTo(title, maxTitle)})
	}
	for _, d := range dispOrder() {
		if paths[d].Len() > 0 {
			s.Paths = append(s.Paths, Path{Class: "seg disp-" + dispName(d), D: paths[d].String()})
		}
	}
	return s
}

// decisionStrip draws the governance decision of each cycle on the
// timeline's scale: a bar per cycle while bars are one cycle wide (its
// tooltip short: the timeline's has the rest), else each bucket's mix of
// decisions stacked, one path per decision, under the timeline's bucket
// whose tooltip names the mix.
func (a *aggregator) decisionStrip(l layout, detailed map[int64]bool) Strip {
	s := Strip{Width: l.width}
	var paths [numDec]strings.Builder
	for i := range a.bars {
		b := &a.bars[i]
		if c := b.cycle; a.width == 1 && c != nil {
			bar := Bar{X: num(l.x[i]), W: num(l.w[i]), From: c.Seq, To: c.Seq, Class: "cycle " + decClass(c.Decision),
				Title: clipTo(fmt.Sprintf("cycle %d · decision %s", c.Seq, c.Decision), maxTitle)}
			if detailed[c.Seq] {
				bar.Href = fmt.Sprintf("#c%d", c.Seq)
			}
			s.Bars = append(s.Bars, bar)
			continue
		}
		if a.width == 1 || b.cycles == 0 {
			continue
		}
		// The timeline's hover target above says the mix in words.
		y := 100.0
		for d, n := range b.decisions {
			if n == 0 {
				continue
			}
			h := 100 * float64(n) / float64(b.cycles)
			y -= h
			fmt.Fprintf(&paths[d], "M%s %.1fh%sv%.1fh-%sz", num(l.x[i]), max(y, 0), num(l.w[i]), h, num(l.w[i]))
		}
	}
	for d := range paths {
		if paths[d].Len() > 0 {
			s.Paths = append(s.Paths, Path{Class: "seg dec-" + decisionNames()[d], D: paths[d].String()})
		}
	}
	return s
}

// failingPlot draws the failing checks over the run, one point per bar
// that observed the world or follows one.
func (a *aggregator) failingPlot(l layout) FailingPlot {
	p := FailingPlot{Width: l.width, Top: max(a.failingPeak, a.checksNow, 1), Now: a.failingNow, Of: a.checksNow, Peak: a.failingPeak}
	var pts []string
	known, last := false, 0
	for i := range a.bars {
		if b := &a.bars[i]; b.observed {
			known, last = true, b.failing
		}
		if known {
			pts = append(pts, num(l.x[i]+l.w[i]/2)+","+yOf(int64(last), int64(p.Top)))
		}
	}
	p.Points = strings.Join(pts, " ")
	return p
}

func (b *bar) extras() string {
	var parts []string
	add := func(n int, one, many string) {
		switch {
		case n == 1:
			parts = append(parts, "1 "+one)
		case n > 1:
			parts = append(parts, fmt.Sprintf("%d %s", n, many))
		}
	}
	add(b.compactions, "compaction", "compactions")
	add(b.approvals, "approval event", "approval events")
	add(b.reviews, "strategic review", "strategic reviews")
	add(b.commitments, "commitment change", "commitment changes")
	add(b.halts, "FAULTED/STOPPED cycle", "FAULTED/STOPPED cycles")
	if b.incidents > 0 {
		parts = append(parts, fmt.Sprintf("%d incident(s): %s", b.incidents, joinKinds(b.incidentTyp)))
	}
	if len(parts) == 0 {
		return ""
	}
	return "; " + strings.Join(parts, ", ")
}

// axis labels the timeline with the cycle at its start, quarters and end.
func (a *aggregator) axis(l layout) []string {
	if len(a.bars) == 0 {
		return nil
	}
	out := make([]string, 0, 5)
	if l.time {
		for k := range int64(5) {
			out = append(out, state.FormatTime(time.Unix(l.t0+k*l.span/4, 0)))
		}
		return out
	}
	for k := range int64(5) {
		i := min(k*int64(len(a.bars))/4, int64(len(a.bars))-1)
		c := a.bars[i].from
		if k == 4 {
			c = min(a.bars[i].to, a.last)
		}
		out = append(out, fmt.Sprintf("cycle %d", c))
	}
	return out
}

// markers draws one row of ticks per kind of event, under the bars that
// hold one; the bar's own tooltip says what and how many.
func (a *aggregator) markers(l layout) []MarkerRow {
	rows := []MarkerRow{
		{ID: "compaction", Label: "compactions", Count: a.compactN},
		{ID: "approval", Label: "approvals", Count: a.approvalsN},
		{ID: "review", Label: "strategic reviews", Count: a.reviewsN},
		{ID: "commitment", Label: "commitment changes", Count: a.commitN},
		{ID: "incident", Label: "faults, stops, recoveries", Count: a.incidentN + a.haltsN},
	}
	var ds [5]strings.Builder
	for i := range a.bars {
		b := &a.bars[i]
		for r, n := range [5]int{b.compactions, b.approvals, b.reviews, b.commitments, b.incidents + b.halts} {
			if n > 0 {
				fmt.Fprintf(&ds[r], "M%s 0h%sv10h-%sz", num(l.x[i]), num(l.w[i]), num(l.w[i]))
				rows[r].Ticks++
			}
		}
	}
	for r := range rows {
		rows[r].D = ds[r].String()
	}
	return rows
}

// laneX places a cycle on the lanes' axis.
func (a *aggregator) laneX(seq int64) float64 {
	span := max(a.last-a.first+1, 1)
	return float64(max(seq-a.first, 0)) * LaneWidth / float64(span)
}

func (a *aggregator) laneViews(detailed map[int64]bool) []Lane {
	var out []Lane
	for _, l := range a.lanes {
		lv := Lane{ID: l.id, Summary: l.summary, Status: l.status, Omitted: l.omitted}
		for i, e := range l.events {
			x := a.laneX(e.cycle)
			end := float64(LaneWidth)
			if i+1 < len(l.events) {
				end = a.laneX(l.events[i+1].cycle)
			}
			if !terminal(e.Status) {
				lv.Spans = append(lv.Spans, LaneSpan{X: fmt.Sprintf("%.1f", x), W: fmt.Sprintf("%.1f", max(end-x, 1)), Class: "status-" + e.Status})
			}
			title := fmt.Sprintf("cycle %d · %s · %s %s, v%d %s", e.cycle, e.at, e.ID, e.Event, e.Version, e.Status)
			if e.Reason != "" {
				title += " (" + e.Reason + ")"
			}
			m := LaneMark{X: fmt.Sprintf("%.1f", x), Class: "ev-" + e.Event, Title: clipTo(title, maxTitle)}
			if detailed[e.cycle] {
				m.Href = fmt.Sprintf("#c%d", e.cycle)
			}
			lv.Marks = append(lv.Marks, m)
		}
		out = append(out, lv)
	}
	return out
}

// budgetUse pairs each contract budget with its use, in the contract's
// order.
func budgetUse(u state.BudgetUsage, h Head) []BudgetView {
	l := h.Limits
	return []BudgetView{
		{Name: "cycles", Used: u.Cycles, Soft: l.Cycles.Soft, Hard: l.Cycles.Hard},
		{Name: "cognitive_operations", Used: u.CognitiveOperations, Soft: l.CognitiveOperations.Soft, Hard: l.CognitiveOperations.Hard},
		{Name: "actions", Used: u.Actions, Soft: l.Actions.Soft, Hard: l.Actions.Hard},
		{Name: "compactions", Used: u.Compactions, Soft: l.Compactions.Soft, Hard: l.Compactions.Hard},
		{Name: "wall_clock_seconds", Used: u.WallClockSeconds, Soft: l.WallClockSeconds.Soft, Hard: l.WallClockSeconds.Hard},
	}
}

func usedOf(u *state.BudgetUsage, i int) int64 {
	return [...]int64{u.Cycles, u.CognitiveOperations, u.Actions, u.Compactions, u.WallClockSeconds}[i]
}

func (a *aggregator) budgets(l layout) []BudgetView {
	// The ledger is never behind the checkpoint, so its last cycle's
	// snapshot is the most recent use there is.
	use := a.head.Budget
	if a.lastBudget != nil && a.last >= a.head.CheckpointCycle {
		use = *a.lastBudget
	}
	out := budgetUse(use, a.head)
	for i := range out {
		b := &out[i]
		b.Percent = -1
		if b.Hard > 0 {
			b.Percent = int(min(b.Used*100/b.Hard, 100))
		}
		switch {
		case b.Hard > 0 && b.Used >= b.Hard:
			b.State = "hard"
		case b.Soft > 0 && b.Used >= b.Soft:
			b.State = "soft"
		default:
			b.State = "ok"
		}
		// The series carries the last known use over bars without one.
		series := make([]int64, 0, len(a.bars))
		top := max(b.Used, b.Soft, b.Hard, 1)
		var last *state.BudgetUsage
		for j := range a.bars {
			if a.bars[j].budget != nil {
				last = a.bars[j].budget
			}
			if last == nil {
				series = append(series, -1)
				continue
			}
			series = append(series, usedOf(last, i))
			top = max(top, usedOf(last, i))
		}
		var pts []string
		for j, u := range series {
			if u >= 0 {
				pts = append(pts, num(l.x[j]+l.w[j]/2)+","+yOf(u, top))
			}
		}
		b.Width, b.Points = l.width, strings.Join(pts, " ")
		if b.Soft > 0 {
			b.SoftY = yOf(b.Soft, top)
		}
		if b.Hard > 0 {
			b.HardY = yOf(b.Hard, top)
		}
	}
	return out
}

func yOf(v, top int64) string {
	return fmt.Sprintf("%.1f", 100-float64(v)*100/float64(top))
}

func joinKinds(ks []event.Kind) string {
	ss := make([]string, len(ks))
	for i, k := range ks {
		ss[i] = string(k)
	}
	return strings.Join(ss, ", ")
}
