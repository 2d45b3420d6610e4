package kernel

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// The kinds of Alert: the conditions in which a run needs a person, or has
// come to an end.
const (
	AlertApproval  = "approval"         // an action (or a proposal) waits for a person's answer
	AlertUncertain = "uncertain_effect" // recovery could not tell whether an effect happened
	AlertFaulted   = "faulted"          // the run is FAULTED and waits for a manual resume
	AlertStopped   = "stopped"          // the run has ended: a budget, a stop request, its goal met
)

// Alert is a condition of a run that a person should hear about: the run
// waits for an answer, an effect is uncertain, the run faulted or stopped.
// Key names the condition: the same condition found again (by another
// invocation, or after more cycles that changed nothing about it) has the
// same key, so that it is notified once.
type Alert struct {
	Key         codec.Ref
	Kind        string
	RunID       string
	Cycle       int64
	Disposition state.Disposition
	Reasons     []string
	// Cause is a fault's cause as recorded, for AlertFaulted.
	Cause string
	// Pending are the requests waiting for an answer, for AlertApproval
	// and AlertUncertain.
	Pending []state.PendingApproval
}

// AlertOf says which condition, if any, the run is in that needs a person
// or ends it: FAULTED, STOPPED, an uncertain effect, an approval waiting.
// It is pure: the state alone decides.
func AlertOf(s EngineState) *Alert {
	rs := &s.Run
	a := &Alert{RunID: rs.RunID, Cycle: rs.CycleSeq, Disposition: rs.LoopDisposition, Reasons: slices.Clone(rs.ReasonCodes)}
	var key any
	switch {
	case rs.Status == state.RunFaulted || rs.LoopDisposition == state.Faulted:
		a.Kind, a.Cause = AlertFaulted, strings.Join(rs.ReasonCodes, ", ")
		since := rs.UpdatedAt
		if w := rs.Waiting; w != nil && w.Kind == WaitingFault {
			a.Cause, since = w.Reason, w.Since
		}
		key = map[string]any{"cycle_seq": rs.CycleSeq, "since": since, "reasons": rs.ReasonCodes, "cause": a.Cause}
	case rs.Status == state.RunStopped || rs.LoopDisposition == state.Stopped:
		a.Kind = AlertStopped
		key = map[string]any{"cycle_seq": rs.CycleSeq, "reasons": rs.ReasonCodes}
	default:
		var refs []string
		for _, p := range rs.PendingApprovals {
			if p.Resolution != nil {
				continue
			}
			a.Pending = append(a.Pending, p)
			refs = append(refs, fmt.Sprintf("%s@%d", p.Ref, p.CycleSeq))
			if p.Reason == "uncertain_effect" {
				a.Kind = AlertUncertain
			}
		}
		if len(a.Pending) == 0 {
			return nil
		}
		if a.Kind == "" {
			a.Kind = AlertApproval
		}
		key = map[string]any{"pending": refs}
	}
	a.Key = codec.MustRefOf("ntf", map[string]any{"run_id": rs.RunID, "kind": a.Kind, "condition": key})
	return a
}

// Alert returns the condition the run is in that its notify program has
// not been run for yet, or nil: nothing needs a person, or it was
// notified already (by this invocation or an earlier one).
func (d *Driver) Alert() *Alert {
	a := AlertOf(d.state)
	if a == nil || (d.state.Notified != nil && d.state.Notified.Key == a.Key) {
		return nil
	}
	return a
}

// Notified records that the notify program ran for a (program names it;
// delivered says whether it ended well, detail how it failed): one
// out-of-band record in the ledger, durable before Notified returns, so
// that no later invocation runs the program for the same condition again.
// The record is read back from the ledger by the next Open, and the next
// checkpoint carries it. The run itself does not change.
func (d *Driver) Notified(a *Alert, program string, delivered bool, detail string) error {
	n := event.Notification{Schema: event.NotificationSchema, Key: a.Key, Kind: a.Kind, CycleSeq: a.Cycle, Program: program,
		Delivered: delivered, Detail: detail}
	obj, err := event.NewObject("ntfrec", n)
	if err != nil {
		return err
	}
	reason := "delivered"
	if !delivered {
		reason = "notify_program_failed"
	}
	if err := d.appendOOB(event.NotificationSent, obj, []string{a.Kind, reason}); err != nil {
		return err
	}
	d.state.Notified = notifiedFrom(n, state.FormatTime(d.Clock.Now()))
	return nil
}

// notifiedFrom is the state a notification record leaves.
func notifiedFrom(n event.Notification, at string) *state.Notified {
	return &state.Notified{Schema: state.NotifiedSchema, Key: n.Key, Kind: n.Kind, Cycle: n.CycleSeq, At: at, Delivered: n.Delivered}
}

// applyNotified takes a notification record the ledger holds beyond the
// checkpoint into the state (Open).
func (d *Driver) applyNotified(r event.Record) {
	var n event.Notification
	if r.Event.Object != nil && r.Event.Object.Decode(&n) == nil {
		d.state.Notified = notifiedFrom(n, r.Event.At)
	}
}
