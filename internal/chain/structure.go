package chain

import (
	"fmt"

	"github.com/acr-project/acr/internal/event"
)

// Structure checks the cycle structure of a ledger, record by record, in
// order: what makes a chain of valid records a whole history that the
// readers (acr log, audit, replay, the cycle index) and recovery can
// follow.
//
//   - Cycles follow each other: cycle N starts only when no cycle is open
//     and N-1 was the last one completed (an abandoned cycle, one whose
//     first batch never became durable, closes without completing and is
//     started again under the same number).
//   - A cycle's own events (every kind acr writes that is not out of band) carry its
//     number, and none is recorded for a cycle that has not started;
//     between cycles only the run's own records come (its start, a fault
//     and its checkpoint record), for the last cycle completed.
//   - An effect's intent is followed by its outcome (committed, not
//     applied, or a request for a person when nobody could tell) or by a
//     recovery record before its cycle completes or another starts.
//
// A cycle left open at the end of the ledger is not damage: it is what a
// crash leaves, and the next open of the run recovers it. A checkpoint,
// though, covers whole cycles only: its frontier may not fall inside an
// open one (see AtFrontier).
type Structure struct {
	completed int64 // the last cycle completed
	open      int64 // the cycle started and not completed or abandoned; 0 if none
	openSeq   int64 // the seq of its start
	intentSeq int64 // the seq of its intent still without an outcome or recovery record; 0 if none
}

// Next checks the record at seq, of kind and cycle, against what came
// before it, and moves on.
func (s *Structure) Next(kind event.Kind, cycle, seq int64) error {
	switch kind {
	case event.CycleStarted:
		switch {
		case s.open != 0 && s.intentSeq != 0:
			return fmt.Errorf("cycle %d starts while cycle %d is open (started at seq %d): its intent at seq %d has no outcome and no recovery record", cycle, s.open, s.openSeq, s.intentSeq)
		case s.open != 0:
			return fmt.Errorf("cycle %d starts while cycle %d is open (started at seq %d)", cycle, s.open, s.openSeq)
		case cycle != s.completed+1:
			return fmt.Errorf("cycle %d starts after cycle %d completed: cycles must follow each other", cycle, s.completed)
		}
		s.open, s.openSeq, s.intentSeq = cycle, seq, 0
		return nil
	case event.CycleCompleted:
		switch {
		case s.open == 0:
			return fmt.Errorf("cycle %d completes, but no cycle is open (the last completed is %d)", cycle, s.completed)
		case cycle != s.open:
			return fmt.Errorf("cycle %d completes, but cycle %d is the open one", cycle, s.open)
		case s.intentSeq != 0:
			return fmt.Errorf("cycle %d completes without the outcome of its intent at seq %d, and no recovery record", cycle, s.intentSeq)
		}
		s.completed, s.open, s.openSeq = cycle, 0, 0
		return nil
	case event.CycleAbandoned:
		s.open, s.openSeq, s.intentSeq = 0, 0, 0
		return nil
	case event.RecoveryStarted:
		s.intentSeq = 0
		return nil
	case event.ActionIntent:
		if s.open == 0 || cycle != s.open {
			return fmt.Errorf("an intent of cycle %d outside that cycle (%s)", cycle, s.describe())
		}
		s.intentSeq = seq
		return nil
	case event.ActionCommitted, event.ActionNotApplied, event.ApprovalRequested:
		s.intentSeq = 0
	}
	if kind.OutOfBand() || !kind.Valid() {
		// A kind acr does not write (a test's, a later release's) is not
		// placed: only the kinds whose place is known are held to it.
		return nil
	}
	switch {
	case s.open != 0 && cycle != s.open:
		return fmt.Errorf("%s of cycle %d inside cycle %d", kind, cycle, s.open)
	case s.open == 0 && cycle > s.completed:
		return fmt.Errorf("%s of cycle %d outside any cycle (the last completed is %d)", kind, cycle, s.completed)
	}
	return nil
}

// AtFrontier checks that a checkpoint may name the record just checked as
// its frontier: no cycle is open there.
func (s *Structure) AtFrontier() error {
	if s.open != 0 {
		return fmt.Errorf("the checkpoint's frontier is inside cycle %d, which is open (started at seq %d): a checkpoint covers whole cycles only, so recovery would never finish that cycle", s.open, s.openSeq)
	}
	return nil
}

// Open returns the cycle that is open after the records checked so far,
// if any: at the end of a ledger, a cycle the next open of the run
// recovers.
func (s *Structure) Open() (cycle int64, ok bool) { return s.open, s.open != 0 }

// Completed is the last cycle completed so far.
func (s *Structure) Completed() int64 { return s.completed }

func (s *Structure) describe() string {
	if s.open == 0 {
		return fmt.Sprintf("no cycle is open; the last completed is %d", s.completed)
	}
	return fmt.Sprintf("cycle %d is open", s.open)
}
