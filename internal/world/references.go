package world

import (
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/codec"
)

// Backing says what a spec's world is made of, and with it how sure a
// check of the paths the environment names can be.
type Backing struct {
	// Kind is "files" (a sandbox copy of exactly the files the
	// environment declares), "root" (a directory of the person's own,
	// looked after in place) or "git" (a branch of a repository).
	Kind string
	// FilesMayAppear says the world may hold files the environment does
	// not name, now or later (a real directory that people and programs
	// also write, a checkout that moves). A path that names no file is then
	// a warning, not an error: it may be on its way. A world whose files
	// are all declared knows better, and refuses the path as a typo.
	FilesMayAppear bool
}

// The world backings.
const (
	BackingFiles = "files"
	BackingRoot  = "root"
	BackingGit   = "git"
)

// Backing returns what the spec's world is made of.
func (s *Spec) Backing() Backing {
	if s.Git != nil {
		return Backing{Kind: BackingGit, FilesMayAppear: true}
	}
	if s.Root != "" {
		return Backing{Kind: BackingRoot, FilesMayAppear: true}
	}
	return Backing{Kind: BackingFiles}
}

// UnresolvedPaths lists the paths the spec's checks are about that name
// no file of the world (exists says whether a path does), each as a
// *codec.FieldError naming the field. A check judging a file that is not
// there judges nothing: an absent_text check on it passes for ever, a
// present_text check fails for ever. Left out are the paths that may
// rightly be missing: a file_exists check's (a missing file is what it
// looks for), and any path a fix the environment declares can create (a
// record_artifact fix of that check, or a command whose touches reach
// it). Evidence paths are not checked: evidence is, by definition, what
// may appear later.
func (s *Spec) UnresolvedPaths(exists func(path string) bool) []*codec.FieldError {
	var out []*codec.FieldError
	for i, c := range s.Checks {
		if c.Path != "" && c.Kind != CheckFileExists && !exists(c.Path) && !s.mayCreate(c, c.Path) {
			out = append(out, &codec.FieldError{Path: fmt.Sprintf("checks[%d].path", i),
				Err: fmt.Errorf("%q names no file of the world and no declared fix creates it: check %q would judge a missing file", c.Path, c.ID)})
		}
		for j, f := range c.Files {
			if !exists(f) && !s.mayCreate(c, f) {
				out = append(out, &codec.FieldError{Path: fmt.Sprintf("checks[%d].files[%d]", i, j),
					Err: fmt.Errorf("%q names no file of the world and no declared command creates it", f)})
			}
		}
	}
	return out
}

// mayCreate reports whether a fix the spec declares can create path: a
// record_artifact fix of the check that names it, or a command whose
// touches reach it (a command that names none may change anything).
func (s *Spec) mayCreate(c Check, path string) bool {
	if path == c.Path && slices.ContainsFunc(c.Fixes, func(f Fix) bool { return f.Operation == OpRecordArtifact }) {
		return true
	}
	for _, ch := range s.Checks {
		for _, f := range ch.Fixes {
			if f.Operation == OpRunCommand && (len(f.Touches) == 0 || MatchAny(f.Touches, path)) {
				return true
			}
		}
	}
	return false
}

// Declares reports whether a files world has a file at path from the
// start (always false for a world with a root).
func (s *Spec) Declares(path string) bool {
	_, ok := s.Files[path]
	return ok
}
