package report

// View is everything the page shows, laid out for the template: every
// coordinate is computed here so that the template only prints. Its size
// is bounded by Options, not by the length of the run.
type View struct {
	Generator string
	Head      Head
	// Cycles is the number of completed cycles in the ledger; First and
	// Last are the first and last cycle numbers.
	Cycles      int64
	First, Last int64
	FirstAt     string
	LastAt      string
	// InProgress is a cycle the ledger has started but not completed (one
	// running now, or one the next invocation recovers); 0 if none.
	InProgress  int64
	Totals      []Total
	BucketWidth int64
	// TimeAxis is set when the timeline, the decisions, the marker rows
	// and the plots under it are laid on a wall-clock axis (Options.TimeAxis,
	// for a run whose cycles span more than one instant); they are then
	// TimeWidth user units wide.
	TimeAxis bool
	Timeline Strip
	// Decisions is a strip on the timeline's scale coloured by the
	// governance decision of each cycle (stacking a bucket's mix), with
	// DecisionTotals as its legend.
	Decisions      Strip
	DecisionTotals []Total
	// Axis labels the timeline at its start, quarters and end: cycle
	// numbers, or times on a wall-clock axis.
	Axis    []string
	Markers []MarkerRow
	// Failing plots how many of the world's checks failed, on the
	// timeline's scale; Checks has one row per check.
	Failing       FailingPlot
	Checks        []CheckRow
	ChecksOmitted bool
	// Recent is a strip of one bar per recent cycle, present only when
	// the timeline is bucketed.
	Recent *Strip
	// Details are the cycles shown in full, in cycle order; DetailsOmitted
	// counts notable cycles left out to keep the page small.
	Details        []CycleView
	DetailsOmitted int
	Lanes          []Lane
	LanesOmitted   int
	Approvals      []ApprovalRow
	ApprovalsN     int64 // approval requests in the whole run (resolutions of unseen requests included)
	Compactions    []CompactionRow
	CompactionsN   int64
	Incidents      []Incident
	IncidentsN     int64
	Budgets        []BudgetView
}

// Total is how many cycles ended in one disposition.
type Total struct {
	Disposition string
	Class       string
	Count       int64
	Percent     string
}

// Strip is one row of bars over a range of cycles, in SVG user units: one
// unit per bar horizontally, 100 vertically.
type Strip struct {
	Width int
	// Bars are one per cycle (class "cycle disp-<DISPOSITION>") or, in a
	// bucketed strip, one transparent hover target per bucket (class
	// "bucket") over the coloured Paths.
	Bars []Bar
	// Paths draw a bucketed strip: one path per disposition (class
	// "seg disp-<DISPOSITION>") stacking each bucket's share.
	Paths []Path
}

// TimeWidth is the width of a strip on a wall-clock axis, in SVG user
// units.
const TimeWidth = 1000

// Bar is one cycle, or one bucket of cycles, in a strip: X and W are its
// left edge and width in user units (one unit per bar on a cycle axis).
type Bar struct {
	X, W     string
	From, To int64
	Class    string
	// Href links a single cycle to its detail ("#c<N>") when it has one.
	Href  string
	Title string
}

// Path is an SVG path with a class.
type Path struct {
	Class string
	D     string
}

// MarkerRow is a row of ticks under the timeline, on its scale: one tick
// under each bar that holds at least one event of the row's kind.
type MarkerRow struct {
	ID    string // compaction, approval, review, commitment, incident
	Label string
	// Count is how many the label counts in the whole run, the same number
	// as the section of the page about them (approval requests for
	// approvals, like the Approvals section); Ticks is how many bars hold
	// at least one event of the kind (requests and answers for approvals).
	Count int64
	Ticks int
	D     string
}

// FailingPlot is the number of failing checks over the run, one point per
// bar (the count at the bar's last cycle that observed the world), in SVG
// user units: Width horizontally, 0 (top) to 100 vertically.
type FailingPlot struct {
	Width  int
	Points string
	// Top is the count at the top of the plot; Now and Of are the failing
	// and observed checks at the last cycle that observed; Peak is the
	// most failing at once.
	Top, Now, Of, Peak int
}

// CheckRow is one check of the environment over the run.
type CheckRow struct {
	ID string
	// Status is failing or passing, at the last cycle that observed it.
	Status string
	// Since is the cycle it has had that status since (SinceHref links it).
	Since     int64
	SinceHref string
	// Observed and Failing count the cycles that observed it and that
	// found it failing; FirstFailing and LastFailing are 0 if it never failed.
	Observed, Failing         int64
	FirstFailing, LastFailing int64
	// Fixed counts its changes from failing to passing, Regressed from
	// passing to failing.
	Fixed, Regressed int
}

// CycleView is a cycle shown in full detail.
type CycleView struct {
	Cycle
	// Class is "cycle-detail disp-<DISPOSITION>".
	Class     string
	DispClass string
	// Kinds say why the cycle is kept: recent, approval, halt, compaction,
	// review, commitment, refusal.
	Kinds []string
	Title string
}

// Lane is one commitment's lifecycle on the run's cycle axis, in SVG user
// units: 0 to LaneWidth horizontally.
type Lane struct {
	ID      string
	Summary string
	Status  string
	Omitted int // lifecycle events not shown
	Spans   []LaneSpan
	Marks   []LaneMark
}

// LaneWidth is the horizontal extent of a lane in SVG user units.
const LaneWidth = 1000

// LaneSpan is a stretch of a commitment's life in one live status.
type LaneSpan struct {
	X, W  string
	Class string // status-active, status-suspended
}

// LaneMark is one lifecycle event.
type LaneMark struct {
	X     string
	Class string // ev-created, ev-suspended, ...
	Href  string
	Title string
}

// ApprovalRow is one approval request and its resolution.
type ApprovalRow struct {
	ActionRef      string
	Action         string
	Reason         string
	RequestedCycle int64
	RequestedAt    string
	ResolvedCycle  int64
	ResolvedAt     string
	Verdict        string
	By             string
	// State is pending, approved, denied or unknown (resolved, but the
	// request is older than the rows kept).
	State string
	// RequestedHref and ResolvedHref link to the cycles' details when
	// they are shown.
	RequestedHref string
	ResolvedHref  string
}

// CompactionRow is one compaction of working memory.
type CompactionRow struct {
	Cycle int64
	At    string
	Href  string // link to the cycle's detail when it is shown
	Compaction
}

// BudgetView is one budget's use against the contract's limits, with its
// history on the timeline's scale, in SVG user units: one per bar
// horizontally, 0 (top) to 100 vertically.
type BudgetView struct {
	Name       string
	Used       int64
	Soft, Hard int64
	// Percent of the hard limit used, 0 to 100; -1 without a hard limit.
	Percent int
	// State is ok, soft (soft limit reached) or hard (hard limit reached).
	State  string
	Width  int
	Points string
	SoftY  string
	HardY  string
}
