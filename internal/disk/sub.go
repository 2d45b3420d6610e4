package disk

import (
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Sub returns the FS rooted at dir inside fsys: every name is taken
// relative to dir. Init builds a new run in a staging directory through
// it, with exactly the code that writes a run in place.
func Sub(fsys FS, dir string) FS {
	return subFS{fsys: fsys, dir: clean(dir)}
}

type subFS struct {
	fsys FS
	dir  string
}

func (s subFS) name(n string) (string, error) {
	n = clean(n)
	if n == ".." || strings.HasPrefix(n, "../") || strings.HasPrefix(n, "/") {
		return "", fmt.Errorf("disk: name %q escapes %s", n, s.dir)
	}
	return path.Join(s.dir, n), nil
}

func (s subFS) ReadFile(name string) ([]byte, error) {
	n, err := s.name(name)
	if err != nil {
		return nil, err
	}
	return s.fsys.ReadFile(n)
}

func (s subFS) Stat(name string) (fs.FileInfo, error) {
	n, err := s.name(name)
	if err != nil {
		return nil, err
	}
	return s.fsys.Stat(n)
}

func (s subFS) ReadDir(name string) ([]fs.DirEntry, error) {
	n, err := s.name(name)
	if err != nil {
		return nil, err
	}
	return s.fsys.ReadDir(n)
}

func (s subFS) MkdirAll(name string) error {
	n, err := s.name(name)
	if err != nil {
		return err
	}
	return s.fsys.MkdirAll(n)
}

func (s subFS) WriteFile(name string, data []byte) error {
	n, err := s.name(name)
	if err != nil {
		return err
	}
	return s.fsys.WriteFile(n, data)
}

func (s subFS) WriteCache(name string, data []byte) error {
	n, err := s.name(name)
	if err != nil {
		return err
	}
	return s.fsys.WriteCache(n, data)
}

func (s subFS) Remove(name string) error {
	n, err := s.name(name)
	if err != nil {
		return err
	}
	return s.fsys.Remove(n)
}

func (s subFS) RemoveAll(name string) error {
	n, err := s.name(name)
	if err != nil {
		return err
	}
	if n == s.dir {
		return fmt.Errorf("disk: refusing to remove the root %s", s.dir)
	}
	return s.fsys.RemoveAll(n)
}

func (s subFS) Rename(oldname, newname string) error {
	o, err := s.name(oldname)
	if err != nil {
		return err
	}
	n, err := s.name(newname)
	if err != nil {
		return err
	}
	return s.fsys.Rename(o, n)
}

func (s subFS) SyncDir(name string) error {
	n, err := s.name(name)
	if err != nil {
		return err
	}
	return s.fsys.SyncDir(n)
}

func (s subFS) OpenAppend(name string) (File, error) {
	n, err := s.name(name)
	if err != nil {
		return nil, err
	}
	return s.fsys.OpenAppend(n)
}

func (s subFS) Open(name string) (File, error) {
	n, err := s.name(name)
	if err != nil {
		return nil, err
	}
	return s.fsys.Open(n)
}

func (s subFS) Lock(name string) (Unlocker, error) {
	n, err := s.name(name)
	if err != nil {
		return nil, err
	}
	return s.fsys.Lock(n)
}
