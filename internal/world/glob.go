package world

import (
	"path"
	"slices"
	"strings"
)

// The path pattern dialect of exclusions, contract rules and a command's
// touches: slash-separated segments, where a segment "**" matches any
// number of whole segments (none included) and any other segment is a
// path.Match pattern for exactly one segment ("*" never crosses "/").
// "**" matches every path, "dir/**" dir and everything below it, and
// "**/name" name at any depth.
//
// Matching works segment by segment with a table of the (pattern, path)
// positions already decided, so its cost is at most the product of the two
// segment counts. The world is untrusted content: a path a thousand
// directories deep must cost a thousand steps, not a thousand factorial.

// segments splits a slash path or pattern into its segments.
func segments(p string) []string { return strings.Split(p, "/") }

// stackSegments is how many segments a path may have for matching it to
// need no allocation: paths are matched on every observation, decision
// and write, against every exclusion and rule.
const stackSegments = 15

// matchBuf is the room matching needs for a path of up to stackSegments
// segments: the segments, and the automaton's two rows.
type matchBuf struct {
	segs [stackSegments]string
	rows [2 * (stackSegments + 1)]bool
}

// splitInto appends the segments of p to buf, as segments does.
func splitInto(buf []string, p string) []string {
	for {
		seg, rest, more := strings.Cut(p, "/")
		buf = append(buf, seg)
		if !more {
			return buf
		}
		p = rest
	}
}

// MatchGlob reports whether the slash path p matches pattern pat.
func MatchGlob(pat, p string) bool {
	if pat == "**" {
		return true
	}
	var mb matchBuf
	ss := splitInto(mb.segs[:0], p)
	return reachable(pat, ss, mb.rows[:0])[len(ss)]
}

// segmentMatch matches one path segment against one pattern segment. The
// shapes most patterns have (a literal, "*x", "x*", "*x*", x without
// metacharacters) are told without path.Match; "*" never meets a "/"
// within one segment, so these are exactly path.Match's answers.
func segmentMatch(pat, seg string) bool {
	if !hasMeta(pat) {
		return pat == seg
	}
	if n := len(pat); n >= 2 {
		head, tail, mid := pat[0] == '*', pat[n-1] == '*', pat[1:n-1]
		switch {
		case head && tail && !hasMeta(mid):
			return strings.Contains(seg, mid)
		case head && !hasMeta(pat[1:]):
			return strings.HasSuffix(seg, pat[1:])
		case tail && !hasMeta(pat[:n-1]):
			return strings.HasPrefix(seg, pat[:n-1])
		}
	}
	ok, _ := path.Match(pat, seg)
	return ok
}

// reachable runs the segment automaton of the pattern pat's segments over
// the path segments ss, where "**" in pat spans any number of segments.
// Entry k of the result says whether the pattern matches the path made of
// the first k segments, so one run answers for a path and all its
// parents. buf is room for the automaton's rows (see matchBuf); the result
// lies in it when it fits.
func reachable(pat string, ss []string, buf []bool) []bool {
	// reach[j]: the automaton can stand at path position j after consuming
	// the pattern segments seen so far.
	n := len(ss) + 1
	buf = slices.Grow(buf[:0], 2*n)[:2*n]
	reach, next := buf[:n], buf[n:]
	clear(reach)
	reach[0] = true
	for rest, more := pat, true; more; {
		var p string
		p, rest, more = strings.Cut(rest, "/")
		clear(next)
		if p == "**" {
			// ** consumes any number of segments from a reached position.
			on := false
			for j := range reach {
				on = on || reach[j]
				next[j] = on
			}
		} else {
			for j := range len(ss) {
				if reach[j] && segmentMatch(p, ss[j]) {
					next[j+1] = true
				}
			}
		}
		reach, next = next, reach
	}
	return reach
}

// MatchAny reports whether p matches any of the patterns.
func MatchAny(patterns []string, p string) bool {
	for _, pat := range patterns {
		if MatchGlob(pat, p) {
			return true
		}
	}
	return false
}

