package report

import (
	"errors"
	"fmt"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/ledger"
)

// History is what Read reads of a run's ledger: every committed line, in
// order, checked but not decoded. It is an interface so that the report
// reads a run wherever its ledger is kept (ledger.Reader for a state
// directory, jsstore for JetStream) and never opens a file.
type History interface {
	ScanLines(fn func(ledger.Line) error) error
}

// Read streams the ledger of the run in h once and aggregates it under
// head (the run's checkpoint). It never writes and takes no lock: a
// running invocation may append meanwhile, and the report then covers the
// ledger as it was when Read opened it (a cycle still in progress shows
// as View.InProgress).
//
// Memory holds one cycle's shown events and the bounded aggregate,
// whatever the length of the history.
func Read(h History, head Head, o Options) (*View, error) {
	var (
		scanErr    error
		inProgress int64
	)
	entries := func(yield func(Entry) bool) {
		errStop := errors.New("stop")
		var cycle []Event
		open := false
		scanErr = h.ScanLines(func(ln ledger.Line) error {
			if !Shown(ln.Type) {
				return nil
			}
			ev, err := decodeEvent(ln.Type, ln.Event)
			if err != nil {
				return &ledger.DamageError{Offset: ln.Offset, Msg: "event does not decode: " + err.Error()}
			}
			switch {
			case Incidental(ev.Type) || (!open && ev.Type == event.RunFaulted):
				in := IncidentOf(ev)
				if !yield(Entry{Incident: &in}) {
					return errStop
				}
			case ev.Type == event.CycleStarted:
				// A cycle that started and never completed was abandoned
				// by recovery and derived afresh: this start replaces it.
				cycle, open = append(cycle[:0], ev), true
			case open:
				cycle = append(cycle, ev)
				if ev.Type != event.CycleCompleted {
					return nil
				}
				c, err := Digest(cycle)
				if err != nil {
					return &ledger.DamageError{Offset: ln.Offset, Msg: err.Error()}
				}
				cycle, open = cycle[:0], false
				if !yield(Entry{Cycle: &c}) {
					return errStop
				}
			}
			return nil
		})
		if errors.Is(scanErr, errStop) {
			scanErr = nil
		}
		if open && len(cycle) > 0 {
			inProgress = cycle[0].CycleSeq
		}
	}
	v := Aggregate(head, entries, o)
	if scanErr != nil {
		return nil, fmt.Errorf("read ledger %s: %w", ledger.FileName, scanErr)
	}
	v.InProgress = inProgress
	return v, nil
}
