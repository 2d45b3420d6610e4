package disk

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"
)

// Mem is an in-memory FS that models what survives a power loss: file data
// survives only up to its last Sync, and a directory entry (a create, a
// rename, a removal) only once its directory was SyncDir'ed. Crash throws
// away everything else, the way a machine that loses power does. Tests run
// the store and the ledger on it to prove that every fsync acr needs is
// actually made.
type Mem struct {
	mu    sync.Mutex
	dirs  map[string]*memDir
	locks map[string]*memLock
	skip  func(SyncOp) bool
}

// SyncOp describes one fsync, so that tests can switch a single one off.
type SyncOp struct {
	Dir  bool   // true for SyncDir, false for File.Sync
	Name string // the file or directory name
}

type memDir struct {
	entries map[string]*inode
	durable map[string]*inode
}

type inode struct {
	data    []byte
	durable []byte
}

// NewMem returns an empty in-memory FS.
func NewMem() *Mem {
	return &Mem{
		dirs:  map[string]*memDir{".": {entries: map[string]*inode{}, durable: map[string]*inode{}}},
		locks: map[string]*memLock{},
	}
}

// SkipSync installs a filter: every fsync for which skip returns true is
// silently not made. It lets a test prove that a given fsync matters.
func (m *Mem) SkipSync(skip func(SyncOp) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.skip = skip
}

// Crash forgets every write that was not made durable and releases all
// locks, as a power loss would. Open File handles must not be used after.
func (m *Mem) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, d := range m.dirs {
		d.entries = cloneEntries(d.durable)
		for _, ino := range d.entries {
			ino.data = bytes.Clone(ino.durable)
		}
	}
	m.locks = map[string]*memLock{}
}

func cloneEntries(in map[string]*inode) map[string]*inode {
	out := make(map[string]*inode, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}

func clean(name string) string {
	if name == "" {
		return "."
	}
	return path.Clean(name)
}

func (m *Mem) lookup(name string) (*memDir, string, error) {
	name = clean(name)
	d, ok := m.dirs[path.Dir(name)]
	if !ok {
		return nil, "", &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return d, path.Base(name), nil
}

// ReadFile implements FS.
func (m *Mem) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	ino, ok := d.entries[base]
	if !ok {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrNotExist}
	}
	return bytes.Clone(ino.data), nil
}

// Stat implements FS.
func (m *Mem) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	if _, ok := m.dirs[name]; ok {
		return memInfo{name: path.Base(name), dir: true}, nil
	}
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	ino, ok := d.entries[base]
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return memInfo{name: base, size: int64(len(ino.data))}, nil
}

// ReadDir implements FS.
func (m *Mem) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	d, ok := m.dirs[name]
	if !ok {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	var out []fs.DirEntry
	for base, ino := range d.entries {
		out = append(out, fs.FileInfoToDirEntry(memInfo{name: base, size: int64(len(ino.data))}))
	}
	prefix := name + "/"
	for p := range m.dirs {
		if name == "." && p != "." && !strings.Contains(p, "/") {
			out = append(out, fs.FileInfoToDirEntry(memInfo{name: p, dir: true}))
		} else if strings.HasPrefix(p, prefix) && !strings.Contains(p[len(prefix):], "/") {
			out = append(out, fs.FileInfoToDirEntry(memInfo{name: p[len(prefix):], dir: true}))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// MkdirAll implements FS. Directories are durable at once, matching the
// OS implementation, which fsyncs the parents of what it creates.
func (m *Mem) MkdirAll(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for p := clean(name); p != "." && p != "/"; p = path.Dir(p) {
		if d, ok := m.dirs[path.Dir(p)]; ok {
			if _, isFile := d.entries[path.Base(p)]; isFile {
				return &fs.PathError{Op: "mkdir", Path: p, Err: fs.ErrExist}
			}
		}
	}
	for p := clean(name); p != "." && p != "/"; p = path.Dir(p) {
		if _, ok := m.dirs[p]; !ok {
			m.dirs[p] = &memDir{entries: map[string]*inode{}, durable: map[string]*inode{}}
		}
	}
	return nil
}

// WriteFile implements FS: the data is durable (the temp file was fsynced),
// the name is not until SyncDir.
func (m *Mem) WriteFile(name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return err
	}
	ino := &inode{data: bytes.Clone(data)}
	if !m.skipped(SyncOp{Name: clean(name)}) {
		ino.durable = bytes.Clone(data)
	}
	d.entries[base] = ino
	return nil
}

// WriteCache implements FS: neither the data nor the name is durable.
func (m *Mem) WriteCache(name string, data []byte) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return err
	}
	d.entries[base] = &inode{data: bytes.Clone(data)}
	return nil
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return err
	}
	if _, ok := d.entries[base]; !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	delete(d.entries, base)
	return nil
}

