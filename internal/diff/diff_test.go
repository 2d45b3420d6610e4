package diff

import (
	"fmt"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestUnified(t *testing.T) {
	cases := []struct {
		name, a, b, want string
	}{
		{"equal", "x\n", "x\n", ""},
		{"one line changed", "a\nb\nteh c\nd\ne\n", "a\nb\nthe c\nd\ne\n",
			"--- a/f\n+++ b/f\n@@ -1,5 +1,5 @@\n a\n b\n-teh c\n+the c\n d\n e\n"},
		{"created", "", "new\n", "--- a/f\n+++ b/f\n@@ -0,0 +1 @@\n+new\n"},
		{"emptied", "old\n", "", "--- a/f\n+++ b/f\n@@ -1 +0,0 @@\n-old\n"},
		{"no newline at the end", "a\nb", "a\nc", "--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n a\n-b\n\\ No newline at end of file\n+c\n\\ No newline at end of file\n"},
		{"appended", "1\n2\n3\n4\n5\n", "1\n2\n3\n4\n5\n6\n", "--- a/f\n+++ b/f\n@@ -3,3 +3,4 @@\n 3\n 4\n 5\n+6\n"},
		{"binary", "a\x00b", "a\x00c", "Binary files a/f and b/f differ (3 and 3 bytes)\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := Unified("a/f", "b/f", []byte(c.a), []byte(c.b))
			assert.Equal(t, c.want, got)
			if !strings.HasPrefix(got, "Binary") {
				assert.Equal(t, c.b, apply(t, c.a, got))
			}
		})
	}
}

// TestHunksSplitAndMerge: changes far apart are separate hunks, changes
// whose context would overlap are one.
func TestHunksSplitAndMerge(t *testing.T) {
	var a, b []string
	for i := range 40 {
		a = append(a, strconv.Itoa(i))
		b = append(b, strconv.Itoa(i))
	}
	b[5], b[30], b[33] = "five", "thirty", "thirty-three"
	got := Unified("a", "b", []byte(strings.Join(a, "\n")+"\n"), []byte(strings.Join(b, "\n")+"\n"))
	assert.Equal(t, 2, strings.Count(got, "@@ -"), got)
	assert.Contains(t, got, "@@ -3,7 +3,7 @@\n")
	assert.Contains(t, got, "@@ -28,10 +28,10 @@\n")
	assert.Equal(t, strings.Join(b, "\n")+"\n", apply(t, strings.Join(a, "\n")+"\n", got))
}

// TestLargeMiddleFallsBack: past maxEdits the middle is replaced whole,
// and the diff still turns a into b.
func TestLargeMiddleFallsBack(t *testing.T) {
	var a, b strings.Builder
	for i := range 3000 {
		fmt.Fprintf(&a, "a%d\n", i)
		fmt.Fprintf(&b, "b%d\n", i)
	}
	got := Unified("a", "b", []byte(a.String()), []byte(b.String()))
	assert.Equal(t, b.String(), apply(t, a.String(), got))
}

// FuzzUnified: whatever the inputs, the diff applied to a gives b.
func FuzzUnified(f *testing.F) {
	f.Add("a\nb\nc\n", "a\nc\nd\n")
	f.Add("", "x")
	f.Add("x\ny", "y\nx\n")
	f.Add("same\n", "same\n")
	f.Fuzz(func(t *testing.T, a, b string) {
		got := Unified("a", "b", []byte(a), []byte(b))
		if a == b {
			require.Empty(t, got)
			return
		}
		if strings.HasPrefix(got, "Binary files") {
			return
		}
		require.Equal(t, b, apply(t, a, got))
	})
}

// apply applies a unified diff made by Unified to a; it checks every
// context and removed line against a, so a wrong hunk fails the test.
func apply(t testing.TB, a, patch string) string {
	t.Helper()
	if patch == "" {
		return a
	}
	src := splitLines([]byte(a))
	lines := strings.SplitAfter(patch, "\n")
	require.True(t, strings.HasPrefix(lines[0], "--- ") && strings.HasPrefix(lines[1], "+++ "), "header: %q", patch)
	var out []string
	pos := 0 // next line of src not yet copied
	last := func(out []string) *string { return &out[len(out)-1] }
	for i := 2; i < len(lines) && lines[i] != ""; i++ {
		l := lines[i]
		switch {
		case strings.HasPrefix(l, "@@ -"):
			var as, an, bs, bn int
			hdr := strings.TrimSuffix(strings.TrimPrefix(l, "@@ -"), " @@\n")
			parts := strings.Split(hdr, " +")
			require.Len(t, parts, 2, l)
			as, an = rng(t, parts[0])
			bs, bn = rng(t, parts[1])
			_, _ = bs, bn
			start := as - 1
			if an == 0 {
				start = as
			}
			require.GreaterOrEqual(t, start, pos, "hunks in order")
			out = append(out, src[pos:start]...)
			pos = start
		case strings.HasPrefix(l, `\ No newline`):
			*last(out) = strings.TrimSuffix(*last(out), "\n")
		case l[0] == ' ':
			require.Equal(t, strings.TrimSuffix(src[pos], "\n"), strings.TrimSuffix(l[1:], "\n"), "context line %d", pos+1)
			out = append(out, src[pos])
			pos++
		case l[0] == '-':
			require.Equal(t, strings.TrimSuffix(src[pos], "\n"), strings.TrimSuffix(l[1:], "\n"), "removed line %d", pos+1)
			pos++
			if i+1 < len(lines) && strings.HasPrefix(lines[i+1], `\ No newline`) {
				i++
			}
		case l[0] == '+':
			out = append(out, l[1:])
		default:
			t.Fatalf("line %q", l)
		}
	}
	out = append(out, src[pos:]...)
	return strings.Join(out, "")
}

func rng(t testing.TB, s string) (int, int) {
	t.Helper()
	a, b, ok := strings.Cut(s, ",")
	start, err := strconv.Atoi(a)
	require.NoError(t, err, s)
	if !ok {
		return start, 1
	}
	n, err := strconv.Atoi(b)
	require.NoError(t, err, s)
	return start, n
}
