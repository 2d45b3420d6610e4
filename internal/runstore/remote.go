package runstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jsstore"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// RemoteWorlds is the directory, inside the local state directory, that
// holds this host's copies of the worlds of runs kept in a JetStream
// store: one directory per run, named by the run id's subject token.
const RemoteWorlds = "runs"

// Remote is a run in a JetStream store (a nats:// or tls:// store URL).
// Its checkpoint, ledger, inbox and world are on the server, so any host
// can read it, wake it, answer it, stop it and run its cycles. A host
// that runs its cycles (run, step, recover, worker) keeps a copy of its
// world in a local directory (WorldDir), brought to the store's world each
// time the run is opened, and the sandbox's idempotency table beside it
// (only commands, which such runs do not run, record anything there).
type Remote struct {
	URL      string
	Store    *jsstore.Store
	Run      *jsstore.Run
	WorldDir string
	owned    bool
}

// Unavailable reports whether err means the store could not be reached or
// did not answer (exit 74): the outcome of a write that failed with it is
// unknown, and a reopened run reads what was stored.
func Unavailable(err error) bool { return errors.Is(err, storage.ErrUnavailable) }

// NoRemoteRunError means a JetStream store has no run of that id (no
// committed checkpoint). It matches storage.ErrNoRun.
type NoRemoteRunError struct{ Store, Run string }

func (e *NoRemoteRunError) Error() string {
	return fmt.Sprintf("no run %q in the store %s", e.Run, e.Store)
}

// Unwrap lets errors.Is(err, storage.ErrNoRun) match.
func (e *NoRemoteRunError) Unwrap() error { return storage.ErrNoRun }

// ErrNoWorld means the store holds no world for a run, and this host has
// no copy of it to move there: a run created by an earlier release, which
// kept the world on the host that ran acr init. Opening the run there once
// moves its world into the store; until then other hosts can read, wake,
// answer and stop the run, not run its cycles.
var ErrNoWorld = errors.New("the store holds no world for the run, and this host has no copy of it")

// ErrRootWorld means an environment whose world is a real directory
// (root) was given for a run in a JetStream store, which holds runs whose
// world is the environment's own files.
var ErrRootWorld = errors.New("an environment with a root directory is bound to the host that sees it; a nats:// store holds runs whose world is the environment's files")

// Connection is how acr connects to a JetStream store.
type Connection struct {
	// Creds is a NATS credentials file, if not empty.
	Creds string
	// Replicas is the replica count of the store's streams and buckets,
	// set when they are created or differ; 0 keeps what they have (1 for
	// a new store).
	Replicas int
	// Patience is how long a request to the store keeps trying while the
	// server does not answer (a paused or restarting server, a lost
	// connection, a leader election) before it fails with ErrUnavailable:
	// a one-shot command's bound, or a worker's outage limit. 0 tries
	// once.
	Patience time.Duration
	// Observe, when set, hears every request to the server (metrics).
	Observe func(jetstream.Call)
	// InboxRecheck is how long a run's watched inbox trusts its last read
	// when it heard nothing (jsstore.Options.InboxRecheck; 0: 1 s).
	InboxRecheck time.Duration
}

// Dial connects to the JetStream store at url and names run id in it;
// stateDir is the local directory whose runs/ holds this host's copies of
// the store's worlds. Nothing is read yet. Close closes the connection.
func Dial(ctx context.Context, url string, c Connection, runID, stateDir string) (*Remote, error) {
	s, err := DialStore(ctx, url, c)
	if err != nil {
		return nil, err
	}
	m, err := OpenRemote(ctx, s, url, runID, stateDir)
	if err != nil {
		s.Close()
		return nil, err
	}
	m.owned = true
	return m, nil
}

