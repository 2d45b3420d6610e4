package event_test

import (
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
)

var kindName = regexp.MustCompile(`^[a-z_]+(\.[a-z_]+)+$`)

func TestCatalog(t *testing.T) {
	seen := map[event.Kind]bool{}
	require.NotEmpty(t, event.Kinds())
	for _, k := range event.Kinds() {
		assert.False(t, seen[k], "%s listed twice", k)
		seen[k] = true
		assert.Regexp(t, kindName, string(k))
		assert.True(t, k.Valid())
	}
	assert.False(t, event.Kind("no.such.kind").Valid())
	for _, k := range []event.Kind{event.RecoveryStarted, event.ProviderFailed, event.TailRepaired, event.InboxQuarantined, event.ActionIntent, event.ActionBlocked} {
		assert.True(t, k.OutOfBand(), k)
	}
	for _, k := range []event.Kind{event.CycleStarted, event.ActionCommitted, event.Transition} {
		assert.False(t, k.OutOfBand(), k)
	}
	v, ok := event.Commitment("suspended").CommitmentVerb()
	assert.True(t, ok)
	assert.Equal(t, "suspended", v)
	_, ok = event.ConditionsEvaluated.CommitmentVerb()
	assert.False(t, ok, "evaluating conditions is not a lifecycle transition")
	assert.True(t, event.Transition.In("controller"))
}

// TestValidCostsNothing: the ledger's verification asks Valid of every
// line, so it must not build the list of kinds to search it.
func TestValidCostsNothing(t *testing.T) {
	kinds := []event.Kind{event.GoalPinned, event.NotificationSent, "no.such.kind"}
	allocs := testing.AllocsPerRun(100, func() {
		for _, k := range kinds {
			_ = k.Valid()
		}
	})
	assert.Zero(t, allocs)
}
