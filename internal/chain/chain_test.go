package chain

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

func testEvents(n int, cycle int64) []event.Event {
	var evs []event.Event
	for i := range n {
		obj, _ := event.NewObject("note", map[string]any{"i": i, "text": fmt.Sprintf("event <%d> ü", i)})
		evs = append(evs, event.Event{Type: "test.event", RunID: "run:test", CycleSeq: cycle, At: "2026-01-01T00:00:00Z", Object: obj,
			Reasons: []string{"because"}})
	}
	return evs
}

// history frames events into a history's bytes, and its records.
func history(t testing.TB, evs []event.Event) ([]byte, []event.Record) {
	t.Helper()
	var buf []byte
	var recs []event.Record
	front := state.GenesisFrontier()
	h := sha256.New()
	for _, ev := range evs {
		eb, ref, err := ev.Encode()
		require.NoError(t, err)
		start := len(buf)
		var own string
		buf, own = AppendLine(buf, h, front.Seq+1, front.Hash, eb)
		n := int64(len(buf) - start)
		recs = append(recs, event.Record{Seq: front.Seq + 1, Chain: front.Hash, Hash: own, Offset: front.Offset, Length: n, Ref: ref, Event: ev})
		front = state.Frontier{Seq: front.Seq + 1, Hash: own, Offset: front.Offset + n}
	}
	return buf, recs
}

func frontierOf(r event.Record) state.Frontier {
	return state.Frontier{Seq: r.Seq, Hash: r.Hash, Offset: r.Offset + r.Length}
}

func TestEventChecker(t *testing.T) {
	obj, err := event.NewObject("note", map[string]any{"a": 1})
	require.NoError(t, err)
	good, _, err := (&event.Event{Type: "t", RunID: "r", CycleSeq: 3, Parents: []codec.Ref{obj.Ref}, Refs: map[string]codec.Ref{"x": obj.Ref},
		Reasons: []string{"why"}, Object: obj}).Encode()
	require.NoError(t, err)
	body := `{"body":{"a":1},"ref":"` + string(obj.Ref) + `"}`
	for _, tc := range []struct {
		name, doc string
		ok        bool
	}{
		{"a full event", string(good), true},
		{"the minimal event", `{"type":"t"}`, true},
		{"null lists and object decode as absent", `{"object":null,"parents":null,"reason_codes":null,"refs":null}`, true},
		{"null for a string", `{"at":null}`, false},
		{"null for cycle_seq", `{"cycle_seq":null}`, false},
		{"null parent", `{"parents":[null]}`, false},
		{"null reason code", `{"reason_codes":[null]}`, false},
		{"null ref", `{"refs":{"a":null}}`, false},
		{"not an object", `[]`, false},
		{"null document", `null`, false},
		{"unknown field", `{"typo":"t"}`, false},
		{"field in the wrong case", `{"Type":"t"}`, false},
		{"type is a number", `{"type":1}`, false},
		{"cycle_seq is a string", `{"cycle_seq":"1"}`, false},
		{"cycle_seq overflows int64", `{"cycle_seq":9223372036854775808}`, false},
		{"negative cycle_seq decodes", `{"cycle_seq":-1}`, true},
		{"parents is an object", `{"parents":{}}`, false},
		{"a parent is a number", `{"parents":[1]}`, false},
		{"refs is an array", `{"refs":[]}`, false},
		{"a ref is an object", `{"refs":{"a":{}}}`, false},
		{"reason codes hold an array", `{"reason_codes":[[]]}`, false},
		{"object", `{"object":` + body + `}`, true},
		{"object without a body", `{"object":{"ref":"` + string(obj.Ref) + `"}}`, false},
		{"object with a null body", `{"object":{"body":null,"ref":"` + string(obj.Ref) + `"}}`, false},
		{"object without a ref", `{"object":{"body":{"a":1}}}`, false},
		{"object with an extra field", `{"object":{"body":{"a":1},"extra":1,"ref":"` + string(obj.Ref) + `"}}`, false},
		{"object whose body changed", `{"object":{"body":{"a":2},"ref":"` + string(obj.Ref) + `"}}`, false},
		{"object with a malformed ref", `{"object":{"body":{"a":1},"ref":"note"}}`, false},
		{"object is an array", `{"object":[]}`, false},
		{"not canonical", `{"type":"t","run_id":"r"}`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var c Checker
			err := c.Check([]byte(tc.doc))
			assert.Equal(t, tc.ok, err == nil, "%v", err)
			if err == nil {
				_, err := DecodeEvent([]byte(tc.doc))
				assert.NoError(t, err, "the checker accepted what decoding rejects")
			}
		})
	}
}

