package world

import (
	"path"
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

// MatchGlob reports whether the slash path p matches pattern pat.
func MatchGlob(pat, p string) bool {
	if pat == "**" {
		return true
	}
	ss := segments(p)
	return reachable(segments(pat), ss)[len(ss)]
}

// segmentMatch matches one path segment against one pattern segment.
func segmentMatch(pat, seg string) bool {
	ok, _ := path.Match(pat, seg)
	return ok
}

// reachable runs the segment automaton of pattern segments ps over the
// path segments ss, where "**" in ps spans any number of segments. Entry k
// of the result says whether the pattern matches the path made of the
// first k segments, so one run answers for a path and all its parents.
func reachable(ps, ss []string) []bool {
	// reach[j]: the automaton can stand at path position j after consuming
	// the pattern segments seen so far.
	reach := make([]bool, len(ss)+1)
	next := make([]bool, len(ss)+1)
	reach[0] = true
	for _, p := range ps {
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
