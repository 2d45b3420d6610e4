package runstore

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jsstore"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// Store is where runs are kept, chosen once from the --store URL
// (OpenStore): a state directory, which holds one run, or a JetStream
// store on a NATS server, which holds many. The commands hold a Store and
// never ask which one it is; what only some stores can do is asked of the
// interfaces below (Pool), and a store that cannot says so in its error.
type Store interface {
	// Name is the store as the user named it: "dir:PATH" or the URL.
	Name() string
	// Run is the handle of one run. A state directory holds one run: id
	// "" names it, and another id is checked against it when the run is
	// read. ctx bounds the run's requests to a server: cancelling it stops
	// retrying, never an attempt under way.
	Run(ctx context.Context, id string) (RunStore, error)
	// Runs lists the store's runs, oldest id first, each with the items
	// waiting in its inbox and who holds it (a lease) where the store has
	// leases. It takes no lock.
	Runs(ctx context.Context) ([]storage.RunStatus, error)
	// Close lets go of the store (its connection).
	Close() error
	// Flags are the command-line flags a later command needs to name run
	// id of this store ("" when it names the state directory's run by
	// default), for the "next:" hints.
	Flags(id string) string
}

// Pool is a store of many runs that workers share (acr worker): one
// whose runs any host can run, and whose inbox can be watched.
type Pool interface {
	Store
	// WatchInbox calls fn with the run id of every inbox item put from
	// now on; delivery is at most once (workers still poll). stop ends
	// the watch.
	WatchInbox(fn func(run string)) (stop func() error, err error)
}

// RunStore is one run of a store: every way the commands reach it.
type RunStore interface {
	// ID is the run's id as the handle was asked for ("" for a state
	// directory's own run).
	ID() string
	// Where names the run for messages: its directory, or the store and id.
	Where() string
	// Init creates the run from validated inputs. force replaces a run
	// that is there (a state directory keeps the old one under archive/);
	// a store that creates each run once refuses it (a usage error).
	Init(ctx context.Context, in Inputs, force bool, opt Options) (Created, error)
	// Open takes the run (its lock, or its lease for holder) and brings
	// it to a safe boundary, recovering an interrupted cycle.
	Open(ctx context.Context, holder storage.Holder, opt Options) (*Run, error)
	// Recover is the operator's recovery (acr recover): whatever the store
	// can rebuild without guessing (a state directory's lost manifest),
	// the whole history walked, then Open and Close. rebuilt is not nil
	// when a manifest was rebuilt.
	Recover(ctx context.Context, holder storage.Holder, opt Options) (rec kernel.Recovery, rebuilt *Rebuilt, st kernel.EngineState, err error)
	// ReadState loads the checkpoint without the lock or lease.
	ReadState(ctx context.Context) (kernel.EngineState, storage.Manifest, error)
	// ReadSince reads, without the lock, the records after the
	// checkpoint whose manifest is m.
	ReadSince(ctx context.Context, m storage.Manifest) ([]event.Record, error)
	// Queue is the run's inbox, without the lock.
	Queue(ctx context.Context) (Queue, error)
	// History is the run's ledger for its readers, without the lock.
	History(ctx context.Context) (History, error)
	// Export reads the run at rest, whole, for an archive.
	Export(ctx context.Context, holder storage.Holder) (Exported, error)
	// Import creates the run an archive holds (checked by CheckArchive)
	// where there is none.
	Import(ctx context.Context, r archive.Run, st kernel.EngineState, holder storage.Holder, opt Options) (Imported, error)
	// Preview says what action would change in the run's world as it is
	// now (a unified diff, or a command line), writing nothing. In a git
	// world a run_command is tried in a throwaway clone and its diff
	// shown; environ is what that command's environment is built from
	// (as Options.Environ), and the trial is returned too: an approval
	// carries it and binds to its tree (nil for any other preview).
	Preview(ctx context.Context, spec world.Spec, action world.Action, environ func(string) (string, bool)) (string, *world.GitTrial, error)
	// Lease returns who holds the run now; ok is false when nobody does.
	// A store without leases says so with ErrNoLeases.
	Lease(ctx context.Context) (l storage.LeaseStatus, ok bool, err error)
	// BreakLease ends the lease l, as a person saw it, and fences its
	// holder (see jsstore.Store.BreakLease).
	BreakLease(ctx context.Context, l storage.LeaseStatus, by, reason string) (storage.Broken, error)
	// WorldPlace is where this host sees the run's world (a directory),
	// and a phrase for people saying what it is.
	WorldPlace(spec world.Spec) (dir, what string)
}

