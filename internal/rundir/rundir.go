// Package rundir assembles one state directory into a running loop: it
// opens the store, the ledger, the sandbox world and the inbox that live
// there, takes the single-writer lock, and wires them into a
// kernel.Driver. It also reads and validates the three documents a run
// starts from. The CLI and the scenario runner both use it, so there is one
// way to open a run.
package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/proposer"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// ValidationError names the input file and field that are wrong.
type ValidationError struct {
	File  string
	Field string
	Err   error
}

func (e *ValidationError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("%s: %v", e.File, e.Err)
	}
	return fmt.Sprintf("%s: field %s: %v", e.File, e.Field, e.Err)
}

func (e *ValidationError) Unwrap() error { return e.Err }

// Inputs are the three documents of a bootstrap, validated.
type Inputs struct {
	Goal     intent.Goal
	Contract governance.Contract
	Spec     world.Spec
}

// ReadInputs reads and validates the goal, contract and environment files.
// A missing file, malformed JSON, a wrong schema or an unknown field is a
// *ValidationError naming the file and the field.
func ReadInputs(goalPath, contractPath, envPath string) (Inputs, error) {
	var in Inputs
	if err := readDoc(envPath, &in.Spec, func() error { return resolveRoot(&in.Spec, envPath) }); err != nil {
		return in, err
	}
	if err := readDoc(goalPath, &in.Goal, func() error { return in.Goal.Validate(&in.Spec) }); err != nil {
		return in, err
	}
	if err := readDoc(contractPath, &in.Contract, func() error { return resolveProposer(&in.Contract, contractPath) }); err != nil {
		return in, err
	}
	return in, nil
}

// resolveRoot validates an environment and makes its root absolute: a
// relative root is relative to the environment file, and the pinned spec
// must name one place however acr is started later. The root must be a
// directory now.
func resolveRoot(spec *world.Spec, envPath string) error {
	if err := spec.Validate(); err != nil || spec.Root == "" {
		return err
	}
	root := spec.Root
	if !filepath.IsAbs(root) {
		root = filepath.Join(filepath.Dir(envPath), root)
	}
	abs, err := filepath.Abs(root)
	if err == nil {
		abs, err = filepath.EvalSymlinks(abs)
	}
	if err != nil {
		return &state.FieldError{Path: "root", Err: fmt.Errorf("%s: %w", spec.Root, err)}
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return &state.FieldError{Path: "root", Err: fmt.Errorf("%s is not a directory", abs)}
	}
	spec.Root = abs
	return nil
}

// resolveProposer validates a contract and makes a relative proposer
// program path (one with a slash) relative to the contract file, so that
// the pinned contract names one program wherever acr runs from.
func resolveProposer(c *governance.Contract, contractPath string) error {
	if err := c.Validate(); err != nil || c.Proposer == nil {
		return err
	}
	prog := c.Proposer.Argv[0]
	if filepath.IsAbs(prog) || !strings.Contains(prog, "/") {
		return nil
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(contractPath), prog))
	if err != nil {
		return &state.FieldError{Path: "proposer.argv[0]", Err: err}
	}
	argv := slices.Clone(c.Proposer.Argv)
	argv[0] = abs
	p := *c.Proposer
	p.Argv = argv
	c.Proposer = &p
	return nil
}

func readDoc(path string, v any, validate func() error) error {
	if path == "" {
		return &ValidationError{File: "(missing)", Err: errors.New("file path is required")}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return &ValidationError{File: path, Err: err}
	}
	if err := state.Unmarshal(b, v); err != nil {
		return asValidation(path, err)
	}
	if err := validate(); err != nil {
		return asValidation(path, err)
	}
	return nil
}

func asValidation(file string, err error) error {
	var fe *state.FieldError
	if errors.As(err, &fe) {
		return &ValidationError{File: file, Field: fe.Path, Err: fe.Err}
	}
	return &ValidationError{File: file, Err: err}
}

// Clock is the wall clock, the production time source.
type Clock struct{}

// Now returns the current UTC time.
func (Clock) Now() time.Time { return time.Now().UTC() }

// Options configure how a run is opened.
type Options struct {
	Clock     kernel.Clock
	Knowledge kernel.KnowledgeSource
	Revision  string
	// CheckpointEvery bounds cycles between directory checkpoints.
	CheckpointEvery int
	// Failpoint is called at named substages (crash tests).
	Failpoint func(string)
	// WrapWorld, when set, wraps the sandbox as the driver sees it (tests
	// use it to make the observation provider fail or return garbage).
	WrapWorld func(kernel.World) kernel.World
	// Environ reads acr's own environment, for the programs a run starts
	// (command checks and fixes, the proposer); nil gives them an empty
	// one. cmd/acr passes os.LookupEnv: nothing below it reads the
	// environment itself.
	Environ func(string) (string, bool)
	// WrapProposer, when set, wraps the proposer as the driver sees it
	// (tests count or script proposals with it).
	WrapProposer func(kernel.Proposer) kernel.Proposer
}

