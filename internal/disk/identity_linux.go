package disk

import (
	"io/fs"
	"syscall"
	"time"
)

// Identity is what the file system reports about a file or directory
// that changes whenever its content or entries can have changed: device
// and inode (a replace makes a new inode), link count, mode, size, and
// the modification and change times to the nanosecond (any write, and
// any entry added to or removed from a directory, sets them). Two equal
// identities mean an unchanged file, except for a change within the same
// timestamp tick; callers that rely on an identity say how they bound
// that case.
type Identity struct {
	dev, ino, nlink uint64
	mode            uint32
	size            int64
	mtime, ctime    syscall.Timespec
}

// Identify reads fi's identity; ok is false when fi carries no stat (an
// in-memory FS, say): then nothing may be concluded from it.
func Identify(fi fs.FileInfo) (id Identity, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return Identity{}, false
	}
	return Identity{dev: uint64(st.Dev), ino: uint64(st.Ino), nlink: uint64(st.Nlink), mode: uint32(st.Mode), size: int64(st.Size),
		mtime: st.Mtim, ctime: st.Ctim}, true
}

// Changed is the later of the modification and change times: when the
// file system last stamped a change.
func (id Identity) Changed() time.Time {
	m, c := time.Unix(id.mtime.Unix()), time.Unix(id.ctime.Unix())
	if c.After(m) {
		return c
	}
	return m
}
