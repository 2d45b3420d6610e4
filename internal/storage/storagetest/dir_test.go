package storagetest_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/storage/storagetest"
)

// TestDirectory runs the suite on the directory backend: dirstore's
// checkpoint store and run lock, the file ledger and dirstore's inbox, in
// a state directory.
func TestDirectory(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storagetest.Backend {
		dir := t.TempDir()
		b, err := openDir(t, dir, true)
		require.NoError(t, err)
		t.Cleanup(b.Close)
		return b
	})
}

// openDir opens the run in dir as one acr process does: the run lock
// first, then the store, the ledger (created for a fresh run) and the
// inbox.
func openDir(t testing.TB, dir string, create bool) (storagetest.Backend, error) {
	fsys, err := disk.OpenOSDir(dir)
	require.NoError(t, err)
	store := dirstore.NewStore(fsys)
	unlock, err := store.Lock()
	if err != nil {
		return storagetest.Backend{}, err
	}
	open := ledger.Open
	if create {
		open = ledger.Create
	}
	led, err := open(fsys)
	require.NoError(t, err)
	closed := false
	closeRun := func() {
		if !closed {
			closed = true
			led.Close()
			unlock.Unlock()
		}
	}
	ib := dirstore.Inbox{FS: fsys}
	return storagetest.Backend{
		RunID:       "run:conformance",
		Checkpoints: store,
		Ledger:      led,
		Inbox:       ib,
		Reopen:      func(t testing.TB) (storagetest.Backend, error) { return openDir(t, dir, false) },
		Close:       closeRun,
		Put:         ib.Write,
		PutRaw: func(id string, b []byte) error {
			if err := fsys.MkdirAll(dirstore.InboxDir); err != nil {
				return err
			}
			return fsys.WriteFile(dirstore.InboxDir+"/"+id+".json", b)
		},
		// A kill in the middle of the one write of a batch: the file
		// keeps the batch's first line and half of its second.
		CrashAppend: func(t testing.TB, events []event.Event) {
			require.GreaterOrEqual(t, len(events), 2)
			recs, err := led.Append(events)
			require.NoError(t, err)
			closeRun()
			require.NoError(t, os.Truncate(filepath.Join(dir, ledger.FileName), recs[1].Offset+recs[1].Length/2))
		},
		Features: storagetest.Features{Exclusive: true},
	}, nil
}

func BenchmarkDirectory(b *testing.B) {
	storagetest.Benchmark(b, func(tb testing.TB) storagetest.Backend {
		be, err := openDir(tb, tb.TempDir(), true)
		require.NoError(tb, err)
		tb.Cleanup(be.Close)
		return be
	})
}
