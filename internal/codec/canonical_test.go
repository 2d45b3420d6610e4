package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCanonicalGolden checks the encoder against bytes produced by Python's
// json.dumps (testdata/gen_golden.py), the reference the design names.
func TestCanonicalGolden(t *testing.T) {
	inputs, err := filepath.Glob("testdata/canonical/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, inputs, "no golden inputs found")
	for _, in := range inputs {
		t.Run(filepath.Base(in), func(t *testing.T) {
			src, err := os.ReadFile(in)
			require.NoError(t, err)
			want, err := os.ReadFile(strings.TrimSuffix(in, ".json") + ".golden")
			require.NoError(t, err)

			v, err := Parse(src)
			require.NoError(t, err)
			got := v.Encode()
			assert.Equal(t, string(want), string(got))

			// The golden itself must be accepted as canonical and be a fixed point.
			cv, err := ParseCanonical(want)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(cv.Encode()))

			// Marshal of a generic Go value decoded by encoding/json agrees too.
			var generic any
			dec := json.NewDecoder(bytes.NewReader(src))
			dec.UseNumber()
			require.NoError(t, dec.Decode(&generic))
			m, err := Marshal(generic)
			require.NoError(t, err)
			assert.Equal(t, string(want), string(m))
		})
	}
}

func TestParseRejects(t *testing.T) {
	cases := []struct {
		name, in, want string
	}{
		{"duplicate key", `{"a":1,"a":2}`, "duplicate key"},
		{"float", `{"a":1.5}`, "non-integer"},
		{"exponent", `{"a":1e3}`, "non-integer"},
		{"leading zero", `{"a":01}`, "leading zero"},
		{"trailing bytes", `{"a":1} x`, "trailing data"},
		{"two values", `1 2`, "trailing data"},
		{"invalid utf8", "\"\xff\"", "invalid UTF-8"},
		{"lone high surrogate", `"\ud800"`, "lone surrogate"},
		{"lone low surrogate", `"\udc00"`, "lone surrogate"},
		{"raw control", "\"a\x01b\"", "raw control"},
		{"bad escape", `"\x"`, "invalid escape"},
		{"unterminated", `{"a":`, "unexpected end"},
		{"empty", ``, "unexpected end"},
		{"bare word", `nul`, "invalid literal"},
		{"trailing comma", `[1,]`, "unexpected character"},
		{"too deep", strings.Repeat("[", maxDepth+2) + strings.Repeat("]", maxDepth+2), "nesting deeper"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Parse([]byte(c.in))
			require.Error(t, err)
			assert.Contains(t, err.Error(), c.want)
			var se *SyntaxError
			assert.True(t, errors.As(err, &se), "want *SyntaxError, got %T", err)
		})
	}
}

func TestParseCanonicalRejectsNonCanonicalForms(t *testing.T) {
	cases := map[string]string{
		"whitespace":       `{"a": 1}`,
		"unsorted":         `{"b":1,"a":2}`,
		"duplicate":        `{"a":1,"a":1}`,
		"escaped slash":    `"a\/b"`,
		"needless unicode": `"\u0041"`,
		"upper hex":        `"\u001F"`,
		"long form quote":  `"\u0022"`,
		"escaped u2028":    `"\u2028"`,
		"negative zero":    `-0`,
		"trailing newline": "{}\n",
	}
	for name, in := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := ParseCanonical([]byte(in))
			require.Error(t, err)
			// The lenient parser takes all of these except the duplicate.
			if name != "duplicate" {
				_, err := Parse([]byte(in))
				assert.NoError(t, err)
			}
		})
	}
}

type sample struct {
	Name  string            `json:"name"`
	Count int               `json:"count"`
	Tags  []string          `json:"tags,omitempty"`
	Inner *sampleInner      `json:"inner,omitempty"`
	Extra map[string]string `json:"extra,omitempty"`
}

type sampleInner struct {
	Flag bool `json:"flag"`
}