// DefaultDir is the state directory a command uses when none is named.
const DefaultDir = "engine_state"

// ErrKeyConflict means a world's idempotency table remembers another
// effect under an action's key: the world and the ledger come from
// different copies of the run (sandbox.ErrKeyConflict).
var ErrKeyConflict = sandbox.ErrKeyConflict

// ErrNoLeases means a store has no leases to show or break: a state
// directory's lock is the operating system's, released when its holder
// exits.
var ErrNoLeases = errors.New("a state directory has no lease: its lock is the operating system's, released when its holder exits")

// ErrOneRun means a command needs a store of many runs (a worker) and was
// given a state directory, which holds one.
var ErrOneRun = errors.New("a state directory holds one run")

// ErrRunID means a store of many runs was asked for a run without an id.
var ErrRunID = errors.New("a store of many runs needs a run id")

// SettingError says that the way a store was set up cannot be (a replica
// count the servers cannot hold). Nothing was changed.
type SettingError struct {
	Setting string
	Err     error
}

func (e *SettingError) Error() string { return fmt.Sprintf("%s: %v", e.Setting, e.Err) }

// Unwrap returns the cause.
func (e *SettingError) Unwrap() error { return e.Err }

// OpenStore opens the store a URL names: "dir:PATH" (a state directory)
// or "nats://HOST:PORT[/PREFIX]" ("tls://" too, several servers
// comma-separated; a JetStream store, which is connected to now).
// stateDir is where this host keeps its copies of the worlds of a
// JetStream store's runs; for a state directory it is PATH.
func OpenStore(ctx context.Context, url string, c Connection, stateDir string) (Store, error) {
	switch {
	case strings.HasPrefix(url, "dir:"):
		return dirStore{dir: strings.TrimPrefix(url, "dir:")}, nil
	case strings.HasPrefix(url, "nats://"), strings.HasPrefix(url, "tls://"):
		s, err := DialStore(ctx, url, c)
		if errors.Is(err, jsstore.ErrReplicas) {
			return nil, &SettingError{Setting: "--nats-replicas", Err: err}
		}
		if err != nil {
			return nil, err
		}
		return &natsStore{s: s, url: url, stateDir: stateDir}, nil
	}
	return nil, fmt.Errorf("store %q: want dir:PATH, nats://HOST:PORT[/PREFIX] or tls://HOST:PORT[/PREFIX]", url)
}

// CheckStoreURL checks a store URL without opening it.
func CheckStoreURL(url string) error {
	switch {
	case strings.HasPrefix(url, "dir:"):
		if strings.TrimPrefix(url, "dir:") == "" {
			return errors.New("dir: names no directory (want dir:PATH)")
		}
		return nil
	case strings.HasPrefix(url, "nats://"), strings.HasPrefix(url, "tls://"):
		_, _, err := jsstore.ParseURL(url)
		return err
	}
	return fmt.Errorf("%q: want dir:PATH, nats://HOST:PORT[/PREFIX] or tls://HOST:PORT[/PREFIX]", url)
}

// WriteOutput writes a command's output file (an archive, a report)
// whole or not at all: a temporary file beside it, fsynced, renamed over
// it, and the directory fsynced, so that no reader ever sees half of it.
func WriteOutput(path string, data []byte) error {
	dir, err := disk.OpenOSDir(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("open the directory of %s: %w", path, err)
	}
	if err := disk.ReplaceFile(dir, filepath.Base(path), data); err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
