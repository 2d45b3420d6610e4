package validate

import (
	"encoding/json"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/state"
)

// TestFastEncoderMatchesReference fills every recorded object type with
// random values (strings with escapes, unicode, U+2028, HTML characters;
// nil and empty collections; nested pointers) and requires the fast
// canonical encoder to produce exactly the bytes of the reference path
// (encoding/json, re-canonicalized).
func TestFastEncoderMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	n := 0
	for name, typ := range frozenTypes() {
		for range 60 {
			v := reflect.New(typ)
			fill(rng, v.Elem(), 0)
			fast, errFast := codec.Marshal(v.Interface())
			ref, errRef := codec.MarshalViaJSON(v.Interface())
			require.Equal(t, errRef == nil, errFast == nil, "%s: fast err %v, reference err %v", name, errFast, errRef)
			require.Equal(t, string(ref), string(fast), "%s", name)
			n++
		}
	}
	require.Greater(t, n, 1000)
}

func randomString(rng *rand.Rand) string {
	pool := []string{"", "a", "hello world", "é", "中文", "😀", "\u2028", "\u2029", "<b>&amp;</b>", "\"quoted\"", "back\\slash", "\n\t\r\b\f", "\x01\x1f", "\x7f", "plain-id_1.2"}
	s := ""
	for range rng.IntN(3) {
		s += pool[rng.IntN(len(pool))]
	}
	return s
}

var (
	dispositionType = reflect.TypeFor[state.Disposition]()
	verdictType     = reflect.TypeFor[governance.Verdict]()
	valueType       = reflect.TypeFor[codec.Value]()
	rawType         = reflect.TypeFor[json.RawMessage]()
	canonicalType   = reflect.TypeFor[codec.Canonical]()
)

func fill(rng *rand.Rand, v reflect.Value, depth int) {
	t := v.Type()
	switch {
	case t == dispositionType:
		v.SetUint(uint64(1 + rng.IntN(7)))
		return
	case t == verdictType:
		v.SetUint(uint64(1 + rng.IntN(5)))
		return
	case t == valueType:
		val, _ := codec.Parse([]byte(`{"k":[1,"x\u2028",{"z":null,"a":true}],"e":{}}`))
		v.Set(reflect.ValueOf(val))
		return
	case t == rawType:
		v.Set(reflect.ValueOf(json.RawMessage(`{"b":1,"a":"é"}`)))
		return
	case t == canonicalType:
		// A Canonical holds canonical bytes by contract.
		v.Set(reflect.ValueOf(codec.Canonical(`{"a":"é","b":[1,null]}`)))
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(randomString(rng))
	case reflect.Bool:
		v.SetBool(rng.IntN(2) == 0)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(rng.IntN(2000) - 1000))
	case reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uint:
		v.SetUint(uint64(rng.IntN(100)))
	case reflect.Pointer:
		if depth > 4 || rng.IntN(3) == 0 {
			return
		}
		p := reflect.New(t.Elem())
		fill(rng, p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 4 || rng.IntN(4) == 0 {
			return // nil
		}
		n := rng.IntN(3)
		s := reflect.MakeSlice(t, n, n)
		for i := range n {
			fill(rng, s.Index(i), depth+1)
		}
		v.Set(s)
	case reflect.Map:
		if depth > 4 || rng.IntN(4) == 0 {
			return
		}
		m := reflect.MakeMap(t)
		for range rng.IntN(3) {
			k := reflect.New(t.Key()).Elem()
			fill(rng, k, depth+1)
			e := reflect.New(t.Elem()).Elem()
			fill(rng, e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				fill(rng, v.Field(i), depth+1)
			}
		}
	}
}
