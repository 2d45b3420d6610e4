package runstore

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
)

// TestApprovalRace: answers to one approval request by several people,
// consumed however the cycles and invocations fall, resolve the request
// once; every other answer is recorded approval.ignored. The windows are
// taken one by one, deterministically: both answers in one cycle's inbox,
// the second arriving between two cycles of one invocation, the second
// arriving after the first invocation's checkpoint (and its removal of
// the first answer's file), and after a crash before that checkpoint.
func TestApprovalRace(t *testing.T) {
	waiting := func(t *testing.T) (string, state.PendingApproval) {
		dir := t.TempDir()
		_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, testOptions())
		require.NoError(t, err)
		r, err := Open(t.Context(), dir, testOptions())
		require.NoError(t, err)
		rep, err := r.Driver.Run(context.Background(), 20, nil)
		require.NoError(t, err)
		require.NoError(t, r.Close())
		require.Equal(t, "WAIT_APPROVAL", rep.FinalDisposition)
		st, _, err := ReadState(dir)
		require.NoError(t, err)
		require.Len(t, st.Run.PendingApprovals, 1)
		return dir, st.Run.PendingApprovals[0]
	}
	answer := func(t *testing.T, dir string, p state.PendingApproval, by string, at time.Time) {
		_, err := dirstore.Inbox{FS: mustFS(t, dir)}.Write(&state.Approval{Schema: state.ApprovalSchema, ActionRef: p.Ref,
			RequestCycle: p.CycleSeq, Verdict: "approve", By: by, CreatedAt: state.FormatTime(at)})
		require.NoError(t, err)
	}
	step := func(t *testing.T, r *Run) {
		sum, err := r.Driver.Step(t.Context())
		require.NoError(t, err)
		require.True(t, sum.Executed, "an answer in the inbox makes a cycle eligible")
	}
	opt := func() Options {
		return Options{Clock: &stepClock{t: time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC)}, Revision: "test"}
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		race func(t *testing.T, dir string, p state.PendingApproval)
	}{
		{"both answers in one cycle", func(t *testing.T, dir string, p state.PendingApproval) {
			answer(t, dir, p, "alice", t0)
			answer(t, dir, p, "bob", t0.Add(time.Second))
			r, err := Open(t.Context(), dir, opt())
			require.NoError(t, err)
			step(t, r)
			require.NoError(t, r.Close())
		}},
		{"consecutive cycles of one invocation", func(t *testing.T, dir string, p state.PendingApproval) {
			answer(t, dir, p, "alice", t0)
			r, err := Open(t.Context(), dir, opt())
			require.NoError(t, err)
			step(t, r)
			answer(t, dir, p, "bob", t0.Add(time.Second))
			step(t, r)
			require.NoError(t, r.Close())
		}},
		{"two invocations across a checkpoint", func(t *testing.T, dir string, p state.PendingApproval) {
			answer(t, dir, p, "alice", t0)
			r, err := Open(t.Context(), dir, opt())
			require.NoError(t, err)
			_, err = r.Driver.Run(context.Background(), 20, nil)
			require.NoError(t, err)
			require.NoError(t, r.Close())
			answer(t, dir, p, "bob", t0.Add(time.Second))
			r, err = Open(t.Context(), dir, opt())
			require.NoError(t, err)
			step(t, r)
			require.NoError(t, r.Close())
		}},
		{"two invocations, the first killed before its checkpoint", func(t *testing.T, dir string, p state.PendingApproval) {
			answer(t, dir, p, "alice", t0)
			r, err := Open(t.Context(), dir, opt())
			require.NoError(t, err)
			step(t, r)
			r.Abandon()
			answer(t, dir, p, "bob", t0.Add(time.Second))
			r, err = Open(t.Context(), dir, opt())
			require.NoError(t, err)
			step(t, r)
			require.NoError(t, r.Close())
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir, p := waiting(t)
			c.race(t, dir, p)
			recs, err := ledger.ReadAll(mustFS(t, dir))
			require.NoError(t, err)
			resolved, ignored := 0, 0
			for _, r := range recs {
				switch {
				case r.Event.Type == event.ApprovalResolved && r.Event.Refs["action"] == p.Ref:
					resolved++
				case r.Event.Type == event.ApprovalIgnored:
					ignored++
				}
			}
			assert.Equal(t, 1, resolved, "the request is resolved once")
			assert.Equal(t, 1, ignored, "the other answer is ignored")
			st, _, err := ReadState(dir)
			require.NoError(t, err)
			assert.Empty(t, st.Run.PendingApprovals)
		})
	}
}
