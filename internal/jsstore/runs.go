package jsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/storage"
)

// Status is what the store knows of a run without opening it
// (storage.RunStatus): a summary written on <prefix>.status.<run> in the
// same atomic batch as each checkpoint (so it is never ahead of or behind
// the checkpoint), and the number of items waiting in its inbox.
type Status = storage.RunStatus

// statusOf summarises a commit. It reads the few fields it needs from
// the run_state file (and the label from environment_spec), leniently (a file without them gives an empty
// field, not an error): the storage.Commit carries no summary of its own
// yet.
func statusOf(cm storage.Commit, m storage.Manifest) Status {
	st := Status{RunID: cm.RunID, Generation: m.Generation, CycleSeq: cm.CycleSeq}
	var rs struct {
		Status          string `json:"status"`
		LoopDisposition string `json:"loop_disposition"`
		UpdatedAt       string `json:"updated_at"`
		NextWake        *struct {
			At string `json:"at"`
		} `json:"next_wake"`
	}
	if b, ok := cm.Files["run_state"]; ok && json.Unmarshal(b, &rs) == nil {
		st.RunStatus, st.Disposition, st.UpdatedAt = rs.Status, rs.LoopDisposition, rs.UpdatedAt
		if rs.NextWake != nil {
			st.NextWake = rs.NextWake.At
		}
	}
	var spec struct {
		Label string `json:"label"`
	}
	if b, ok := cm.Files["environment_spec"]; ok && json.Unmarshal(b, &spec) == nil {
		st.Label = spec.Label
	}
	return st
}

// Runs lists every run that has a checkpoint, by run id: two requests
// whatever the number of runs (the last status message per run, and the
// inbox stream's per-subject counts), up to 1024 runs; beyond that the
// statuses are read by a short-lived consumer.
func (s *Store) Runs(ctx context.Context) ([]Status, error) {
	var out []Status
	err := s.blocks.Ledger.Statuses(ctx, func(run string, data []byte) error {
		var st Status
		if err := json.Unmarshal(data, &st); err != nil {
			return fmt.Errorf("status of %s: %w", run, err)
		}
		if st.RunID != run {
			return fmt.Errorf("status of %s: names run %q", run, st.RunID)
		}
		out = append(out, st)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	slices.SortFunc(out, func(a, b Status) int { return strings.Compare(a.RunID, b.RunID) })
	err = s.blocks.Inbox.Pending(ctx, func(run string, n uint64) error {
		if i, ok := slices.BinarySearchFunc(out, run, func(st Status, id string) int { return strings.Compare(st.RunID, id) }); ok {
			out[i].Inbox = n
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list runs: %w", err)
	}
	return out, nil
}

// Due lists the runs that are due at now (Status.Due).
func (s *Store) Due(ctx context.Context, now time.Time) ([]Status, error) {
	all, err := s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	return slices.DeleteFunc(all, func(st Status) bool { return !st.Due(now) }), nil
}

// WatchInbox calls fn with the run id of every inbox item put from now
// on, as it is published (a plain NATS subscription on
// <prefix>.inbox.*: no consumer, nothing stored), so that a worker can
// start a woken run at once instead of at its next poll of Due. Delivery
// is at most once: a worker still polls. stop ends the subscription.
func (s *Store) WatchInbox(fn func(run string)) (stop func() error, err error) {
	prefix := s.opts.Prefix + ".inbox."
	sub, err := s.nc.Subscribe(prefix+"*", func(m *nats.Msg) {
		if run, err := jetstream.ParseToken(strings.TrimPrefix(m.Subject, prefix)); err == nil {
			fn(run)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("watch inbox: %w", err)
	}
	return sub.Unsubscribe, nil
}
