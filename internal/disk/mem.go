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
// the store, the ledger, the idempotency table and init on it to prove that
// every fsync acr needs is actually made.
//
// The model, precisely:
//
//   - Files and directories are nodes in a tree. Each directory has its
//     current entries and its durable entries; each file has its current
//     bytes and its durable bytes.
//   - File.Sync and the fsync inside WriteFile make a file's bytes durable;
//     SyncDir makes a directory's current entries its durable entries.
//   - MkdirAll is durable at once, like the OS implementation, which fsyncs
//     the parent of every directory it creates.
//   - A rename is atomic, as on a journalling file system: it becomes
//     durable as a whole (gone from the old directory, present in the new
//     one) as soon as either directory is fsynced, never half.
//   - Crash rebuilds the tree from the root along durable entries only, and
//     gives every file its durable bytes.
type Mem struct {
	mu      sync.Mutex
	root    *node
	locks   map[string]*memLock
	skip    func(SyncOp) bool
	onOp    func(MemOp)
	renames []pendingRename
}

// SyncOp describes one fsync, so that tests can switch a single one off.
type SyncOp struct {
	Dir  bool   // true for SyncDir, false for File.Sync
	Name string // the file or directory name
}

// MemOp names one mutating operation on a Mem, as seen by the hook set
// with OnOp: "write", "writecache", "remove", "removeall", "rename",
// "mkdir", "syncdir", "sync", "append", "truncate".
type MemOp struct {
	Op   string
	Name string
}

type node struct {
	dir bool
	// files
	data, durable []byte
	// directories
	entries, durEntries map[string]*node
}

func newDir() *node {
	return &node{dir: true, entries: map[string]*node{}, durEntries: map[string]*node{}}
}

// pendingRename is a rename not yet durable in either directory.
type pendingRename struct {
	from, to         *node
	fromName, toName string
	n                *node
}

// NewMem returns an empty in-memory FS.
func NewMem() *Mem {
	return &Mem{root: newDir(), locks: map[string]*memLock{}}
}

// SkipSync installs a filter: every fsync for which skip returns true is
// silently not made. It lets a test prove that a given fsync matters.
func (m *Mem) SkipSync(skip func(SyncOp) bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.skip = skip
}

// OnOp installs a hook called before every mutating operation (nil
// removes it). A test that panics in the hook and then calls Crash models a
// power loss at exactly that point. The hook must not call back into m.
func (m *Mem) OnOp(hook func(MemOp)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.onOp = hook
}

func (m *Mem) op(name, target string) {
	m.mu.Lock()
	hook := m.onOp
	m.mu.Unlock()
	if hook != nil {
		hook(MemOp{Op: name, Name: clean(target)})
	}
}

// Crash forgets every write that was not made durable and releases all
// locks, as a power loss would. Open File handles must not be used after.
func (m *Mem) Crash() {
	m.mu.Lock()
	defer m.mu.Unlock()
	seen := map[*node]bool{}
	var restore func(n *node)
	restore = func(n *node) {
		if seen[n] {
			return
		}
		seen[n] = true
		if !n.dir {
			n.data = bytes.Clone(n.durable)
			return
		}
		n.entries = cloneEntries(n.durEntries)
		for _, c := range n.entries {
			restore(c)
		}
	}
	restore(m.root)
	m.renames = nil
	m.locks = map[string]*memLock{}
}

