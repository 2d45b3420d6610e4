package world

import (
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
)

// Validate checks a Spec against the built-in operations and returns a
// *codec.FieldError naming the field.
func (s *Spec) Validate() error { return s.ValidateFor(Catalog{}) }

// ValidateFor is Validate for a world that carries out the operations of
// ops: a fix may name any of them that can be a fix.
func (s *Spec) ValidateFor(ops Catalog) error {
	if s.Schema != SpecSchema {
		return &codec.FieldError{Path: "schema", Err: fmt.Errorf("want %q, found %q", SpecSchema, s.Schema)}
	}
	if s.Root != "" && len(s.Files) > 0 {
		return &codec.FieldError{Path: "root", Err: fmt.Errorf("root and files exclude each other: the world is either a directory of yours or a sandbox copy of files")}
	}
	if s.Git != nil {
		if s.Root != "" {
			return &codec.FieldError{Path: "git", Err: fmt.Errorf("git and root exclude each other: the world is either a branch of a repository or a directory of yours")}
		}
		if len(s.Files) > 0 {
			return &codec.FieldError{Path: "git", Err: fmt.Errorf("git and files exclude each other: the world is the branch's tree, not a sandbox copy of files")}
		}
		if err := s.Git.validate(); err != nil {
			return err
		}
	}
	if strings.ContainsRune(s.Root, 0) {
		return &codec.FieldError{Path: "root", Err: fmt.Errorf("contains a NUL byte")}
	}
	for _, p := range sortedKeys(s.Files) {
		if _, err := CleanPath(p); err != nil {
			return &codec.FieldError{Path: "files." + p, Err: err}
		}
		if s.Excluded(p) {
			return &codec.FieldError{Path: "files." + p, Err: fmt.Errorf("path is excluded from observation (secret-like name); acr will not manage it")}
		}
	}
	for i, pat := range s.Exclude {
		if err := ValidPattern(pat); err != nil {
			return &codec.FieldError{Path: fmt.Sprintf("exclude[%d]", i), Err: err}
		}
	}
	for i, name := range s.PassEnv {
		if err := validEnvName(name); err != nil {
			return &codec.FieldError{Path: fmt.Sprintf("pass_env[%d]", i), Err: err}
		}
	}
	if s.Label != "" && !ValidLabel(s.Label) {
		return &codec.FieldError{Path: "label", Err: fmt.Errorf("%q is not a valid label (letters, digits, . _ -, starting with a letter or digit, at most 64)", s.Label)}
	}
	if l := s.Limits; l != nil && (l.MaxDepth < 0 || l.MaxEntries < 0 || l.MaxBytes < 0) {
		return &codec.FieldError{Path: "limits", Err: fmt.Errorf("limits must be >= 0 (0 takes the default)")}
	}
	checks, fixes := map[string]bool{}, map[string]bool{}
	for i, c := range s.Checks {
		at := fmt.Sprintf("checks[%d]", i)
		if !ValidID(c.ID) {
			return &codec.FieldError{Path: at + ".id", Err: fmt.Errorf("%q is not a valid id (lower-case letters, digits, . _ -)", c.ID)}
		}
		if checks[c.ID] {
			return &codec.FieldError{Path: at + ".id", Err: fmt.Errorf("duplicate check id %q", c.ID)}
		}
		checks[c.ID] = true
		if err := s.validateCheck(c); err != nil {
			return codec.Under(at, err)
		}
		for j, f := range c.Fixes {
			fat := fmt.Sprintf("%s.fixes[%d]", at, j)
			if f.ID != "" {
				if !ValidID(f.ID) {
					return &codec.FieldError{Path: fat + ".id", Err: fmt.Errorf("%q is not a valid id (lower-case letters, digits, . _ -)", f.ID)}
				}
				if fixes[f.ID] {
					return &codec.FieldError{Path: fat + ".id", Err: fmt.Errorf("duplicate fix id %q", f.ID)}
				}
				fixes[f.ID] = true
			}
			if err := f.validate(ops, c); err != nil {
				return codec.Under(fat, err)
			}
		}
	}
	evSeen := map[string]bool{}
	for i, e := range s.Evidence {
		at := fmt.Sprintf("evidence[%d]", i)
		if !ValidID(e.ID) || evSeen[e.ID] {
			return &codec.FieldError{Path: at + ".id", Err: fmt.Errorf("%q is not a valid, unique id", e.ID)}
		}
		evSeen[e.ID] = true
		if _, err := CleanPath(e.Path); err != nil {
			return &codec.FieldError{Path: at + ".path", Err: err}
		}
		if s.Excluded(e.Path) {
			return &codec.FieldError{Path: at + ".path", Err: fmt.Errorf("path is excluded from observation, so the evidence could never be seen")}
		}
	}
	for i, c := range s.Checks {
		for j, id := range c.RequiresEvidence {
			if !evSeen[id] {
				return &codec.FieldError{Path: fmt.Sprintf("checks[%d].requires_evidence[%d]", i, j), Err: fmt.Errorf("unknown evidence id %q", id)}
			}
		}
	}
	return nil
}