// FuzzEventChecker: what the allocation-free checker accepts decodes into an
// Event, and every object in it matches its ref, so `acr ledger verify`
// never passes an event that a reader of the ledger would reject.
func FuzzEventChecker(f *testing.F) {
	for _, e := range testEvents(2, 7) {
		b, _, _ := e.Encode()
		f.Add(b)
	}
	f.Add([]byte(`{"cycle_seq":1,"parents":[null],"refs":{"a":"b"}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c Checker
		if c.Check(data) != nil {
			return
		}
		var e event.Event
		if err := codec.UnmarshalCanonical(data, &e); err != nil {
			t.Fatalf("checker accepted %q, decoding says %v", data, err)
		}
		if e.Object != nil {
			if err := e.Object.Check(); err != nil {
				t.Fatalf("checker accepted %q, object check says %v", data, err)
			}
		}
	})
}

// TestVerifyChunkBoundaries: whatever the chunk size (so wherever the cuts
// fall) and however many workers, Verify finds the same frontier, the same
// torn tail and the same first damaged line as walking line by line.
func TestVerifyChunkBoundaries(t *testing.T) {
	var evs []event.Event
	for c := range int64(6) {
		evs = append(evs, testEvents(3, c+1)...)
	}
	full, recs := history(t, evs)
	flipped := bytes.Clone(full)
	flipped[recs[11].Offset+30] ^= 0x02
	chained := bytes.Clone(full[:recs[7].Offset])
	chained = append(chained, full[recs[8].Offset:]...) // line 8 missing: seq gap
	for _, tc := range []struct {
		name     string
		data     []byte
		events   int64
		damage   int64
		tornSize int64
	}{
		{"whole", full, 18, 0, 0},
		{"torn", full[:len(full)-9], 17, 0, recs[17].Length - 9},
		{"flipped byte in line 12", flipped, 11, 12, 0},
		{"a line removed", chained, 7, 8, 0},
	} {
		for _, size := range []int{1, 50, int(recs[0].Length), int(recs[0].Length) + 1, 1000, 1 << 20} {
			for _, workers := range []int{1, 3} {
				t.Run(fmt.Sprintf("%s/chunk%d/workers%d", tc.name, size, workers), func(t *testing.T) {
					rep, err := verifyChunks(bytes.NewReader(tc.data), int64(len(tc.data)), nil, nil, workers, size)
					require.NoError(t, err)
					assert.Equal(t, tc.events, rep.Events)
					if tc.damage == 0 {
						assert.True(t, rep.OK)
						assert.Equal(t, frontierOf(recs[tc.events-1]), rep.Frontier)
					} else {
						require.False(t, rep.OK)
						assert.Equal(t, tc.damage, rep.Damage.Line, rep.Damage.Msg)
						assert.Equal(t, recs[tc.events].Offset, rep.Damage.Offset)
					}
					if tc.tornSize > 0 {
						require.NotNil(t, rep.Torn)
						assert.Equal(t, tc.tornSize, rep.Torn.Length)
					} else {
						assert.Nil(t, rep.Torn)
					}
				})
			}
		}
	}
}

// FuzzParseLine: a line the parser accepts is exactly what encodeLine
// would write for its seq, chain and event: there is one byte form per
// ledger entry.
func FuzzParseLine(f *testing.F) {
	evs := testEvents(2, 1)
	prev := state.GenesisHash
	for i, ev := range evs {
		b, _, _ := ev.Encode()
		line, own := EncodeLine(int64(i+1), prev, b)
		f.Add(line)
		prev = own
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		ln, err := ParseLine(data)
		if err != nil {
			return
		}
		again, own := EncodeLine(ln.Seq, ln.Chain, ln.Event)
		if !bytes.Equal(again, data) || own != ln.Hash {
			t.Fatalf("accepted %q, but it re-encodes to %q", data, again)
		}
	})
}

// TestAppendLine: lines framed into one buffer with one hasher, as Write
// frames a batch, are the lines the format defines (built here the long
// way), each after whatever the buffer held, each hashed on its own.
func TestAppendLine(t *testing.T) {
	want := func(seq int64, prev string, ev []byte) (string, string) {
		seqPart := fmt.Sprintf(`,"seq":%d}`, seq)
		sum := sha256.Sum256([]byte(`{"chain":"` + prev + `","event":` + string(ev) + seqPart))
		own := "sha256:" + hex.EncodeToString(sum[:])
		return `{"chain":"` + prev + `","event":` + string(ev) + `,"hash":"` + own + `"` + seqPart + "\n", own
	}
	h := sha256.New()
	buf := []byte("kept")
	prev := state.GenesisHash
	var lines []string
	for i, ev := range [][]byte{[]byte(`{"a":1}`), []byte(`{"b":"é"}`), []byte(`{}`)} {
		seq := int64(9_999_999_999 + i) // more digits than a short buffer holds
		line, own := want(seq, prev, ev)
		var got string
		buf, got = AppendLine(buf, h, seq, prev, ev)
		assert.Equal(t, own, got)
		lines = append(lines, line)
		alone, ownAlone := EncodeLine(seq, prev, ev)
		assert.Equal(t, line, string(alone))
		assert.Equal(t, own, ownAlone)
		prev = own
	}
	assert.Equal(t, "kept"+strings.Join(lines, ""), string(buf))
}

// mixedEvents has several types, objects that themselves contain a "type"
// member, and a type with characters the shortcut must not interpret.
func mixedEvents() []event.Event {
	decoy, _ := event.NewObject("note", map[string]any{"type": "wanted.event", "zz": `"type":"wanted.event"`})
	return []event.Event{
		{Type: "wanted.event", RunID: "run:test", CycleSeq: 1, Reasons: []string{"a"}},
		{Type: "other.event", RunID: "run:test", CycleSeq: 1, Object: decoy},
		{Type: "wanted.event", RunID: "run:test", CycleSeq: 1, Object: decoy},
		{Type: `odd"type\with.escapes`, RunID: "run:test", CycleSeq: 2},
		{Type: "other.event", RunID: "run:test", CycleSeq: 2},
		{Type: "wanted.event", RunID: "run:test", CycleSeq: 2},
	}
}

// TestEventType: the shortcut reads the type of canonical events, and
// declines (so the caller decodes) whenever it cannot be sure.
func TestEventType(t *testing.T) {
	for _, typ := range []event.Kind{"a", event.CycleCompleted, "ü.é", "with space"} {
		ev := event.Event{Type: typ, RunID: "r", Reasons: []string{`"type":"x"`}}
		b, _, err := ev.Encode()
		require.NoError(t, err)
		got, ok := EventType(b)
		require.True(t, ok, "%s", b)
		assert.Equal(t, typ, got)
	}
	for _, b := range []string{
		``, `{}`, `{"type":""}`, `{"type":"a\"b"}`, `{"type":"a\\b"}`, `{"xtype":"abc"}`, `{"type":"abc"} `, `"type":"abc"}`,
	} {
		_, ok := EventType([]byte(b))
		assert.False(t, ok, "%q", b)
	}
	got, ok := EventType([]byte(`{"run_id":"r","type":"abc"}`))
	assert.True(t, ok)
	assert.Equal(t, event.Kind("abc"), got)
}

// FuzzEventType: whenever the shortcut answers for bytes that decode as an
// event, it answers the decoded type.
func FuzzEventType(f *testing.F) {
	for _, ev := range mixedEvents() {
		b, _, _ := ev.Encode()
		f.Add(b)
	}
	f.Add([]byte(`{"run_id":"r","type":"abc"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		typ, ok := EventType(b)
		if !ok {
			return
		}
		if strings.ContainsAny(string(typ), `"\`) {
			t.Fatalf("shortcut accepted an escaped type %q", typ)
		}
		var ev event.Event
		if err := codec.UnmarshalCanonical(b, &ev); err != nil {
			return
		}
		if ev.Type != typ {
			t.Fatalf("shortcut read %q, event type is %q", typ, ev.Type)
		}
	})
}
