// Package diff renders the change an action makes to a file as a unified
// diff, the form a person reviewing a change reads fastest. acr shows it
// before a person approves an action and in the record of what was done,
// so that nobody approves a change they have not seen.
//
// The line diff is Myers' O(ND) algorithm on the part of the file the two
// versions do not share at either end. Its cost is bounded: past a fixed
// number of differing lines it gives up looking for a shorter script and
// shows the whole differing middle as removed and added, which is still a
// correct diff, only a longer one.
package diff

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// Context is how many unchanged lines a hunk shows around a change.
const Context = 3

// maxEdits bounds the edit distance Myers' search explores (and with it
// the memory its trace takes, about maxEdits² integers at worst).
const maxEdits = 2000

// op is one step of an edit script.
type op uint8

const (
	opEqual op = iota
	opDelete
	opInsert
)

// edit is one line of the script: an unchanged line (a and b both set),
// a deleted line of a, or an inserted line of b.
type edit struct {
	op   op
	a, b int // line indexes into a and b (the one an op does not use is -1)
}

// Unified returns the unified diff that turns a into b, with from and to
// as the file names in its header, or "" when they are equal. Content that
// is not UTF-8 text, or holds a NUL byte, is not shown line by line: the
// result says the binary contents differ and gives both sizes.
func Unified(from, to string, a, b []byte) string {
	if bytes.Equal(a, b) {
		return ""
	}
	if binary(a) || binary(b) {
		return fmt.Sprintf("Binary files %s and %s differ (%d and %d bytes)\n", from, to, len(a), len(b))
	}
	la, lb := splitLines(a), splitLines(b)
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", from, to)
	for _, h := range hunks(script(la, lb)) {
		writeHunk(&out, h, la, lb)
	}
	return out.String()
}

// binary reports whether data is not text a terminal can show.
func binary(data []byte) bool {
	return bytes.IndexByte(data, 0) >= 0 || !utf8.Valid(data)
}

// splitLines splits data after each newline; the last line lacks one when
// the data does not end with a newline.
func splitLines(data []byte) []string {
	if len(data) == 0 {
		return nil
	}
	var lines []string
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			lines = append(lines, string(data))
			break
		}
		lines = append(lines, string(data[:i+1]))
		data = data[i+1:]
	}
	return lines
}

// script is the edit script from a to b: the common ends kept, the middle
// diffed by Myers (or replaced whole past maxEdits).
func script(a, b []string) []edit {
	pre := 0
	for pre < len(a) && pre < len(b) && a[pre] == b[pre] {
		pre++
	}
	suf := 0
	for suf < len(a)-pre && suf < len(b)-pre && a[len(a)-1-suf] == b[len(b)-1-suf] {
		suf++
	}
	var es []edit
	for i := range pre {
		es = append(es, edit{opEqual, i, i})
	}
	ma, mb := a[pre:len(a)-suf], b[pre:len(b)-suf]
	mid, ok := myers(ma, mb)
	if !ok {
		mid = mid[:0]
		for i := range ma {
			mid = append(mid, edit{opDelete, i, -1})
		}
		for j := range mb {
			mid = append(mid, edit{opInsert, -1, j})
		}
	}
	for _, e := range mid {
		if e.a >= 0 {
			e.a += pre
		}
		if e.b >= 0 {
			e.b += pre
		}
		es = append(es, e)
	}
	for i := range suf {
		es = append(es, edit{opEqual, len(a) - suf + i, len(b) - suf + i})
	}
	return es
}

// myers finds a shortest edit script from a to b, or reports false when
// it would take more than maxEdits edits.
func myers(a, b []string) ([]edit, bool) {
	n, m := len(a), len(b)
	limit := min(n+m, maxEdits)
	off := limit + 1
	v := make([]int, 2*limit+3)
	var trace [][]int
	for d := 0; d <= limit; d++ {
		trace = append(trace, append([]int(nil), v...))
		for k := -d; k <= d; k += 2 {
			var x int
			if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
				x = v[off+k+1]
			} else {
				x = v[off+k-1] + 1
			}
			y := x - k
			for x < n && y < m && a[x] == b[y] {
				x, y = x+1, y+1
			}
			v[off+k] = x
			if x >= n && y >= m {
				return backtrack(trace, off, n, m), true
			}
		}
	}
	return nil, false
}

// backtrack walks Myers' trace back from (n, m) to (0, 0).
func backtrack(trace [][]int, off, n, m int) []edit {
	var rev []edit
	x, y := n, m
	for d := len(trace) - 1; d >= 0; d-- {
		v := trace[d]
		k := x - y
		var pk int
		if k == -d || (k != d && v[off+k-1] < v[off+k+1]) {
			pk = k + 1
		} else {
			pk = k - 1
		}
		px := v[off+pk]
		py := px - pk
		for x > px && y > py {
			x, y = x-1, y-1
			rev = append(rev, edit{opEqual, x, y})
		}
		if d > 0 {
			if x == px {
				y--
				rev = append(rev, edit{opInsert, -1, y})
			} else {
				x--
				rev = append(rev, edit{opDelete, x, -1})
			}
		}
	}
	for i, j := 0, len(rev)-1; i < j; i, j = i+1, j-1 {
		rev[i], rev[j] = rev[j], rev[i]
	}
	return rev
}

// hunks groups a script into hunks: each change with up to Context
// unchanged lines on either side, hunks whose context would overlap
// merged into one.
func hunks(es []edit) [][]edit {
	var out [][]edit
	start, end := -1, -1 // the current hunk's range in es
	for i, e := range es {
		if e.op == opEqual {
			continue
		}
		lo, hi := max(i-Context, 0), min(i+Context+1, len(es))
		if start >= 0 && lo <= end {
			end = hi
			continue
		}
		if start >= 0 {
			out = append(out, es[start:end])
		}
		start, end = lo, hi
	}
	if start >= 0 {
		out = append(out, es[start:end])
	}
	return out
}

// writeHunk writes one hunk with its header.
func writeHunk(w *strings.Builder, h []edit, a, b []string) {
	as, bs, an, bn := -1, -1, 0, 0
	for _, e := range h {
		if e.a >= 0 {
			if as < 0 {
				as = e.a
			}
			an++
		}
		if e.b >= 0 {
			if bs < 0 {
				bs = e.b
			}
			bn++
		}
	}
	fmt.Fprintf(w, "@@ -%s +%s @@\n", span(as, an), span(bs, bn))
	for _, e := range h {
		switch e.op {
		case opEqual:
			line(w, ' ', a[e.a])
		case opDelete:
			line(w, '-', a[e.a])
		case opInsert:
			line(w, '+', b[e.b])
		}
	}
}

// span is a hunk header's range for one side: 1-based start and length.
// A side with no line in the hunk is an empty file (every hunk of a
// non-empty side carries context or changed lines of it), written 0,0.
func span(start, n int) string {
	switch n {
	case 0:
		return "0,0"
	case 1:
		return fmt.Sprintf("%d", start+1)
	}
	return fmt.Sprintf("%d,%d", start+1, n)
}

// line writes one diff line, marking a missing final newline as diff does.
func line(w *strings.Builder, mark byte, s string) {
	w.WriteByte(mark)
	w.WriteString(s)
	if !strings.HasSuffix(s, "\n") {
		w.WriteString("\n\\ No newline at end of file\n")
	}
}
