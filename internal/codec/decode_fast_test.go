package codec

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

// UnmarshalCanonical's fast path (decodedExactly) must accept exactly what
// the strict path accepts and leave the same value; on a refusal it leaves
// the target untouched, and the strict path gives the error.

type decodeTarget struct {
	nullable
	Ref     *string                 `json:"ref,omitempty"`
	Canon   Canonical               `json:"canon,omitempty"`
	Raw     json.RawMessage         `json:"raw,omitempty"`
	Anys    []any                   `json:"anys"`
	Nested  map[string][]*nullable  `json:"nested"`
	Numbers map[string]int64        `json:"numbers,omitempty"`
	Pointer **sampleInner           `json:"pointer"`
	Text    map[string]textMode     `json:"text,omitempty"`
	Deep    map[string]decodeTarget `json:"deep,omitempty"`
}

// strictOnly is UnmarshalCanonical without its fast path.
func strictOnly(data []byte, v any) error {
	val, err := ParseCanonical(data)
	if err != nil {
		return err
	}
	return decodeValue(val, data, v, nullStored)
}

func requireSameDecoding(t *testing.T, data []byte) {
	t.Helper()
	var fast, strict decodeTarget
	errFast := UnmarshalCanonical(data, &fast)
	errStrict := strictOnly(data, &strict)
	require.Equal(t, errStrict == nil, errFast == nil, "%q: fast %v, strict %v", data, errFast, errStrict)
	if errStrict == nil {
		require.Equal(t, strict, fast, "%q", data)
	}
	var took decodeTarget
	if !decodedExactly(data, &took) {
		require.Zero(t, took, "%q: a refused fast path leaves the target untouched", data)
	}
}

func TestUnmarshalCanonicalFastPathAgrees(t *testing.T) {
	full := decodeTarget{nullable: nullable{Count: 3, Name: "é\n", Mode: "m", Tags: []string{}, Items: []sampleInner{{Flag: true}},
		Any: Value{Kind: KindNull}, Extra: map[string]string{"b": "1", "a": "2"}}, Canon: Canonical(`{"a":[1,null]}`),
		Raw: json.RawMessage(`{"z":1}`), Anys: []any{"x", nil, map[string]any{"k": true}},
		Nested: map[string][]*nullable{"n": {nil, {Count: 1}}}, Numbers: map[string]int64{"big": 1 << 62}}
	good := MustMarshal(full)
	docs := []string{string(good), string(MustMarshal(decodeTarget{})), `{}`, `null`, `[]`, `{"count":1}`,
		// not what Marshal writes, yet canonical: the strict path decides
		`{"any":null,"anys":null,"count":0,"hard":false,"inner":{"flag":false},"items":null,"mode":"","name":"","nested":null,"pointer":null,"tags":[]}`,
		`{"any":null,"anys":null,"count":0,"hard":false,"inner":{"flag":false},"items":null,"mode":"","name":"","nested":null,"pointer":null,"tags":null}`,
		// refused: unknown, miscased, null for a typed field, not canonical, a float
		`{"unknown":1}`, `{"Count":1}`, `{"count":null}`, `{"name":null}`, `{"inner":null}`, `{"count":1.5}`,
		`{"count": 1}`, `{"name":"\u0041"}`, `{"b":1,"a":2}`, `{"count":1,"count":1}`, `{"name":"\xff"}`,
		`{"nested":{"n":[{"count":null}]}}`, `{"deep":{"d":{"Count":1}}}`, `{"canon":{"b":1,"a":2}}`,
	}
	for _, d := range docs {
		requireSameDecoding(t, []byte(d))
	}
	var v decodeTarget
	require.NoError(t, UnmarshalCanonical(good, &v))
	require.Equal(t, string(good), string(MustMarshal(v)))
}

// FuzzUnmarshalCanonicalFastPath: on any input, UnmarshalCanonical (fast
// path first) and the strict path alone agree.
func FuzzUnmarshalCanonicalFastPath(f *testing.F) {
	seedCorpus(f)
	f.Add(MustMarshal(decodeTarget{}))
	f.Add([]byte(`{"any":[1,"x"],"anys":[null,{"a":1}],"count":-3,"deep":{"x":{"any":null,"anys":null,"count":0,"hard":false,"inner":{"flag":false},"items":null,"mode":"","name":"","nested":null,"pointer":null}},"hard":true,"inner":{"flag":true},"items":[],"mode":"m","name":"n","nested":{"k":[null]},"pointer":{"flag":true}}`))
	f.Fuzz(func(t *testing.T, data []byte) { requireSameDecoding(t, data) })
}
