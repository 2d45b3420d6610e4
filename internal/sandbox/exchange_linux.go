package sandbox

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// exchangeSupported says whether this system can swap two names at all.
const exchangeSupported = true

// errExchangeUnsupported is a file system (or kernel) that cannot swap
// two names: replace falls back to a rename.
var errExchangeUnsupported = errors.New("the file system cannot swap two names")

// exchange swaps the names a and b in dir in one atomic step.
func exchange(dir *os.File, a, b string) error {
	fd := int(dir.Fd())
	err := unix.Renameat2(fd, a, fd, b, unix.RENAME_EXCHANGE)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, unix.EINVAL), errors.Is(err, unix.ENOSYS), errors.Is(err, unix.EOPNOTSUPP):
		return errExchangeUnsupported
	}
	return &os.LinkError{Op: "renameat2 exchange", Old: a, New: b, Err: err}
}

// hasXattrs reports whether f carries extended attributes (or whether
// that cannot be told, which counts as yes).
func hasXattrs(f *os.File) bool {
	n, err := unix.Flistxattr(int(f.Fd()), nil)
	if errors.Is(err, unix.ENOTSUP) {
		return false
	}
	return err != nil || n > 0
}
