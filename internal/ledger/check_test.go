package ledger

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
)

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
			var c eventChecker
			err := c.check([]byte(tc.doc))
			assert.Equal(t, tc.ok, err == nil, "%v", err)
			if err == nil {
				_, err := decodeEvent([]byte(tc.doc))
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
		var c eventChecker
		if c.check(data) != nil {
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
	fsys := disk.NewMem()
	l, err := Create(fsys)
	require.NoError(t, err)
	var recs []event.Record
	for c := range int64(6) {
		r, err := l.Append(testEvents(3, c+1))
		require.NoError(t, err)
		recs = append(recs, r...)
	}
	full, err := fsys.ReadFile(FileName)
	require.NoError(t, err)
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
					rep, err := verifyChunks(bytes.NewReader(tc.data), int64(len(tc.data)), nil, workers, size)
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
