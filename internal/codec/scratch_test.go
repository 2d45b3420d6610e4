package codec

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHashOnlyEncodingsAgree: MustRefOf and MustFingerprintOf hash the
// encoding in a reused buffer; they must give what hashing Marshal's own
// copy gives, on the fast path, on the slow path, for a Value, and for an
// encoding too large to keep its buffer.
func TestHashOnlyEncodingsAgree(t *testing.T) {
	type doc struct {
		Name  string            `json:"name"`
		Tags  []string          `json:"tags,omitempty"`
		Attrs map[string]string `json:"attrs"`
	}
	cases := map[string]any{
		"struct":       doc{Name: "a", Tags: []string{"x", "y"}, Attrs: map[string]string{"b": "2", "a": "1"}},
		"empty struct": doc{},
		"map":          map[string]any{"z": 1, "a": []any{"q", true, nil}},
		"slow path":    map[string][]byte{"raw": []byte("base64 in encoding/json")},
		"value":        mustParse(t, `{"b":1,"a":"x"}`),
		"large":        doc{Name: strings.Repeat("n", 2*maxPooledScratch)},
		"escapes":      doc{Name: "quote \" backslash \\ tab \t é"},
	}
	for name, v := range cases {
		t.Run(name, func(t *testing.T) {
			b, err := Marshal(v)
			require.NoError(t, err)
			sum := sha256.Sum256(b)
			want := "sha256:" + hex.EncodeToString(sum[:])
			assert.Equal(t, Ref("k:"+want), MustRefOf("k", v))
			assert.Equal(t, Fingerprint(want), MustFingerprintOf(v))
			r, rb, err := RefOf("k", v)
			require.NoError(t, err)
			assert.Equal(t, Ref("k:"+want), r)
			assert.Equal(t, string(b), string(rb))
			assert.Equal(t, want[len("sha256:"):], Digest(b))
		})
	}
}

func mustParse(t *testing.T, s string) Value {
	t.Helper()
	v, err := Parse([]byte(s))
	require.NoError(t, err)
	return v
}

// TestMarshalOwnsItsBytes: a buffer goes back to the pool after each
// encoding, so what Marshal returns must be a copy no later encoding can
// write over, from one goroutine or many (run with -race).
func TestMarshalOwnsItsBytes(t *testing.T) {
	first, err := Marshal(map[string]string{"k": "first"})
	require.NoError(t, err)
	for i := range 50 {
		_, err := Marshal(map[string]any{"k": strings.Repeat("x", i*100)})
		require.NoError(t, err)
	}
	assert.Equal(t, `{"k":"first"}`, string(first))

	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 200 {
				v := map[string]int{"g": g, "i": i}
				b, err := Marshal(v)
				if !assert.NoError(t, err) {
					return
				}
				want, _ := MarshalViaJSON(v)
				if !assert.Equal(t, string(want), string(b)) {
					return
				}
			}
		}()
	}
	wg.Wait()
}

// TestEncodesToAgreesWithMarshal: the decoders' check of a stored
// document compares in the reused buffer; it must say what comparing
// Marshal's bytes says, and no for a value Marshal refuses.
func TestEncodesToAgreesWithMarshal(t *testing.T) {
	type rec struct {
		A string `json:"a"`
		B []int  `json:"b,omitempty"`
	}
	cases := []struct {
		name string
		v    any
		want string
		eq   bool
	}{
		{"same bytes", rec{A: "x", B: []int{1}}, `{"a":"x","b":[1]}`, true},
		{"other bytes", rec{A: "x"}, `{"a":"y"}`, false},
		{"a prefix only", rec{A: "x"}, `{"a":"x"`, false},
		{"pointer", &rec{A: "x"}, `{"a":"x"}`, true},
		{"value", mustParse(t, `{"z":1,"a":2}`), `{"a":2,"z":1}`, true},
		{"slow path", map[string][]byte{"k": []byte("hi")}, `{"k":"aGk="}`, true},
		{"refused", map[string]float64{"f": 1.5}, `{"f":1.5}`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			enc, err := Marshal(c.v)
			assert.Equal(t, err == nil && string(enc) == c.want, c.eq, "the case's own expectation")
			assert.Equal(t, c.eq, encodesTo(c.v, []byte(c.want)))
		})
	}
}
