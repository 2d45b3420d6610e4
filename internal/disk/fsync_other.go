//go:build !linux

package disk

import "os"

// Fsync is f.Sync where the raw fsync of the Linux build is not used
// (see fsync_linux.go; on macOS f.Sync is F_FULLFSYNC, which is wanted).
func Fsync(f *os.File) error { return f.Sync() }
