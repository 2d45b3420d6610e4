package disk_test

import (
	"io"
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
)

// implementations returns a fresh instance of every FS, so that one
// conformance suite holds both to the same contract.
func implementations(t *testing.T) map[string]func(t *testing.T) disk.FS {
	return map[string]func(t *testing.T) disk.FS{
		"mem": func(t *testing.T) disk.FS { return disk.NewMem() },
		"os": func(t *testing.T) disk.FS {
			d, err := disk.CreateOSDir(t.TempDir())
			require.NoError(t, err)
			return d
		},
	}
}

func names(t *testing.T, es []fs.DirEntry) []string {
	t.Helper()
	out := []string{}
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func readAll(t *testing.T, f disk.File) string {
	t.Helper()
	n, err := f.Size()
	require.NoError(t, err)
	buf := make([]byte, n)
	if n > 0 {
		got, err := f.ReadAt(buf, 0)
		require.NoError(t, err)
		require.Equal(t, int(n), got)
	}
	return string(buf)
}

func TestConformance(t *testing.T) {
	tests := []struct {
		name string
		run  func(t *testing.T, fsys disk.FS)
	}{
		{"WriteFile then ReadFile", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.WriteFile("a.txt", []byte("one")))
			got, err := fsys.ReadFile("a.txt")
			require.NoError(t, err)
			assert.Equal(t, "one", string(got))

			require.NoError(t, fsys.WriteFile("a.txt", []byte("two, longer")))
			got, err = fsys.ReadFile("a.txt")
			require.NoError(t, err)
			assert.Equal(t, "two, longer", string(got), "WriteFile replaces")

			require.NoError(t, fsys.WriteFile("a.txt", nil))
			got, err = fsys.ReadFile("a.txt")
			require.NoError(t, err)
			assert.Empty(t, got)
		}},
		{"ReadFile of a missing file", func(t *testing.T, fsys disk.FS) {
			_, err := fsys.ReadFile("missing.txt")
			assert.ErrorIs(t, err, fs.ErrNotExist)
			_, err = fsys.ReadFile("nodir/missing.txt")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		}},
		{"WriteFile into a missing directory fails", func(t *testing.T, fsys disk.FS) {
			assert.Error(t, fsys.WriteFile("nodir/a.txt", []byte("x")))
		}},
		{"returned bytes are a copy", func(t *testing.T, fsys disk.FS) {
			data := []byte("abc")
			require.NoError(t, fsys.WriteFile("c.txt", data))
			data[0] = 'X'
			got, err := fsys.ReadFile("c.txt")
			require.NoError(t, err)
			assert.Equal(t, "abc", string(got))
			got[1] = 'Y'
			again, err := fsys.ReadFile("c.txt")
			require.NoError(t, err)
			assert.Equal(t, "abc", string(again))
		}},
		{"Stat", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("d/e"))
			require.NoError(t, fsys.WriteFile("d/e/f.bin", []byte("12345")))
			fi, err := fsys.Stat("d/e/f.bin")
			require.NoError(t, err)
			assert.Equal(t, "f.bin", fi.Name())
			assert.Equal(t, int64(5), fi.Size())
			assert.False(t, fi.IsDir())
			assert.True(t, fi.Mode().IsRegular())

			for _, dir := range []string{"d", "d/e", "."} {
				fi, err = fsys.Stat(dir)
				require.NoError(t, err, dir)
				assert.True(t, fi.IsDir(), dir)
			}
			fi, err = fsys.Stat("d/e")
			require.NoError(t, err)
			assert.Equal(t, "e", fi.Name())

			_, err = fsys.Stat("d/nope")
			assert.ErrorIs(t, err, fs.ErrNotExist)
			_, err = fsys.Stat("nope/nope")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		}},
		{"MkdirAll over a file fails", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.WriteFile("plain", []byte("x")))
			assert.Error(t, fsys.MkdirAll("plain"))
			assert.Error(t, fsys.MkdirAll("plain/sub"))
			got, err := fsys.ReadFile("plain")
			require.NoError(t, err)
			assert.Equal(t, "x", string(got))
		}},
		{"MkdirAll is idempotent", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("x/y/z"))
			require.NoError(t, fsys.WriteFile("x/y/z/f", []byte("keep")))
			require.NoError(t, fsys.MkdirAll("x/y/z"))
			require.NoError(t, fsys.MkdirAll("x/y"))
			got, err := fsys.ReadFile("x/y/z/f")
			require.NoError(t, err)
			assert.Equal(t, "keep", string(got))
		}},
		{"ReadDir is sorted", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("list"))
			for _, n := range []string{"b.txt", "a.txt", "C.txt", "c.txt"} {
				require.NoError(t, fsys.WriteFile("list/"+n, []byte(n)))
			}
			require.NoError(t, fsys.MkdirAll("list/m-dir/deeper"))
			es, err := fsys.ReadDir("list")
			require.NoError(t, err)
			assert.Equal(t, []string{"C.txt", "a.txt", "b.txt", "c.txt", "m-dir"}, names(t, es))
			for _, e := range es {
				assert.Equal(t, e.Name() == "m-dir", e.IsDir(), e.Name())
			}

			es, err = fsys.ReadDir("list/m-dir")
			require.NoError(t, err)
			assert.Equal(t, []string{"deeper"}, names(t, es))

			es, err = fsys.ReadDir(".")
			require.NoError(t, err)
			assert.Equal(t, []string{"list"}, names(t, es))

			es, err = fsys.ReadDir("list/m-dir/deeper")
			require.NoError(t, err)
			assert.Empty(t, es)

			_, err = fsys.ReadDir("nope")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		}},
		{"Remove", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.WriteFile("r.txt", []byte("x")))
			require.NoError(t, fsys.WriteFile("s.txt", []byte("y")))
			require.NoError(t, fsys.Remove("r.txt"))
			_, err := fsys.Stat("r.txt")
			assert.ErrorIs(t, err, fs.ErrNotExist)
			_, err = fsys.Stat("s.txt")
			assert.NoError(t, err, "other files stay")
			assert.ErrorIs(t, fsys.Remove("r.txt"), fs.ErrNotExist)
			assert.ErrorIs(t, fsys.Remove("nodir/r.txt"), fs.ErrNotExist)
		}},
		{"SyncDir", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("s"))
			require.NoError(t, fsys.SyncDir("s"))
			require.NoError(t, fsys.SyncDir("."))
			assert.ErrorIs(t, fsys.SyncDir("missing"), fs.ErrNotExist)
		}},
		{"OpenAppend, ReadAt, Truncate, Size", func(t *testing.T, fsys disk.FS) {
			f, err := fsys.OpenAppend("log")
			require.NoError(t, err)
			size, err := f.Size()
			require.NoError(t, err)
			assert.Equal(t, int64(0), size)

			n, err := f.Write([]byte("hello "))
			require.NoError(t, err)
			assert.Equal(t, 6, n)
			_, err = f.Write([]byte("world"))
			require.NoError(t, err)
			require.NoError(t, f.Sync())
			size, err = f.Size()
			require.NoError(t, err)
			assert.Equal(t, int64(11), size)

			buf := make([]byte, 5)
			n, err = f.ReadAt(buf, 6)
			require.NoError(t, err)
			assert.Equal(t, "world", string(buf[:n]))

			buf = make([]byte, 10)
			n, err = f.ReadAt(buf, 8)
			assert.ErrorIs(t, err, io.EOF, "a short read reports EOF")
			assert.Equal(t, "rld", string(buf[:n]))

			n, err = f.ReadAt(buf, 11)
			assert.ErrorIs(t, err, io.EOF)
			assert.Equal(t, 0, n)

			require.NoError(t, f.Truncate(5))
			size, err = f.Size()
			require.NoError(t, err)
			assert.Equal(t, int64(5), size)
			assert.Equal(t, "hello", readAll(t, f))

			// Writes after a truncate append at the new end.
			_, err = f.Write([]byte("!"))
			require.NoError(t, err)
			assert.Equal(t, "hello!", readAll(t, f))

			assert.Error(t, f.Truncate(-1))
			require.NoError(t, f.Close())

			got, err := fsys.ReadFile("log")
			require.NoError(t, err)
			assert.Equal(t, "hello!", string(got))

			// Reopening appends to what is there.
			f, err = fsys.OpenAppend("log")
			require.NoError(t, err)
			_, err = f.Write([]byte("?"))
			require.NoError(t, err)
			assert.Equal(t, "hello!?", readAll(t, f))
			require.NoError(t, f.Close())

			_, err = fsys.OpenAppend("nodir/log")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		}},
		{"Open is read-only", func(t *testing.T, fsys disk.FS) {
			_, err := fsys.Open("missing")
			assert.ErrorIs(t, err, fs.ErrNotExist)

			require.NoError(t, fsys.WriteFile("ro", []byte("content")))
			f, err := fsys.Open("ro")
			require.NoError(t, err)
			assert.Equal(t, "content", readAll(t, f))
			_, err = f.Write([]byte("x"))
			assert.Error(t, err)
			require.NoError(t, f.Close())
			got, err := fsys.ReadFile("ro")
			require.NoError(t, err)
			assert.Equal(t, "content", string(got))
		}},
		{"Lock", func(t *testing.T, fsys disk.FS) {
			l1, err := fsys.Lock("run.lock")
			require.NoError(t, err)
			require.NotNil(t, l1)

			l2, err := fsys.Lock("run.lock")
			assert.ErrorIs(t, err, disk.ErrLocked)
			assert.Nil(t, l2)

			other, err := fsys.Lock("other.lock")
			require.NoError(t, err, "a different lock is independent")

			require.NoError(t, l1.Unlock())
			l3, err := fsys.Lock("run.lock")
			require.NoError(t, err, "the lock can be taken again after Unlock")
			_, err = fsys.Lock("run.lock")
			assert.ErrorIs(t, err, disk.ErrLocked)
			require.NoError(t, l3.Unlock())
			require.NoError(t, other.Unlock())
		}},
		{"a stale Unlock does not release the next holder's lock", func(t *testing.T, fsys disk.FS) {
			l1, err := fsys.Lock("run.lock")
			require.NoError(t, err)
			require.NoError(t, l1.Unlock())
			l2, err := fsys.Lock("run.lock")
			require.NoError(t, err)
			require.NoError(t, l1.Unlock(), "unlocking twice is harmless")
			_, err = fsys.Lock("run.lock")
			assert.ErrorIs(t, err, disk.ErrLocked, "l2 still holds the lock")
			require.NoError(t, l2.Unlock())
		}},
		{"Exists", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("dir"))
			require.NoError(t, fsys.WriteFile("dir/file", []byte("x")))
			for name, want := range map[string]bool{"dir": true, "dir/file": true, "dir/none": false, "none/none": false} {
				ok, err := disk.Exists(fsys, name)
				require.NoError(t, err, name)
				assert.Equal(t, want, ok, name)
			}
		}},
		{"Rename a file and a directory", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("a/b"))
			require.NoError(t, fsys.WriteFile("a/b/f", []byte("1")))
			require.NoError(t, fsys.WriteFile("g", []byte("2")))
			require.NoError(t, fsys.MkdirAll("dst"))
			require.NoError(t, fsys.Rename("a", "dst/a"))
			got, err := fsys.ReadFile("dst/a/b/f")
			require.NoError(t, err)
			assert.Equal(t, "1", string(got))
			_, err = fsys.Stat("a")
			assert.ErrorIs(t, err, fs.ErrNotExist)
			require.NoError(t, fsys.WriteFile("h", []byte("3")))
			require.NoError(t, fsys.Rename("g", "h"), "a file replaces a file")
			got, err = fsys.ReadFile("h")
			require.NoError(t, err)
			assert.Equal(t, "2", string(got))
			assert.Error(t, fsys.Rename("h", "dst"), "never onto a directory")
			assert.Error(t, fsys.Rename("missing", "x"))
			assert.Error(t, fsys.Rename("h", "nodir/x"))
		}},
		{"RemoveAll", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("t/u/v"))
			require.NoError(t, fsys.WriteFile("t/u/v/f", []byte("x")))
			require.NoError(t, fsys.WriteFile("t/g", []byte("x")))
			require.NoError(t, fsys.RemoveAll("t"))
			_, err := fsys.Stat("t")
			assert.ErrorIs(t, err, fs.ErrNotExist)
			assert.NoError(t, fsys.RemoveAll("t"), "a missing name is not an error")
			assert.NoError(t, fsys.RemoveAll("nodir/x"))
			require.NoError(t, fsys.WriteFile("file", []byte("x")))
			require.NoError(t, fsys.RemoveAll("file"))
			_, err = fsys.Stat("file")
			assert.ErrorIs(t, err, fs.ErrNotExist)
		}},
		{"Sub", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("stage"))
			sub := disk.Sub(fsys, "stage")
			require.NoError(t, sub.MkdirAll("d"))
			require.NoError(t, disk.ReplaceFile(sub, "d/f", []byte("in")))
			got, err := fsys.ReadFile("stage/d/f")
			require.NoError(t, err)
			assert.Equal(t, "in", string(got))
			es, err := sub.ReadDir(".")
			require.NoError(t, err)
			assert.Equal(t, []string{"d"}, names(t, es))
			_, err = sub.ReadFile("../x")
			assert.Error(t, err, "a name may not leave the sub tree")
			assert.Error(t, sub.RemoveAll("."), "the root of a sub tree is not removed through it")
		}},
		{"ReplaceFile", func(t *testing.T, fsys disk.FS) {
			require.NoError(t, fsys.MkdirAll("sub"))
			require.NoError(t, disk.ReplaceFile(fsys, "sub/f.json", []byte(`{"a":1}`)))
			require.NoError(t, disk.ReplaceFile(fsys, "top.json", []byte(`{}`)))
			got, err := fsys.ReadFile("sub/f.json")
			require.NoError(t, err)
			assert.Equal(t, `{"a":1}`, string(got))
			assert.Error(t, disk.ReplaceFile(fsys, "nodir/f.json", []byte("x")))
		}},
	}
	require.NotEmpty(t, tests)
	impls := implementations(t)
	require.Len(t, impls, 2)
	for implName, mk := range impls {
		for _, tc := range tests {
			t.Run(implName+"/"+tc.name, func(t *testing.T) {
				tc.run(t, mk(t))
			})
		}
	}
}

