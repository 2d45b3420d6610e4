package sandbox

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
)

// MaxNameBytes is the longest file or directory name the sandbox creates:
// NAME_MAX on Linux and the BSDs, the limit that makes a longer name fail
// with ENAMETOOLONG only when it is written.
const MaxNameBytes = 255

// MaxPathBytes bounds a whole world path (PATH_MAX less room for the state
// directory in front of it).
const MaxPathBytes = 3072

// CheckFiles reports, before anything is written, an initial world that
// could pass the environment's own validation and still not be created:
// a name with the prefix the sandbox reserves for its temporary files, a
// name or path longer than a file system takes, or one path that would
// have to be both a file and a directory ("a" and "a/b"). The error is a
// *codec.FieldError naming the entry, so that init refuses the input (exit
// 65) without touching the state directory.
func CheckFiles(files map[string]string) error {
	names := make([]string, 0, len(files))
	for name := range files {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		field := "files." + name
		if len(name) > MaxPathBytes {
			return &codec.FieldError{Path: field, Err: fmt.Errorf("path is %d bytes long; at most %d are allowed", len(name), MaxPathBytes)}
		}
		parts := strings.Split(name, "/")
		for i, part := range parts {
			if strings.HasPrefix(part, tmpPrefix) {
				return &codec.FieldError{Path: field, Err: fmt.Errorf("name %q uses the prefix %s, which the sandbox reserves for its temporary files", part, tmpPrefix)}
			}
			if len(part) > MaxNameBytes {
				return &codec.FieldError{Path: field, Err: fmt.Errorf("name %.24q… is %d bytes long; file systems take at most %d", part, len(part), MaxNameBytes)}
			}
			if i < len(parts)-1 {
				dir := strings.Join(parts[:i+1], "/")
				if _, ok := files[dir]; ok {
					return &codec.FieldError{Path: "files." + dir, Err: fmt.Errorf("is a file, but %q needs it to be a directory", name)}
				}
			}
		}
	}
	return nil
}
