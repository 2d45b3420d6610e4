package world

import (
	"path"
	"strings"
	"testing"
)

// TestSegmentMatchShapes: the shapes segmentMatch tells without path.Match
// give path.Match's answers.
func TestSegmentMatchShapes(t *testing.T) {
	for _, c := range []struct{ pat, seg string }{
		{"queue.txt", "queue.txt"}, {"queue.txt", "queue.tx"}, {"", ""}, {"a", ""},
		{"*key*", "my.key.pem"}, {"*key*", "key"}, {"*key*", "ke"}, {"**", "x"},
		{"*.pem", "a.pem"}, {"*.pem", ".pem"}, {"*.pem", "a.pe"}, {"*", ""}, {"*", "abc"},
		{"main*", "main.go"}, {"main*", "mai"}, {"*", "*"}, {"a*b", "axxb"}, {"[ab]*", "b1"},
		{`\*x*`, "*xy"}, {"?x*", "ax"}, {"**x", "yx"}, {"*x\\", "x"},
	} {
		want, _ := path.Match(c.pat, c.seg)
		if got := segmentMatch(c.pat, c.seg); got != want {
			t.Errorf("segmentMatch(%q, %q) = %v, path.Match says %v", c.pat, c.seg, got, want)
		}
	}
}

// FuzzSegmentMatch holds segmentMatch to path.Match for every pattern and
// segment (a segment has no "/").
func FuzzSegmentMatch(f *testing.F) {
	f.Add("*key*", "a.key")
	f.Add("*.pem", "x.pem")
	f.Add("lit", "lit")
	f.Add("a*", "ab")
	f.Fuzz(func(t *testing.T, pat, seg string) {
		if strings.Contains(seg, "/") || strings.Contains(pat, "/") {
			return
		}
		want, _ := path.Match(pat, seg)
		if got := segmentMatch(pat, seg); got != want {
			t.Fatalf("segmentMatch(%q, %q) = %v, path.Match says %v", pat, seg, got, want)
		}
	})
}

// FuzzReachableMatchesSplit holds the allocation-free automaton to the
// same automaton run over strings.Split segments with fresh rows.
func FuzzReachableMatchesSplit(f *testing.F) {
	f.Add("**/.git/**", "a/.git/b")
	f.Add("docs/*.md", "docs/a.md")
	f.Add("a/**/b", strings.Repeat("a/", 20)+"b")
	f.Fuzz(func(t *testing.T, pat, p string) {
		var mb matchBuf
		ss := splitInto(mb.segs[:0], p)
		if want := strings.Split(p, "/"); strings.Join(ss, "\x00") != strings.Join(want, "\x00") || len(ss) != len(want) {
			t.Fatalf("splitInto(%q) = %q, strings.Split gives %q", p, ss, want)
		}
		got := reachable(pat, ss, mb.rows[:0])
		fresh := reachable(pat, strings.Split(p, "/"), nil)
		if len(got) != len(ss)+1 || strings.Join(boolStrings(got), "") != strings.Join(boolStrings(fresh), "") {
			t.Fatalf("reachable(%q, %q) = %v with a buffer, %v without", pat, p, got, fresh)
		}
	})
}

func boolStrings(bs []bool) []string {
	out := make([]string, len(bs))
	for i, b := range bs {
		out[i] = "0"
		if b {
			out[i] = "1"
		}
	}
	return out
}