func TestDir(t *testing.T) {
	cases := map[string]string{
		"a":        ".",
		"a/b":      "a",
		"a/b/c.js": "a/b",
		"/x":       "/",
		"":         ".",
	}
	for in, want := range cases {
		assert.Equal(t, want, disk.Dir(in), "Dir(%q)", in)
	}
}

func TestOSDirRefusesNamesOutsideTheRoot(t *testing.T) {
	d, err := disk.CreateOSDir(t.TempDir() + "/nested/state")
	require.NoError(t, err)
	for _, name := range []string{"../x", "a/../../x", "/etc/passwd"} {
		_, err := d.ReadFile(name)
		assert.Error(t, err, name)
		assert.NotErrorIs(t, err, fs.ErrNotExist, "%s must be refused, not looked up", name)
		assert.Error(t, d.WriteFile(name, []byte("x")), name)
	}
	fi, err := d.Stat(".")
	require.NoError(t, err)
	assert.True(t, fi.IsDir())

	_, err = disk.OpenOSDir(d.Path() + "/missing")
	assert.Error(t, err)
	require.NoError(t, d.WriteFile("plain", []byte("x")))
	_, err = disk.OpenOSDir(d.Path() + "/plain")
	assert.Error(t, err, "a file is not a directory")
	again, err := disk.OpenOSDir(d.Path())
	require.NoError(t, err)
	got, err := again.ReadFile("plain")
	require.NoError(t, err)
	assert.Equal(t, "x", string(got))
}

