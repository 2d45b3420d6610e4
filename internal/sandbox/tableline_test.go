package sandbox

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// lineOf is the table line of a small outcome record of the named key.
func lineOf(t testing.TB, name string, kind recKind, detail string) []byte {
	t.Helper()
	key := testKey(name)
	rec, err := codec.Marshal(outcomeRecord{Schema: OutcomeSchema, Outcome: world.Outcome{Schema: world.OutcomeSchema, Key: key,
		Operation: world.OpInspect, Target: "a.txt", Status: world.OutcomeNoChange, Detail: detail}})
	require.NoError(t, err)
	return encodeLine(keyDigest(key), kind, rec)
}

func TestLineIsCanonicalJSON(t *testing.T) {
	ran := 0
	for k := kindIntent; k <= kindStarted; k++ {
		ran++
		line := lineOf(t, "canon", k, "d")
		require.True(t, bytes.HasSuffix(line, []byte("\n")))
		body := line[:len(line)-1]
		v, err := codec.ParseCanonical(body)
		require.NoError(t, err, "a line is canonical JSON: %s", body)
		assert.Equal(t, body, v.Encode())
		var framed struct {
			Key    string          `json:"key"`
			Kind   string          `json:"kind"`
			Record codec.Canonical `json:"record"`
			SHA256 string          `json:"sha256"`
		}
		require.NoError(t, codec.UnmarshalCanonical(body, &framed))
		assert.Equal(t, testKey("canon"), framed.Key)
		assert.Equal(t, k.String(), framed.Kind)
		before, _, ok := bytes.Cut(body, []byte(`,"sha256":`))
		require.True(t, ok)
		assert.Equal(t, codec.Digest(before), framed.SHA256, "the checksum covers the bytes before its member")

		l, err := parseLine(line)
		require.NoError(t, err)
		assert.Equal(t, idOf(keyDigest(testKey("canon"))), l.key)
		assert.Equal(t, k, l.kind)
		assert.Equal(t, []byte(framed.Record), l.record)
	}
	require.Equal(t, numKinds, ran)
}

// TestParseLineRejects: every way a line's framing can differ from what
// encodeLine writes is refused, as errTornLine. (The record's own form is
// checked when it is decoded: TestNonCanonicalRecordIsRefused.)
func TestParseLineRejects(t *testing.T) {
	good := lineOf(t, "reject", kindOutcome, "detail")
	h := keyDigest(testKey("reject"))
	resum := func(body string) []byte { // a line with a correct checksum over body
		return []byte(body + `,"sha256":"` + codec.Digest([]byte(body)) + `"}` + "\n")
	}
	cases := []struct {
		name string
		line []byte
	}{
		{"no newline", good[:len(good)-1]},
		{"cut in the record", good[:len(good)/2]},
		{"cut in the record, with a newline", append(bytes.Clone(good[:len(good)/2]), '\n')},
		{"empty", nil},
		{"newline only", []byte("\n")},
		{"zeros", make([]byte, len(good))},
		{"zeros ending in a newline", append(make([]byte, len(good)-1), '\n')},
		{"a byte of the record flipped", flip(good, len(good)/2)},
		{"a byte of the key flipped", flip(good, len(lineKeyPrefix)+3)},
		{"a byte of the checksum flipped", flip(good, len(good)-5)},
		{"upper-case key", bytes.Replace(good, []byte(h), []byte(strings.ToUpper(h)), 1)},
		{"unknown kind", resum(`{"key":"` + keyPrefix + h + `","kind":"rumour","record":{}`)},
		{"record not an object", resum(`{"key":"` + keyPrefix + h + `","kind":"outcome","record":[]`)},
		{"CRLF", append(bytes.Clone(good[:len(good)-1]), '\r', '\n')},
		{"space after a colon", bytes.Replace(good, []byte(`"kind":`), []byte(`"kind": `), 1)},
		{"record with a trailing space", resum(`{"key":"` + keyPrefix + h + `","kind":"outcome","record":{"a":1} `)},
	}
	ran := 0
	for _, tc := range cases {
		ran++
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseLine(tc.line)
			require.Error(t, err)
			assert.ErrorIs(t, err, errTornLine)
		})
	}
	require.Equal(t, len(cases), ran)
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 0x01
	return c
}