// DialStore connects to the JetStream store at url, for the commands that
// work on many of its runs (acr runs, acr worker). Close closes the
// connection.
func DialStore(ctx context.Context, url string, c Connection) (*jsstore.Store, error) {
	if _, _, err := jsstore.ParseURL(url); err != nil {
		return nil, err
	}
	// The client reconnects for as long as it lives: how long a command
	// waits for the server is the requests' patience, not the client's.
	// A server not there yet at the start is waited for the same way.
	opts := []nats.Option{nats.Name("acr"), nats.MaxReconnects(-1), nats.ReconnectWait(250 * time.Millisecond),
		nats.ReconnectJitter(250*time.Millisecond, time.Second)}
	if c.Patience > 0 {
		opts = append(opts, nats.RetryOnFailedConnect(true))
	}
	if c.Creds != "" {
		if _, err := os.Stat(c.Creds); err != nil {
			return nil, fmt.Errorf("--nats-creds: %w", err)
		}
		opts = append(opts, nats.UserCredentials(c.Creds))
	}
	s, err := jsstore.Dial(ctx, url, jsstore.Options{Replicas: c.Replicas, Patience: c.Patience, Observe: c.Observe, InboxRecheck: c.InboxRecheck}, opts...)
	if err != nil {
		return nil, fmt.Errorf("connect to the store %s: %w", url, err)
	}
	return s, nil
}

// OpenRemote names run id in an open store (a worker shares one
// connection among its runs); Close leaves the connection open.
func OpenRemote(ctx context.Context, s *jsstore.Store, url, runID, stateDir string) (*Remote, error) {
	r, err := s.Run(ctx, runID)
	if err != nil {
		return nil, err
	}
	return &Remote{URL: url, Store: s, Run: r,
		WorldDir: filepath.Join(stateDir, RemoteWorlds, jetstream.Token(runID))}, nil
}

// Close closes the connection if Dial opened it.
func (m *Remote) Close() {
	if m.owned {
		m.Store.Close()
	}
}

// ReadState loads the run's checkpoint, without the lease.
func (m *Remote) ReadState() (kernel.EngineState, storage.Manifest, error) {
	snap, err := m.load()
	if err != nil {
		return kernel.EngineState{}, storage.Manifest{}, err
	}
	st, err := kernel.Decode(snap.Files)
	return st, snap.Manifest, err
}

func (m *Remote) load() (storage.Snapshot, error) {
	snap, err := m.Run.Checkpoints().Load()
	if errors.Is(err, storage.ErrNoRun) {
		return snap, m.noRun()
	}
	return snap, err
}

func (m *Remote) noRun() error { return &NoRemoteRunError{Store: m.URL, Run: m.Run.ID} }

// ReadSince reads, without the lease, the ledger records appended after
// the checkpoint whose manifest is m (see the directory's ReadSince).
func (m *Remote) ReadSince(man storage.Manifest) ([]event.Record, error) {
	led, err := m.Run.OpenLedger()
	if err != nil {
		return nil, err
	}
	return led.After(man.LedgerFrontier)
}

// Queue returns the run's inbox, without the lease.
func (m *Remote) Queue() Queue { return m.Run.Inbox() }

// History reads the run's ledger (see jsstore.History).
func (m *Remote) History() (History, error) { return m.Run.History() }

