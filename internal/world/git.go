package world

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/acr-project/acr/internal/codec"
)

// GitSpec makes a branch of a git repository the world. The remote is
// the truth: the world is the tree at the head of Branch there, every
// host that runs the run keeps a clone of it as a cache, and an effect is
// one commit pushed to Branch. Base is where Branch starts when it does
// not exist yet; it is never written.
type GitSpec struct {
	// Remote is any URL git accepts: ssh, https, file:// or a path.
	Remote string `json:"remote"`
	// Base is the branch the run starts from.
	Base string `json:"base"`
	// Branch is the run's own branch, created from Base when missing.
	Branch string `json:"branch"`
}

// GitHead is a commit of a git world and its tree: the world's state
// there, as the ledger records it.
type GitHead struct {
	Commit string `json:"commit"`
	Tree   string `json:"tree"`
}

// GitTrial is a command fix of a git world as a person saw it before
// approving it: tried in a throwaway work tree at the branch head Head,
// it produced the tree Tree, changing the paths Changed (sorted). An
// approval that carries it binds to that tree: the effect commits
// exactly Tree on Head, or nothing.
type GitTrial struct {
	Head    string   `json:"head"`
	Tree    string   `json:"tree"`
	Changed []string `json:"changed,omitempty"`
}

// Valid reports whether the trial names a head and a tree as git prints
// them (hexadecimal object ids).
func (t GitTrial) Valid() bool { return objectID(t.Head) && objectID(t.Tree) }

// objectID reports whether s is a git object id: 40 (SHA-1) or 64
// (SHA-256) lowercase hexadecimal digits.
func objectID(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for _, c := range s {
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

// MaxRemoteLen bounds a git remote's length.
const MaxRemoteLen = 4096

// branchRE is the shape of a branch name acr accepts: slash-separated
// components of letters, digits, '.', '_' and '-', none starting with '.'
// or '-'. It is narrower than git check-ref-format on purpose: a name
// that passes it is safe on a command line and in a file name.
var branchRE = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9._-]*(/[A-Za-z0-9_][A-Za-z0-9._-]*)*$`)

// ValidBranch checks a branch name: branchRE, at most 200 bytes, and what
// git itself refuses beyond the pattern (no "..", no component ending in
// ".lock", no trailing '.').
func ValidBranch(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("required: a branch name such as \"main\"")
	case len(name) > 200:
		return fmt.Errorf("%q is longer than 200 bytes", name)
	case !branchRE.MatchString(name):
		return fmt.Errorf("%q is not a branch name acr accepts (slash-separated parts of letters, digits, . _ -, none starting with . or -)", name)
	case strings.Contains(name, ".."):
		return fmt.Errorf("%q contains \"..\", which git refuses in a ref", name)
	case strings.HasSuffix(name, "."):
		return fmt.Errorf("%q ends with '.', which git refuses in a ref", name)
	}
	for _, part := range strings.Split(name, "/") {
		if strings.HasSuffix(part, ".lock") {
			return fmt.Errorf("%q has a part ending in \".lock\", which git refuses in a ref", name)
		}
	}
	return nil
}

// ValidRemote checks a git remote: not empty, at most MaxRemoteLen bytes,
// no control characters (a newline would split a git config entry), and
// not starting with '-' (git would read it as an option).
func ValidRemote(remote string) error {
	switch {
	case remote == "":
		return fmt.Errorf("required: a URL git accepts, e.g. \"git@host:team/service.git\" or a path")
	case len(remote) > MaxRemoteLen:
		return fmt.Errorf("longer than %d bytes", MaxRemoteLen)
	case strings.HasPrefix(remote, "-"):
		return fmt.Errorf("%q starts with '-', which git would read as an option", remote)
	}
	for _, r := range remote {
		if r < 0x20 || r == 0x7f {
			return fmt.Errorf("contains a control character")
		}
	}
	return nil
}

// Describe names the world for a person: "the branch acr/x of
// git@host:team/service.git (from main)".
func (g *GitSpec) Describe() string {
	return "the branch " + g.Branch + " of " + g.Remote + " (from " + g.Base + ")"
}

// validate checks the git world's fields; errors name the field under
// "git".
func (g *GitSpec) validate() error {
	if err := ValidRemote(g.Remote); err != nil {
		return &codec.FieldError{Path: "git.remote", Err: err}
	}
	if err := ValidBranch(g.Base); err != nil {
		return &codec.FieldError{Path: "git.base", Err: err}
	}
	if err := ValidBranch(g.Branch); err != nil {
		return &codec.FieldError{Path: "git.branch", Err: err}
	}
	if g.Base == g.Branch {
		return &codec.FieldError{Path: "git.branch", Err: fmt.Errorf("%q is the base branch: the run writes to its own branch, never to base", g.Branch)}
	}
	return nil
}

// Trailers an effect's commit carries in a git world: they name the run,
// the cycle and the intent the commit carries out, and the effect's
// idempotency key, by which recovery finds the commit on the remote.
const (
	TrailerRun            = "Acr-Run"
	TrailerCycle          = "Acr-Cycle"
	TrailerIntent         = "Acr-Intent"
	TrailerIdempotencyKey = "Acr-Idempotency-Key"
)

// CommandTried is what a command fix of a git world did when the driver
// tried it in a throwaway work tree at the branch head, before governance
// ruled on it: the head, the tree it produced and the paths it changed
// (sorted), or, when the command failed (an exit other than 0, a signal,
// a timeout, a program that could not be started), how it failed. The
// cycle records it (kernel.Tried), so that replay and audit see the paths
// governance ruled on without the remote. Outside is the kernel's own
// reading of Changed against the action's declared paths: a trial's
// provider does not fill it.
type CommandTried struct {
	Head    string   `json:"head"`
	Tree    string   `json:"tree"`
	Changed []string `json:"changed"`
	Outside []string `json:"outside,omitempty"`
	Failure string   `json:"failure,omitempty"`
}

// Trial is the tried change as governance and an approval see it: its
// head, tree and changed paths.
func (t CommandTried) Trial() GitTrial {
	return GitTrial{Head: t.Head, Tree: t.Tree, Changed: t.Changed}
}
