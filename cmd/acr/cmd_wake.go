package main

import (
	"context"
	"fmt"
	"os"
	"os/user"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// wakeOptions are acr wake's flags.
type wakeOptions struct {
	Source   string `flag:"signal"`
	Ref      string `flag:"ref"`
	ID       string `flag:"id"`
	DedupKey string `flag:"dedup-key"`
	Priority int    `flag:"priority"`
	Expires  string `flag:"expires"`
	Payload  string `flag:"payload"`
	Parent   string `flag:"parent"`
	By       string `flag:"by"`
	Reason   string `flag:"reason"`
}

func newWakeCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "wake --signal SOURCE",
		Short: "Queue a wake signal for the run",
		Long: `Drop a wake signal (acr.wake-signal/v0.1) into the run's inbox. It never takes
the run lock, so it works while another invocation is running; the next
cycle consumes it and records it in the ledger. A wake signal changes when
the loop looks again; it never grants authority: a payload that tries to
carry authority, contract or budget changes is refused.

Sources: ` + strings.Join(state.WakeSources(), ", ") + `.
A signal whose dedup key matches a pending or recently consumed one is
coalesced: reported ("nothing queued"), not queued twice, exit 0, so that
a sender repeating itself does not fail. So is any signal for a stopped
run, which no cycle will ever consume. With --json the result says
"effect": "queued" or "effect": "none". An expired signal is refused (65).`,
		Example: `  acr wake --signal new_environment_observation
  acr wake --signal commitment_wake_condition --ref dataset-v2 --dedup-key dataset-v2
  acr wake --signal external_event --payload event.json --expires 2026-12-01T00:00:00Z`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts wakeOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runWake(cmd.Context(), opts, a)
		},
	}
	f := cmd.Flags()
	f.String("signal", "", "wake source (required)")
	f.String("ref", "", "what the signal is about (an evidence id, a commitment, a ref)")
	f.String("id", "", "stable event id given by the sender")
	f.String("dedup-key", "", "coalesce with any pending or recent signal with the same key (default: the event id)")
	f.Int("priority", 0, "priority (higher first)")
	f.String("expires", "", "expiry, RFC 3339 (default: now plus the contract's signal_ttl_seconds)")
	f.String("payload", "", "JSON file attached as the signal's payload (data only)")
	f.String("parent", "", "causal parent (ref or event id)")
	f.String("by", "", "who sends it (default: the OS user)")
	f.String("reason", "", "why")
	return cmd
}

func osUser() string {
	if u, err := user.Current(); err == nil && u.Username != "" {
		return u.Username
	}
	if u := os.Getenv("USER"); u != "" {
		return u
	}
	return "unknown"
}

// runWake queues a wake signal in the run's inbox, without the run lock.
func runWake(ctx context.Context, opts wakeOptions, a *app) error {
	if opts.Source == "" {
		return usagef("wake needs --signal SOURCE (one of %s)", strings.Join(state.WakeSources(), ", "))
	}
	if !inbox.ValidSource(opts.Source) {
		return dataf("unknown wake source %q: want one of %s", opts.Source, strings.Join(state.WakeSources(), ", "))
	}
	rs, err := a.readState()
	if err != nil {
		return err
	}
	if run := rs.State.Run; run.Status == state.RunStopped {
		if kernel.Amendable(&run) {
			return a.nothingQueued("the run is stopped on a budget: no cycle will consume a wake signal (acr amend --contract FILE with more budget resumes it)")
		}
		return a.nothingQueued("the run is stopped: no cycle will consume a wake signal (a stopped run stays stopped; acr init --force starts a new one)")
	}
	now := a.now().UTC().Truncate(time.Second)
	sig := &state.WakeSignal{Schema: state.WakeSignalSchema, Source: opts.Source, Ref: opts.Ref, EventID: opts.ID, Priority: opts.Priority,
		CausalParent: opts.Parent, CreatedAt: state.FormatTime(now), By: opts.By, Reason: opts.Reason, DedupKey: opts.DedupKey}
	if sig.By == "" {
		sig.By = osUser()
	}
	if sig.CausalParent == "" {
		// Every wake event names what it follows from: by default the
		// run's last cycle, which the operator was looking at.
		sig.CausalParent = string(rs.State.Run.LastCycleRef)
		if sig.CausalParent == "" {
			sig.CausalParent = rs.State.Run.RunID
		}
	}
	ttl := rs.State.Contract.Policy.Defaults().SignalTTLSeconds
	sig.ExpiresAt = state.FormatTime(now.Add(time.Duration(ttl) * time.Second))
	if opts.Expires != "" {
		t, err := state.ParseTime(opts.Expires)
		if err != nil {
			return dataf("--expires: %v", err)
		}
		if !now.Before(t) {
			return dataf("signal already expired at %s (now %s)", state.FormatTime(t), state.FormatTime(now))
		}
		sig.ExpiresAt = state.FormatTime(t)
	}
	if opts.Payload != "" {
		b, err := os.ReadFile(opts.Payload)
		if err != nil {
			return &runstore.ValidationError{File: opts.Payload, Err: err}
		}
		var v codec.Value
		if err := codec.Unmarshal(b, &v); err != nil {
			return &runstore.ValidationError{File: opts.Payload, Err: err}
		}
		if err := inbox.CheckPayload(&v); err != nil {
			fe := err.(*codec.FieldError)
			return &runstore.ValidationError{File: opts.Payload, Field: fe.Path, Err: fe.Err}
		}
		sig.Payload = &v
	}
	if sig.DedupKey == "" {
		sig.DedupKey = sig.EventID
	}
	if sig.DedupKey == "" {
		sig.DedupKey = fmt.Sprintf("%s:%s:%s", sig.Source, sig.Ref, sig.CreatedAt)
	}
	q, err := a.queue()
	if err != nil {
		return err
	}
	if with := coalescesWith(q, rs.State.Run, sig, now); with != "" {
		return a.nothingQueued("coalesced with %s (same dedup key %q)", with, sig.DedupKey)
	}
	id, err := q.Put(sig)
	if err != nil {
		return err
	}
	a.report(map[string]any{"effect": "queued", "queued": true, "id": id, "source": sig.Source, "dedup_key": sig.DedupKey, "expires_at": sig.ExpiresAt},
		"queued wake signal %s (%s)\n", id, sig.Source)
	if rs.State.Run.Status == state.RunFaulted && sig.Source != "manual_resume" {
		a.next("acr wake --signal manual_resume   (the run is FAULTED: the signal waits until it is resumed)")
		return nil
	}
	a.next("acr run   (the next cycle consumes the signal; a scheduled run does too)")
	return nil
}

// coalescesWith returns the id of a pending or recently consumed signal
// with the same dedup key.
func coalescesWith(q runstore.Queue, r state.RunState, sig *state.WakeSignal, now time.Time) string {
	items, _, err := q.List()
	if err == nil {
		for _, it := range items {
			if it.Kind == inbox.KindWake && it.Wake.DedupKey == sig.DedupKey && !slices.Contains(r.InboxSeen, it.ID) {
				return it.ID
			}
		}
	}
	for _, k := range r.DedupKeys {
		if k.Key == sig.DedupKey {
			if t, err := state.ParseTime(k.Expires); err == nil && now.Before(t) {
				return "a consumed signal"
			}
		}
	}
	return ""
}