// Init creates the run: its world in the store (and this host's copy of
// it in WorldDir), its first records and its first checkpoint. A run that
// exists is ErrRunExists; the ledger records of an init cut off before its
// checkpoint make it a damaged run (also refused). The run id is the
// Remote's. An environment the store cannot hold is refused before
// anything is written: a root directory (ErrRootWorld), fixes that run
// commands (ErrCommandWorld), a file larger than one message of the store
// (a *ValidationError naming it).
func (m *Remote) Init(ctx context.Context, in Inputs, opt Options) (Created, error) {
	if in.Spec.Root != "" {
		return Created{}, fmt.Errorf("--env %s: %w", in.EnvFile, ErrRootWorld)
	}
	// A git world is not bound to a host: its remote is the truth, and
	// nothing of it goes into the store (its commands' effects are
	// commits, found on the remote by their keys).
	git := in.Spec.Git != nil
	if !git && commandFix(in.Spec) {
		return Created{}, fmt.Errorf("--env %s: %w", in.EnvFile, ErrCommandWorld)
	}
	if err := in.InForce(opt.Clock.Now()); err != nil {
		return Created{}, err
	}
	sw := m.Run.World()
	if err := checkRoom(in, sw); err != nil {
		return Created{}, err
	}
	where := m.URL + " run " + m.Run.ID
	if _, err := m.Run.Checkpoints().Load(); err == nil {
		return Created{}, &RunExistsError{Dir: where}
	} else if !errors.Is(err, storage.ErrNoRun) {
		return Created{}, err
	}
	led, err := m.Run.CreateLedger()
	if errors.Is(err, ledger.ErrExists) {
		return Created{}, &RunExistsError{Dir: where, Damaged: []string{"ledger records"}}
	}
	if err != nil {
		return Created{}, err
	}
	wfs, unlock, err := lockCache(m.WorldDir)
	if err != nil {
		return Created{}, fmt.Errorf("init: %w", err)
	}
	defer unlock.Unlock()
	// A copy left by an init that never committed its checkpoint is not
	// a run's: start it afresh.
	if err := os.RemoveAll(filepath.Join(m.WorldDir, filepath.FromSlash(sandbox.Dir))); err != nil {
		return Created{}, fmt.Errorf("init: %w", err)
	}
	w, err := sandbox.Create(m.WorldDir, in.Spec, wfs)
	if err != nil {
		return Created{}, fmt.Errorf("create sandbox: %w", err)
	}
	defer w.Close()
	w.Environ = opt.Environ
	var observer kernel.World = w
	if git {
		gw, err := openGitWorld(ctx, w, in.Spec, opt.Environ, nil)
		if err != nil {
			return Created{}, fmt.Errorf("git world: %w", err)
		}
		observer = gw
	}
	obs, err := observer.Observe(ctx)
	if err != nil {
		return Created{}, fmt.Errorf("first observation: %w", err)
	}
	st, evs, err := kernel.Init(kernel.Bootstrap{RunID: m.Run.ID, Now: opt.Clock.Now(), Goal: in.Goal, Contract: in.Contract, Spec: in.Spec, Observation: obs})
	if err != nil {
		return Created{}, err
	}
	// The records first: their append expects an empty ledger, so of two
	// inits of one run id only one gets past it to store a world.
	if _, err := led.Append(evs); err != nil {
		return Created{}, err
	}
	if !git {
		files := make(map[string][]byte, len(in.Spec.Files))
		for p, c := range in.Spec.Files {
			files[p] = []byte(c)
		}
		if err := sw.Seal(files, led.Frontier().Offset); err != nil {
			return Created{}, fmt.Errorf("init: %w", err)
		}
	}
	enc, err := st.Encode()
	if err != nil {
		return Created{}, err
	}
	if _, err := m.Run.Checkpoints().Commit(storage.Commit{RunID: m.Run.ID, Revision: opt.Revision, Frontier: led.Frontier(), Files: enc}); err != nil {
		return Created{}, err
	}
	return Created{State: st}, nil
}

// checkRoom refuses an initial world with a file larger than one message
// of the store.
func checkRoom(in Inputs, sw *jsstore.World) error {
	for _, p := range slices.Sorted(maps.Keys(in.Spec.Files)) {
		if size, room := len(in.Spec.Files[p]), sw.Room(p); size > room {
			file := in.EnvFile
			if file == "" {
				file = "environment"
			}
			return &ValidationError{File: file, Field: "files." + p, Err: fmt.Errorf(
				"%d bytes: a run in a nats:// store keeps each file of its world in one message, which holds at most %d bytes of this file (the server's max_payload, 1 MiB unless configured, less headers); keep the file smaller or keep the run in a state directory", size, room)}
		}
	}
	return nil
}