func TestUnmarshalStrict(t *testing.T) {
	cases := []struct {
		name, in, path string
		wantErr        error
	}{
		{"unknown top field", `{"name":"x","count":1,"colour":"red"}`, "colour", ErrUnknownField},
		{"wrong case", `{"Name":"x","count":1}`, "Name", ErrUnknownField},
		{"unknown nested", `{"name":"x","count":1,"inner":{"flag":true,"flog":1}}`, "inner.flog", ErrUnknownField},
		{"wrong type", `{"name":"x","count":"many"}`, "count", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var s sample
			err := Unmarshal([]byte(c.in), &s)
			require.Error(t, err)
			var fe *FieldError
			require.True(t, errors.As(err, &fe), "want *FieldError, got %T: %v", err, err)
			assert.Equal(t, c.path, fe.Path)
			if c.wantErr != nil {
				assert.ErrorIs(t, err, c.wantErr)
			}
		})
	}

	var s sample
	require.NoError(t, Unmarshal([]byte(`{"name":"ok","count":2,"inner":{"flag":true},"extra":{"k":"v"}}`), &s))
	assert.Equal(t, sample{Name: "ok", Count: 2, Inner: &sampleInner{Flag: true}, Extra: map[string]string{"k": "v"}}, s)
}

func TestMarshalRoundTrip(t *testing.T) {
	in := sample{Name: "a<b>&\u2028", Count: -3, Tags: []string{"z", "a"}, Extra: map[string]string{"b": "1", "a": "2"}}
	b, err := Marshal(in)
	require.NoError(t, err)
	assert.Equal(t, `{"count":-3,"extra":{"a":"2","b":"1"},"name":"a<b>&`+"\u2028"+`","tags":["z","a"]}`, string(b))

	var out sample
	require.NoError(t, UnmarshalCanonical(b, &out))
	assert.Equal(t, in, out)
	again, err := Marshal(out)
	require.NoError(t, err)
	assert.Equal(t, b, again, "load then save must give identical bytes")
}

func TestMarshalRejectsFloats(t *testing.T) {
	_, err := Marshal(map[string]float64{"x": 0.5})
	require.Error(t, err)
	assert.Contains(t, err.Error(), "non-integer")
}

func TestRefs(t *testing.T) {
	r, b, err := RefOf("goal", map[string]string{"b": "2", "a": "1"})
	require.NoError(t, err)
	assert.Equal(t, `{"a":"1","b":"2"}`, string(b))
	assert.Equal(t, NewRef("goal", b), r)
	assert.Equal(t, "goal", r.Kind())
	assert.Len(t, r.Hex(), 64)
	parsed, err := ParseRef(string(r))
	require.NoError(t, err)
	assert.Equal(t, r, parsed)

	for _, bad := range []string{"", "goal", "goal:sha256:abc", "Goal:sha256:" + strings.Repeat("a", 64),
		"goal:md5:" + strings.Repeat("a", 64), "goal:sha256:" + strings.Repeat("A", 64), "1x:sha256:" + strings.Repeat("a", 64)} {
		_, err := ParseRef(bad)
		assert.Error(t, err, bad)
	}
}

// FuzzCanonicalMalleability: whatever the canonical parser accepts encodes
// back to exactly the input, so one object has exactly one byte form.
func FuzzCanonicalMalleability(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := ParseCanonical(data)
		if err != nil {
			return
		}
		if got := v.Encode(); !bytes.Equal(got, data) {
			t.Fatalf("accepted %q but re-encodes to %q", data, got)
		}
	})
}

// FuzzParse: whatever the lenient parser accepts, encoding/json accepts as
// the same value, and its canonical encoding is accepted by the canonical
// parser as a fixed point.
func FuzzParse(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := Parse(data)
		if err != nil {
			return
		}
		enc := v.Encode()
		cv, err := ParseCanonical(enc)
		if err != nil {
			t.Fatalf("canonical form %q of %q rejected: %v", enc, data, err)
		}
		if !bytes.Equal(cv.Encode(), enc) {
			t.Fatalf("canonical form is not a fixed point: %q", enc)
		}
		var fromStd, fromOurs any
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber()
		if err := d.Decode(&fromStd); err != nil {
			t.Fatalf("we accepted %q, encoding/json did not: %v", data, err)
		}
		d = json.NewDecoder(bytes.NewReader(enc))
		d.UseNumber()
		if err := d.Decode(&fromOurs); err != nil {
			t.Fatalf("encoding/json rejects our output %q: %v", enc, err)
		}
		if !reflect.DeepEqual(normaliseNegZero(fromStd), fromOurs) {
			t.Fatalf("value changed: %#v vs %#v", fromStd, fromOurs)
		}
	})
}

