package report

import (
	"fmt"
	"iter"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/acr-project/acr/internal/codec"
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

// Clipping keeps any one ledger value from inflating the page. Lengths
// are measured as the bytes the value takes once HTML-escaped, so even a
// string of quotes stays within them.
const (
	maxString = 160  // one value
	maxList   = 8    // values of one list (reasons, notes, changes)
	maxTitle  = 320  // one tooltip
	maxDetail = 1400 // KiB of estimated markup for the cycles shown in full
	maxDiff   = 4096 // one cycle's diff (the ledger keeps it whole: acr audit)
)

// escapedLen is the length of a rune once html/template has escaped it.
func escapedLen(r rune) int {
	switch r {
	case '"', '\'', '<', '>', '&', 0:
		return 5
	}
	return utf8.RuneLen(max(r, 0))
}

func cost(s string) int {
	n := 0
	for _, r := range s {
		n += escapedLen(r)
	}
	return n
}

// clipTo cuts s so that, escaped, it takes at most limit bytes, marking
// the cut with an ellipsis. It reads at most limit bytes of s.
func clipTo(s string, limit int) string {
	if len(s) <= limit/5 {
		return s
	}
	n, cut := 0, -1
	for i, r := range s {
		if cut < 0 && n+escapedLen(r)+len("…") > limit {
			cut = i
		}
		if n += escapedLen(r); n > limit {
			return s[:cut] + "…"
		}
	}
	return s
}

func clip(s string) string { return clipTo(s, maxString) }

func clipList(ss []string) []string {
	if len(ss) > maxList {
		ss = append(slices.Clone(ss[:maxList-1]), fmt.Sprintf("… %d more", len(ss)-maxList+1))
	} else {
		ss = slices.Clone(ss)
	}
	for i := range ss {
		ss[i] = clip(ss[i])
	}
	return ss
}

func clipCycle(c Cycle) Cycle {
	c.At, c.Agenda, c.AgendaSummary, c.Action = clip(c.At), clip(c.Agenda), clip(c.AgendaSummary), clip(c.Action)
	c.Decision, c.Outcome, c.Evaluation = clip(c.Decision), clip(c.Outcome), clip(c.Evaluation)
	c.Diff = clipTo(c.Diff, maxDiff)
	c.Reasons, c.WokeBy, c.AgendaReasons, c.DecisionReasons = clipList(c.Reasons), clipList(c.WokeBy), clipList(c.AgendaReasons), clipList(c.DecisionReasons)
	notes := c.Notes
	if len(c.Commitments) > maxList {
		notes = append(slices.Clone(notes), fmt.Sprintf("%d more commitment changes", len(c.Commitments)-maxList))
		c.Commitments = c.Commitments[:maxList]
	}
	if len(c.Approvals) > maxList {
		notes = append(slices.Clone(notes), fmt.Sprintf("%d more approval events", len(c.Approvals)-maxList))
		c.Approvals = c.Approvals[:maxList]
	}
	c.Inbox, c.Notes = clipList(c.Inbox), clipList(notes)
	c.Failing, c.Passing = clipList(c.Failing), nil // the checks table has them all
	if c.Review != nil {
		c.Review = clipList(c.Review)
	}
	c.Commitments = slices.Clone(c.Commitments)
	for i := range c.Commitments {
		cc := &c.Commitments[i]
		cc.ID, cc.Event, cc.Status, cc.Summary, cc.Reason = clip(cc.ID), clip(cc.Event), clip(cc.Status), clip(cc.Summary), clip(cc.Reason)
	}
	c.Approvals = slices.Clone(c.Approvals)
	for i := range c.Approvals {
		ap := &c.Approvals[i]
		ap.Kind, ap.ActionRef, ap.Action = clip(ap.Kind), codec.Ref(clip(string(ap.ActionRef))), clip(ap.Action)
		ap.Reason, ap.Verdict, ap.By = clip(ap.Reason), clip(ap.Verdict), clip(ap.By)
	}
	if c.Compaction != nil {
		cp := *c.Compaction
		cp.Trigger, cp.Block = clip(cp.Trigger), clip(cp.Block)
		c.Compaction = &cp
	}
	if c.Budget != nil {
		b := *c.Budget
		b.SoftWarned = nil // the budgets section reads the soft levels from the contract
		c.Budget = &b
	}
	return c
}

// weight estimates the markup of a cycle shown in full: its text appears
// in the summary line and in the detail list, plus fixed markup.
func weight(c *Cycle) int {
	n := cost(c.At) + cost(c.Agenda) + cost(c.AgendaSummary) + cost(c.Action) + cost(c.Decision) + cost(c.Outcome) + cost(c.Evaluation) + cost(c.Diff)
	for _, l := range [][]string{c.Reasons, c.WokeBy, c.AgendaReasons, c.DecisionReasons, c.Inbox, c.Notes, c.Review, c.Failing} {
		for _, s := range l {
			n += cost(s) + 8
		}
	}
	for _, cc := range c.Commitments {
		n += cost(cc.ID) + cost(cc.Event) + cost(cc.Status) + cost(cc.Summary) + cost(cc.Reason) + 80
	}
	for _, ap := range c.Approvals {
		n += cost(ap.Kind) + cost(string(ap.ActionRef)) + cost(ap.Action) + cost(ap.Reason) + cost(ap.Verdict) + cost(ap.By) + 80
	}
	if c.Compaction != nil {
		n += cost(c.Compaction.Trigger) + cost(c.Compaction.Block) + 80
	}
	return 2*n + 1200
}

func clipHead(h Head) Head {
	h.RunID, h.Status, h.UpdatedAt, h.GoalID, h.Mission, h.ContractID = clip(h.RunID), clip(h.Status), clip(h.UpdatedAt), clip(h.GoalID), clip(h.Mission), clip(h.ContractID)
	h.World = clip(h.World)
	h.Reasons = clipList(h.Reasons)
	h.Budget.SoftWarned = clipList(h.Budget.SoftWarned)
	if len(h.Pending) > maxList {
		h.Pending = h.Pending[:maxList]
	}
	h.Pending = slices.Clone(h.Pending)
	for i := range h.Pending {
		p := &h.Pending[i]
		p.Ref, p.Action, p.Reason, p.RequestedAt = codec.Ref(clip(string(p.Ref))), clip(p.Action), clip(p.Reason), clip(p.RequestedAt)
	}
	return h
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