func fieldErr(field string, format string, args ...any) error {
	return &codec.FieldError{Path: field, Err: fmt.Errorf(format, args...)}
}

// validateCheck checks one check's own fields by its kind.
func (s *Spec) validateCheck(c Check) error {
	k, ok := CheckKindOf(c.Kind)
	if !ok {
		return fieldErr("kind", "unknown kind %q (want absent_text, present_text, file_exists or command)", c.Kind)
	}
	if c.Path != "" || k.OnFile {
		if _, err := CleanPath(c.Path); err != nil {
			return fieldErr("path", "%v", err)
		}
		if s.Excluded(c.Path) {
			return fieldErr("path", "path is excluded from observation")
		}
	}
	if c.Priority < 0 || c.Priority > 1000 {
		return fieldErr("priority", "must be between 0 and 1000")
	}
	return k.Validate(c)
}

func validArgv(argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return fmt.Errorf("required: the program and its arguments, e.g. [\"go\", \"vet\", \"./...\"]")
	}
	for i, a := range argv {
		if strings.ContainsRune(a, 0) {
			return fmt.Errorf("argv[%d] contains a NUL byte", i)
		}
	}
	return nil
}

func validTimeout(n int) error {
	if n < 0 || n > MaxCommandTimeout {
		return fmt.Errorf("must be between 0 (the default, %d s) and %d", DefaultCommandTimeout, MaxCommandTimeout)
	}
	return nil
}

var envNamePattern = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// ReservedEnv are the variables acr sets for a command itself.
func ReservedEnv() []string {
	return []string{"ACR_IDEMPOTENCY_KEY", "ACR_RUN_ID", "ACR_CYCLE", "PATH", "HOME", "LANG"}
}

func validEnvName(name string) error {
	if !envNamePattern.MatchString(name) {
		return fmt.Errorf("%q is not an environment variable name", name)
	}
	if slices.Contains(ReservedEnv(), name) {
		return fmt.Errorf("%s is set by acr itself", name)
	}
	return nil
}

// ValidEnvName checks a name a document asks to pass to a command.
func ValidEnvName(name string) error { return validEnvName(name) }

// Timeout returns a command's timeout in seconds, the default filled in.
func Timeout(seconds int) int {
	if seconds == 0 {
		return DefaultCommandTimeout
	}
	return seconds
}

// FixByID finds a declared fix and the check it belongs to.
func (s *Spec) FixByID(id string) (Fix, Check, bool) {
	for _, c := range s.Checks {
		for _, f := range c.Fixes {
			if f.ID != "" && f.ID == id {
				return f, c, true
			}
		}
	}
	return Fix{}, Check{}, false
}

// CheckByID finds a declared check.
func (s *Spec) CheckByID(id string) (Check, bool) {
	for _, c := range s.Checks {
		if c.ID == id {
			return c, true
		}
	}
	return Check{}, false
}

var labelRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`)

// ValidLabel reports whether s is a worker label: letters, digits, '.',
// '_' and '-', starting with a letter or digit, at most 64 bytes.
func ValidLabel(s string) bool { return labelRE.MatchString(s) }
