package runstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// The world of a run kept in a JetStream store lives in the store
// (jsstore.World); each host that runs the run's cycles keeps a copy of
// it, its cache, in <state-dir>/runs/<run>/sandbox/world. The cache is
// brought to the store's world whenever the run is opened for cycles, and
// every effect applied to it is put in the store before the effect counts
// as done.

// StageAfterWorldPut is the failpoint right after an effect's file was
// put in the store's world, before the ledger records the outcome: the
// world of truth has the effect, the ledger does not say so yet.
const StageAfterWorldPut = "after-world-put"

// cacheLock is the lock file in a run's cache directory: one process of
// a host runs a run's cycles at a time on that host's copy of its world
// (the lease keeps other hosts' processes out of the run as a whole).
const cacheLock = "lock"

// ErrCommandWorld means an environment whose fixes run commands was given
// for a run in a JetStream store: a command's effect is a set of files it
// changes as it likes, which the store cannot take as one change, and its
// record of having started is kept only on the host that ran it.
var ErrCommandWorld = errors.New("an environment whose fixes run commands (run_command) is bound to the host that keeps its records; a nats:// store holds runs whose effects are changes of one file")

// commandFix reports whether spec declares a fix that runs a command
// (one of a built-in Command operation: a run in a store has no others).
func commandFix(spec world.Spec) bool {
	for _, c := range spec.Checks {
		for _, f := range c.Fixes {
			if (world.Catalog{}).Of(f.Operation).Command {
				return true
			}
		}
	}
	return false
}

// lockCache makes the directory of a run's cache, if needed, and takes
// its lock (storage.ErrBusy, wrapped, if another process of this host
// holds it).
func lockCache(dir string) (*disk.OSDir, disk.Unlocker, error) {
	fsys, err := disk.CreateOSDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("world copy %s: %w", dir, err)
	}
	u, err := fsys.Lock(cacheLock)
	if errors.Is(err, disk.ErrLocked) {
		return nil, nil, fmt.Errorf("world copy %s is in use by another acr process on this host: %w", dir, storage.ErrBusy)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("world copy %s: %w", dir, err)
	}
	return fsys, u, nil
}

// openCache opens the sandbox copy in dir, creating it empty when this
// host has none.
func openCache(dir string, spec world.Spec, fsys disk.FS) (*sandbox.World, error) {
	_, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(sandbox.WorldDir)))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		empty := spec
		empty.Files = nil
		w, err := sandbox.Create(dir, empty, fsys)
		if err != nil {
			return nil, fmt.Errorf("create world copy: %w", err)
		}
		return w, nil
	case err != nil:
		return nil, fmt.Errorf("open world copy: %w", err)
	}
	w, err := sandbox.Open(dir, spec, fsys)
	if err != nil {
		return nil, fmt.Errorf("open world copy: %w", err)
	}
	return w, nil
}

// worldStore is what a stored world needs from the store: a file put or
// removed, guarded by the ledger end that authorises it, and how large a
// file the store keeps. jsstore.World is the one.
type worldStore interface {
	Put(path string, data []byte, ledgerAt int64) error
	Remove(path string, ledgerAt int64) error
	Room(path string) int
}

// storedWorld is the world of a run kept in a JetStream store as the
// driver sees it: the host's copy of it (a sandbox copy), whose every
// change is put in the store before Commit returns it, so that an effect
// counts as done (its outcome is recorded) only once the world of truth
// has it.
//
// A crash between the copy's change and the store's leaves the store
// without the effect; the next process to open the run, on any host,
// brings its copy back to the store's world first, so recovery finds the
// target's before-hash and applies the effect once. A crash after the
// store's change leaves the after-hash there, and recovery records the
// effect as done without applying it again.
type storedWorld struct {
	*sandbox.World
	store worldStore
	// ledgerAt is the stream sequence of the run's last ledger record:
	// the intent of the effect being committed, whose authority a put
	// claims (the store refuses it once the ledger moved on).
	ledgerAt  func() int64
	failpoint func(string)

	mu sync.Mutex
	// known is what the store holds, file by file, as this process last
	// read or wrote it.
	known map[string]codec.Fingerprint
}

var _ kernel.World = (*storedWorld)(nil)

