package kernel

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/world"
)

// TestEmittedEventsAreTheirSealedBytes: the kernel seals each event as it
// emits it, and the ledger writes the sealed bytes. Nothing may change an
// event after that: encoding each event's fields afresh, once Begin and
// Finish have returned, must give exactly its sealed bytes.
func TestEmittedEventsAreTheirSealedBytes(t *testing.T) {
	spec := testSpec(patchCheck("a", "a.txt"))
	failing := observe(spec, map[string]bool{"a": true}, false)
	passing := observe(spec, map[string]bool{}, false)
	s := newState(t, spec, testContract(), failing)
	checked := 0
	check := func(evs []event.Event) {
		for i := range evs {
			sealed, ref, err := evs[i].Encode()
			require.NoError(t, err)
			fresh := codec.MustMarshal(&evs[i]) // the fields, not the sealed bytes
			require.Equal(t, string(fresh), string(sealed), "event %d (%s) changed after it was sealed", i, evs[i].Type)
			require.Equal(t, codec.NewRef("evt", fresh), ref)
			checked++
		}
	}
	now := t0
	for i := range 120 { // past a compaction
		now = now.Add(time.Minute)
		obs := failing
		if i%3 == 2 {
			obs = passing
		}
		p, err := Begin(s, Inputs{Now: now, Observation: obs})
		require.NoError(t, err)
		var out *world.Outcome
		if p.Effect != nil {
			out = &world.Outcome{Schema: world.OutcomeSchema, Key: p.Effect.Key, Operation: world.OpApplyPatch, Target: "a.txt",
				Status: world.OutcomeCommitted, PostCheck: &world.CheckResult{ID: "a", Status: world.CheckPass}}
		}
		r, err := Finish(p, settled(out, "a"))
		require.NoError(t, err)
		check(p.Events)
		check(r.Events)
		s = r.State
	}
	require.Greater(t, checked, 1000)
}
