package runstore

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// TestRemoteMessagesPerActingCycle counts what one acting cycle of a run
// kept in a JetStream store sends the server, from the server's own
// counters (the in_msgs and in_bytes of its /varz): a queue run of 24
// items, one effect per cycle, run in one open from its first cycle to
// rest. The open itself (lease, checkpoint, world) and the rest at the
// end are counted in too, spread over the 25 cycles; the bound is what
// the store promises per acting cycle (docs/PERFORMANCE.md, the store
// rows).
func TestRemoteMessagesPerActingCycle(t *testing.T) {
	t.Parallel()
	const items = 24
	srv := natstest.Start(t)
	url := srv.ClientURL() + "/" + testPrefix
	s, err := DialStore(t.Context(), url, Connection{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	m, err := OpenRemote(t.Context(), s, url, "run:count", t.TempDir())
	require.NoError(t, err)
	_, err = m.Init(t.Context(), queueInputs(t, items, nil), testOptions())
	require.NoError(t, err)

	before, err := srv.Varz(nil)
	require.NoError(t, err)
	r, err := m.Open(t.Context(), storage.Holder{Name: "count"}, testOptions())
	require.NoError(t, err)
	rep, err := r.Driver.Run(r.Held, 100, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	after, err := srv.Varz(nil)
	require.NoError(t, err)

	require.Equal(t, items+1, rep.CyclesExecuted, "every item, then the cycle that finds none")
	msgs := float64(after.InMsgs-before.InMsgs) / items
	bytes := float64(after.InBytes-before.InBytes) / items
	t.Logf("per acting cycle: %.2f messages, %.0f bytes into the server", msgs, bytes)
	// One message per ledger record made this 34; one per append, 7.5.
	require.LessOrEqual(t, msgs, maxMessagesPerActingCycle, "messages into the server per acting cycle")
	// Uncompressed, the ledger lines and the checkpoint made this 69 KB.
	require.LessOrEqual(t, bytes, maxBytesPerActingCycle, "bytes into the server per acting cycle")
}

// maxMessagesPerActingCycle is what TestRemoteMessagesPerActingCycle
// allows (it measures 5.50): two appends (the intent, then the outcome
// before the checkpoint, which this run writes every cycle), the
// checkpoint and status batch, the world's file (one message), and the
// reads the open makes. The inbox is heard, not read every cycle. It was
// 7.46 with the inbox read every cycle and the world's file written with
// its head in an atomic batch.
const maxMessagesPerActingCycle = 5.6

// maxBytesPerActingCycle is what it allows of bytes (it measures 19.5
// KB): the ledger lines and the checkpoint, compressed with acr's
// dictionary, are most of them (25.9 KB without the dictionary).
const maxBytesPerActingCycle = 20 * 1024.0

// TestRemoteIdleCycleSendsNothing: a run opened for cycles hears its
// inbox instead of reading it each cycle. A cycle that finds nothing to
// do sends the server no message; a stop request put between two cycles
// by another process, on a connection of its own, is seen by the next
// cycle.
func TestRemoteIdleCycleSendsNothing(t *testing.T) {
	t.Parallel()
	srv := natstest.Start(t)
	url := srv.ClientURL() + "/" + testPrefix
	// A read answers for an hour, so that what the idle cycles send does
	// not depend on the machine's speed (a read a second is the default).
	s, err := DialStore(t.Context(), url, Connection{InboxRecheck: time.Hour})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	m, err := OpenRemote(t.Context(), s, url, "run:idle", t.TempDir())
	require.NoError(t, err)
	_, err = m.Init(t.Context(), queueInputs(t, 1, nil), testOptions())
	require.NoError(t, err)
	r, err := m.Open(t.Context(), storage.Holder{Name: "idle"}, testOptions())
	require.NoError(t, err)
	defer func() { require.NoError(t, r.Close()) }()
	for {
		sum, err := r.Driver.Step(r.Held)
		require.NoError(t, err)
		if !sum.Executed {
			break
		}
	}

	before, err := srv.Varz(nil)
	require.NoError(t, err)
	for range 5 {
		sum, err := r.Driver.Step(r.Held)
		require.NoError(t, err)
		require.False(t, sum.Executed, "nothing to do")
	}
	after, err := srv.Varz(nil)
	require.NoError(t, err)
	require.Equal(t, before.InMsgs, after.InMsgs, "idle cycles send the server nothing")

	other, err := DialStore(t.Context(), url, Connection{})
	require.NoError(t, err)
	t.Cleanup(other.Close)
	ro, err := other.Run(t.Context(), "run:idle")
	require.NoError(t, err)
	_, err = ro.Inbox().Put(&state.StopRequest{Schema: state.StopSchema, By: "op", CreatedAt: "2026-01-01T00:00:00Z"})
	require.NoError(t, err)
	var sum kernel.Summary
	for i := 0; !sum.Executed; i++ {
		// The first Step after the put sees it in practice; a later
		// delivery would be seen by a later Step, never missed.
		require.Less(t, i, 10000, "the stop request is never seen")
		sum, err = r.Driver.Step(r.Held)
		require.NoError(t, err)
	}
	require.Equal(t, "STOPPED", sum.LoopDisposition.String(), "the cycle consumed the stop request")
}