// Open takes the run's lease for holder, keeps it, opens the run's parts
// and recovers it to a safe boundary, as Open does for a directory; the
// lease replaces the lock (storage.ErrBusy while another holds it). The
// run's Held context is cancelled if the lease is lost: run the driver
// under it. Close writes what is owed and releases the lease. ctx bounds
// the lease: when it ends, the lease is no longer renewed.
func (m *Remote) Open(ctx context.Context, holder storage.Holder, opt Options) (*Run, error) {
	l, err := m.Store.Acquire(ctx, m.Run.ID, holder)
	if err != nil {
		return nil, fmt.Errorf("run %s: %w", m.Run.ID, err)
	}
	held, stop := l.Keep(ctx)
	r := &Run{Dir: m.WorldDir, Held: held, release: func() error {
		stop()
		return l.Release(context.WithoutCancel(ctx))
	}}
	if err := m.open(ctx, r, opt); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (m *Remote) open(ctx context.Context, r *Run, opt Options) error {
	// The driver commits through the handle that loaded the checkpoint:
	// it knows the generation's last part, so the first commit reads
	// nothing back.
	cp := m.Run.Checkpoints()
	snap, err := cp.Load()
	if errors.Is(err, storage.ErrNoRun) {
		return m.noRun()
	}
	if err != nil {
		return err
	}
	spec, err := kernel.DecodeSpec(snap.Files)
	if err != nil {
		return err
	}
	if spec.Root != "" {
		return ErrRootWorld
	}
	led, err := m.Run.OpenLedger()
	if err != nil {
		return err
	}
	wfs, unlock, err := lockCache(m.WorldDir)
	if err != nil {
		return err
	}
	r.unlock = unlock
	// The driver's inbox hears what is put in it, so that a cycle reads
	// the inbox from the server only when something came (watched before
	// its first read, so nothing put in between is missed).
	ib := m.Run.Inbox()
	unwatch, err := ib.Watch()
	if err != nil {
		return err
	}
	release := r.release
	r.release = func() error {
		unwatch()
		return release()
	}
	if spec.Git != nil {
		return m.openGit(ctx, r, opt, snap, spec, wfs, led, ib)
	}
	sw := m.Run.World()
	files, err := sw.Load()
	switch {
	case errors.Is(err, jsstore.ErrNoWorld):
		files, err = m.moveWorld(spec, wfs, sw, led.Frontier().Offset)
	case err == nil:
		err = sw.Take(led.Frontier().Offset)
	}
	if err != nil {
		return err
	}
	w, err := openCache(m.WorldDir, spec, wfs)
	if err != nil {
		return err
	}
	r.World = w
	if _, err := w.Mirror(files); err != nil {
		return fmt.Errorf("bring the copy of the world of %s to the store's: %w", m.Run.ID, err)
	}
	r.stored = func(w *sandbox.World) kernel.World {
		return newStoredWorld(w, sw, files, func() int64 { return led.Frontier().Offset }, opt.Failpoint)
	}
	if err := dropConsumed(snap, ib); err != nil {
		return err
	}
	return r.wire(ctx, opt, snap, driverParts{checkpoints: cp, ledger: led, inbox: ib, joint: jsstore.Joint{Ledger: led, Checkpoints: cp}})
}

// openGit opens a run whose world is a git repository's branch: this
// host's clone of it (made empty when the host has none, and fetched by
// the first observation) is its cache, the store holds nothing of it,
// and its key table is emptied as on a state directory (the remote
// decides whether an effect happened).
func (m *Remote) openGit(ctx context.Context, r *Run, opt Options, snap storage.Snapshot, spec world.Spec, wfs disk.FS, led *jsstore.Ledger, ib *jsstore.Inbox) error {
	if _, err := os.Lstat(filepath.Join(m.WorldDir, filepath.FromSlash(sandbox.WorldDir))); err == nil {
		if err := resetKeys(m.WorldDir); err != nil {
			return err
		}
	}
	w, err := openCache(m.WorldDir, spec, wfs)
	if err != nil {
		return err
	}
	r.World, r.spec = w, spec
	if err := dropConsumed(snap, ib); err != nil {
		return err
	}
	cp := m.Run.Checkpoints()
	return r.wire(ctx, opt, snap, driverParts{checkpoints: cp, ledger: led, inbox: ib, joint: jsstore.Joint{Ledger: led, Checkpoints: cp}})
}

// moveWorld puts the world of a run that an earlier release created,
// which kept it on the host that ran acr init, into the store, from this
// host's copy; ErrNoWorld if this host has none. ledgerAt guards the
// upload: a process that appended to the run since makes it a conflict.
func (m *Remote) moveWorld(spec world.Spec, wfs disk.FS, sw *jsstore.World, ledgerAt int64) (map[string][]byte, error) {
	if _, err := os.Stat(filepath.Join(m.WorldDir, filepath.FromSlash(sandbox.WorldDir))); errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("%w: run %s (created by an earlier acr, which kept its world on the host that ran acr init: open it once there, with acr run, to move its world into the store)", ErrNoWorld, m.Run.ID)
	}
	w, err := sandbox.Open(m.WorldDir, spec, wfs)
	if err != nil {
		return nil, fmt.Errorf("open world copy: %w", err)
	}
	files, err := w.Files()
	w.Close()
	if err != nil {
		return nil, err
	}
	if err := sw.Seal(files, ledgerAt); err != nil {
		return nil, fmt.Errorf("move the world of %s into the store: %w", m.Run.ID, err)
	}
	return files, nil
}

