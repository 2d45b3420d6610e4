package disk

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/gofrs/flock"
	"github.com/google/renameio/v2"
)

// OSDir is the real file system below one directory.
type OSDir struct {
	base string
}

// OpenOSDir returns the FS rooted at an existing directory.
func OpenOSDir(path string) (*OSDir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return nil, err
	}
	if !fi.IsDir() {
		return nil, fmt.Errorf("%s is not a directory", path)
	}
	return &OSDir{base: abs}, nil
}

// CreateOSDir creates the directory (and parents) if needed, makes the new
// entries durable, and returns the FS rooted at it.
func CreateOSDir(path string) (*OSDir, error) {
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	var created []string
	for d := abs; ; d = filepath.Dir(d) {
		if _, err := os.Stat(d); err == nil {
			break
		}
		created = append(created, d)
		if filepath.Dir(d) == d {
			break
		}
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, err
	}
	for _, d := range created {
		if err := syncPath(filepath.Dir(d)); err != nil {
			return nil, err
		}
	}
	return &OSDir{base: abs}, nil
}

// Path returns the absolute path of the root directory.
func (d *OSDir) Path() string { return d.base }

func (d *OSDir) abs(name string) (string, error) {
	if name == "." || name == "" {
		return d.base, nil
	}
	if strings.HasPrefix(name, "/") || slices.Contains(strings.Split(name, "/"), "..") {
		return "", fmt.Errorf("disk: name %q escapes the state directory", name)
	}
	return filepath.Join(d.base, filepath.FromSlash(name)), nil
}

// ReadFile implements FS.
func (d *OSDir) ReadFile(name string) ([]byte, error) {
	p, err := d.abs(name)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(p)
}

// Stat implements FS.
func (d *OSDir) Stat(name string) (fs.FileInfo, error) {
	p, err := d.abs(name)
	if err != nil {
		return nil, err
	}
	return os.Stat(p)
}

// ReadDir implements FS.
func (d *OSDir) ReadDir(name string) ([]fs.DirEntry, error) {
	p, err := d.abs(name)
	if err != nil {
		return nil, err
	}
	return os.ReadDir(p)
}

// MkdirAll implements FS.
func (d *OSDir) MkdirAll(name string) error {
	p, err := d.abs(name)
	if err != nil {
		return err
	}
	var created []string
	for q := p; q != d.base && len(q) > len(d.base); q = filepath.Dir(q) {
		if _, err := os.Stat(q); err == nil {
			break
		}
		created = append(created, q)
	}
	if err := os.MkdirAll(p, 0o755); err != nil {
		return err
	}
	for _, q := range created {
		if err := syncPath(filepath.Dir(q)); err != nil {
			return err
		}
	}
	return nil
}

// WriteFile implements FS with renameio: the temporary file lives in the
// target's own directory, so the rename never crosses a file system.
func (d *OSDir) WriteFile(name string, data []byte) error {
	p, err := d.abs(name)
	if err != nil {
		return err
	}
	return renameio.WriteFile(p, data, 0o644, renameio.WithTempDir(filepath.Dir(p)))
}

// WriteCache implements FS: a plain write, no temp file, no fsync. A crash
// can leave the file missing or torn; readers of a cache must treat a
// record that does not decode as absent.
func (d *OSDir) WriteCache(name string, data []byte) error {
	p, err := d.abs(name)
	if err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}

// Remove implements FS.
func (d *OSDir) Remove(name string) error {
	p, err := d.abs(name)
	if err != nil {
		return err
	}
	return os.Remove(p)
}

// RemoveAll implements FS.
func (d *OSDir) RemoveAll(name string) error {
	p, err := d.abs(name)
	if err != nil {
		return err
	}
	if p == d.base {
		return fmt.Errorf("disk: refusing to remove the root %s", p)
	}
	return os.RemoveAll(p)
}

// Rename implements FS with rename(2); an existing directory at newname
// is refused rather than replaced.
func (d *OSDir) Rename(oldname, newname string) error {
	from, err := d.abs(oldname)
	if err != nil {
		return err
	}
	to, err := d.abs(newname)
	if err != nil {
		return err
	}
	if fi, err := os.Lstat(to); err == nil && fi.IsDir() {
		return &fs.PathError{Op: "rename", Path: to, Err: fs.ErrExist}
	}
	return os.Rename(from, to)
}

// SyncDir implements FS.
func (d *OSDir) SyncDir(name string) error {
	p, err := d.abs(name)
	if err != nil {
		return err
	}
	return syncPath(p)
}

func syncPath(p string) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	if err := Fsync(f); err != nil {
		f.Close()
		return fmt.Errorf("fsync %s: %w", p, err)
	}
	return f.Close()
}

// OpenAppend implements FS.
func (d *OSDir) OpenAppend(name string) (File, error) {
	p, err := d.abs(name)
	if err != nil {
		return nil, err
	}
	f, err := os.OpenFile(p, os.O_RDWR|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Open implements FS.
func (d *OSDir) Open(name string) (File, error) {
	p, err := d.abs(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	return osFile{f}, nil
}

// Lock implements FS with flock(2), which the kernel releases when the
// process dies, so a killed invocation never leaves a stale lock behind.
func (d *OSDir) Lock(name string) (Unlocker, error) {
	p, err := d.abs(name)
	if err != nil {
		return nil, err
	}
	l := flock.New(p)
	ok, err := l.TryLock()
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", p, err)
	}
	if !ok {
		return nil, ErrLocked
	}
	return l, nil
}

type osFile struct{ *os.File }

func (f osFile) Sync() error {
	if err := Fsync(f.File); err != nil {
		return fmt.Errorf("fsync %s: %w", f.Name(), err)
	}
	return nil
}

func (f osFile) Size() (int64, error) {
	fi, err := f.Stat()
	if err != nil {
		return 0, err
	}
	return fi.Size(), nil
}
