package sandbox

import (
	"errors"
	"fmt"
	"io/fs"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
)

// The per-key layout of earlier releases: one file per record under a
// fan-out directory named by the key's first two hex digits. It is read,
// never written: a state directory that has it keeps finding its records
// there, and new records go to the table (see "Earlier layout" in the
// package comment).

// legacySuffix is each kind's file name ending in the per-key layout.
var legacySuffix = [numKinds + 1]string{kindIntent: ".intent.json", kindOutcome: ".json", kindStarted: ".started.json"}

// legacyName is the per-key file of key h's record of kind.
func legacyName(h string, kind recKind) string {
	return KeysDir + "/" + h[:2] + "/" + h + legacySuffix[kind]
}

// legacyRecord decodes one per-key file into v. A missing file is not an
// error; a read error wraps the *fs.PathError, a decode error does not,
// which is how readRecord tells a torn cache file from a failing disk.
func legacyRecord(keys disk.FS, name string, v any) (bool, error) {
	data, err := keys.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", name, err)
	}
	if err := codec.UnmarshalCanonical(data, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", name, err)
	}
	return true, nil
}
