package kernel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/state"
)

// TestAlertOf: the conditions that need a person have a key that stays the
// same while the condition does, and changes with it.
func TestAlertOf(t *testing.T) {
	s, in := waitingForApproval(t)
	a := AlertOf(s)
	require.NotNil(t, a)
	assert.Equal(t, AlertApproval, a.Kind)
	require.Len(t, a.Pending, 1)

	// Another cycle that leaves the same request waiting: the same key.
	in.Inbox = nil
	in.Now = in.Now.Add(time.Minute)
	in.Observation.Excluded++ // the world changed a little
	p, err := Begin(s, in)
	require.NoError(t, err)
	r, err := Finish(p, Settlement{})
	require.NoError(t, err)
	require.Equal(t, state.WaitApproval, r.State.Run.LoopDisposition)
	assert.Equal(t, a.Key, AlertOf(r.State).Key)

	// The request answered, nothing needs a person.
	done := s.clone()
	done.Run.PendingApprovals = nil
	done.Run.LoopDisposition = state.Idle
	assert.Nil(t, AlertOf(done))

	// Faulted and stopped are conditions of their own.
	faulted, _, err := Fault(s, t0.Add(time.Hour), []string{"provider_failures_exceeded"}, "proposer down")
	require.NoError(t, err)
	f := AlertOf(faulted)
	require.NotNil(t, f)
	assert.Equal(t, AlertFaulted, f.Kind)
	assert.Equal(t, "proposer down", f.Cause)
	assert.NotEqual(t, a.Key, f.Key)
	stopped := s.clone()
	stopped.Run.Status, stopped.Run.LoopDisposition, stopped.Run.ReasonCodes = state.RunStopped, state.Stopped, []string{"stop_requested"}
	assert.Equal(t, AlertStopped, AlertOf(stopped).Kind)

	// An uncertain effect among the pending requests makes the kind.
	unc := s.clone()
	unc.Run.PendingApprovals[0].Reason = "uncertain_effect"
	assert.Equal(t, AlertUncertain, AlertOf(unc).Kind)
}

// TestNotifiedFile: the last condition notified is a checkpoint file only
// once there is one, and it round-trips.
func TestNotifiedFile(t *testing.T) {
	s, _ := waitingForApproval(t)
	files, err := s.Encode()
	require.NoError(t, err)
	assert.NotContains(t, files, FileNotified)
	light, err := DecodeLight(files)
	require.NoError(t, err)
	assert.Nil(t, light.Notified)

	s.Notified = &state.Notified{Schema: state.NotifiedSchema, Key: AlertOf(s).Key, Kind: AlertApproval, Cycle: 1, At: "2026-01-01T00:00:00Z", Delivered: true}
	files, err = s.Encode()
	require.NoError(t, err)
	require.Contains(t, files, FileNotified)
	light, err = DecodeLight(files)
	require.NoError(t, err)
	assert.Equal(t, s.Notified, light.Notified, "an idle invocation needs it to decide")
	full, err := Decode(files)
	require.NoError(t, err)
	assert.Equal(t, s.Notified, full.Notified)
	require.NoError(t, DecodeRest(&light, files))
	assert.Equal(t, s.Notified, light.Notified)
}