func TestScanTable(t *testing.T) {
	a1 := lineOf(t, "a", kindIntent, "first")
	a2 := lineOf(t, "a", kindOutcome, "")
	a3 := lineOf(t, "a", kindIntent, "second") // a later intent of the same key
	b1 := lineOf(t, "b", kindStarted, "")
	long := lineOf(t, "long", kindOutcome, strings.Repeat("x", 3*scanBlock)) // longer than a read block
	join := func(parts ...[]byte) []byte { return bytes.Join(parts, nil) }
	type want struct {
		end     int
		entries map[string]map[recKind][]byte // key name -> kind -> line
	}
	cases := []struct {
		name   string
		data   []byte
		want   want
		damage bool
	}{
		{name: "empty", data: nil, want: want{0, nil}},
		{name: "one line", data: a1, want: want{len(a1), map[string]map[recKind][]byte{"a": {kindIntent: a1}}}},
		{name: "kinds and keys", data: join(a1, a2, b1), want: want{len(a1) + len(a2) + len(b1),
			map[string]map[recKind][]byte{"a": {kindIntent: a1, kindOutcome: a2}, "b": {kindStarted: b1}}}},
		{name: "a later record of a kind supersedes", data: join(a1, a2, a3), want: want{len(a1) + len(a2) + len(a3),
			map[string]map[recKind][]byte{"a": {kindIntent: a3, kindOutcome: a2}}}},
		{name: "a line longer than a read block", data: join(a1, long, b1), want: want{len(a1) + len(long) + len(b1),
			map[string]map[recKind][]byte{"a": {kindIntent: a1}, "long": {kindOutcome: long}, "b": {kindStarted: b1}}}},
		{name: "torn tail: cut mid-line", data: join(a1, a2[:40]), want: want{len(a1), map[string]map[recKind][]byte{"a": {kindIntent: a1}}}},
		{name: "torn tail: no newline", data: join(a1, a2[:len(a2)-1]), want: want{len(a1), map[string]map[recKind][]byte{"a": {kindIntent: a1}}}},
		{name: "torn tail: zeros", data: join(a1, make([]byte, 4096)), want: want{len(a1), map[string]map[recKind][]byte{"a": {kindIntent: a1}}}},
		{name: "torn tail: a page never written", data: join(a1, make([]byte, len(a2)-10), a2[len(a2)-10:]),
			want: want{len(a1), map[string]map[recKind][]byte{"a": {kindIntent: a1}}}},
		{name: "torn tail: last line flipped", data: join(a1, flip(a2, 100)), want: want{len(a1), map[string]map[recKind][]byte{"a": {kindIntent: a1}}}},
		{name: "torn tail: two bad lines", data: join(a1, flip(a2, 100), []byte("garbage\n"), []byte("more")),
			want: want{len(a1), map[string]map[recKind][]byte{"a": {kindIntent: a1}}}},
		{name: "torn first line", data: a1[:10], want: want{0, nil}},
		{name: "damage before an intact line", data: join(a1, flip(a2, 100), b1), damage: true},
		{name: "a stray newline before an intact line", data: join(a1, []byte("\n"), b1), damage: true},
		{name: "torn line in the middle", data: join(a1, a2[:50], []byte("\n"), b1), damage: true},
	}
	ran := 0
	for _, tc := range cases {
		ran++
		t.Run(tc.name, func(t *testing.T) {
			res, err := scanTable(bytes.NewReader(tc.data), int64(len(tc.data)), "t.log")
			if tc.damage {
				var d *DamageError
				require.ErrorAs(t, err, &d)
				assert.Equal(t, "t.log", d.File)
				assert.Equal(t, int64(len(a1)), d.Offset, "the first damaged line")
				assert.Equal(t, int64(len(tc.data)-len(b1)), d.Next, "the intact line after it")
				assert.Contains(t, err.Error(), fmt.Sprintf("byte %d", len(a1)))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, int64(tc.want.end), res.end)
			for name, kinds := range tc.want.entries {
				s, ok := res.index[idOf(keyDigest(testKey(name)))]
				require.True(t, ok, name)
				for k := kindIntent; k <= kindStarted; k++ {
					line, want := kinds[k]
					at := *s.of(k)
					if !want {
						assert.Zero(t, at, "%s %s", name, k)
						continue
					}
					assert.Equal(t, line, tc.data[at.off:at.off+at.n], "%s %s", name, k)
				}
			}
			assert.Len(t, res.index, len(tc.want.entries))
		})
	}
	require.Equal(t, len(cases), ran)
}

