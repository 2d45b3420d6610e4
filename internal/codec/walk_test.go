package codec

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWalkCanonicalAgreesWithParseCanonical(t *testing.T) {
	for _, tc := range []string{
		`{}`, `[]`, `""`, `0`, `-1`, `123456789012345678901234567890`, `true`, `false`, `null`,
		`{"a":1,"b":[1,2,{"c":"d"}]}`, `{"":0,"a":0}`, `"\u0000\u001f\n\r\t\b\f\"\\"`, `"é€😀 "`,
		`{"a\"":1,"a#":2}`, `{"a#":1,"a\"":2}`, `{"b":1,"a":2}`, `{"a":1,"a":1}`,
		`{ "a":1}`, `[1, 2]`, `-0`, `01`, `1.5`, `1e3`, `"\/"`, `"\u00e9"`, `"\u000a"`, `"\u001F"`,
		`"\x"`, `"abc`, `{"a"1}`, `[1,]`, `{"a":1,}`, `nul`, "\"\xff\"", "\"\x01\"", `1 `, `[`, `{`, `"\u12"`,
	} {
		_, perr := ParseCanonical([]byte(tc))
		werr := WalkCanonical([]byte(tc), 0, nil)
		assert.Equal(t, perr == nil, werr == nil, "%s: ParseCanonical %v, WalkCanonical %v", tc, perr, werr)
	}
}

func TestWalkCanonicalVisitsShallowValuesChildrenFirst(t *testing.T) {
	var got []string
	err := WalkCanonical([]byte(`{"a":[1,{"x":2}],"b":"s"}`), 2, func(depth int, key, val []byte) error {
		got = append(got, string(rune('0'+depth))+" "+string(key)+"="+string(val))
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []string{`2 =1`, `2 ={"x":2}`, `1 a=[1,{"x":2}]`, `1 b="s"`}, got)

	stop := errors.New("stop")
	err = WalkCanonical([]byte(`{"a":1,"b":2}`), 1, func(int, []byte, []byte) error { return stop })
	assert.ErrorIs(t, err, stop)
}

func TestWalkCanonicalIsFast(t *testing.T) {
	doc := []byte(`{"a":"` + string(make([]byte, 0)) + `plain text with unicode é and escapes \n","b":[1,2,3,{"c":null}]}`)
	allocs := testing.AllocsPerRun(100, func() { _ = WalkCanonical(doc, 0, nil) })
	assert.Zero(t, allocs, "the walk must not allocate")
}

// FuzzWalkCanonical: the allocation-free walker accepts exactly what the
// canonical parser accepts.
func FuzzWalkCanonical(f *testing.F) {
	seedCorpus(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		_, perr := ParseCanonical(data)
		werr := WalkCanonical(data, 3, func(int, []byte, []byte) error { return nil })
		if (perr == nil) != (werr == nil) {
			t.Fatalf("%q: ParseCanonical says %v, WalkCanonical says %v", data, perr, werr)
		}
	})
}

func BenchmarkWalkCanonical(b *testing.B) {
	doc := MustMarshal(map[string]any{"type": "persistent.cycle.completed", "refs": map[string]string{"a": "x:sha256:0000", "b": "long string é with unicode"},
		"object": map[string]any{"body": map[string]any{"facts": []string{"one fact", "two facts", "three facts with more words in them"}, "n": 12345}}})
	b.SetBytes(int64(len(doc)))
	for b.Loop() {
		if err := WalkCanonical(doc, 0, nil); err != nil {
			b.Fatal(err)
		}
	}
}

func TestSpecial8(t *testing.T) {
	for c := range 256 {
		for pos := range 8 {
			word := []byte("abcdefgh")
			word[pos] = byte(c)
			x := uint64(0)
			for i := 7; i >= 0; i-- {
				x = x<<8 | uint64(word[i])
			}
			want := !plainByte(byte(c))
			if want {
				assert.True(t, special8(x), "byte %#x at %d missed", c, pos)
			} else {
				assert.False(t, special8(x), "byte %#x at %d: false alarm", c, pos)
			}
		}
	}
}

func TestIsHex64(t *testing.T) {
	good := "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	assert.True(t, IsHex64(good))
	assert.True(t, IsHex64([]byte(good)))
	assert.False(t, IsHex64(good[:63]))
	assert.False(t, IsHex64(good+"0"))
	for c := range 256 {
		b := []byte(good)
		b[17] = byte(c)
		want := (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')
		assert.Equal(t, want, IsHex64(b), "byte %#x", c)
	}
}
