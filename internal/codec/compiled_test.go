package codec

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// The compiled encoder must write exactly what the reflective one writes,
// and fail where it fails (the same error, or the same hand-over to
// encoding/json). These tests and FuzzCompiledEncoder hold it to that; the
// validate package checks both against encoding/json on every recorded
// type, and the scenario tests re-encode every recorded object.

type cmpText int

func (c cmpText) MarshalText() ([]byte, error) {
	if c < 0 {
		return nil, errors.New("negative")
	}
	return []byte(strings.Repeat("t\"é", int(c)%3)), nil
}

type cmpRef string

type cmpJSON struct{ N int }

func (c cmpJSON) MarshalJSON() ([]byte, error) {
	return []byte(`{ "z": 1, "a": [ "x" , null ] }`), nil
}

type cmpPtrText struct{ S string }

func (c *cmpPtrText) MarshalText() ([]byte, error) { return []byte(c.S), nil }

type CmpEmbedded struct {
	E1 string `json:"e1"`
	E2 int    `json:"e2,omitempty"`
}

type CmpEmbeddedPtr struct {
	P1 []string `json:"p1"`
}

type cmpNode struct {
	Name string              `json:"name"`
	Next *cmpNode            `json:"next,omitempty"`
	Kids []cmpNode           `json:"kids"`
	Tree map[string]*cmpNode `json:"tree,omitempty"`
}

type cmpAll struct {
	CmpEmbedded
	*CmpEmbeddedPtr
	Str     string                    `json:"str"`
	Opt     string                    `json:"opt,omitempty"`
	Bool    bool                      `json:"bool,omitempty"`
	I8      int8                      `json:"i8"`
	I64     int64                     `json:"i64"`
	U16     uint16                    `json:"u16"`
	U       uint                      `json:"u,omitempty"`
	Text    cmpText                   `json:"text"`
	JSON    cmpJSON                   `json:"json"`
	Num     json.Number               `json:"num,omitempty"`
	Raw     json.RawMessage           `json:"raw"`
	Canon   Canonical                 `json:"canon"`
	Val     Value                     `json:"val"`
	ValPtr  *Value                    `json:"val_ptr,omitempty"`
	Any     any                       `json:"any"`
	Anys    []any                     `json:"anys,omitempty"`
	Strs    []string                  `json:"strs"`
	Arr     [2]uint8                  `json:"arr"`
	Map     map[string]cmpText        `json:"map"`
	MapOpt  map[string]int            `json:"map_opt,omitempty"`
	Nested  map[string]map[string]int `json:"nested"`
	StrMap  map[string]string         `json:"str_map"`
	RefMap  map[string]cmpRef         `json:"ref_map,omitempty"`
	Node    *cmpNode                  `json:"node"`
	Ptr     **string                  `json:"ptr"`
	Skipped string                    `json:"-"`
	Dash    string                    `json:"-,"`
	NoTag   int
	private int
}

// encodings returns what the compiled and the reflective encoder make of v.
func encodings(v any) (compiled, reflective []byte, errC, errR error) {
	rv := reflect.ValueOf(v)
	compiled, errC = appendValue(nil, rv)
	reflective, errR = reflectValue(nil, rv)
	return
}

func requireSameEncoding(t *testing.T, v any) {
	t.Helper()
	c, r, errC, errR := encodings(v)
	if errC != nil || errR != nil {
		require.Equal(t, errR, errC, "%#v: errors", v)
		return
	}
	require.Equal(t, string(r), string(c), "%#v", v)
	m, err := Marshal(v)
	require.NoError(t, err)
	require.Equal(t, string(r), string(m), "Marshal %#v", v)
}

