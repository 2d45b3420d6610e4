// Package report turns a run's history into one self-contained HTML page:
// a timeline of cycles coloured by loop disposition and by governance
// decision (on a cycle axis, or on the wall clock with Options.TimeAxis),
// what each cycle selected, decided, did and observed, the failing checks
// over the run and a table of every check, lanes for commitments'
// lifecycles, compaction points, approvals requested and resolved, and
// budget use against the contract's limits.
//
// The package is a functional core with a thin shell:
//
//   - Digest (digest.go) folds one cycle's ledger events into a Cycle; it
//     reads no file.
//   - Aggregate (aggregate.go) folds a stream of Entries (cycles and the
//     events recorded between them) into a View whose size does not depend
//     on the length of the run. It reads no file either, so table tests
//     drive it directly.
//   - Render (render.go) writes the View as HTML with html/template: inline
//     CSS, inline SVG, and a few lines of inline JavaScript that only add
//     a detail panel; the page is complete without them.
//   - Read (read.go) is the shell: it streams the ledger once with
//     ledger.ScanLines, decoding only the event types the report shows,
//     and feeds Aggregate. Memory is one cycle's events plus the bounded
//     View, whatever the length of the history.
//
// # Bounds
//
// A run of any length renders to at most MaxPageBytes (4 MiB). The
// timeline shows one bar per cycle up to Options.MaxBars cycles (2,000);
// beyond that, consecutive cycles share a bar (a bucket whose width is a
// power of two, so the bar count stays between MaxBars/2 and MaxBars) and
// the bar shows the mix of dispositions in it. Full per-cycle detail is
// kept for the most recent Options.Recent cycles and for the most recent
// notable cycles of each kind (approvals, faults and stops, compactions,
// strategic reviews, commitment changes, refusals and deferrals), as long
// as their estimated markup fits a fixed budget; every other list
// (commitment lanes, approvals, compactions, incidents) keeps its most
// recent entries and says how many it left out, and the checks table
// keeps the first Options.MaxChecks checks seen. Every string taken from
// the ledger is clipped by the size it takes once HTML-escaped, so no
// single event can inflate the page. A generated run of 100,000 cycles
// (1.5 GB of ledger) gives a page of under 1 MB.
package report
