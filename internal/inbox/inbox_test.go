package inbox_test

import (
	"bytes"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
)

func mustParse(t *testing.T, s string) *codec.Value {
	t.Helper()
	v, err := codec.Parse([]byte(s))
	require.NoError(t, err)
	return &v
}

func wake(t *testing.T, created string) *state.WakeSignal {
	return &state.WakeSignal{
		Schema: state.WakeSignalSchema, Source: "external_event", Ref: "ticket-7", DedupKey: "dk-" + created,
		Priority: 5, CreatedAt: created, ExpiresAt: "2026-12-31T00:00:00Z", By: "alice", Reason: "ticket closed",
		Payload: mustParse(t, `{"note": "hello", "n": 3}`),
	}
}

func approvalItem(created, verdict string) *state.Approval {
	return &state.Approval{Schema: state.ApprovalSchema, ActionRef: codec.MustRefOf("areq", "x"), Verdict: verdict, By: "bob", CreatedAt: created}
}

func stopItem(created string) *state.StopRequest {
	return &state.StopRequest{Schema: state.StopSchema, By: "carol", Reason: "enough", Kill: true, CreatedAt: created}
}

func amendmentItem(t *testing.T, created string) *state.Amendment {
	return &state.Amendment{Schema: state.AmendmentSchema, Target: state.AmendContract, Amends: codec.MustRefOf("contract", "x"),
		Document: *mustParse(t, `{"id": "c2"}`), Diff: "-a\n+b\n", By: "dave", CreatedAt: created}
}

var idPattern = regexp.MustCompile(`^(wake|approval|stop|amendment)-[0-9a-f]{24}$`)

func TestSealDecodeRoundTrip(t *testing.T) {
	cases := []struct {
		name string
		v    any
		kind inbox.Kind
	}{
		{"wake", wake(t, "2026-01-01T00:00:00Z"), inbox.KindWake},
		{"approval", approvalItem("2026-01-01T00:00:00Z", "approve"), inbox.KindApproval},
		{"stop", stopItem("2026-01-01T00:00:00Z"), inbox.KindStop},
		{"amendment", amendmentItem(t, "2026-01-01T00:00:00Z"), inbox.KindAmendment},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, body, err := inbox.Seal(tc.v)
			require.NoError(t, err)
			assert.Regexp(t, idPattern, id)
			assert.True(t, strings.HasPrefix(id, string(tc.kind)+"-"), id)
			assert.Contains(t, string(body), `"id":"`+id+`"`, "the sealed body carries its id")
			canon, err := codec.Marshal(tc.v)
			require.NoError(t, err)
			assert.Equal(t, canon, body, "the body is the canonical encoding")

			it, err := inbox.Decode(id, body)
			require.NoError(t, err)
			assert.Equal(t, id, it.ID)
			assert.Equal(t, tc.kind, it.Kind)
			assert.Equal(t, body, it.Body)
			assert.Equal(t, "2026-01-01T00:00:00Z", it.CreatedAt())
			var decoded any
			switch tc.kind {
			case inbox.KindWake:
				require.NotNil(t, it.Wake)
				assert.Nil(t, it.Approval)
				assert.Nil(t, it.Stop)
				decoded = it.Wake
				assert.Equal(t, id, it.Wake.ID)
				assert.Equal(t, "ticket-7", it.Wake.Ref)
				require.NotNil(t, it.Wake.Payload)
				assert.Equal(t, `{"n":3,"note":"hello"}`, string(it.Wake.Payload.Encode()))
			case inbox.KindApproval:
				require.NotNil(t, it.Approval)
				decoded = it.Approval
				assert.Equal(t, tc.v.(*state.Approval).ActionRef, it.Approval.ActionRef)
				assert.Equal(t, "approve", it.Approval.Verdict)
			case inbox.KindStop:
				require.NotNil(t, it.Stop)
				decoded = it.Stop
				assert.True(t, it.Stop.Kill)
			case inbox.KindAmendment:
				require.NotNil(t, it.Amendment)
				decoded = it.Amendment
				assert.Equal(t, state.AmendContract, it.Amendment.Target)
				assert.Equal(t, `{"id":"c2"}`, string(it.Amendment.Document.Encode()))
			}
			re, err := codec.Marshal(decoded)
			require.NoError(t, err)
			assert.Equal(t, body, re, "decoding and re-encoding gives the same bytes")
		})
	}
}