// Outside returns the paths that no pattern matches, in their order: the
// paths a change made beyond what it declared it may touch.
func Outside(patterns, paths []string) []string {
	var out []string
	for _, p := range paths {
		if !MatchAny(patterns, p) {
			out = append(out, p)
		}
	}
	return out
}

// MayOverlap reports whether some path could match both patterns. It is
// conservative: it answers true unless the patterns provably exclude each
// other, which is the safe side for a governance question such as "may a
// command that touches **/*.go change anything under vendor/?". For a
// literal path it is exact: MayOverlap(pat, p) == MatchGlob(pat, p).
func MayOverlap(a, b string) bool {
	if a == "**" || b == "**" {
		return true
	}
	return overlapSegments(segments(a), segments(b))
}

// overlapSegments decides whether two segment patterns, each possibly
// holding "**", can match a common path. Positions (i, j) are pairs of
// pattern indices; the table keeps it quadratic.
func overlapSegments(as, bs []string) bool {
	seen := make(map[[2]int]bool)
	var walk func(i, j int) bool
	walk = func(i, j int) bool {
		key := [2]int{i, j}
		if v, ok := seen[key]; ok {
			return v
		}
		seen[key] = false // cycles through ** never help
		var ok bool
		switch {
		case i == len(as) && j == len(bs):
			ok = true
		case i < len(as) && as[i] == "**":
			// ** in a consumes nothing, or one segment of b (staying put).
			ok = walk(i+1, j) || (j < len(bs) && walk(i, j+1))
		case j < len(bs) && bs[j] == "**":
			ok = walk(i, j+1) || (i < len(as) && walk(i+1, j))
		case i == len(as) || j == len(bs):
			ok = false
		default:
			ok = segmentsMeet(as[i], bs[j]) && walk(i+1, j+1)
		}
		seen[key] = ok
		return ok
	}
	return walk(0, 0)
}

// segmentsMeet reports whether two single-segment patterns may match a
// common name: exactly when one is literal; when both are patterns, unless
// their literal beginnings or endings differ ("*.md" never meets "*.go").
func segmentsMeet(a, b string) bool {
	switch {
	case !hasMeta(a) && !hasMeta(b):
		return a == b
	case !hasMeta(a):
		return segmentMatch(b, a)
	case !hasMeta(b):
		return segmentMatch(a, b)
	}
	pa, pb := literalPrefix(a), literalPrefix(b)
	if !strings.HasPrefix(pa, pb) && !strings.HasPrefix(pb, pa) {
		return false
	}
	sa, sb := literalSuffix(a), literalSuffix(b)
	return strings.HasSuffix(sa, sb) || strings.HasSuffix(sb, sa)
}

// literalPrefix is what a pattern segment's names must begin with.
func literalPrefix(p string) string { return p[:strings.IndexAny(p, `*?[\`)] }

// literalSuffix is what a pattern segment's names must end with ("" when
// an escape makes that hard to tell).
func literalSuffix(p string) string {
	if strings.Contains(p, `\`) {
		return ""
	}
	i := strings.LastIndexAny(p, `*?]`)
	return p[i+1:]
}

func hasMeta(s string) bool { return strings.ContainsAny(s, `*?[\`) }

// Covers reports whether every path matching sub also matches pat, as far
// as can be told without enumerating paths: pat is "**"; the two are
// equal; pat is "dir/**" and sub lies below dir; or sub is a literal path
// that pat matches. Anything else is answered false, the safe side for a
// rule that would otherwise claim a command's whole reach.
func Covers(pat, sub string) bool {
	switch {
	case pat == "**" || pat == sub:
		return true
	case !hasMeta(sub):
		return MatchGlob(pat, sub)
	}
	if dir, ok := strings.CutSuffix(pat, "/**"); ok && !hasMeta(dir) {
		return sub == dir || strings.HasPrefix(sub, dir+"/")
	}
	return false
}
