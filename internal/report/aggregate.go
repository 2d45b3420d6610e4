package report

import (
	"fmt"
	"iter"
	"slices"
	"strconv"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// Aggregate folds a run's history into a View. It reads nothing but its
// arguments, keeps only bounded state while it consumes entries (so a
// history of any length can be streamed through it), and gives the same
// View for the same input.
func Aggregate(head Head, entries iter.Seq[Entry], o Options) *View {
	a := newAggregator(head, o)
	for e := range entries {
		switch {
		case e.Cycle != nil:
			a.cycle(*e.Cycle)
		case e.Incident != nil:
			a.incident(*e.Incident)
		}
	}
	return a.view()
}

// ring keeps the last n items pushed.
type ring[T any] struct {
	buf  []T
	next int
	n    int
}

func newRing[T any](n int) ring[T] { return ring[T]{n: n} }

func (r *ring[T]) push(v T) {
	if len(r.buf) < r.n {
		r.buf = append(r.buf, v)
		return
	}
	r.buf[r.next] = v
	r.next = (r.next + 1) % r.n
}

// items returns the kept items, oldest first.
func (r *ring[T]) items() []T {
	return append(slices.Clone(r.buf[r.next:]), r.buf[:r.next]...)
}

type laneEvent struct {
	cycle int64
	at    string
	CommitmentChange
}

type laneAcc struct {
	id, summary, status string
	events              []laneEvent
	omitted             int
	lastActive          int64
}

type aggregator struct {
	o           Options
	head        Head
	width       int64
	bars        []bar
	totals      [numDisp]int64
	cycles      int64
	first, last int64
	firstAt     string
	lastAt      string
	recent      ring[Cycle]
	notable     [numKinds]ring[Cycle]
	lanes       []*laneAcc
	lanesGone   int
	approvals   []*ApprovalRow
	approvalsN  int64
	compactions ring[CompactionRow]
	compactN    int64
	incidents   ring[Incident]
	incidentN   int64
	lastBudget  *state.BudgetUsage
	decTotals   [numDec]int64
	reviewsN    int64
	commitN     int64
	haltsN      int64
	// checks tracks each check of the environment (at most MaxChecks);
	// checksFull says more were seen than it holds.
	checks     map[string]*checkAcc
	checksFull bool
	// failingNow and checksNow are the failing and observed checks at the
	// last cycle that observed; failingPeak the most failing at once.
	failingNow, checksNow, failingPeak int
}

// checkAcc is what the report keeps of one check.
type checkAcc struct {
	status                    string // failing, passing
	since                     int64
	observed, failing         int64
	firstFailing, lastFailing int64
	fixed, regressed          int
}

func newAggregator(head Head, o Options) *aggregator {
	o = o.withDefaults()
	a := &aggregator{o: o, head: clipHead(head), width: 1, recent: newRing[Cycle](o.Recent),
		compactions: newRing[CompactionRow](o.MaxCompactions), incidents: newRing[Incident](o.MaxIncidents), checks: map[string]*checkAcc{}}
	for i := range a.notable {
		a.notable[i] = newRing[Cycle](o.NotablePerKind)
	}
	return a
}

// barFor returns the bar of a cycle, doubling the bucket width until the
// bars fit MaxBars.
func (a *aggregator) barFor(seq int64) *bar {
	seq = max(seq, 1)
	for (seq-1)/a.width >= int64(a.o.MaxBars) {
		a.mergeBars()
	}
	i := int((seq - 1) / a.width)
	for len(a.bars) <= i {
		n := int64(len(a.bars))
		a.bars = append(a.bars, bar{from: n*a.width + 1, to: (n + 1) * a.width})
	}
	return &a.bars[i]
}

// mergeBars halves the number of bars: pairs become one bar twice as
// wide. Single-cycle detail leaves the bars; recent and notable cycles
// keep it in their own rings.
func (a *aggregator) mergeBars() {
	out := make([]bar, 0, (len(a.bars)+1)/2)
	for i := 0; i < len(a.bars); i += 2 {
		m := a.bars[i]
		m.cycle = nil
		if i+1 < len(a.bars) {
			m.absorb(a.bars[i+1])
		}
		m.to = m.from + 2*a.width - 1
		out = append(out, m)
	}
	a.bars = out
	a.width *= 2
}

func (a *aggregator) cycle(c Cycle) {
	if c.Observed {
		a.observe(c.Seq, c.Failing, c.Passing)
	}
	c = clipCycle(c)
	d := int(c.Disposition)
	if d >= numDisp {
		d = 0
	}
	a.totals[d]++
	a.cycles++
	if a.first == 0 || c.Seq < a.first {
		a.first, a.firstAt = c.Seq, c.At
	}
	if c.Seq >= a.last {
		a.last, a.lastAt = c.Seq, c.At
	}
	if c.Budget != nil {
		a.lastBudget = c.Budget
	}

	b := a.barFor(c.Seq)
	b.counts[d]++
	b.cycles++
	if c.Budget != nil {
		b.budget = c.Budget
	}
	if c.Compaction != nil {
		b.compactions++
	}
	b.approvals += len(c.Approvals)
	if c.Review != nil {
		b.reviews++
	}
	b.commitments += len(c.Commitments)
	if c.Disposition == state.Faulted || c.Disposition == state.Stopped {
		b.halts++
		a.haltsN++
	}
	if c.Review != nil {
		a.reviewsN++
	}
	a.commitN += int64(len(c.Commitments))
	dec := decIndex(c.Decision)
	b.decisions[dec]++
	a.decTotals[dec]++
	if t, err := state.ParseTime(c.At); err == nil {
		b.at(t.Unix())
	}
	if c.Observed {
		b.failing, b.checks, b.observed = a.failingNow, a.checksNow, true
	}
	if a.width == 1 {
		cc := c
		b.cycle = &cc
	}

	a.recent.push(c)
	for i, is := range kindsOf(&c) {
		if is {
			a.notable[i].push(c)
		}
	}
	for _, cc := range c.Commitments {
		a.commitment(c.Seq, c.At, cc)
	}
	for _, ap := range c.Approvals {
		a.approval(c.Seq, c.At, ap)
	}
	if c.Compaction != nil {
		a.compactN++
		a.compactions.push(CompactionRow{Cycle: c.Seq, At: c.At, Compaction: *c.Compaction})
	}
}

// observe files what a cycle saw of each check into the checks table and
// the failing count.
func (a *aggregator) observe(seq int64, failing, passing []string) {
	a.failingNow, a.checksNow = len(failing), len(failing)+len(passing)
	a.failingPeak = max(a.failingPeak, a.failingNow)
	see := func(id, status string) {
		id = clip(id)
		c := a.checks[id]
		if c == nil {
			if len(a.checks) >= a.o.MaxChecks {
				a.checksFull = true
				return
			}
			c = &checkAcc{status: status, since: seq}
			a.checks[id] = c
		}
		switch {
		case c.status == "passing" && status == "failing":
			c.regressed++
			c.since = seq
		case c.status == "failing" && status == "passing":
			c.fixed++
			c.since = seq
		}
		c.status = status
		c.observed++
		if status == "failing" {
			c.failing++
			if c.firstFailing == 0 {
				c.firstFailing = seq
			}
			c.lastFailing = seq
		}
	}
	for _, id := range failing {
		see(id, "failing")
	}
	for _, id := range passing {
		see(id, "passing")
	}
}

func (a *aggregator) incident(in Incident) {
	in.At, in.Type, in.Detail, in.Reasons = clip(in.At), event.Kind(clip(string(in.Type))), clip(in.Detail), clipList(in.Reasons)
	a.incidentN++
	a.incidents.push(in)
	b := a.barFor(in.Cycle)
	b.incidents++
	b.addIncident(in.Type)
}

// commitment files a lifecycle event into the commitment's lane. With
// more commitments than lanes, the lane idle longest goes, finished ones
// first.
func (a *aggregator) commitment(seq int64, at string, cc CommitmentChange) {
	i := slices.IndexFunc(a.lanes, func(l *laneAcc) bool { return l.id == cc.ID })
	if i < 0 {
		if len(a.lanes) >= a.o.MaxLanes {
			a.dropLane()
		}
		a.lanes = append(a.lanes, &laneAcc{id: cc.ID})
		i = len(a.lanes) - 1
	}
	l := a.lanes[i]
	if cc.Summary != "" {
		l.summary = cc.Summary
	}
	l.status, l.lastActive = cc.Status, seq
	l.events = append(l.events, laneEvent{cycle: seq, at: at, CommitmentChange: cc})
	if len(l.events) > a.o.MaxLaneEvents {
		// Keep the first event (how it began) and the most recent ones.
		l.events = slices.Delete(l.events, 1, 2)
		l.omitted++
	}
}

func (a *aggregator) dropLane() {
	victim := 0
	for i, l := range a.lanes {
		v := a.lanes[victim]
		lt, vt := terminal(l.status), terminal(v.status)
		if (lt && !vt) || (lt == vt && l.lastActive < v.lastActive) {
			victim = i
		}
	}
	a.lanes = slices.Delete(a.lanes, victim, victim+1)
	a.lanesGone++
}

func terminal(status string) bool {
	return status == "completed" || status == "expired" || status == "abandoned"
}

// approval files a request or a resolution into the approvals table. When
// the table is full, the oldest resolved row goes first.
func (a *aggregator) approval(seq int64, at string, ap ApprovalChange) {
	switch ap.Kind {
	case "requested":
		a.approvalsN++
		a.addApproval(&ApprovalRow{ActionRef: string(ap.ActionRef), Action: ap.Action, Reason: ap.Reason, RequestedCycle: seq, RequestedAt: at, State: "pending"})
	case "resolved":
		var row *ApprovalRow
		for i := len(a.approvals) - 1; i >= 0; i-- {
			if r := a.approvals[i]; r.ActionRef == string(ap.ActionRef) && r.ResolvedCycle == 0 {
				row = r
				break
			}
		}
		if row == nil {
			a.approvalsN++
			row = &ApprovalRow{ActionRef: string(ap.ActionRef), Action: ap.Action}
			a.addApproval(row)
		}
		row.ResolvedCycle, row.ResolvedAt, row.Verdict, row.By = seq, at, ap.Verdict, ap.By
		switch ap.Verdict {
		case "approve":
			row.State = "approved"
		case "deny":
			row.State = "denied"
		default:
			row.State = "unknown"
		}
	}
}

func (a *aggregator) addApproval(r *ApprovalRow) {
	if len(a.approvals) >= a.o.MaxApprovals {
		i := slices.IndexFunc(a.approvals, func(r *ApprovalRow) bool { return r.ResolvedCycle != 0 })
		a.approvals = slices.Delete(a.approvals, max(i, 0), max(i, 0)+1)
	}
	a.approvals = append(a.approvals, r)
}

// view lays the aggregate out for the template.
func (a *aggregator) view() *View {
	v := &View{Generator: clip(a.o.Generator), Head: a.head, Cycles: a.cycles, First: a.first, Last: a.last,
		FirstAt: a.firstAt, LastAt: a.lastAt, BucketWidth: a.width, LanesOmitted: a.lanesGone,
		ApprovalsN: a.approvalsN, CompactionsN: a.compactN, IncidentsN: a.incidentN}
	for _, d := range dispOrder() {
		if n := a.totals[d]; n > 0 || d != 0 {
			v.Totals = append(v.Totals, Total{Disposition: dispName(d), Class: "disp-" + dispName(d), Count: n, Percent: percent(n, a.cycles)})
		}
	}
	for i, n := range a.decTotals {
		if name := decisionNames()[i]; n > 0 || name != "OTHER" {
			v.DecisionTotals = append(v.DecisionTotals, Total{Disposition: name, Class: "dec-" + name, Count: n, Percent: percent(n, a.cycles)})
		}
	}
	v.Details, v.DetailsOmitted = a.details()
	detailed := map[int64]bool{}
	for _, d := range v.Details {
		detailed[d.Seq] = true
	}
	lay := a.layout()
	v.TimeAxis = lay.time
	v.Timeline = a.strip(lay, detailed)
	v.Decisions = a.decisionStrip(lay, detailed)
	v.Axis = a.axis(lay)
	v.Markers = a.markers(lay)
	v.Failing = a.failingPlot(lay)
	if a.width > 1 {
		rec := a.recent.items()
		s := Strip{Width: len(rec)}
		for i := range rec {
			s.Bars = append(s.Bars, cycleBar(strconv.Itoa(i), "1", &rec[i], detailed[rec[i].Seq]))
		}
		v.Recent = &s
	}
	v.Lanes = a.laneViews(detailed)
	href := func(seq int64) string {
		if detailed[seq] {
			return fmt.Sprintf("#c%d", seq)
		}
		return ""
	}
	for _, r := range a.approvals {
		row := *r
		row.RequestedHref, row.ResolvedHref = href(row.RequestedCycle), href(row.ResolvedCycle)
		v.Approvals = append(v.Approvals, row)
	}
	v.Compactions = a.compactions.items()
	for i := range v.Compactions {
		v.Compactions[i].Href = href(v.Compactions[i].Cycle)
	}
	v.Incidents = a.incidents.items()
	v.Budgets = a.budgets(lay)
	v.Checks, v.ChecksOmitted = a.checkRows(href), a.checksFull
	return v
}

// checkRows lists the checks by id.
func (a *aggregator) checkRows(href func(int64) string) []CheckRow {
	ids := make([]string, 0, len(a.checks))
	for id := range a.checks {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	out := make([]CheckRow, 0, len(ids))
	for _, id := range ids {
		c := a.checks[id]
		out = append(out, CheckRow{ID: id, Status: c.status, Since: c.since, SinceHref: href(c.since), Observed: c.observed, Failing: c.failing,
			FirstFailing: c.firstFailing, LastFailing: c.lastFailing, Fixed: c.fixed, Regressed: c.regressed})
	}
	return out
}
