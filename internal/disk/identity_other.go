//go:build !linux

package disk

import (
	"io/fs"
	"time"
)

// Identity is empty where the change time is not read: Identify then
// reports none, and callers read instead of trusting a stat.
type Identity struct{}

// Identify reports no identity on this platform.
func Identify(fs.FileInfo) (Identity, bool) { return Identity{}, false }

// Changed is never called on an identity Identify did not report.
func (Identity) Changed() time.Time { return time.Time{} }