// Run is an open, locked run.
type Run struct {
	Dir    string
	FS     disk.FS
	Store  *state.Store
	Ledger *ledger.Ledger
	Index  *ledger.Index
	World  *sandbox.World
	Driver *kernel.Driver
	unlock disk.Unlocker
}

// Exists reports whether dir holds a run.
func Exists(dir string) (bool, error) {
	ok, err := existsPath(filepath.Join(dir, state.ManifestName))
	return ok, err
}

func existsPath(p string) (bool, error) {
	_, err := os.Stat(p)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return false, err
}

// Init creates a new run in dir from validated inputs. With force, an
// existing run there is removed first; without, an existing run is an
// error. It returns the initial state.
func Init(dir string, in Inputs, runID string, force bool, opt Options) (kernel.State, error) {
	exists, err := Exists(dir)
	if err != nil {
		return kernel.State{}, err
	}
	if exists && !force {
		return kernel.State{}, ErrRunExists
	}
	fsys, err := disk.CreateOSDir(dir)
	if err != nil {
		return kernel.State{}, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	unlock, err := state.NewStore(fsys).Lock()
	if err != nil {
		return kernel.State{}, err
	}
	defer unlock.Unlock()
	// Without a manifest there is no run; anything else here is left over
	// from an init that did not finish and is removed like a forced one.
	if force || !exists {
		for _, p := range []string{state.ManifestName, state.CheckpointDir, "ledger", sandbox.Dir, inbox.Dir} {
			if err := os.RemoveAll(filepath.Join(fsys.Path(), p)); err != nil {
				return kernel.State{}, fmt.Errorf("remove old run: %w", err)
			}
		}
		if err := fsys.SyncDir("."); err != nil {
			return kernel.State{}, err
		}
	}
	return initParts(fsys, fsys.Path(), in, runID, opt)
}

// InitOn creates a run whose store, ledger, inbox and idempotency table
// live on fsys and whose sandbox world lives under worldRoot on the real
// file system. Tests use it with disk.Mem to model power loss.
func InitOn(fsys disk.FS, worldRoot string, in Inputs, runID string, opt Options) (kernel.State, error) {
	unlock, err := state.NewStore(fsys).Lock()
	if err != nil {
		return kernel.State{}, err
	}
	defer unlock.Unlock()
	return initParts(fsys, worldRoot, in, runID, opt)
}

func initParts(fsys disk.FS, worldRoot string, in Inputs, runID string, opt Options) (kernel.State, error) {
	store := state.NewStore(fsys)
	w, err := sandbox.Create(worldRoot, in.Spec, fsys)
	if err != nil {
		return kernel.State{}, fmt.Errorf("create sandbox: %w", err)
	}
	defer w.Close()
	w.Environ = opt.Environ
	obs, err := w.Observe()
	if err != nil {
		return kernel.State{}, fmt.Errorf("first observation: %w", err)
	}
	now := opt.Clock.Now()
	if runID == "" {
		runID = kernel.DefaultRunID(in.Goal, in.Contract, in.Spec, now)
	}
	st, evs, err := kernel.Init(kernel.Bootstrap{RunID: runID, Now: now, Goal: in.Goal, Contract: in.Contract, Spec: in.Spec, Observation: obs})
	if err != nil {
		return kernel.State{}, err
	}
	led, err := ledger.Create(fsys)
	if err != nil {
		return kernel.State{}, err
	}
	defer led.Close()
	if _, err := led.Append(evs); err != nil {
		return kernel.State{}, err
	}
	files, err := st.Encode()
	if err != nil {
		return kernel.State{}, err
	}
	if _, err := store.Commit(state.Commit{RunID: runID, Revision: opt.Revision, Frontier: led.Frontier(), Files: files}); err != nil {
		return kernel.State{}, err
	}
	return st, nil
}

// ErrRunExists: init found a run and was not told to replace it.
var ErrRunExists = errors.New("a run already exists in the state directory (use --force to replace it)")

// Open locks the run in dir, opens its parts and recovers it to a safe
// boundary. Close must be called.
func Open(dir string, opt Options) (*Run, error) { return OpenWith(dir, opt, nil) }

// OpenWith is Open with a hook called as soon as the lock is held, before
// recovery runs: a crash test that dies during recovery can still abandon
// the half-open run.
func OpenWith(dir string, opt Options, hook func(*Run)) (*Run, error) {
	fsys, err := disk.OpenOSDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, state.ErrNoRun
	}
	if err != nil {
		return nil, fmt.Errorf("open state directory %s: %w", dir, err)
	}
	if ok, err := Exists(dir); err != nil {
		return nil, err
	} else if !ok {
		return nil, state.ErrNoRun
	}
	return openOn(fsys, fsys.Path(), opt, hook)
}

// OpenOn opens a run created with InitOn.
func OpenOn(fsys disk.FS, worldRoot string, opt Options, hook func(*Run)) (*Run, error) {
	return openOn(fsys, worldRoot, opt, hook)
}