func TestCompiledMatchesReflective(t *testing.T) {
	s := "pointed"
	ps := &s
	full := cmpAll{
		CmpEmbedded:    CmpEmbedded{E1: "embedded", E2: 2},
		CmpEmbeddedPtr: &CmpEmbeddedPtr{P1: []string{"x"}},
		Str:            "a \"quoted\" \\ line\nwith\ttabs, \x01, é, 中文, 😀, \u2028 and <html>&",
		I8:             -8, I64: -1 << 62, U16: 65535, Text: 4, Num: "-0", Raw: json.RawMessage(` {"b":1, "a":"é"} `),
		Canon: Canonical(`{"a":"é"}`), Val: Value{Kind: KindArray, Arr: []Value{{Kind: KindString, Str: "v"}}},
		Any: map[string]any{"k": []any{int64(1), "two", nil, true}}, Anys: []any{cmpText(1), &s, nil},
		Strs: []string{}, Arr: [2]uint8{1, 2}, Map: map[string]cmpText{"b": 1, "a": 2, "": 0, "é": 1, "\n": 2},
		MapOpt: map[string]int{}, StrMap: map[string]string{"b": "x\n", "a": "é", "c": ""}, RefMap: map[string]cmpRef{"r": "ref"}, Nested: map[string]map[string]int{"x": {"b": 1, "a": 2}, "y": nil},
		Node: &cmpNode{Name: "root", Next: &cmpNode{Name: "next"}, Kids: []cmpNode{{Name: "kid", Tree: map[string]*cmpNode{"z": nil, "a": {Name: "leaf"}}}}},
		Ptr:  &ps, Skipped: "skipped", Dash: "dash", NoTag: 7, private: 1,
	}
	cases := []any{
		nil, "", "x", 0, -1, uint64(1 << 63), true, false, []string(nil), []int{}, map[string]int(nil),
		full, &full, cmpAll{}, &cmpAll{}, []*cmpAll{nil, {}},
		cmpText(2), cmpJSON{}, json.Number("12"), json.RawMessage(nil), Canonical(nil), Value{},
		// what reflectValue hands to encoding/json or refuses
		"bad \xff utf-8", map[string]int{"bad \xff": 1}, map[int]string{1: "x"}, map[int]string(nil), map[int]string{},
		[]byte("bytes"), []byte(nil), cmpPtrText{S: "p"}, &cmpPtrText{S: "p"}, uintptr(1), complex(1, 2),
		1.5, []float64{1}, map[string]any{"f": 2.5}, json.Number("1.5"), json.RawMessage(`{"a":1.5}`),
		cmpText(-1), struct {
			A []byte `json:"a"`
		}{}, struct {
			F float32 `json:"f,omitempty"`
		}{}, struct {
			C chan int `json:"c"`
		}{},
		// errors and hand-overs in map order: the first key in sorted order decides
		map[string]any{"a": 1.5, "b\xff": 1}, map[string]any{"a\xff": 1, "b": 1.5},
		map[string]string{"a": "ok", "b": "bad \xff"}, map[cmpRef]cmpRef{"k": "v", "j\xff": "w"},
		map[string]string{"k1": "1", "k2": "2", "k3": "3", "k4": "4", "k5": "5", "k6": "6", "k7": "7", "k8": "8", "k9": "9"},
	}
	for _, v := range cases {
		requireSameEncoding(t, v)
	}
}

func TestAppendValidString(t *testing.T) {
	for _, s := range []string{"", "a", "12345678", "123456789abcdefgh\"", strings.Repeat("é", 9), "ab\x00cd\x1fef\x7fgh",
		"\xff", "abcdefgh\xff", "abcdefg\xe2\x80", "\u2028\u2029", "😀x", "tail\\"} {
		got, ok := appendValidString([]byte("pre"), s)
		require.Equal(t, utf8.ValidString(s), ok, "%q", s)
		if ok {
			require.Equal(t, string(appendString([]byte("pre"), s)), string(got), "%q", s)
		}
	}
}