// SyncDir implements FS.
func (m *Mem) SyncDir(name string) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	d, ok := m.dirs[name]
	if !ok {
		return &fs.PathError{Op: "fsync", Path: name, Err: fs.ErrNotExist}
	}
	if !m.skipped(SyncOp{Dir: true, Name: name}) {
		d.durable = cloneEntries(d.entries)
	}
	return nil
}

func (m *Mem) skipped(op SyncOp) bool { return m.skip != nil && m.skip(op) }

// OpenAppend implements FS.
func (m *Mem) OpenAppend(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	ino, ok := d.entries[base]
	if !ok {
		ino = &inode{}
		d.entries[base] = ino
	}
	return &memFile{m: m, name: clean(name), ino: ino, writable: true}, nil
}

// Open implements FS.
func (m *Mem) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.lookup(name)
	if err != nil {
		return nil, err
	}
	ino, ok := d.entries[base]
	if !ok {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return &memFile{m: m, name: clean(name), ino: ino}, nil
}

// Lock implements FS.
func (m *Mem) Lock(name string) (Unlocker, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	if m.locks[name] != nil {
		return nil, ErrLocked
	}
	l := &memLock{m: m, name: name}
	m.locks[name] = l
	return l, nil
}

// memLock is one holder's lock. Unlocking releases it only if it is still
// this holder's: a stale Unlock (twice, or after a crash) never frees a
// later holder's lock, as with flock.
type memLock struct {
	m    *Mem
	name string
}

func (l *memLock) Unlock() error {
	l.m.mu.Lock()
	defer l.m.mu.Unlock()
	if l.m.locks[l.name] == l {
		delete(l.m.locks, l.name)
	}
	return nil
}

type memFile struct {
	m        *Mem
	name     string
	ino      *inode
	writable bool
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if off >= int64(len(f.ino.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.ino.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if !f.writable {
		return 0, fmt.Errorf("write %s: file is read-only", f.name)
	}
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.ino.data = append(f.ino.data, p...)
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if !f.m.skipped(SyncOp{Name: f.name}) {
		f.ino.durable = bytes.Clone(f.ino.data)
	}
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if size < 0 || size > int64(len(f.ino.data)) {
		return fmt.Errorf("truncate %s to %d: out of range", f.name, size)
	}
	f.ino.data = slices.Clip(f.ino.data[:size])
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return int64(len(f.ino.data)), nil
}

func (f *memFile) Close() error { return nil }

type memInfo struct {
	name string
	size int64
	dir  bool
}

func (i memInfo) Name() string { return i.name }
func (i memInfo) Size() int64  { return i.size }
func (i memInfo) Mode() fs.FileMode {
	if i.dir {
		return fs.ModeDir | 0o755
	}
	return 0o644
}
func (i memInfo) ModTime() time.Time { return time.Time{} }
func (i memInfo) IsDir() bool        { return i.dir }
func (i memInfo) Sys() any           { return nil }
