package storage

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Errors of a store on a server, which the commands branch on whatever
// the store.
var (
	// ErrUnavailable: the store's server did not answer for as long as the
	// caller was willing to wait (acr's exit 74). The outcome of a write
	// that failed with it is unknown: reopen the run, which reads what is
	// stored.
	ErrUnavailable = errors.New("store unavailable")
	// ErrLeaseLost: a lease expired, was broken, or another holder took it.
	ErrLeaseLost = errors.New("lease lost")
)

// Holder is who holds a run's lease, as the lease's value keeps it: for
// operators (acr runs, the busy message) and for the holder itself, which
// recognises its own lease by the token.
type Holder struct {
	// Name is the holder's name, "host:pid" for an acr process.
	Name string `json:"name"`
	// Host and PID are where the holder runs.
	Host string `json:"host,omitempty"`
	PID  int    `json:"pid,omitempty"`
	// Command is the acr command that holds it (worker, run, export, ...).
	Command string `json:"command,omitempty"`
	// Label is a worker's --label, if any.
	Label string `json:"label,omitempty"`
	// Since is when the holder took the lease (RFC 3339).
	Since string `json:"since,omitempty"`
	// Token is random, one per acquisition: the lease's bytes are this
	// acquisition's own.
	Token string `json:"token,omitempty"`
}

// String names the holder for people: "host-a:4242 (worker, label eu)".
func (h Holder) String() string {
	var what []string
	if h.Command != "" {
		what = append(what, h.Command)
	}
	if h.Label != "" {
		what = append(what, "label "+h.Label)
	}
	if len(what) == 0 {
		return h.Name
	}
	return h.Name + " (" + strings.Join(what, ", ") + ")"
}

// SameProcess reports whether two holders are one process: the same name
// on the same host with the same pid.
func (h Holder) SameProcess(o Holder) bool {
	return h.Name == o.Name && h.Host == o.Host && h.PID == o.PID && h.PID != 0
}

// DecodeHolder reads a lease's value; a value an earlier release wrote
// (the holder's name alone) is a Holder with that name.
func DecodeHolder(b []byte) Holder {
	var h Holder
	if json.Unmarshal(b, &h) != nil || h.Name == "" {
		return Holder{Name: string(b)}
	}
	return h
}

// LeaseStatus is a run's lease as the store holds it.
type LeaseStatus struct {
	Run    string
	Holder Holder
	// Renewed is when its last revision (its acquisition or last
	// renewal) was stored; Until when it lapses unless renewed again.
	Renewed, Until time.Time
	// Revision is the lease's revision, what a break expects.
	Revision uint64
}

// HeldError says that another holder has a run's lease. It matches
// ErrBusy.
type HeldError struct {
	Run   string
	Lease LeaseStatus
}

func (e *HeldError) Error() string {
	h := e.Lease.Holder
	msg := fmt.Sprintf("run %s is held by %s", e.Run, h)
	if h.Since != "" {
		msg += " since " + h.Since
	}
	if !e.Lease.Until.IsZero() {
		msg += ", until " + e.Lease.Until.UTC().Format(time.RFC3339) + " unless renewed"
	}
	return msg
}

// Unwrap lets errors.Is(err, ErrBusy) match.
func (e *HeldError) Unwrap() error { return ErrBusy }

// LeaseBreak is what a person says when breaking a lease, recorded in the
// run's ledger (event.LeaseBroken).
type LeaseBreak struct {
	// Name is the holder's name, Holder the holder as its lease named it.
	Name   string `json:"name"`
	Holder Holder `json:"holder"`
	// LeaseRevision is the revision of the lease that was broken.
	LeaseRevision uint64 `json:"lease_revision"`
	// By is who broke it, Reason why.
	By     string `json:"by"`
	Reason string `json:"reason,omitempty"`
}

// Broken is what breaking a lease did.
type Broken struct {
	// Fence is the ledger record that fences the holder's appends (seq 0
	// when the run has no ledger yet); WorldTaken whether the world's
	// head was moved to fence its world writes.
	Fence      Fence
	WorldTaken bool
}

// Fence is where a lease break's record stands in the ledger.
type Fence struct {
	Seq    int64
	Offset int64
}

// RunStatus is what a store knows of a run without opening it: a summary
// written with each checkpoint, the items waiting in its inbox, and its
// lease where the store has leases.
type RunStatus struct {
	RunID      string `json:"run_id"`
	Generation int64  `json:"generation"`
	CycleSeq   int64  `json:"cycle_seq"`
	// RunStatus is the run state's status (RUNNING, STOPPED, FAULTED).
	RunStatus string `json:"status,omitempty"`
	// Disposition is the scheduler state the last cycle ended in
	// (CONTINUE, IDLE, SLEEP, WAIT_APPROVAL, DEFERRED, STOPPED, FAULTED).
	Disposition string `json:"disposition,omitempty"`
	// NextWake is when a sleeping run is due again (RFC 3339), if ever.
	NextWake string `json:"next_wake,omitempty"`
	// UpdatedAt is the run state's clock reading of its last change.
	UpdatedAt string `json:"updated_at,omitempty"`
	// Label is the environment's label: only a worker with that label
	// runs the run (empty: any worker).
	Label string `json:"label,omitempty"`
	// Inbox is how many items wait in the run's inbox (not stored in the
	// status message: counted when listing).
	Inbox uint64 `json:"-"`
	// Lease is who holds the run now, if anyone and the store has leases.
	Lease *LeaseStatus `json:"-"`
}

// Takes reports whether a worker with labels runs the run: a run without
// a label goes to any worker, a run with one only to a worker that has it.
func (s RunStatus) Takes(labels []string) bool {
	return s.Label == "" || slices.Contains(labels, s.Label)
}

// Due reports whether a worker should run the run now: it is not stopped
// or faulted, and its last cycle asked to continue, its wake time has
// come, or its inbox holds items.
func (s RunStatus) Due(now time.Time) bool {
	switch {
	case s.RunStatus == "STOPPED" || s.RunStatus == "FAULTED" || s.Disposition == "STOPPED" || s.Disposition == "FAULTED":
		return false
	case s.Disposition == "CONTINUE" || s.Inbox > 0:
		return true
	case s.NextWake != "":
		at, err := time.Parse(time.RFC3339, s.NextWake)
		return err != nil || !now.Before(at) // an unreadable time: let a worker look
	}
	return false
}

// Call is one request to a store's server as an observer (metrics) hears
// it: what was asked, how long the answer took, and whether the call
// tries again.
type Call struct {
	// Op names what was asked: "commit", "read", "world.write",
	// "lease.renew", and so on.
	Op string
	// Took is how long the request took until its answer, its error or
	// its timeout.
	Took time.Duration
	// Err is the request's error (nil when it was answered as asked); an
	// unreachable server is ErrUnavailable.
	Err error
	// Waited is the pause before the call's next attempt, when the server
	// did not answer and the call tries again; 0 otherwise.
	Waited time.Duration
}
