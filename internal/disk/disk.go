// Package disk is the small file layer that acr's durable state is written
// through: the engine_state store, the ledger and the inbox. It exists so
// that tests can swap the real file system for one that forgets every write
// not yet fsynced (Mem), which is what a power loss does and a kill -9 does
// not. Everything acr promises about crashes is only as good as the fsyncs
// made through this interface.
//
// Names are slash-separated paths relative to the FS root. An error from
// Sync or SyncDir must be treated as fatal by the caller: after a failed
// fsync the kernel may have dropped the dirty pages, so a retry that
// succeeds proves nothing.
package disk

import (
	"errors"
	"io"
	"io/fs"
)

// FS is a directory tree that acr writes durable state into.
type FS interface {
	// ReadFile returns the whole content of a file.
	ReadFile(name string) ([]byte, error)
	// Stat describes a file or directory.
	Stat(name string) (fs.FileInfo, error)
	// ReadDir lists a directory sorted by name.
	ReadDir(name string) ([]fs.DirEntry, error)
	// MkdirAll creates a directory and its parents and makes the new
	// directory entries durable.
	MkdirAll(name string) error
	// WriteFile atomically creates or replaces a file: temp file in the same
	// directory, write, fsync, rename. The new directory entry is durable
	// only after SyncDir of the parent.
	WriteFile(name string, data []byte) error
	// WriteCache creates or replaces a file without making it durable and
	// without atomicity (a crash may leave it missing or torn): for caches
	// whose content can be rebuilt from durable records, such as the
	// sandbox's outcome table. Readers treat an undecodable entry as absent.
	WriteCache(name string, data []byte) error
	// Remove deletes a file or an empty directory; durable after SyncDir
	// of the parent.
	Remove(name string) error
	// RemoveAll deletes a file or a directory tree; a missing name is not
	// an error. Durable after SyncDir of the parent.
	RemoveAll(name string) error
	// Rename moves a file or a directory to a new name in the same FS. It
	// replaces an existing file but never an existing directory. It is
	// atomic; durable after SyncDir of the new name's directory (and of the
	// old one's, when they differ).
	Rename(oldname, newname string) error
	// SyncDir fsyncs a directory so that entries created, renamed or removed
	// in it survive a power loss.
	SyncDir(name string) error
	// OpenAppend opens a file for reading and appending, creating it if
	// needed (the new entry is durable after SyncDir of the parent).
	OpenAppend(name string) (File, error)
	// Open opens an existing file read-only.
	Open(name string) (File, error)
	// Lock takes an exclusive, non-blocking lock named by a file. It returns
	// ErrLocked at once if another holder has it.
	Lock(name string) (Unlocker, error)
}

// File is an open file of an FS.
type File interface {
	io.ReaderAt
	io.Writer
	io.Closer
	// Sync makes the file's written data durable.
	Sync() error
	// Truncate cuts the file to size bytes; durable after Sync.
	Truncate(size int64) error
	// Size returns the current length of the file.
	Size() (int64, error)
}

// Unlocker releases a lock taken with FS.Lock.
type Unlocker interface {
	Unlock() error
}

// ErrLocked means another holder has the lock.
var ErrLocked = errors.New("locked by another process")

// ReplaceFile is WriteFile followed by SyncDir of the file's directory: the
// complete "temp, fsync, rename, fsync directory" sequence for one file.
func ReplaceFile(fsys FS, name string, data []byte) error {
	if err := fsys.WriteFile(name, data); err != nil {
		return err
	}
	return fsys.SyncDir(Dir(name))
}

// Dir returns the directory part of a slash-separated name ("." for none).
func Dir(name string) string {
	for i := len(name) - 1; i >= 0; i-- {
		if name[i] == '/' {
			if i == 0 {
				return "/"
			}
			return name[:i]
		}
	}
	return "."
}

// Exists reports whether name exists. Errors other than "not exist" are
// returned so that an unreadable directory is not mistaken for a clean slate.
func Exists(fsys FS, name string) (bool, error) {
	_, err := fsys.Stat(name)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}