func TestSealIsContentDerived(t *testing.T) {
	a := approvalItem("2026-01-01T00:00:00Z", "approve")
	id1, b1, err := inbox.Seal(a)
	require.NoError(t, err)

	// Sealing again (the id is now set) gives the same id and bytes.
	id2, b2, err := inbox.Seal(a)
	require.NoError(t, err)
	assert.Equal(t, id1, id2)
	assert.Equal(t, b1, b2)

	// A stale id in the input is ignored.
	c := approvalItem("2026-01-01T00:00:00Z", "approve")
	c.ID = "approval-000000000000000000000000"
	id3, _, err := inbox.Seal(c)
	require.NoError(t, err)
	assert.Equal(t, id1, id3)

	// Any content change changes the id.
	d := approvalItem("2026-01-01T00:00:00Z", "deny")
	id4, _, err := inbox.Seal(d)
	require.NoError(t, err)
	assert.NotEqual(t, id1, id4)
	e := approvalItem("2026-01-01T00:00:01Z", "approve")
	id5, _, err := inbox.Seal(e)
	require.NoError(t, err)
	assert.NotEqual(t, id1, id5)
}

func TestSealRejectsOtherTypes(t *testing.T) {
	for _, v := range []any{state.Approval{}, "x", nil, &state.RunState{}} {
		_, _, err := inbox.Seal(v)
		assert.Error(t, err, "%T", v)
	}
}

func TestDecodeRejects(t *testing.T) {
	id, body, err := inbox.Seal(approvalItem("2026-01-01T00:00:00Z", "approve"))
	require.NoError(t, err)
	wid, wbody, err := inbox.Seal(wake(t, "2026-01-01T00:00:00Z"))
	require.NoError(t, err)

	tampered := bytes.Replace(body, []byte(`"verdict":"approve"`), []byte(`"verdict":"deny"`), 1)
	require.NotEqual(t, body, tampered)
	tamperedPayload := bytes.Replace(wbody, []byte(`"note":"hello"`), []byte(`"note":"hellO"`), 1)
	require.NotEqual(t, wbody, tamperedPayload)
	spaced := bytes.Replace(body, []byte(`,`), []byte(`, `), 1)

	cases := []struct {
		name string
		id   string
		body []byte
		msg  string
	}{
		{"tampered body", id, tampered, "does not match its id"},
		{"tampered payload", wid, tamperedPayload, "does not match its id"},
		{"renamed file", "approval-111111111111111111111111", body, "does not match its id"},
		{"malformed name", "approval", body, "malformed name"},
		{"unknown kind", "grant-" + strings.TrimPrefix(id, "approval-"), body, "unknown kind"},
		{"kind does not match content", "wake-" + strings.TrimPrefix(id, "approval-"), body, ""},
		{"not canonical", id, spaced, ""},
		{"not JSON", id, []byte("hello"), ""},
		{"unknown field", id, bytes.Replace(body, []byte(`{"action_ref"`), []byte(`{"aaa":1,"action_ref"`), 1), ""},
		{"empty", id, nil, ""},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inbox.Decode(tc.id, tc.body)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.msg)
		})
	}
}