// normaliseNegZero maps the literal -0 to 0, the one number our canonical
// form rewrites (Python's int has no negative zero either).
func normaliseNegZero(v any) any {
	switch x := v.(type) {
	case json.Number:
		if x == "-0" {
			return json.Number("0")
		}
	case []any:
		for i := range x {
			x[i] = normaliseNegZero(x[i])
		}
	case map[string]any:
		for k := range x {
			x[k] = normaliseNegZero(x[k])
		}
	}
	return v
}

func seedCorpus(f *testing.F) {
	f.Helper()
	files, _ := filepath.Glob("testdata/canonical/*")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	for _, s := range []string{`{}`, `[]`, `""`, `0`, `-0`, `{"a":[1,{"b":null}]}`, `"\u001f\ud83d\ude00"`, `"\u2028"`} {
		f.Add([]byte(s))
	}
}

// textMode decodes from a JSON string through encoding.TextUnmarshaler,
// the way acr's enums (dispositions, verdicts) do.
type textMode string

func (m *textMode) UnmarshalText(b []byte) error { *m = textMode(b); return nil }

type nullable struct {
	Count   int               `json:"count"`
	Hard    bool              `json:"hard"`
	Name    string            `json:"name"`
	Mode    textMode          `json:"mode"`
	Inner   sampleInner       `json:"inner"`
	Opt     *sampleInner      `json:"opt,omitempty"`
	Tags    []string          `json:"tags,omitempty"`
	Extra   map[string]string `json:"extra,omitempty"`
	Payload *Value            `json:"payload,omitempty"`
	Any     Value             `json:"any"`
	Items   []sampleInner     `json:"items"`
}

// TestUnmarshalRefusesNullForTypedFields: encoding/json reads null as
// "absent" for any field; a document a person writes may say null only
// where the JSON Schemas allow it (a payload, which is any JSON value).
// Stored documents keep null where acr itself writes it (a nil pointer,
// slice or map) and nowhere else.
func TestUnmarshalRefusesNullForTypedFields(t *testing.T) {
	cases := []struct {
		in, path, want string
		stored         bool // UnmarshalCanonical accepts it
	}{
		{`{"count":null}`, "count", "expected an integer", false},
		{`{"hard":null}`, "hard", "expected a boolean", false},
		{`{"name":null}`, "name", "expected a string", false},
		{`{"mode":null}`, "mode", "expected a string", false},
		{`{"inner":null}`, "inner", "expected an object", false},
		{`{"inner":{"flag":null}}`, "inner.flag", "expected a boolean", false},
		{`{"items":[{"flag":null}]}`, "items[0].flag", "expected a boolean", false},
		{`{"items":[null]}`, "items[0]", "expected an object", false},
		{`{"opt":null}`, "opt", "expected an object", true},
		{`{"tags":null}`, "tags", "expected an array", true},
		{`{"tags":[null]}`, "tags[0]", "expected a string", false},
		{`{"extra":null}`, "extra", "expected an object", true},
		{`{"extra":{"k":null}}`, "extra.k", "expected a string", false},
		{`null`, "", "null is not allowed for the document", false},
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			var n nullable
			err := Unmarshal([]byte(c.in), &n)
			var fe *FieldError
			require.ErrorAs(t, err, &fe)
			assert.Equal(t, c.path, fe.Path)
			assert.Contains(t, err.Error(), c.want)
			assert.Contains(t, err.Error(), "null is not allowed")
			err = UnmarshalCanonical([]byte(c.in), &n)
			if c.stored {
				assert.NoError(t, err)
			} else {
				assert.ErrorAs(t, err, &fe)
			}
		})
	}
	var n nullable
	require.NoError(t, Unmarshal([]byte(`{"payload":null,"any":null}`), &n), "a payload is any JSON value, null included")
}
