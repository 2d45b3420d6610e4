package world_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/world"
)

func TestMatchGlob(t *testing.T) {
	cases := []struct {
		pat, path string
		want      bool
	}{
		{"**", "a/b/c", true},
		{"vendor/**", "vendor", true},
		{"vendor/**", "vendor/lib.js", true},
		{"vendor/**", "vendor/x/y.js", true},
		{"vendor/**", "vendorx/lib.js", false},
		{"**/*.go", "main.go", true},
		{"**/*.go", "cmd/x/main.go", true},
		{"**/*.go", "cmd/x/main.golang", false},
		{"*.go", "cmd/main.go", false},
		{"*.go", "main.go", true},
		{"config/*.ini", "config/app.ini", true},
		{"config/*.ini", "config/sub/app.ini", false},
		{"a/**/z", "a/z", true},
		{"a/**/z", "a/b/c/z", true},
		{"a/**/z", "a/b/c/y", false},
		{"**/.git/**", "x/.git/HEAD", true},
		{"*key*", "apikey.txt", true},
		{"*key*", "dir/apikey.txt", false},
		{"[", "[", false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.want, world.MatchGlob(tc.pat, tc.path), "MatchGlob(%q, %q)", tc.pat, tc.path)
	}
}

func TestMayOverlapAndCovers(t *testing.T) {
	cases := []struct {
		a, b           string
		overlap, cover bool // cover: a covers b
	}{
		{"**", "**/*.go", true, true},
		{"vendor/**", "**/*.go", true, false},
		{"vendor/**", "src/**", false, false},
		{"vendor/**", "vendor/lib/*.js", true, true},
		{"config/**", "README.md", false, false},
		{"**/*.go", "main.go", true, true},
		{"*.md", "docs/*.md", false, false},
		{"docs/*.md", "docs/**", true, false},
		{"go.mod", "go.mod", true, true},
		{"go.mod", "**/*.go", false, false},
		{"**/*.go", "go.mod", false, false},
		{"a/*/c", "a/b/*", true, false},
		{"docs/**/*.md", "**/*.go", false, false},
		{"*_test.go", "*.go", true, false},
		{"cmd/*", "cm*/x", true, false},
		{"a*", "b*", false, false},
	}
	for _, tc := range cases {
		assert.Equal(t, tc.overlap, world.MayOverlap(tc.a, tc.b), "MayOverlap(%q, %q)", tc.a, tc.b)
		assert.Equal(t, tc.overlap, world.MayOverlap(tc.b, tc.a), "MayOverlap(%q, %q)", tc.b, tc.a)
		assert.Equal(t, tc.cover, world.Covers(tc.a, tc.b), "Covers(%q, %q)", tc.a, tc.b)
	}
}

// A world path hundreds of directories deep is untrusted input; matching it
// must stay cheap (this used to take minutes: issue 19, item 4).
func TestDeepPathsMatchInLinearTime(t *testing.T) {
	deep := strings.Repeat("d/", 2000) + "x.go"
	spec := world.Spec{Exclude: []string{"**/node_modules/**", "build/**"}}
	for range 100 {
		require.False(t, spec.Excluded(deep))
		require.True(t, world.MatchGlob("**/*.go", deep))
		require.True(t, world.MayOverlap("**/d/**/x.go", deep))
	}
}

// For a literal path, overlap is matching: the conservative answer only
// ever applies to two patterns.
func FuzzMayOverlapLiteral(f *testing.F) {
	for _, s := range []string{"a/b", "**/*.go", "vendor/**", "a/**/z", "*.md"} {
		f.Add(s, "a/b/z.go")
	}
	f.Fuzz(func(t *testing.T, pat, p string) {
		if world.ValidPattern(pat) != nil {
			return
		}
		if _, err := world.CleanPath(p); err != nil || strings.ContainsAny(p, `*?[\`) {
			return
		}
		if got, want := world.MayOverlap(pat, p), world.MatchGlob(pat, p); got != want {
			t.Fatalf("MayOverlap(%q, %q) = %v, MatchGlob = %v", pat, p, got, want)
		}
	})
}

func BenchmarkExcludedDeepPath(b *testing.B) {
	deep := strings.Repeat("d/", 200) + "x.go"
	spec := world.Spec{Exclude: []string{"**/node_modules/**"}}
	for b.Loop() {
		spec.Excluded(deep)
	}
}

// MayOverlap may say yes when the answer is no, never the other way: a
// path matched by both patterns always makes it say yes.
func FuzzMayOverlapIsSound(f *testing.F) {
	f.Add("docs/**/*.md", "**/*.go", "docs/a/b.md")
	f.Add("a*", "*b", "ab")
	f.Add("[a-c]?", "b*", "bz")
	f.Fuzz(func(t *testing.T, a, b, p string) {
		if world.ValidPattern(a) != nil || world.ValidPattern(b) != nil {
			return
		}
		if _, err := world.CleanPath(p); err != nil {
			return
		}
		if world.MatchGlob(a, p) && world.MatchGlob(b, p) && !world.MayOverlap(a, b) {
			t.Fatalf("%q and %q both match %q, but MayOverlap says they cannot meet", a, b, p)
		}
		if world.Covers(a, b) && world.MatchGlob(b, p) && !world.MatchGlob(a, p) {
			t.Fatalf("Covers(%q, %q), yet %q matches only the second", a, b, p)
		}
	})
}

// Every operation and check kind has its entry in the seam, and the
// entries agree with the vocabulary's lists.
func TestEveryKindIsDescribed(t *testing.T) {
	for _, op := range world.Operations() {
		k, ok := world.Kind(op)
		require.True(t, ok, "operation %s has no kind", op)
		assert.Equal(t, op, k.Op)
		require.NotNil(t, k.Paths, op)
		require.NotNil(t, k.Criteria, op)
		require.NotNil(t, k.Describe, op)
		if k.ValidateFix != nil {
			assert.NotNil(t, k.Draft, "%s can be a fix but cannot be drafted", op)
		}
	}
	_, ok := world.Kind("rm_rf")
	assert.False(t, ok)
	for _, ck := range world.CheckKinds() {
		k, ok := world.CheckKindOf(ck)
		require.True(t, ok, "check kind %s has no entry", ck)
		require.NotNil(t, k.Validate, ck)
		assert.Equal(t, k.OnFile, k.Judge != nil, "%s: a file check is judged from its content, a program check by its exit", ck)
	}
}

// BenchmarkExcludedShallowPath is the common case: a path a few segments
// deep against the default exclusions and one of the spec's own.
func BenchmarkExcludedShallowPath(b *testing.B) {
	spec := world.Spec{Exclude: []string{"**/node_modules/**"}}
	b.ReportAllocs()
	for b.Loop() {
		spec.Excluded("internal/sandbox/sandbox.go")
	}
}

func TestOutside(t *testing.T) {
	for _, tc := range []struct {
		patterns, paths, want []string
	}{
		{[]string{"**/*.go"}, []string{"a.go", "cmd/b.go", "README.md"}, []string{"README.md"}},
		{[]string{"TODO.md"}, []string{"TODO.md"}, nil},
		{nil, []string{"x"}, []string{"x"}},
		{[]string{"**"}, nil, nil},
		{[]string{"docs/**", "*.md"}, []string{"docs/a/b.txt", "c.md", "src/c.md", "z"}, []string{"src/c.md", "z"}},
	} {
		if got := world.Outside(tc.patterns, tc.paths); !slices.Equal(got, tc.want) {
			t.Errorf("Outside(%q, %q) = %q, want %q", tc.patterns, tc.paths, got, tc.want)
		}
	}
}
