// Package notify tells a person when a run needs them or has ended: it
// runs the operator's notify program (acr run --notify PROGRAM, ACR_NOTIFY,
// notify: in acr.yaml) with one JSON document on its stdin describing the
// condition (kernel.Alert): an approval waiting, with the pending refs,
// what each would change and, for an uncertain effect, the evidence; a
// fault and its cause; a stop and why.
//
// The program runs the way acr runs every program (package command): no
// shell, a scrubbed environment, its own process group, a time limit. What
// becomes of it never changes the run: the caller records that it ran
// (kernel.Driver.Notified) and logs a failure.
package notify

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/command"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// Schema names the document a notify program reads.
const Schema = "acr.notification/v0.1"

// Timeout bounds one run of the notify program.
const Timeout = 30 * time.Second

// Document is what the notify program reads on stdin, one JSON object.
type Document struct {
	Schema string `json:"schema"`
	// ID names the condition: the same condition is notified once, and a
	// program that was interrupted before acr could record that it ran
	// may be given the same ID again, so a receiver can drop a repeat.
	ID          codec.Ref `json:"id"`
	Kind        string    `json:"kind"`
	RunID       string    `json:"run_id"`
	Store       string    `json:"store"`
	Cycle       int64     `json:"cycle_seq"`
	At          string    `json:"at"`
	Disposition string    `json:"loop_disposition"`
	Reasons     []string  `json:"reason_codes"`
	// Summary is one line for a subject or a desktop notification.
	Summary string `json:"summary"`
	// Cause is what faulted the run (kind faulted).
	Cause string `json:"cause,omitempty"`
	// Pending are the requests waiting for an answer (kinds approval and
	// uncertain_effect).
	Pending []Pending `json:"pending"`
	// Next is the command that answers the condition.
	Next string `json:"next"`
}

// Pending is one request waiting for a person.
type Pending struct {
	Ref     codec.Ref `json:"ref"`
	Cycle   int64     `json:"cycle_seq"`
	Action  string    `json:"action"`
	CheckID string    `json:"check_id,omitempty"`
	Reason  string    `json:"reason"`
	// Change is what approving it would change: a unified diff, or a
	// command's command line, after, for a git world's command fix, the
	// line naming the trial governance ruled on ("" when it could not
	// be shown).
	Change string `json:"change"`
	// Key and Evidence are an uncertain effect's: its idempotency key and
	// each path's hash in the intent and now.
	Key      string               `json:"idempotency_key,omitempty"`
	Evidence []world.PathEvidence `json:"evidence,omitempty"`
}

// Build makes the document for an alert. describe says what a pending
// action does, change what approving it would change now.
func Build(a *kernel.Alert, store, at string, describe func(state.PendingApproval) string, change func(state.PendingApproval) string) Document {
	d := Document{Schema: Schema, ID: a.Key, Kind: a.Kind, RunID: a.RunID, Store: store, Cycle: a.Cycle, At: at,
		Disposition: a.Disposition.String(), Reasons: a.Reasons, Cause: a.Cause, Pending: []Pending{}}
	if d.Reasons == nil {
		d.Reasons = []string{}
	}
	for _, p := range a.Pending {
		d.Pending = append(d.Pending, Pending{Ref: p.Ref, Cycle: p.CycleSeq, Action: describe(p), CheckID: p.CheckID, Reason: p.Reason,
			Change: change(p), Key: p.Key, Evidence: p.Evidence})
	}
	reasons := strings.Join(a.Reasons, ", ")
	switch a.Kind {
	case kernel.AlertFaulted:
		d.Summary = fmt.Sprintf("acr run %s is FAULTED: %s", a.RunID, a.Cause)
		d.Next = "acr wake --signal manual_resume   (once the cause is fixed)"
	case kernel.AlertStopped:
		d.Summary = fmt.Sprintf("acr run %s has STOPPED (%s)", a.RunID, reasons)
		d.Next = "acr log   (what the run did)"
		if strings.Contains(reasons, "budget_limit") {
			d.Next = "acr amend --contract FILE   (a contract with more budget resumes it)"
		}
	case kernel.AlertUncertain:
		d.Summary = fmt.Sprintf("acr run %s cannot tell whether an effect happened: %s", a.RunID, firstAction(d.Pending, kernel.AlertUncertain))
		d.Next = "acr resolve REF --ran | --not-ran   (acr status shows the evidence; acr approve REF runs it again)"
	default:
		d.Summary = fmt.Sprintf("acr run %s waits for approval of %d action(s): %s", a.RunID, len(d.Pending), firstAction(d.Pending, ""))
		d.Next = "acr approve REF   (or acr deny REF; acr status shows the change)"
	}
	return d
}

func firstAction(ps []Pending, reason string) string {
	for _, p := range ps {
		if reason == "" || p.Reason == reason {
			return p.Action + " (" + string(p.Ref) + ")"
		}
	}
	return ""
}

// Program is how the notify program is run.
type Program struct {
	// Argv is the program (no shell; a relative path is taken from the
	// current directory).
	Argv []string
	// Env is its complete environment (command.Environment).
	Env []string
	// Timeout bounds it (0: Timeout).
	Timeout time.Duration
}

// Send runs the program with the document on stdin. It returns an error
// when the program could not be started or did not end with exit 0,
// saying how it ended; what it printed is in the error, cut short.
func Send(ctx context.Context, p Program, d Document) error {
	body, err := codec.Marshal(d)
	if err != nil {
		return fmt.Errorf("encode notification: %w", err)
	}
	t := p.Timeout
	if t <= 0 {
		t = Timeout
	}
	res, err := command.Run(ctx, command.Spec{Argv: p.Argv, Env: p.Env, Timeout: t, Stdin: append(body, '\n'), MaxOutput: 4 << 10})
	if err != nil {
		return err
	}
	cr := res.CommandResult
	why := ""
	switch {
	case cr.TimedOut:
		why = fmt.Sprintf("timed out after %s; its process group was killed", t)
	case cr.Signal != "":
		why = "killed by signal " + cr.Signal
	case cr.ExitCode != 0:
		why = fmt.Sprintf("exit %d", cr.ExitCode)
	default:
		return nil
	}
	if out := strings.TrimSpace(cr.Stderr + " " + cr.Stdout); out != "" {
		why += ": " + clip(out, 200)
	}
	return errors.New(why)
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "…"
}
