package event_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
)

func TestSealKeepsTheBytesItHashed(t *testing.T) {
	obj, err := event.NewObject("pin", map[string]any{"a": "é", "n": 1})
	require.NoError(t, err)
	ev := event.Event{Type: event.CycleStarted, RunID: "run:t", CycleSeq: 3, At: "2026-01-01T00:00:00Z",
		Parents: []codec.Ref{obj.Ref}, Refs: map[string]codec.Ref{"b": obj.Ref, "a": obj.Ref}, Reasons: []string{"x"}, Object: obj}
	want, wantRef, err := ev.Encode()
	require.NoError(t, err)

	ref, err := ev.Seal()
	require.NoError(t, err)
	require.Equal(t, wantRef, ref)
	b, r, err := ev.Encode()
	require.NoError(t, err)
	require.Equal(t, string(want), string(b), "sealed bytes are the event's canonical encoding")
	require.Equal(t, wantRef, r)

	again, err := ev.Seal()
	require.NoError(t, err)
	require.Equal(t, ref, again, "sealing twice changes nothing")

	cp := ev
	b2, r2, err := cp.Encode()
	require.NoError(t, err)
	require.Equal(t, string(want), string(b2), "a copy carries the seal")
	require.Equal(t, wantRef, r2)
	require.Equal(t, string(want), string(codec.MustMarshal(&ev)), "the seal is not part of the event's JSON")
}