func openOn(fsys disk.FS, worldRoot string, opt Options, hook func(*Run)) (*Run, error) {
	store := state.NewStore(fsys)
	unlock, err := store.Lock()
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: worldRoot, FS: fsys, Store: store, unlock: unlock}
	if hook != nil {
		hook(r)
	}
	if err := r.open(opt); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Run) open(opt Options) error {
	snap, err := r.Store.Load()
	if err != nil {
		return err
	}
	spec, err := kernel.DecodeSpec(snap.Files)
	if err != nil {
		return err
	}
	led, err := ledger.Open(r.FS)
	if err != nil {
		if ledger.IsNotExist(err) {
			return &state.IntegrityError{File: ledger.FileName, Msg: "the ledger is missing"}
		}
		return err
	}
	r.Ledger = led
	ix, err := ledger.OpenIndex(r.FS)
	if err != nil {
		return err
	}
	r.Index = ix
	w, err := sandbox.Open(r.Dir, spec, r.FS)
	if err != nil {
		return fmt.Errorf("open sandbox: %w", err)
	}
	w.Environ = opt.Environ
	r.World = w
	pc, err := kernel.DecodeProposer(snap.Files)
	if err != nil {
		return err
	}
	var prop kernel.Proposer
	if pc != nil {
		prop = proposer.New(pc, w.Dir(), opt.Environ, w)
	}
	if opt.WrapProposer != nil {
		prop = opt.WrapProposer(prop)
	}
	if opt.Failpoint != nil {
		r.Store.OnStage = opt.Failpoint
		w.OnStage = opt.Failpoint
	}
	clock := opt.Clock
	if clock == nil {
		clock = Clock{}
	}
	every := opt.CheckpointEvery
	if every <= 0 {
		every = 1
	}
	var kw kernel.World = w
	if opt.WrapWorld != nil {
		kw = opt.WrapWorld(w)
	}
	r.Driver = &kernel.Driver{
		Store: r.Store, Ledger: led, World: kw, Inbox: Inbox{FS: r.FS}, Index: ix, Clock: clock, Knowledge: opt.Knowledge,
		Revision: opt.Revision, CheckpointEvery: every, UncertainErr: sandbox.ErrUncertain, RefusedErr: sandbox.ErrConfinement,
		Failpoint: opt.Failpoint, Proposer: prop,
		KillSwitch: func() (bool, error) { return killSwitchOn(r.FS) }, Snapshot: &snap,
	}
	return r.Driver.Open()
}

// KillSwitchFile is the operator's kill switch: while a file of this name
// exists in the state directory, the next cycle stops the run (STOPPED,
// reason operator_kill_switch) and no action is taken.
const KillSwitchFile = "KILL"

func killSwitchOn(fsys disk.FS) (bool, error) {
	_, err := fsys.Stat(KillSwitchFile)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// Close writes any owed checkpoint, closes the parts and releases the lock.
func (r *Run) Close() error {
	var errs []error
	if r.Driver != nil {
		errs = append(errs, r.Driver.Close())
	}
	if r.World != nil {
		errs = append(errs, r.World.Close())
	}
	if r.Ledger != nil {
		errs = append(errs, r.Ledger.Close())
	}
	if r.Index != nil {
		errs = append(errs, r.Index.Close())
	}
	if r.unlock != nil {
		errs = append(errs, r.unlock.Unlock())
	}
	return errors.Join(errs...)
}

// Abandon releases the run the way a killed process would: files are
// closed and the lock is dropped, but nothing owed is written.
func (r *Run) Abandon() {
	if r.World != nil {
		r.World.Close()
	}
	if r.Ledger != nil {
		r.Ledger.Close()
	}
	if r.Index != nil {
		r.Index.Close()
	}
	if r.unlock != nil {
		r.unlock.Unlock()
	}
}

// Inbox adapts the inbox package to the kernel's Inbox interface.
type Inbox struct{ FS disk.FS }

// List implements kernel.Inbox.
func (i Inbox) List() ([]inbox.Item, []inbox.Rejected, error) { return inbox.List(i.FS) }

// Remove implements kernel.Inbox.
func (i Inbox) Remove(ids []string) error { return inbox.Remove(i.FS, ids) }

// Quarantine implements kernel.Inbox.
func (i Inbox) Quarantine(name string) error { return inbox.Quarantine(i.FS, name) }

// ReadState loads the checkpoint without taking the lock, for read-only
// commands (status, wake, approve) that must work while a run is busy.
func ReadState(dir string) (kernel.State, state.Manifest, error) {
	fsys, err := disk.OpenOSDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return kernel.State{}, state.Manifest{}, state.ErrNoRun
	}
	if err != nil {
		return kernel.State{}, state.Manifest{}, err
	}
	snap, err := state.NewStore(fsys).Load()
	if err != nil {
		return kernel.State{}, state.Manifest{}, err
	}
	st, err := kernel.Decode(snap.Files)
	return st, snap.Manifest, err
}

// NoKnowledge is the default knowledge source: it never reports a change.
type NoKnowledge struct{}

// Poll implements kernel.KnowledgeSource.
func (NoKnowledge) Poll(time.Time) ([]strategy.KnowledgeUpdate, error) { return nil, nil }