func newStoredWorld(w *sandbox.World, store worldStore, files map[string][]byte, ledgerAt func() int64, failpoint func(string)) *storedWorld {
	known := make(map[string]codec.Fingerprint, len(files))
	for p, b := range files {
		known[p] = codec.FingerprintOf(b)
	}
	if failpoint == nil {
		failpoint = func(string) {}
	}
	return &storedWorld{World: w, store: store, known: known, ledgerAt: ledgerAt, failpoint: failpoint}
}

// Prepare implements kernel.World. An effect the store could not keep is
// refused before it is made durable, as confinement refuses a path (the
// driver records the action as blocked): a command (its effect is a set
// of files) and a write that leaves its file larger than one message of
// the store.
func (s *storedWorld) Prepare(ctx context.Context, key string, a world.Action) (world.Intent, *world.Outcome, error) {
	if a.OnSet() {
		return world.Intent{}, nil, fmt.Errorf("prepare %s: %w: %s: a run in a nats:// store changes its world one file at a time; it runs no commands", key, sandbox.ErrConfinement, a.Operation)
	}
	in, prior, err := s.World.Prepare(ctx, key, a)
	if err != nil || prior != nil || !in.Changes {
		return in, prior, err
	}
	if size, ok := s.World.PlannedSize(key); ok {
		if room := s.store.Room(in.Planned.Target); size > int64(room) {
			return world.Intent{}, nil, fmt.Errorf("prepare %s: %w: %q would hold %d bytes; a run in a nats:// store keeps a file in one message, at most %d bytes (the server's max_payload less headers)",
				key, sandbox.ErrConfinement, in.Planned.Target, size, room)
		}
	}
	return in, nil, nil
}

// Commit implements kernel.World: the sandbox commits the effect to the
// host's copy at most once, then the changed file is put in the store,
// guarded by the ledger's end (the effect's intent).
// A put the store refuses (another process appended to the run's ledger
// since the intent) is an error
// wrapping storage.ErrConflict: the effect does not count as done here,
// and whoever holds the run now decides it from the store's world.
func (s *storedWorld) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	if a.OnSet() {
		return world.Outcome{}, false, fmt.Errorf("commit %s: %s: a run in a nats:// store runs no commands", key, a.Operation)
	}
	out, reused, err := s.World.Commit(ctx, key, a, in)
	if err != nil {
		return out, reused, err
	}
	if in.Changes {
		if err := s.push(in.Planned.Target, in.Planned.AfterSHA256); err != nil {
			return world.Outcome{}, false, fmt.Errorf("commit %s: %w", key, err)
		}
	}
	return out, reused, nil
}

// CommitWhen is Commit once ready has returned (the intent is durable).
// It shadows the sandbox's own CommitWhen, which a driver that gates its
// effects would otherwise reach through the embedded copy: that would
// change the copy and never put the change in the store.
func (s *storedWorld) CommitWhen(ctx context.Context, key string, a world.Action, in world.Intent, ready func() error) (world.Outcome, bool, error) {
	if err := ready(); err != nil {
		return world.Outcome{}, false, err
	}
	return s.Commit(ctx, key, a, in)
}

// push puts the host's copy of target in the store, unless the store
// already holds it. after is what the effect left there; the copy must
// hold it, or something besides this process changed the copy.
func (s *storedWorld) push(target string, after codec.Fingerprint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	data, exists, err := s.World.ReadFile(target)
	if err != nil {
		return fmt.Errorf("read %s back for the store: %w", target, err)
	}
	now := codec.Fingerprint("")
	if exists {
		now = codec.FingerprintOf(data)
	}
	if now != after {
		return fmt.Errorf("the copy of the world on this host changed under the run: %s holds %s, the effect left %s", target, describeHash(now), describeHash(after))
	}
	have, stored := s.known[target]
	if exists == stored && have == now {
		return nil
	}
	at := s.ledgerAt()
	if exists {
		err = s.store.Put(target, data, at)
	} else {
		err = s.store.Remove(target, at)
	}
	if err != nil {
		return fmt.Errorf("put %s in the store: %w", target, err)
	}
	if exists {
		s.known[target] = now
	} else {
		delete(s.known, target)
	}
	s.failpoint(StageAfterWorldPut)
	return nil
}

func describeHash(f codec.Fingerprint) string {
	if f == "" {
		return "(absent)"
	}
	return string(f)
}