// FuzzCompiledEncoder fills a value of a type with every kind the encoders
// meet from the fuzz input and requires the two encoders to agree.
func FuzzCompiledEncoder(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("\x01\x02\x03 plain \xff\xfe \"quoted\" é 😀 \u2028 \x00\x1f"))
	f.Add([]byte(strings.Repeat("\x07abcdefgh", 40)))
	f.Fuzz(func(t *testing.T, data []byte) {
		src := &fuzzSource{data: data}
		var v cmpAll
		src.fill(reflect.ValueOf(&v).Elem(), 0)
		requireSameEncoding(t, &v)
		got, ok := appendValidString(nil, string(data))
		require.Equal(t, utf8.Valid(data), ok)
		if ok {
			require.Equal(t, string(appendString(nil, string(data))), string(got))
		}
	})
}

// fuzzSource hands out the fuzz input's bytes as choices and strings; past
// its end every choice is zero.
type fuzzSource struct {
	data []byte
	pos  int
}

func (s *fuzzSource) byte() byte {
	if s.pos >= len(s.data) {
		return 0
	}
	b := s.data[s.pos]
	s.pos++
	return b
}

func (s *fuzzSource) string() string {
	n := min(int(s.byte()%24), len(s.data)-s.pos)
	if n <= 0 {
		return ""
	}
	out := string(s.data[s.pos : s.pos+n])
	s.pos += n
	return out
}

var (
	fuzzValueType = reflect.TypeFor[Value]()
	fuzzRawType   = reflect.TypeFor[json.RawMessage]()
	fuzzCanonType = reflect.TypeFor[Canonical]()
	fuzzNumType   = reflect.TypeFor[json.Number]()
	fuzzAnyType   = reflect.TypeFor[any]()
)

func (s *fuzzSource) fill(v reflect.Value, depth int) {
	t := v.Type()
	switch t {
	case fuzzValueType:
		if val, err := Parse([]byte(s.string())); err == nil {
			v.Set(reflect.ValueOf(val))
		}
		return
	case fuzzRawType, fuzzCanonType:
		if s.byte()%2 == 0 {
			v.SetBytes([]byte(s.string())) // may be invalid: both must refuse it alike
		}
		return
	case fuzzNumType:
		v.SetString(s.string())
		return
	case fuzzAnyType:
		switch s.byte() % 6 {
		case 1:
			v.Set(reflect.ValueOf(s.string()))
		case 2:
			v.Set(reflect.ValueOf(int64(s.byte()) - 128))
		case 3:
			v.Set(reflect.ValueOf(map[string]any{s.string(): s.string(), s.string(): nil}))
		case 4:
			v.Set(reflect.ValueOf([]any{cmpText(s.byte()), s.string()}))
		case 5:
			if depth < 3 {
				var inner cmpAll
				s.fill(reflect.ValueOf(&inner).Elem(), depth+1)
				v.Set(reflect.ValueOf(&inner))
			}
		}
		return
	}
	switch t.Kind() {
	case reflect.String:
		v.SetString(s.string())
	case reflect.Bool:
		v.SetBool(s.byte()%2 == 1)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		v.SetInt(int64(int8(s.byte())) << (s.byte() % 56))
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		v.SetUint(uint64(s.byte()))
	case reflect.Pointer:
		if depth > 4 || s.byte()%3 == 0 {
			return
		}
		p := reflect.New(t.Elem())
		s.fill(p.Elem(), depth+1)
		v.Set(p)
	case reflect.Slice:
		if depth > 4 || s.byte()%4 == 0 {
			return
		}
		n := int(s.byte() % 4)
		sl := reflect.MakeSlice(t, n, n)
		for i := range n {
			s.fill(sl.Index(i), depth+1)
		}
		v.Set(sl)
	case reflect.Array:
		for i := range v.Len() {
			s.fill(v.Index(i), depth+1)
		}
	case reflect.Map:
		if depth > 4 || s.byte()%4 == 0 {
			return
		}
		m := reflect.MakeMap(t)
		for range s.byte() % 4 {
			k := reflect.New(t.Key()).Elem()
			s.fill(k, depth+1)
			e := reflect.New(t.Elem()).Elem()
			s.fill(e, depth+1)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Struct:
		for i := range t.NumField() {
			if t.Field(i).IsExported() {
				s.fill(v.Field(i), depth+1)
			}
		}
	}
}
