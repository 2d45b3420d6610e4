package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/state"
)

// FaultedError is what every Step (and so every Run) returns while the run
// is FAULTED and nothing in its inbox resumes it: the run needs a person,
// and each invocation says so (the CLI exits 70), not only the one that
// faulted it. It wraps ErrFaulted.
type FaultedError struct {
	// Cause is the fault's cause as recorded (the error that faulted the
	// run), or its reason codes when none was recorded.
	Cause string
}

func (e *FaultedError) Error() string {
	return fmt.Sprintf("%s: %s; acr wake --signal manual_resume resumes it once the cause is fixed", ErrFaulted, e.Cause)
}

func (e *FaultedError) Unwrap() error { return ErrFaulted }

// faulted is the first thing a Step does on a FAULTED run: it reads the
// inbox alone, without observing the world (a check that gives no verdict
// is not run, and not counted, again) or asking any provider, and unless
// a manual_resume signal or a stop request waits there it writes nothing
// and returns a *FaultedError. It returns no error when the run is not
// FAULTED, or when the inbox resumes it (the cycle then runs as usual).
func (d *Driver) faulted() (Summary, error) {
	rs := &d.state.Run
	if rs.Status != state.RunFaulted {
		return Summary{}, nil
	}
	in := Inputs{Now: d.Clock.Now()}
	if d.Inbox != nil {
		items, _, err := d.Inbox.List()
		if err != nil {
			// The store's failure, not a provider's (as in gather).
			return Summary{}, fmt.Errorf("read the inbox: %w", err)
		}
		for _, it := range items {
			if !slices.Contains(rs.InboxSeen, it.ID) && !slices.Contains(d.consumed, it.ID) {
				in.Inbox = append(in.Inbox, it)
			}
		}
	}
	ok, why := Eligible(d.state, in)
	if ok {
		return Summary{}, nil
	}
	cause := strings.Join(rs.ReasonCodes, ", ")
	if w := rs.Waiting; w != nil && w.Kind == WaitingFault && w.Reason != "" {
		cause = w.Reason
	}
	return Summary{Executed: false, CycleSeq: rs.CycleSeq, CycleRef: rs.LastCycleRef, LoopDisposition: rs.LoopDisposition,
		ReasonCodes: why, GovernanceDecision: "NONE"}, &FaultedError{Cause: cause}
}
