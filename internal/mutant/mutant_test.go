package mutant

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCatalogueMatches: every edit of every mutant matches the code exactly
// once, so a change under a mutant shows up here, in make test, rather than
// as a suite that silently tests nothing.
func TestCatalogueMatches(t *testing.T) {
	root := filepath.Join("..", "..")
	names := map[string]bool{}
	edits := 0
	for _, m := range Catalogue() {
		assert.False(t, names[m.Name], "mutant %s listed twice", m.Name)
		names[m.Name] = true
		assert.NotEmpty(t, m.Breaks, m.Name)
		require.NotEmpty(t, m.Edits, m.Name)
		switched := false
		for _, e := range m.Edits {
			b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(e.File)))
			require.NoError(t, err, m.Name)
			assert.Equal(t, 1, strings.Count(string(b), e.Find), "mutant %s: pattern in %s must match exactly once:\n%s", m.Name, e.File, e.Find)
			assert.NotEqual(t, e.Find, e.Replace, m.Name)
			assert.NotEmpty(t, e.Switched, m.Name)
			switched = switched || strings.Contains(e.Switched, "MUTANT_ON")
			edits++
		}
		assert.True(t, switched, "mutant %s: its switched form must depend on the switch", m.Name)
	}
	assert.GreaterOrEqual(t, len(names), 9, "the suite holds at least the nine mutants issue 17 names")
	require.Positive(t, edits)
}

// TestApplyFailsLoudly: a pattern that does not match is an error, and a
// plain mutant is undone by Restore.
func TestApplyFailsLoudly(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "a.go"), []byte("package a\n\nfunc f() int { return 1 }\n"), 0o644))
	tree := &Tree{Dir: dir, original: map[string][]byte{}}
	err := tree.Apply(Mutant{Name: "x", Edits: []Edit{{File: "a.go", Find: "return 2", Replace: "return 3"}}})
	assert.ErrorIs(t, err, ErrPattern)
	require.NoError(t, tree.Apply(Mutant{Name: "y", Edits: []Edit{{File: "a.go", Find: "return 1", Replace: "return 3"}}}))
	b, _ := os.ReadFile(filepath.Join(dir, "a.go"))
	assert.Contains(t, string(b), "return 3")
	require.NoError(t, tree.Restore())
	b, _ = os.ReadFile(filepath.Join(dir, "a.go"))
	assert.Contains(t, string(b), "return 1")

	require.NoError(t, tree.ApplySwitched([]Mutant{{Name: "z", Edits: []Edit{{File: "a.go", Find: "return 1", Switched: "if MUTANT_ON { return 3 }; return 1"}}}}))
	b, _ = os.ReadFile(filepath.Join(dir, "a.go"))
	assert.Contains(t, string(b), `if mutantOn("z") { return 3 }`)
	sw, err := os.ReadFile(filepath.Join(dir, switchFile))
	require.NoError(t, err)
	assert.Contains(t, string(sw), "package a")
}
