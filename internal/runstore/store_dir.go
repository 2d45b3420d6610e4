package runstore

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// dirStore is a state directory as a Store: one run, its lock the
// operating system's.
type dirStore struct{ dir string }

func (s dirStore) Name() string { return "dir:" + s.dir }
func (s dirStore) Close() error { return nil }

// Flags name the directory, unless it is the default one.
func (s dirStore) Flags(string) string {
	if filepath.Clean(s.dir) == DefaultDir {
		return ""
	}
	return "--state-dir " + s.dir
}

func (s dirStore) Run(_ context.Context, id string) (RunStore, error) {
	return dirRun{dir: s.dir, id: id}, nil
}

// Runs lists the directory's run, with the inbox items no cycle has
// consumed yet.
func (s dirStore) Runs(context.Context) ([]storage.RunStatus, error) {
	st, m, err := ReadState(s.dir)
	if err != nil {
		return nil, err
	}
	q, err := OpenQueue(s.dir)
	if err != nil {
		return nil, err
	}
	items, _, err := q.List()
	if err != nil {
		return nil, err
	}
	r := st.Run
	n := uint64(0)
	for _, it := range items {
		if !slices.Contains(r.InboxSeen, it.ID) && !slices.Contains(r.AnswersConsumed, it.ID) {
			n++
		}
	}
	row := storage.RunStatus{RunID: r.RunID, Generation: m.Generation, CycleSeq: r.CycleSeq, RunStatus: string(r.Status),
		Disposition: r.LoopDisposition.String(), UpdatedAt: r.UpdatedAt, Label: st.Spec.Label, Inbox: n}
	if r.NextWake != nil {
		row.NextWake = r.NextWake.At
	}
	return []storage.RunStatus{row}, nil
}

// dirRun is the run of a state directory.
type dirRun struct{ dir, id string }

// RunIDError says that a state directory's run is not the one asked for
// (--run-id).
type RunIDError struct{ Asked, Found, Dir string }

func (e *RunIDError) Error() string {
	return fmt.Sprintf("--run-id %s: the run in %s is %s", e.Asked, e.Dir, e.Found)
}

// check refuses a run that is not the one asked for, if one was.
func (r dirRun) check(st kernel.EngineState) error {
	if r.id != "" && st.Run.RunID != r.id {
		return &RunIDError{Asked: r.id, Found: st.Run.RunID, Dir: r.dir}
	}
	return nil
}

// checkDir reads the directory's checkpoint to check the run's id, when
// one was asked for.
func (r dirRun) checkDir() error {
	if r.id == "" {
		return nil
	}
	st, _, err := ReadState(r.dir)
	if err != nil {
		return err
	}
	return r.check(st)
}

func (r dirRun) ID() string    { return r.id }
func (r dirRun) Where() string { return r.dir }

func (r dirRun) Init(ctx context.Context, in Inputs, force bool, opt Options) (Created, error) {
	c, err := Init(ctx, r.dir, in, r.id, force, opt)
	if err != nil {
		return c, err
	}
	c.World, _ = r.WorldPlace(in.Spec)
	return c, nil
}

func (r dirRun) Open(ctx context.Context, _ storage.Holder, opt Options) (*Run, error) {
	run, err := Open(ctx, r.dir, opt)
	if err != nil {
		return nil, err
	}
	if err := r.check(run.Driver.State()); err != nil {
		run.Abandon()
		return nil, err
	}
	return run, nil
}