func cloneEntries(in map[string]*node) map[string]*node {
	out := make(map[string]*node, len(in))
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

// walk returns the node a name refers to.
func (m *Mem) walk(name string) (*node, bool) {
	name = clean(name)
	n := m.root
	if name == "." {
		return n, true
	}
	for _, part := range strings.Split(name, "/") {
		if !n.dir {
			return nil, false
		}
		c, ok := n.entries[part]
		if !ok {
			return nil, false
		}
		n = c
	}
	return n, true
}

// parent returns the directory that holds name and name's last element.
func (m *Mem) parent(op, name string) (*node, string, error) {
	name = clean(name)
	if name == "." || name == "/" || strings.HasPrefix(name, "../") || name == ".." {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	d, ok := m.walk(path.Dir(name))
	if !ok || !d.dir {
		return nil, "", &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return d, path.Base(name), nil
}

// file returns the file node name refers to.
func (m *Mem) file(op, name string) (*node, error) {
	n, ok := m.walk(name)
	if !ok {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	if n.dir {
		return nil, &fs.PathError{Op: op, Path: name, Err: fmt.Errorf("is a directory")}
	}
	return n, nil
}

// ReadFile implements FS.
func (m *Mem) ReadFile(name string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.file("read", name)
	if err != nil {
		return nil, err
	}
	return bytes.Clone(n.data), nil
}

// Stat implements FS.
func (m *Mem) Stat(name string) (fs.FileInfo, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, ok := m.walk(name)
	if !ok {
		return nil, &fs.PathError{Op: "stat", Path: name, Err: fs.ErrNotExist}
	}
	return memInfo{name: path.Base(clean(name)), size: int64(len(n.data)), dir: n.dir}, nil
}

// ReadDir implements FS.
func (m *Mem) ReadDir(name string) ([]fs.DirEntry, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.walk(name)
	if !ok || !d.dir {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: fs.ErrNotExist}
	}
	out := make([]fs.DirEntry, 0, len(d.entries))
	for base, n := range d.entries {
		out = append(out, fs.FileInfoToDirEntry(memInfo{name: base, size: int64(len(n.data)), dir: n.dir}))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name() < out[j].Name() })
	return out, nil
}

// MkdirAll implements FS. Directories are durable at once, matching the
// OS implementation, which fsyncs the parents of what it creates.
func (m *Mem) MkdirAll(name string) error {
	m.op("mkdir", name)
	m.mu.Lock()
	defer m.mu.Unlock()
	name = clean(name)
	if name == "." {
		return nil
	}
	d := m.root
	for _, part := range strings.Split(name, "/") {
		c, ok := d.entries[part]
		switch {
		case ok && !c.dir:
			return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
		case !ok:
			c = newDir()
			d.entries[part] = c
			d.durEntries[part] = c
		}
		d = c
	}
	return nil
}

// Mkdir creates one directory, whose parent must exist, the way os.Mkdir
// does: its entry is durable only once the parent is SyncDir'ed. It is
// not part of FS (whose MkdirAll is durable at once); tests use it to
// model a caller that creates directories itself, such as the sandbox's
// world writes.
func (m *Mem) Mkdir(name string) error {
	m.op("mkdir", name)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("mkdir", name)
	if err != nil {
		return err
	}
	if _, ok := d.entries[base]; ok {
		return &fs.PathError{Op: "mkdir", Path: name, Err: fs.ErrExist}
	}
	d.entries[base] = newDir()
	return nil
}

// WriteFile implements FS: the data is durable (the temp file was fsynced),
// the name is not until SyncDir.
func (m *Mem) WriteFile(name string, data []byte) error {
	m.op("write", name)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("write", name)
	if err != nil {
		return err
	}
	if c, ok := d.entries[base]; ok && c.dir {
		return &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("is a directory")}
	}
	n := &node{data: bytes.Clone(data)}
	if !m.skipped(SyncOp{Name: clean(name)}) {
		n.durable = bytes.Clone(data)
	}
	d.entries[base] = n
	return nil
}

// WriteCache implements FS: neither the data nor the name is durable.
func (m *Mem) WriteCache(name string, data []byte) error {
	m.op("writecache", name)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("write", name)
	if err != nil {
		return err
	}
	if c, ok := d.entries[base]; ok && c.dir {
		return &fs.PathError{Op: "write", Path: name, Err: fmt.Errorf("is a directory")}
	}
	d.entries[base] = &node{data: bytes.Clone(data)}
	return nil
}

// Remove implements FS.
func (m *Mem) Remove(name string) error {
	m.op("remove", name)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("remove", name)
	if err != nil {
		return err
	}
	c, ok := d.entries[base]
	if !ok {
		return &fs.PathError{Op: "remove", Path: name, Err: fs.ErrNotExist}
	}
	if c.dir && len(c.entries) > 0 {
		return &fs.PathError{Op: "remove", Path: name, Err: fmt.Errorf("directory not empty")}
	}
	delete(d.entries, base)
	return nil
}

// RemoveAll implements FS: the entry goes from its directory, durable after
// SyncDir of that directory.
func (m *Mem) RemoveAll(name string) error {
	m.op("removeall", name)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("removeall", name)
	if err != nil {
		if pe, ok := err.(*fs.PathError); ok && pe.Err == fs.ErrNotExist {
			return nil
		}
		return err
	}
	delete(d.entries, base)
	return nil
}

// Rename implements FS. The rename is atomic and becomes durable when
// either directory is fsynced.
func (m *Mem) Rename(oldname, newname string) error {
	m.op("rename", oldname)
	m.mu.Lock()
	defer m.mu.Unlock()
	from, fromName, err := m.parent("rename", oldname)
	if err != nil {
		return err
	}
	n, ok := from.entries[fromName]
	if !ok {
		return &fs.PathError{Op: "rename", Path: oldname, Err: fs.ErrNotExist}
	}
	to, toName, err := m.parent("rename", newname)
	if err != nil {
		return err
	}
	if c, ok := to.entries[toName]; ok && (c.dir || n.dir) {
		return &fs.PathError{Op: "rename", Path: newname, Err: fs.ErrExist}
	}
	if n.dir {
		for a := to; ; {
			if a == n {
				return &fs.PathError{Op: "rename", Path: newname, Err: fs.ErrInvalid}
			}
			p, ok := m.parentNode(a)
			if !ok {
				break
			}
			a = p
		}
	}
	delete(from.entries, fromName)
	to.entries[toName] = n
	if from != to {
		m.renames = append(m.renames, pendingRename{from: from, to: to, fromName: fromName, toName: toName, n: n})
	}
	return nil
}

// parentNode finds the directory whose current entries hold n.
func (m *Mem) parentNode(n *node) (*node, bool) {
	var found *node
	var visit func(d *node) bool
	visit = func(d *node) bool {
		for _, c := range d.entries {
			if c == n {
				found = d
				return true
			}
			if c.dir && visit(c) {
				return true
			}
		}
		return false
	}
	visit(m.root)
	return found, found != nil
}

// SyncDir implements FS.
func (m *Mem) SyncDir(name string) error {
	m.op("syncdir", name)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, ok := m.walk(name)
	if !ok || !d.dir {
		return &fs.PathError{Op: "fsync", Path: name, Err: fs.ErrNotExist}
	}
	if m.skipped(SyncOp{Dir: true, Name: clean(name)}) {
		return nil
	}
	d.durEntries = cloneEntries(d.entries)
	keep := m.renames[:0]
	for _, r := range m.renames {
		switch d {
		case r.from:
			r.to.durEntries[r.toName] = r.n
		case r.to:
			if r.from.durEntries[r.fromName] == r.n {
				delete(r.from.durEntries, r.fromName)
			}
		default:
			keep = append(keep, r)
		}
	}
	m.renames = keep
	return nil
}

func (m *Mem) skipped(op SyncOp) bool { return m.skip != nil && m.skip(op) }

// OpenAppend implements FS.
func (m *Mem) OpenAppend(name string) (File, error) {
	m.op("append", name)
	m.mu.Lock()
	defer m.mu.Unlock()
	d, base, err := m.parent("open", name)
	if err != nil {
		return nil, err
	}
	n, ok := d.entries[base]
	switch {
	case !ok:
		n = &node{}
		d.entries[base] = n
	case n.dir:
		return nil, &fs.PathError{Op: "open", Path: name, Err: fmt.Errorf("is a directory")}
	}
	return &memFile{m: m, name: clean(name), n: n, writable: true}, nil
}

// Open implements FS.
func (m *Mem) Open(name string) (File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	n, err := m.file("open", name)
	if err != nil {
		return nil, err
	}
	return &memFile{m: m, name: clean(name), n: n}, nil
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
	n        *node
	writable bool
}

func (f *memFile) ReadAt(p []byte, off int64) (int, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if off >= int64(len(f.n.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.n.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

func (f *memFile) Write(p []byte) (int, error) {
	if !f.writable {
		return 0, fmt.Errorf("write %s: file is read-only", f.name)
	}
	f.m.op("write", f.name)
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	f.n.data = append(f.n.data, p...)
	return len(p), nil
}

func (f *memFile) Sync() error {
	f.m.op("sync", f.name)
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if !f.m.skipped(SyncOp{Name: f.name}) {
		f.n.durable = bytes.Clone(f.n.data)
	}
	return nil
}

func (f *memFile) Truncate(size int64) error {
	f.m.op("truncate", f.name)
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	if size < 0 || size > int64(len(f.n.data)) {
		return fmt.Errorf("truncate %s to %d: out of range", f.name, size)
	}
	f.n.data = slices.Clip(f.n.data[:size])
	return nil
}

func (f *memFile) Size() (int64, error) {
	f.m.mu.Lock()
	defer f.m.mu.Unlock()
	return int64(len(f.n.data)), nil
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