// TestScanTableOfManyKeys: 1e5 keys across many read blocks, every one
// found at its line.
func TestScanTableOfManyKeys(t *testing.T) {
	const n = 100_000
	var data []byte
	offs := make([]int, n)
	for i := range n {
		offs[i] = len(data)
		data = append(data, lineOf(t, fmt.Sprintf("many-%d", i), kindOutcome, "")...)
	}
	require.Greater(t, len(data), 4*scanBlock, "the table spans several read blocks")
	res, err := scanTable(bytes.NewReader(data), int64(len(data)), "t.log")
	require.NoError(t, err)
	require.Len(t, res.index, n)
	assert.Equal(t, int64(len(data)), res.end)
	for i := 0; i < n; i += 997 {
		s := slotOf(res.index, testKey(fmt.Sprintf("many-%d", i)), kindOutcome)
		assert.Equal(t, int64(offs[i]), s.off)
	}
}

// FuzzParseLine: a line is accepted only in exactly the form encodeLine
// writes, so that what the checksum covered is what is decoded.
func FuzzParseLine(f *testing.F) {
	for k := kindIntent; k <= kindStarted; k++ {
		f.Add(lineOf(f, "fuzz", k, "some detail"))
	}
	f.Add([]byte(`{"key":"idem:sha256:` + strings.Repeat("0", 64) + `","kind":"intent","record":{},"sha256":"` + strings.Repeat("0", 64) + `"}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		l, err := parseLine(b)
		if err != nil {
			return
		}
		if again := encodeLine(hex.EncodeToString(l.key[:]), l.kind, l.record); !bytes.Equal(again, b) {
			t.Fatalf("accepted %q, which is written as %q", b, again)
		}
	})
}

// FuzzScanTable: whatever bytes the table holds, a scan either reports
// damage or finds a valid prefix that scans again to itself, and a line
// appended after that prefix is found.
func FuzzScanTable(f *testing.F) {
	a, b := lineOf(f, "a", kindIntent, ""), lineOf(f, "b", kindOutcome, "x")
	f.Add(bytes.Join([][]byte{a, b}, nil))
	f.Add(bytes.Join([][]byte{a, b[:30]}, nil))
	f.Add(bytes.Join([][]byte{a, flip(b, 90), a}, nil))
	f.Add([]byte("\n\n"))
	extra := lineOf(f, "appended", kindStarted, "")
	f.Fuzz(func(t *testing.T, data []byte) {
		res, err := scanTable(bytes.NewReader(data), int64(len(data)), "t.log")
		if err != nil {
			var d *DamageError
			if !errors.As(err, &d) {
				t.Fatalf("a scan of bytes fails only with damage, not %v", err)
			}
			return
		}
		if res.end < 0 || res.end > int64(len(data)) {
			t.Fatalf("end %d outside the %d bytes", res.end, len(data))
		}
		prefix := data[:res.end]
		again, err := scanTable(bytes.NewReader(prefix), int64(len(prefix)), "t.log")
		if err != nil || again.end != int64(len(prefix)) || len(again.index) != len(res.index) {
			t.Fatalf("the valid prefix does not scan to itself: %v, end %d of %d", err, again.end, len(prefix))
		}
		grown := append(bytes.Clone(prefix), extra...)
		after, err := scanTable(bytes.NewReader(grown), int64(len(grown)), "t.log")
		if err != nil || after.end != int64(len(grown)) || slotOf(after.index, testKey("appended"), kindStarted).n == 0 {
			t.Fatalf("a line appended after the valid prefix is not found: %v", err)
		}
	})
}

// slotOf is where index says the latest record of kind for key is.
func slotOf(ix tableIndex, key string, kind recKind) span {
	s := ix[idOf(keyDigest(key))]
	return *s.of(kind)
}