// Recover rebuilds a lost manifest when the checkpoint files and the
// ledger allow it without guessing, walks the whole ledger (a torn tail
// is not damage: recovery repairs it), then opens the run, which
// recovers it, and closes it.
func (r dirRun) Recover(ctx context.Context, holder storage.Holder, opt Options) (kernel.Recovery, *Rebuilt, kernel.EngineState, error) {
	rebuilt, err := RebuildManifest(r.dir, opt)
	if err != nil {
		return kernel.Recovery{}, nil, kernel.EngineState{}, err
	}
	fsys, err := RequireRun(r.dir)
	if err != nil {
		return kernel.Recovery{}, rebuilt, kernel.EngineState{}, err
	}
	if _, err := dirstore.NewStore(fsys).ReadManifest(); err != nil {
		return kernel.Recovery{}, rebuilt, kernel.EngineState{}, err
	}
	rep, err := ledger.Verify(fsys, nil)
	if ledger.IsNotExist(err) {
		return kernel.Recovery{}, rebuilt, kernel.EngineState{}, &state.IntegrityError{File: ledger.FileName, Msg: "the ledger is missing"}
	}
	if err != nil {
		return kernel.Recovery{}, rebuilt, kernel.EngineState{}, err
	}
	if !rep.OK {
		return kernel.Recovery{}, rebuilt, kernel.EngineState{}, rep.Damage
	}
	rec, st, err := openAndClose(ctx, r, holder, opt)
	return rec, rebuilt, st, err
}

// openAndClose opens a run, which recovers it, and closes it.
func openAndClose(ctx context.Context, r RunStore, holder storage.Holder, opt Options) (kernel.Recovery, kernel.EngineState, error) {
	run, err := r.Open(ctx, holder, opt)
	if err != nil {
		return kernel.Recovery{}, kernel.EngineState{}, err
	}
	rec, st := run.Driver.Recovery(), run.Driver.State()
	return rec, st, run.Close()
}

func (r dirRun) ReadState(context.Context) (kernel.EngineState, storage.Manifest, error) {
	st, m, err := ReadState(r.dir)
	if err == nil {
		err = r.check(st)
	}
	return st, m, err
}

func (r dirRun) ReadSince(_ context.Context, m storage.Manifest) ([]event.Record, error) {
	return ReadSince(r.dir, m)
}

func (r dirRun) Queue(context.Context) (Queue, error) { return OpenQueue(r.dir) }

// History opens the ledger whether or not the rest of the run is intact;
// a run id asked for is checked against the checkpoint first.
func (r dirRun) History(context.Context) (History, error) {
	if err := r.checkDir(); err != nil {
		return nil, err
	}
	return OpenHistory(r.dir)
}

func (r dirRun) Export(context.Context, storage.Holder) (Exported, error) {
	ex, err := ExportDir(r.dir)
	if err == nil {
		err = r.check(ex.State)
	}
	return ex, err
}

func (r dirRun) Import(_ context.Context, a archive.Run, st kernel.EngineState, _ storage.Holder, opt Options) (Imported, error) {
	return ImportDir(r.dir, a, st, opt)
}

// Preview opens the world read-only in the state directory.
func (r dirRun) Preview(ctx context.Context, spec world.Spec, action world.Action, environ func(string) (string, bool)) (string, *world.GitTrial, error) {
	w, err := sandbox.OpenReadOnly(r.dir, spec)
	if err != nil {
		return "", nil, err
	}
	defer w.Close()
	if spec.Git != nil {
		return previewGit(ctx, w, spec, action, environ)
	}
	text, err := w.Preview(ctx, action)
	return text, nil, err
}

func (r dirRun) Lease(context.Context) (storage.LeaseStatus, bool, error) {
	return storage.LeaseStatus{}, false, ErrNoLeases
}

func (r dirRun) BreakLease(context.Context, storage.LeaseStatus, string, string) (storage.Broken, error) {
	return storage.Broken{}, ErrNoLeases
}

// WorldPlace is the directory the run looks after: its root, or the
// sandbox copy inside the state directory.
func (r dirRun) WorldPlace(spec world.Spec) (string, string) {
	if spec.Root != "" {
		return spec.Root, "the directory " + spec.Root + " (in place)"
	}
	if spec.Git != nil {
		return filepath.Join(r.dir, filepath.FromSlash(sandbox.WorldDir)), spec.Git.Describe() + ", one commit per effect"
	}
	return filepath.Join(r.dir, filepath.FromSlash(sandbox.WorldDir)), "a sandbox copy of the environment's files"
}
