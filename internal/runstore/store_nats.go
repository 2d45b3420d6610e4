package runstore

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jsstore"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// ErrCreateOnce means init was asked to replace a run of a store that
// creates each run once (a JetStream store: there is nothing to archive
// the old run to).
var ErrCreateOnce = errors.New("--force replaces the run of a state directory; a run in a nats:// store is created once (pick another --run-id)")

// natsStore is a JetStream store as a Store (and a Pool): many runs, each
// with a lease, each host keeping copies of the worlds it runs under
// stateDir.
type natsStore struct {
	s        *jsstore.Store
	url      string
	stateDir string
}

func (s *natsStore) Name() string { return s.url }
func (s *natsStore) Close() error { s.s.Close(); return nil }

func (s *natsStore) Flags(id string) string { return "--store " + s.url + " --run-id " + id }

func (s *natsStore) Run(ctx context.Context, id string) (RunStore, error) {
	if id == "" {
		return nil, fmt.Errorf("--store %s: %w: give --run-id ID (or ACR_RUN_ID) to pick one (acr runs lists them)", s.url, ErrRunID)
	}
	m, err := OpenRemote(ctx, s.s, s.url, id, s.stateDir)
	if err != nil {
		return nil, err
	}
	return natsRun{m: m, ctx: ctx}, nil
}

// Runs lists the store's runs with their leases: three requests however
// many runs there are.
func (s *natsStore) Runs(ctx context.Context) ([]storage.RunStatus, error) {
	all, err := s.s.Runs(ctx)
	if err != nil {
		return nil, err
	}
	leases, err := s.s.Leases(ctx)
	if err != nil {
		return nil, err
	}
	for i := range all {
		if l, ok := leases[all[i].RunID]; ok {
			all[i].Lease = &l
		}
	}
	return all, nil
}

func (s *natsStore) WatchInbox(fn func(run string)) (func() error, error) { return s.s.WatchInbox(fn) }

// natsRun is one run of a JetStream store.
type natsRun struct {
	m   *Remote
	ctx context.Context
}

func (r natsRun) ID() string    { return r.m.Run.ID }
func (r natsRun) Where() string { return r.m.URL + " run " + r.m.Run.ID }

func (r natsRun) Init(ctx context.Context, in Inputs, force bool, opt Options) (Created, error) {
	if force {
		return Created{}, ErrCreateOnce
	}
	c, err := r.m.Init(ctx, in, opt)
	if err != nil {
		return c, err
	}
	c.World, _ = r.WorldPlace(in.Spec)
	return c, nil
}

func (r natsRun) Open(ctx context.Context, holder storage.Holder, opt Options) (*Run, error) {
	return r.m.Open(ctx, holder, opt)
}

// Recover walks the whole history (records and checkpoints are stored
// whole or not at all, so there is no manifest to rebuild and no torn
// line to repair), then opens the run under its lease, which rolls
// forward what the ledger holds beyond the checkpoint, and closes it.
func (r natsRun) Recover(ctx context.Context, holder storage.Holder, opt Options) (kernel.Recovery, *Rebuilt, kernel.EngineState, error) {
	h, err := r.m.History()
	if err != nil {
		return kernel.Recovery{}, nil, kernel.EngineState{}, err
	}
	rep, err := h.Verify(nil)
	if err != nil {
		return kernel.Recovery{}, nil, kernel.EngineState{}, err
	}
	if !rep.OK {
		return kernel.Recovery{}, nil, kernel.EngineState{}, rep.Damage
	}
	rec, st, err := openAndClose(ctx, r, holder, opt)
	return rec, nil, st, err
}

func (r natsRun) ReadState(context.Context) (kernel.EngineState, storage.Manifest, error) {
	return r.m.ReadState()
}

func (r natsRun) ReadSince(_ context.Context, m storage.Manifest) ([]event.Record, error) {
	return r.m.ReadSince(m)
}

func (r natsRun) Queue(context.Context) (Queue, error)     { return r.m.Queue(), nil }
func (r natsRun) History(context.Context) (History, error) { return r.m.History() }

func (r natsRun) Export(ctx context.Context, holder storage.Holder) (Exported, error) {
	return r.m.Export(ctx, holder)
}

func (r natsRun) Import(ctx context.Context, a archive.Run, st kernel.EngineState, holder storage.Holder, _ Options) (Imported, error) {
	return r.m.Import(ctx, a, st, holder)
}

// Preview computes the change on the store's world, read into a
// temporary copy: this host's own copy may be behind, or absent.
func (r natsRun) Preview(ctx context.Context, spec world.Spec, action world.Action, environ func(string) (string, bool)) (string, *world.GitTrial, error) {
	if spec.Git != nil {
		// The store holds nothing of a git world: this host's clone
		// shows the change, as of its last fetch.
		w, err := sandbox.OpenReadOnly(r.m.WorldDir, spec)
		if errors.Is(err, fs.ErrNotExist) {
			// This host has no clone yet: the branch is fetched for the
			// preview alone.
			return previewGitFresh(ctx, spec, action, environ)
		}
		if err != nil {
			return "", nil, fmt.Errorf("preview: open this host's clone of %s: %w", spec.Git.Describe(), err)
		}
		defer w.Close()
		return previewGit(ctx, w, spec, action, environ)
	}
	w, done, err := r.m.PreviewWorld(spec)
	if err != nil {
		return "", nil, err
	}
	defer done()
	text, err := w.Preview(ctx, action)
	return text, nil, err
}

func (r natsRun) Lease(ctx context.Context) (storage.LeaseStatus, bool, error) {
	return r.m.Store.LeaseOf(ctx, r.m.Run.ID)
}

func (r natsRun) BreakLease(ctx context.Context, l storage.LeaseStatus, by, reason string) (storage.Broken, error) {
	return r.m.Store.BreakLease(ctx, l, by, reason)
}

// WorldPlace is this host's copy of the store's world.
func (r natsRun) WorldPlace(spec world.Spec) (string, string) {
	dir := filepath.Join(r.m.WorldDir, filepath.FromSlash(sandbox.WorldDir))
	if spec.Git != nil {
		return dir, spec.Git.Describe() + ", one commit per effect (each host that runs it keeps a clone)"
	}
	return dir, "the environment's files, kept in the store " + r.m.URL + " (each host that runs it keeps a copy)"
}
