package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/acr-project/acr/internal/disk"
)

// inflightSync is a directory fsync an effect started and left running
// (see DeferDirSyncs).
type inflightSync struct {
	dir  string
	done chan struct{}
	err  error
}

// DeferDirSyncs lets the last fsync of a file effect, its directory's,
// run on while Commit returns: the caller's readback and the cycle's
// computation then overlap the disk's wait instead of following it.
//
// Until Durable returns nil the effect is visible but not durable, so a
// caller that turns it on must call Durable before it records anything
// that claims the effect happened. The World itself waits for the fsync
// before it changes the disk again (a world file, a directory, the
// idempotency table, a program run) and before it closes, so that no
// later change can become durable ahead of the effect.
func (w *World) DeferDirSyncs(on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deferSyncs = on
}

// Durable returns once every effect Commit reported is durable: it waits
// for a directory fsync left running and reports its failure. A failed
// fsync leaves the directory's durability unknown, so the failure is
// reported again by every later call and every later change.
func (w *World) Durable() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.awaitDirSync()
}

// syncFound fsyncs the directory of a target found already holding an
// effect's after-hash. The effect happened, but perhaps in a process killed
// before its directory's fsync returned (with DeferDirSyncs, any time
// before Durable): its outcome is about to be recorded durably, so the
// rename must be durable first. A directory that no longer exists holds
// nothing to make durable.
func (w *World) syncFound(target string) error {
	err := w.syncDir(path.Dir(target))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	return err
}

// awaitDirSync waits for the directory fsync in flight, if any. The
// journal hears of the fsync here, on the World's own goroutine, once its
// success is known.
func (w *World) awaitDirSync() error {
	if s := w.inflight; s != nil {
		<-s.done
		w.inflight = nil
		if s.err != nil {
			w.syncErr = fmt.Errorf("fsync world dir %s: %w", s.dir, s.err)
		} else {
			w.journal.note(WorldOp{Op: "syncdir", Path: s.dir})
		}
	}
	return w.syncErr
}

// startDirSync fsyncs f, the directory dir, in the background; closeAfter says
// whether f is closed after (a subdirectory's handle, opened per fsync).
func (w *World) startDirSync(dir string, f *os.File, closeAfter bool) {
	s := &inflightSync{dir: dir, done: make(chan struct{})}
	w.inflight = s
	sync := w.syncDirFile
	go func() {
		defer close(s.done)
		if sync != nil {
			s.err = sync(f)
		} else {
			s.err = disk.Fsync(f)
		}
		if closeAfter {
			if err := f.Close(); s.err == nil {
				s.err = err
			}
		}
	}()
}