// PreviewWorld returns a copy of the run's world as the store holds it
// now, for showing what a pending action would change (acr approve, acr
// status): this host's own copy may be behind, or absent. The copy is
// made in a temporary directory, without the lease and without taking the
// world; done removes it. spec is the run's pinned environment.
func (m *Remote) PreviewWorld(spec world.Spec) (w *sandbox.World, done func(), err error) {
	files, err := m.Run.World().Load()
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp("", "acr-world-")
	if err != nil {
		return nil, nil, fmt.Errorf("preview world: %w", err)
	}
	remove := func() { _ = os.RemoveAll(tmp) }
	defer func() {
		if err != nil {
			remove()
		}
	}()
	fsys, err := disk.OpenOSDir(tmp)
	if err != nil {
		return nil, nil, fmt.Errorf("preview world: %w", err)
	}
	copySpec := spec
	copySpec.Root, copySpec.Files = "", make(map[string]string, len(files))
	for p, b := range files {
		copySpec.Files[p] = string(b)
	}
	if w, err = sandbox.Create(tmp, copySpec, fsys); err != nil {
		return nil, nil, fmt.Errorf("preview world: %w", err)
	}
	return w, func() { _ = w.Close(); remove() }, nil
}

// dropConsumed deletes the inbox items that the checkpoint records as
// consumed (the run state's inbox_seen): a process killed between a
// checkpoint and its deletion of the items that checkpoint consumed
// leaves them in the stream, where no cycle will consume them again, and
// the run would be due (inbox not empty) at every worker poll forever.
// A directory inbox keeps such files harmlessly (acr runs does not count
// them); a stream's count is the server's.
func dropConsumed(snap storage.Snapshot, ib *jsstore.Inbox) error {
	st, err := kernel.DecodeLight(snap.Files)
	if err != nil || len(st.Run.InboxSeen) == 0 {
		return err
	}
	items, _, err := ib.List()
	if err != nil {
		return err
	}
	var left []string
	for _, it := range items {
		if slices.Contains(st.Run.InboxSeen, it.ID) {
			left = append(left, it.ID)
		}
	}
	if len(left) == 0 {
		return nil
	}
	return ib.Consumed(left)
}
