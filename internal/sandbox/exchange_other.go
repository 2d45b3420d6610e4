//go:build !linux

package sandbox

import (
	"errors"
	"os"
)

// exchangeSupported: swapping two names is done with Linux's renameat2
// only; elsewhere replace always goes through a temporary file.
const exchangeSupported = false

var errExchangeUnsupported = errors.New("the file system cannot swap two names")

func exchange(dir *os.File, a, b string) error { return errExchangeUnsupported }

func hasXattrs(f *os.File) bool { return true }
