package runstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
)

// failingFS makes every write fail with errno once armed, the way a full
// disk (ENOSPC) or a read-only remount (EROFS) does.
type failingFS struct {
	*disk.Mem
	armed *bool
	errno syscall.Errno
}

func (f failingFS) fail(op, name string) error {
	return &fs.PathError{Op: op, Path: name, Err: f.errno}
}

func (f failingFS) WriteFile(name string, data []byte) error {
	if *f.armed {
		return f.fail("write", name)
	}
	return f.Mem.WriteFile(name, data)
}

func (f failingFS) OpenAppend(name string) (disk.File, error) {
	file, err := f.Mem.OpenAppend(name)
	if err != nil {
		return nil, err
	}
	return failingFile{File: file, fs: f, name: name}, nil
}

type failingFile struct {
	disk.File
	fs   failingFS
	name string
}

func (f failingFile) Write(p []byte) (int, error) {
	if *f.fs.armed {
		return 0, f.fs.fail("write", f.name)
	}
	return f.File.Write(p)
}

// TestWriteFailureLeavesOldCheckpoint: when the disk fills up or turns
// read-only mid-run, the invocation fails with the errno (exit 74 in the
// CLI) and the last checkpoint still loads and runs on afterwards.
func TestWriteFailureLeavesOldCheckpoint(t *testing.T) {
	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EROFS} {
		t.Run(errno.Error(), func(t *testing.T) {
			mem := disk.NewMem()
			armed := false
			fsys := failingFS{Mem: mem, armed: &armed, errno: errno}
			root := t.TempDir()
			opt := Options{Clock: frozen{}, Revision: "t", CheckpointEvery: 1}
			_, err := InitOn(t.Context(), fsys, root, powerInputs(), "run:full", opt)
			require.NoError(t, err)

			r, err := OpenOn(t.Context(), fsys, root, opt, nil)
			require.NoError(t, err)
			_, err = r.Driver.Step(t.Context())
			require.NoError(t, err)
			before, err := r.Store.Load()
			require.NoError(t, err)
			armed = true
			_, err = r.Driver.Step(t.Context())
			require.Error(t, err)
			assert.True(t, errors.Is(err, errno), "want %v in %v", errno, err)
			r.Abandon()

			armed = false
			r, err = OpenOn(t.Context(), fsys, root, opt, nil)
			require.NoError(t, err, "the old checkpoint must still load")
			after, err := r.Store.Load()
			require.NoError(t, err)
			assert.GreaterOrEqual(t, after.Manifest.CycleSeq, before.Manifest.CycleSeq)
			rep, err := r.Driver.Run(context.Background(), 100, nil)
			require.NoError(t, err, fmt.Sprint(rep))
			require.NoError(t, r.Close())
			assert.Equal(t, "IDLE", rep.FinalDisposition)
		})
	}
}
