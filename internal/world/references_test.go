package world

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// TestUnresolvedPaths: a check about a file the world does not have is
// found, naming the field, unless the file may rightly be missing.
func TestUnresolvedPaths(t *testing.T) {
	cases := []struct {
		name  string
		check Check
		more  []Check
		want  []string // fields
	}{
		{"absent_text on a declared file", Check{ID: "a", Kind: CheckAbsentText, Path: "README.md", Text: "x"}, nil, nil},
		{"absent_text on an undeclared file passes for ever", Check{ID: "a", Kind: CheckAbsentText, Path: "REDME.md", Text: "x"}, nil,
			[]string{"checks[0].path"}},
		{"present_text on an undeclared file fails for ever", Check{ID: "a", Kind: CheckPresentText, Path: "NOTES.md", Text: "x",
			Fixes: []Fix{{Operation: OpApplyPatch, Find: "a", Replace: "b"}}}, nil, []string{"checks[0].path"}},
		{"file_exists looks for a missing file", Check{ID: "a", Kind: CheckFileExists, Path: "LICENSE"}, nil, nil},
		{"a record_artifact fix creates it", Check{ID: "a", Kind: CheckPresentText, Path: "NOTES.md", Text: "x",
			Fixes: []Fix{{Operation: OpRecordArtifact, Content: "x"}}}, nil, nil},
		{"a command that may touch it creates it", Check{ID: "a", Kind: CheckPresentText, Path: "gen/out.txt", Text: "x"},
			[]Check{{ID: "b", Kind: CheckCommand, Argv: []string{"make"}, Fixes: []Fix{{ID: "gen", Operation: OpRunCommand, Argv: []string{"make"}, Touches: []string{"gen/**"}}}}},
			nil},
		{"a command that touches elsewhere does not", Check{ID: "a", Kind: CheckPresentText, Path: "gen/out.txt", Text: "x"},
			[]Check{{ID: "b", Kind: CheckCommand, Argv: []string{"make"}, Fixes: []Fix{{ID: "gen", Operation: OpRunCommand, Argv: []string{"make"}, Touches: []string{"docs/**"}}}}},
			[]string{"checks[0].path"}},
		{"a command check's files", Check{ID: "a", Kind: CheckCommand, Argv: []string{"true"}, Files: []string{"README.md", "go.sum"}}, nil,
			[]string{"checks[0].files[1]"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := Spec{Schema: SpecSchema, Files: map[string]string{"README.md": "x"}, Checks: append([]Check{c.check}, c.more...)}
			var got []string
			for _, fe := range s.UnresolvedPaths(s.Declares) {
				got = append(got, fe.Path)
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// TestBacking: a world of declared files knows every file; a directory
// may get files later.
func TestBacking(t *testing.T) {
	assert.Equal(t, Backing{Kind: BackingFiles}, (&Spec{Files: map[string]string{"a": ""}}).Backing())
	assert.Equal(t, Backing{Kind: BackingRoot, FilesMayAppear: true}, (&Spec{Root: "/x"}).Backing())
	assert.False(t, (&Spec{Root: "/x"}).Declares("a"))
}