func TestCheckPayload(t *testing.T) {
	require.NoError(t, inbox.CheckPayload(nil))
	cases := []struct {
		name string
		json string
		path string // "" means accepted
	}{
		{"plain note", `{"note":"the build is green","count":2}`, ""},
		{"forbidden words as values are fine", `{"note":"authority","tags":["budget","grant"]}`, ""},
		{"scalar", `"authority"`, ""},
		{"empty object", `{}`, ""},
		{"top-level authority", `{"authority":"project_write"}`, "payload.authority"},
		{"top-level budget", `{"note":"x","budget":{"cycles":1000}}`, "payload.budget"},
		{"case-insensitive", `{"Contract_Ref":"contract:sha256:x"}`, "payload.Contract_Ref"},
		{"nested object", `{"meta":{"inner":{"grants":["write"]}}}`, "payload.meta.inner.grants"},
		{"inside an array", `{"items":[{"ok":1},{"rules":[]}]}`, "payload.items[1].rules"},
		{"top-level array", `[1,{"policy":{}}]`, "payload[1].policy"},
		{"array in array", `{"a":[[{"approve":true}]]}`, "payload.a[0][0].approve"},
		{"approval", `{"approval":"yes"}`, "payload.approval"},
		{"autonomy", `{"autonomy":"A4"}`, "payload.autonomy"},
		{"permissions", `{"permissions":["*"]}`, "payload.permissions"},
	}
	require.NotEmpty(t, cases)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := inbox.CheckPayload(mustParse(t, tc.json))
			if tc.path == "" {
				require.NoError(t, err)
				return
			}
			var fe *codec.FieldError
			require.True(t, errors.As(err, &fe), "want *codec.FieldError, got %T: %v", err, err)
			assert.Equal(t, tc.path, fe.Path)
		})
	}
}

func TestValidSource(t *testing.T) {
	srcs := state.WakeSources()
	require.NotEmpty(t, srcs)
	for _, s := range srcs {
		assert.True(t, inbox.ValidSource(s), s)
	}
	for _, s := range []string{"", "bogus", "External_Event", "manual_resume ", "approval"} {
		assert.False(t, inbox.ValidSource(s), s)
	}
}

// TestAnswer: the queued answer that counts for a request is the last one
// to that exact request (ref and asking cycle) that no other replaces.
func TestAnswer(t *testing.T) {
	ref, other := codec.MustRefOf("areq", "x"), codec.MustRefOf("areq", "y")
	item := func(ref codec.Ref, cycle int64, verdict, replaces string) inbox.Item {
		a := &state.Approval{Schema: state.ApprovalSchema, ActionRef: ref, RequestCycle: cycle, Verdict: verdict, By: "bob",
			Replaces: replaces, CreatedAt: "2026-01-01T00:00:00Z"}
		id, body, err := inbox.Seal(a)
		require.NoError(t, err)
		return inbox.Item{ID: id, Kind: inbox.KindApproval, Approval: a, Body: body}
	}
	a := item(ref, 3, "approve", "")
	b := item(ref, 3, "deny", a.ID)
	cases := []struct {
		name     string
		items    []inbox.Item
		want     string // id of the answer that counts, "" for none
		replaced map[string]string
	}{
		{"none queued", nil, "", map[string]string{}},
		{"one", []inbox.Item{a}, a.ID, map[string]string{}},
		{"replaced", []inbox.Item{a, b}, b.ID, map[string]string{a.ID: b.ID}},
		{"replaced, the replacing one listed first", []inbox.Item{b, a}, b.ID, map[string]string{a.ID: b.ID}},
		{"two unlinked: the last in inbox order", []inbox.Item{a, item(ref, 3, "deny", "")}, item(ref, 3, "deny", "").ID, map[string]string{}},
		{"an answer to an earlier asking", []inbox.Item{item(ref, 2, "approve", "")}, "", map[string]string{}},
		{"a replacement across requests does not count", []inbox.Item{a, item(other, 3, "deny", a.ID)}, a.ID, map[string]string{}},
		{"nothing replaces itself", []inbox.Item{item(ref, 3, "approve", "approval-000000000000000000000000")}, item(ref, 3, "approve", "approval-000000000000000000000000").ID, map[string]string{}},
		{"a wake signal is no answer", []inbox.Item{{ID: "wake-1", Kind: inbox.KindWake, Wake: wake(t, "2026-01-01T00:00:00Z")}}, "", map[string]string{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := inbox.Answer(c.items, ref, 3)
			if c.want == "" {
				assert.Nil(t, got)
			} else if assert.NotNil(t, got) {
				assert.Equal(t, c.want, got.ID)
			}
			assert.Equal(t, c.replaced, inbox.Replaced(c.items, nil))
		})
	}
	// The kernel lets only a person's answer replace another.
	assert.Empty(t, inbox.Replaced([]inbox.Item{a, b}, func(*state.Approval) bool { return false }))
}