func TestOSDirMkdirAllOverAFileFails(t *testing.T) {
	d, err := disk.CreateOSDir(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, d.WriteFile("plain", []byte("x")))
	assert.Error(t, d.MkdirAll("plain"))
	assert.Error(t, d.MkdirAll("plain/sub"))
}

func TestOSDirStaleUnlockKeepsTheNextHoldersLock(t *testing.T) {
	d, err := disk.CreateOSDir(t.TempDir())
	require.NoError(t, err)
	l1, err := d.Lock("run.lock")
	require.NoError(t, err)
	require.NoError(t, l1.Unlock())
	l2, err := d.Lock("run.lock")
	require.NoError(t, err)
	require.NoError(t, l1.Unlock())
	_, err = d.Lock("run.lock")
	assert.ErrorIs(t, err, disk.ErrLocked)
	require.NoError(t, l2.Unlock())
}

// Mem-only: what survives Crash.

func TestMemCrashLosesUnsyncedFileData(t *testing.T) {
	m := disk.NewMem()
	f, err := m.OpenAppend("log")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("."))
	_, err = f.Write([]byte("abc"))
	require.NoError(t, err)
	m.Crash()
	got, err := m.ReadFile("log")
	require.NoError(t, err, "the entry was made durable")
	assert.Empty(t, got, "the data was never synced")

	f, err = m.OpenAppend("log")
	require.NoError(t, err)
	_, err = f.Write([]byte("abc"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	_, err = f.Write([]byte("def"))
	require.NoError(t, err)
	m.Crash()
	got, err = m.ReadFile("log")
	require.NoError(t, err)
	assert.Equal(t, "abc", string(got), "data up to the last Sync survives")
}

func TestMemCrashLosesTruncateWithoutSync(t *testing.T) {
	m := disk.NewMem()
	f, err := m.OpenAppend("log")
	require.NoError(t, err)
	require.NoError(t, m.SyncDir("."))
	_, err = f.Write([]byte("0123456789"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, f.Truncate(4))
	m.Crash()
	got, err := m.ReadFile("log")
	require.NoError(t, err)
	assert.Equal(t, "0123456789", string(got))

	f, err = m.OpenAppend("log")
	require.NoError(t, err)
	require.NoError(t, f.Truncate(4))
	require.NoError(t, f.Sync())
	m.Crash()
	got, err = m.ReadFile("log")
	require.NoError(t, err)
	assert.Equal(t, "0123", string(got))
}

func TestMemCrashLosesUnsyncedDirectoryEntries(t *testing.T) {
	m := disk.NewMem()
	require.NoError(t, m.MkdirAll("d"))

	require.NoError(t, m.WriteFile("d/new", []byte("data")))
	_, err := m.OpenAppend("d/appended")
	require.NoError(t, err)
	m.Crash()
	_, err = m.ReadFile("d/new")
	assert.ErrorIs(t, err, fs.ErrNotExist, "a new entry without SyncDir is lost")
	_, err = m.ReadFile("d/appended")
	assert.ErrorIs(t, err, fs.ErrNotExist)

	// The directory itself is durable at once (MkdirAll).
	fi, err := m.Stat("d")
	require.NoError(t, err)
	assert.True(t, fi.IsDir())

	require.NoError(t, m.WriteFile("d/new", []byte("data")))
	require.NoError(t, m.SyncDir("d"))
	m.Crash()
	got, err := m.ReadFile("d/new")
	require.NoError(t, err)
	assert.Equal(t, "data", string(got))

	// SyncDir of another directory does not help.
	require.NoError(t, m.WriteFile("d/other", []byte("x")))
	require.NoError(t, m.SyncDir("."))
	m.Crash()
	_, err = m.ReadFile("d/other")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestMemKeepsItsOwnCopyOfWrittenData(t *testing.T) {
	m := disk.NewMem()
	data := []byte("original")
	require.NoError(t, disk.ReplaceFile(m, "f", data))
	copy(data, "CHANGED!")
	m.Crash()
	got, err := m.ReadFile("f")
	require.NoError(t, err)
	assert.Equal(t, "original", string(got), "the durable copy does not alias the caller's buffer")
}

func TestMemCrashRevertsRenamedOverFile(t *testing.T) {
	m := disk.NewMem()
	require.NoError(t, disk.ReplaceFile(m, "cfg", []byte("old")))
	require.NoError(t, m.WriteFile("cfg", []byte("new")))
	got, err := m.ReadFile("cfg")
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
	m.Crash()
	got, err = m.ReadFile("cfg")
	require.NoError(t, err)
	assert.Equal(t, "old", string(got), "the rename was not made durable; the old file is back")

	require.NoError(t, disk.ReplaceFile(m, "cfg", []byte("new")))
	m.Crash()
	got, err = m.ReadFile("cfg")
	require.NoError(t, err)
	assert.Equal(t, "new", string(got))
}

func TestMemCrashRestoresRemovedFileWithoutSyncDir(t *testing.T) {
	m := disk.NewMem()
	require.NoError(t, disk.ReplaceFile(m, "gone", []byte("still here")))
	require.NoError(t, m.Remove("gone"))
	m.Crash()
	got, err := m.ReadFile("gone")
	require.NoError(t, err)
	assert.Equal(t, "still here", string(got))

	require.NoError(t, m.Remove("gone"))
	require.NoError(t, m.SyncDir("."))
	m.Crash()
	_, err = m.ReadFile("gone")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestMemCrashReleasesLocks(t *testing.T) {
	m := disk.NewMem()
	_, err := m.Lock("run.lock")
	require.NoError(t, err)
	m.Crash()
	l, err := m.Lock("run.lock")
	require.NoError(t, err)
	require.NoError(t, l.Unlock())
}

func TestMemSkipSync(t *testing.T) {
	t.Run("skipped SyncDir loses the entry", func(t *testing.T) {
		m := disk.NewMem()
		var seen []disk.SyncOp
		m.SkipSync(func(op disk.SyncOp) bool {
			seen = append(seen, op)
			return op.Dir && op.Name == "."
		})
		require.NoError(t, disk.ReplaceFile(m, "x", []byte("1")))
		assert.Equal(t, []disk.SyncOp{{Name: "x"}, {Dir: true, Name: "."}}, seen)
		m.Crash()
		_, err := m.ReadFile("x")
		assert.ErrorIs(t, err, fs.ErrNotExist)
	})
	t.Run("skipped WriteFile fsync loses the data", func(t *testing.T) {
		m := disk.NewMem()
		m.SkipSync(func(op disk.SyncOp) bool { return !op.Dir && op.Name == "w" })
		require.NoError(t, disk.ReplaceFile(m, "w", []byte("data")))
		require.NoError(t, disk.ReplaceFile(m, "v", []byte("data")))
		m.Crash()
		got, err := m.ReadFile("w")
		require.NoError(t, err, "the entry was synced")
		assert.Empty(t, got, "the data was not")
		got, err = m.ReadFile("v")
		require.NoError(t, err)
		assert.Equal(t, "data", string(got), "only the selected fsync is skipped")
	})
	t.Run("skipped File.Sync loses appended data", func(t *testing.T) {
		m := disk.NewMem()
		require.NoError(t, m.MkdirAll("l"))
		m.SkipSync(func(op disk.SyncOp) bool { return op == disk.SyncOp{Name: "l/log"} })
		f, err := m.OpenAppend("l/log")
		require.NoError(t, err)
		require.NoError(t, m.SyncDir("l"))
		_, err = f.Write([]byte("rec"))
		require.NoError(t, err)
		require.NoError(t, f.Sync(), "a skipped fsync still reports success")
		m.Crash()
		got, err := m.ReadFile("l/log")
		require.NoError(t, err)
		assert.Empty(t, got)
	})
	t.Run("removing the filter restores fsyncs", func(t *testing.T) {
		m := disk.NewMem()
		m.SkipSync(func(disk.SyncOp) bool { return true })
		m.SkipSync(nil)
		require.NoError(t, disk.ReplaceFile(m, "x", []byte("1")))
		m.Crash()
		got, err := m.ReadFile("x")
		require.NoError(t, err)
		assert.Equal(t, "1", string(got))
	})
}

func TestMemWithoutCrashKeepsEverything(t *testing.T) {
	m := disk.NewMem()
	require.NoError(t, m.WriteFile("a", []byte("x")))
	f, err := m.OpenAppend("b")
	require.NoError(t, err)
	_, err = f.Write([]byte("y"))
	require.NoError(t, err)
	got, err := m.ReadFile("a")
	require.NoError(t, err)
	assert.Equal(t, "x", string(got))
	got, err = m.ReadFile("b")
	require.NoError(t, err)
	assert.Equal(t, "y", string(got))
	es, err := m.ReadDir(".")
	require.NoError(t, err)
	assert.Equal(t, []string{"a", "b"}, names(t, es))
}

func TestMemRenameIsAtomicAcrossDirectories(t *testing.T) {
	for _, sync := range []string{"from", "to"} {
		t.Run("sync "+sync, func(t *testing.T) {
			m := disk.NewMem()
			require.NoError(t, m.MkdirAll("from"))
			require.NoError(t, m.MkdirAll("to"))
			require.NoError(t, disk.ReplaceFile(m, "from/f", []byte("x")))
			require.NoError(t, m.Rename("from/f", "to/g"))
			m.Crash()
			_, err := m.ReadFile("from/f")
			require.NoError(t, err, "an unsynced rename is undone")
			_, err = m.ReadFile("to/g")
			assert.ErrorIs(t, err, fs.ErrNotExist)

			require.NoError(t, m.Rename("from/f", "to/g"))
			require.NoError(t, m.SyncDir(sync))
			m.Crash()
			got, err := m.ReadFile("to/g")
			require.NoError(t, err, "fsync of either directory makes the whole rename durable")
			assert.Equal(t, "x", string(got))
			_, err = m.ReadFile("from/f")
			assert.ErrorIs(t, err, fs.ErrNotExist, "never in both places")
		})
	}
}

func TestMemCrashUndoesDirectoryRenameAndRemoveAll(t *testing.T) {
	m := disk.NewMem()
	require.NoError(t, m.MkdirAll("run/ledger"))
	require.NoError(t, disk.ReplaceFile(m, "run/ledger/events", []byte("history")))
	require.NoError(t, m.MkdirAll("archive"))
	require.NoError(t, m.Rename("run/ledger", "archive/ledger"))
	m.Crash()
	got, err := m.ReadFile("run/ledger/events")
	require.NoError(t, err)
	assert.Equal(t, "history", string(got))

	require.NoError(t, m.Rename("run/ledger", "archive/ledger"))
	require.NoError(t, m.SyncDir("archive"))
	m.Crash()
	got, err = m.ReadFile("archive/ledger/events")
	require.NoError(t, err)
	assert.Equal(t, "history", string(got))

	require.NoError(t, m.RemoveAll("archive"))
	m.Crash()
	_, err = m.ReadFile("archive/ledger/events")
	require.NoError(t, err, "a removal without SyncDir is undone")
	require.NoError(t, m.RemoveAll("archive"))
	require.NoError(t, m.SyncDir("."))
	m.Crash()
	_, err = m.Stat("archive")
	assert.ErrorIs(t, err, fs.ErrNotExist)
}

func TestMemOnOpSeesEveryMutation(t *testing.T) {
	m := disk.NewMem()
	var ops []string
	m.OnOp(func(op disk.MemOp) { ops = append(ops, op.Op+" "+op.Name) })
	require.NoError(t, m.MkdirAll("d"))
	require.NoError(t, disk.ReplaceFile(m, "d/f", []byte("x")))
	require.NoError(t, m.Rename("d/f", "d/g"))
	f, err := m.OpenAppend("d/g")
	require.NoError(t, err)
	_, err = f.Write([]byte("y"))
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	require.NoError(t, m.RemoveAll("d"))
	m.OnOp(nil)
	require.NoError(t, m.MkdirAll("e"))
	assert.Equal(t, []string{"mkdir d", "write d/f", "syncdir d", "rename d/f", "append d/g", "write d/g", "sync d/g", "removeall d"}, ops)
}
