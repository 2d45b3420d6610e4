package jsstore

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/storage"
)

// TestLeasesAreSeenAndBroken: a lease names its holder, and the store
// lists it with since and until; another holder is refused with a
// *HeldError naming the holder (storage.ErrBusy); the same process comes
// back to its own lease (after an outage) instead of waiting it out; a
// person breaks a lease only as they saw it, and breaking it fences the
// holder: its ledger append, world write and renewal are refused, and the
// ledger records who broke whose lease.
func TestLeasesAreSeenAndBroken(t *testing.T) {
	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:lease")
	require.NoError(t, err)
	l, err := r.CreateLedger()
	require.NoError(t, err)
	_, err = l.Append(testEvents("init", 2, 0))
	require.NoError(t, err)
	w := r.World()
	require.NoError(t, w.Seal(map[string][]byte{"a": []byte("a")}, l.Frontier().Offset))

	a := storage.Holder{Name: "host-a:10", Host: "host-a", PID: 10, Command: "worker", Label: "eu"}
	la, err := s.Acquire(ctx(t), r.ID, a)
	require.NoError(t, err)
	all, err := s.Leases(ctx(t))
	require.NoError(t, err)
	require.Len(t, all, 1)
	got := all[r.ID]
	assert.Equal(t, "host-a:10", got.Holder.Name)
	assert.Equal(t, "worker", got.Holder.Command)
	assert.Equal(t, "eu", got.Holder.Label)
	assert.NotEmpty(t, got.Holder.Since)
	assert.NotEmpty(t, got.Holder.Token)
	assert.WithinDuration(t, time.Now(), got.Renewed, 10*time.Second)
	assert.Equal(t, s.TTL(), got.Until.Sub(got.Renewed))

	_, err = s.Acquire(ctx(t), r.ID, storage.Holder{Name: "host-b:20", Host: "host-b", PID: 20, Command: "run"})
	var held *storage.HeldError
	require.ErrorAs(t, err, &held)
	require.ErrorIs(t, err, storage.ErrBusy)
	assert.Contains(t, err.Error(), "held by host-a:10 (worker, label eu) since ")
	assert.Contains(t, err.Error(), "unless renewed")

	// The same process, after losing touch: its old lease is its own.
	again, err := s.Acquire(ctx(t), r.ID, a)
	require.NoError(t, err)
	assert.ErrorIs(t, la.Renew(ctx(t)), ErrLeaseLost, "the lease taken over is the new acquisition's")
	st, ok, err := s.LeaseOf(ctx(t), r.ID)
	require.NoError(t, err)
	require.True(t, ok)

	// A break expects the lease as it was seen.
	require.NoError(t, again.Renew(ctx(t)))
	_, err = s.BreakLease(ctx(t), st, "alice", "host-a is gone")
	require.ErrorIs(t, err, storage.ErrConflict, "the lease was renewed after it was looked at")
	st, _, err = s.LeaseOf(ctx(t), r.ID)
	require.NoError(t, err)
	b, err := s.BreakLease(ctx(t), st, "alice", "host-a is gone")
	require.NoError(t, err)
	assert.True(t, b.WorldTaken)
	assert.Equal(t, l.Frontier().Seq+1, b.Fence.Seq)
	_, ok, err = s.LeaseOf(ctx(t), r.ID)
	require.NoError(t, err)
	assert.False(t, ok, "the lease is gone")

	// The holder, alive after all, stores nothing more.
	assert.ErrorIs(t, again.Renew(ctx(t)), ErrLeaseLost)
	_, err = l.Append(testEvents("late", 1, 0))
	assert.ErrorIs(t, err, storage.ErrConflict, "the old holder's append")
	assert.ErrorIs(t, w.Put("a", []byte("late"), l.Frontier().Offset), storage.ErrConflict, "the old holder's world write")

	h, err := r.History()
	require.NoError(t, err)
	recs, err := h.ReadAll()
	require.NoError(t, err)
	last := recs[len(recs)-1].Event
	require.Equal(t, event.LeaseBroken, last.Type)
	var brk storage.LeaseBreak
	require.NoError(t, last.Object.Decode(&brk))
	assert.Equal(t, storage.LeaseBreak{Name: "host-a:10", Holder: st.Holder, LeaseRevision: st.Revision, By: "alice", Reason: "host-a is gone"}, brk)
	rep, err := h.Verify(nil)
	require.NoError(t, err)
	assert.True(t, rep.OK, "%v", rep.Damage)

	// A new holder takes the run at once.
	_, err = s.Acquire(ctx(t), r.ID, storage.Holder{Name: "host-b:20", Host: "host-b", PID: 20, Command: "worker"})
	require.NoError(t, err)
	if errors.Is(err, storage.ErrBusy) {
		t.Fatal("still busy after the break")
	}
}
