package runstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/proposer"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
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
	// EnvFile is the file Spec was read from, for the messages of checks
	// made later ("" when it was not read from a file).
	EnvFile string
	// ContractFile is the file Contract was read from, likewise.
	ContractFile string
	// Warnings are references that resolve to nothing yet in a world
	// whose files may appear later (a directory with a root): acr init
	// reports them and goes on. In a world of declared files they are
	// errors instead.
	Warnings []*ValidationError
}

// ReadInputs reads and validates the goal, contract and environment files.
// A missing file, malformed JSON, a wrong schema or an unknown field is a
// *ValidationError naming the file and the field.
func ReadInputs(goalPath, contractPath, envPath string) (Inputs, error) {
	in := Inputs{EnvFile: envPath, ContractFile: contractPath}
	checkSpec := func() error {
		if err := resolveRoot(&in.Spec, envPath); err != nil {
			return err
		}
		return sandbox.CheckFiles(in.Spec.Files)
	}
	if err := readDoc(envPath, &in.Spec, checkSpec); err != nil {
		return in, err
	}
	if err := readDoc(goalPath, &in.Goal, func() error { return in.Goal.Validate(&in.Spec) }); err != nil {
		return in, err
	}
	if err := readDoc(contractPath, &in.Contract, func() error { return resolveProposer(&in.Contract, contractPath) }); err != nil {
		return in, err
	}
	if err := in.Contract.CheckEnvironment(&in.Spec); err != nil {
		return in, asValidation(contractPath, err)
	}
	w, err := unresolvedPaths(&in.Spec, envPath)
	if err != nil {
		return in, err
	}
	in.Warnings = w
	return in, nil
}

// InForce checks that the contract can start a run at now: a revoked
// contract, or one whose valid_until has passed, would stop the run at its
// first cycle, so init refuses it as bad input naming the field.
func (in Inputs) InForce(now time.Time) error {
	file := cmp.Or(in.ContractFile, "contract")
	switch in.Contract.Invalidated(now) {
	case "contract_revoked":
		return &ValidationError{File: file, Field: "revoked", Err: errors.New("a revoked contract cannot start a run")}
	case "contract_expired":
		return &ValidationError{File: file, Field: "valid_until", Err: fmt.Errorf("%s has passed: the contract no longer holds", in.Contract.ValidUntil)}
	}
	return nil
}

// unresolvedPaths resolves the paths the environment's checks name
// against its world (world.Spec.UnresolvedPaths): in a world of declared
// files one that names no file is an error naming the field; in a world
// whose files may appear later (a root directory) it is a warning,
// checked against the directory as it is now.
func unresolvedPaths(spec *world.Spec, envPath string) ([]*ValidationError, error) {
	exists := spec.Declares
	if spec.Git != nil {
		// The files are on the remote, not here: the first observation
		// (acr init's) reads the branch, and checks judge what it holds.
		return nil, nil
	}
	if spec.Root != "" {
		exists = func(p string) bool {
			fi, err := os.Stat(filepath.Join(spec.Root, filepath.FromSlash(p)))
			return err == nil && fi.Mode().IsRegular()
		}
	}
	var out []*ValidationError
	for _, fe := range spec.UnresolvedPaths(exists) {
		e := &ValidationError{File: envPath, Field: fe.Path, Err: fe.Err}
		if !spec.Backing().FilesMayAppear {
			return nil, e
		}
		out = append(out, e)
	}
	return out, nil
}

// ReadAmendment reads a new version of one of a run's pinned documents
// (target: state.AmendContract, AmendGoal or AmendEnvironment) for acr
// amend: strictly and with the checks of ReadInputs, then against the rest
// of the run's pinned state (kernel.CheckAmendment). A bad file is a
// *ValidationError naming the file and the field. It returns the
// document's canonical value and its ref.
func ReadAmendment(target, path string, s kernel.EngineState) (codec.Value, codec.Ref, error) {
	var (
		doc      any
		validate func() error
	)
	switch target {
	case state.AmendContract:
		c := &governance.Contract{}
		doc, validate = c, func() error { return resolveProposer(c, path) }
	case state.AmendGoal:
		g := &intent.Goal{}
		doc, validate = g, func() error { return g.Validate(&s.Spec) }
	case state.AmendEnvironment:
		sp := &world.Spec{}
		doc, validate = sp, func() error {
			if err := resolveRoot(sp, path); err != nil {
				return err
			}
			return sandbox.CheckFiles(sp.Files)
		}
	default:
		return codec.Value{}, "", fmt.Errorf("amend: unknown target %q", target)
	}
	if err := readDoc(path, doc, validate); err != nil {
		return codec.Value{}, "", err
	}
	b, err := codec.Marshal(doc)
	if err != nil {
		return codec.Value{}, "", err
	}
	v, err := codec.ParseCanonical(b)
	if err != nil {
		return codec.Value{}, "", err
	}
	ref, err := kernel.CheckAmendment(s, state.Amendment{Target: target, Document: v})
	if err != nil {
		return codec.Value{}, "", asValidation(path, err)
	}
	return v, ref, nil
}

// resolveRoot validates an environment and makes its root absolute: a
// relative root is relative to the environment file, and the pinned spec
// must name one place however acr is started later. The root must be a
// directory now.
func resolveRoot(spec *world.Spec, envPath string) error {
	if err := spec.Validate(); err != nil {
		return err
	}
	if spec.Git != nil {
		return resolveRemote(spec.Git, envPath)
	}
	if spec.Root == "" {
		return nil
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
		return &codec.FieldError{Path: "root", Err: fmt.Errorf("%s: %w", spec.Root, err)}
	}
	if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
		return &codec.FieldError{Path: "root", Err: fmt.Errorf("%s is not a directory", abs)}
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
		return &codec.FieldError{Path: "proposer.argv[0]", Err: err}
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
	val, err := codec.Parse(b)
	if err != nil {
		return asValidation(path, err)
	}
	if err := codec.DecodeInput(withoutSchemaKey(val), v); err != nil {
		return asValidation(path, err)
	}
	if err := validate(); err != nil {
		return asValidation(path, err)
	}
	return nil
}

// SchemaKey is the member editors add to a JSON document to name its JSON
// Schema (for completion and checking as one types). acr accepts it at the
// top of the goal, contract and environment, and ignores it: it is not part
// of the document and not part of what is pinned.
const SchemaKey = "$schema"

func withoutSchemaKey(v codec.Value) codec.Value {
	if v.Kind != codec.KindObject {
		return v
	}
	out := v
	out.Obj = nil
	for _, m := range v.Obj {
		if m.Key != SchemaKey || m.Val.Kind != codec.KindString {
			out.Obj = append(out.Obj, m)
		}
	}
	return out
}

func asValidation(file string, err error) error {
	var fe *codec.FieldError
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
	// SealBytes is when the ledger seals its history (kernel.Driver.SealBytes).
	SealBytes int64
	// Failpoint is called at named substages (crash tests).
	Failpoint func(string)
	// Phases, when set, gives each run opened its kernel.Driver.Phase
	// hook (one per run: a worker drives several at once).
	Phases func() func(string)
	// Notify hears what the driver does that an operator should see in
	// the logs (kernel.Driver.Notify).
	Notify func(kernel.Notice)
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

// Run is an open run, locked (a state directory) or leased (a JetStream
// store). Store, FS, Ledger and Index are the directory's parts, nil for
// a run in a JetStream store.
type Run struct {
	Dir    string
	FS     disk.FS
	Store  *dirstore.Store
	Ledger *ledger.Ledger
	Index  *ledger.Index
	World  *sandbox.World
	Driver *kernel.Driver
	// Held is cancelled when a leased run's lease is lost (nil for a
	// locked run): run the driver under it, so that no cycle starts
	// without the lease. The revision checks protect the run either way.
	Held   context.Context
	unlock disk.Unlocker
	// release stops keeping the lease and gives it up.
	release func() error
	// stored, when set, wraps the sandbox before the driver sees it: a
	// run in a JetStream store puts every effect in the store's world.
	stored func(*sandbox.World) kernel.World
	// spec is the run's environment, as pinned.
	spec world.Spec
	// openedAt is the cycle of the checkpoint the run was opened at, and
	// verified what the ledger check before the first write established
	// (nil if this invocation wrote nothing).
	openedAt int64
	verified *verifiedRecord
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

// Open locks the run in dir, opens its parts and recovers it to a safe
// boundary. Close must be called.
func Open(ctx context.Context, dir string, opt Options) (*Run, error) {
	return OpenWith(ctx, dir, opt, nil)
}

// OpenWith is Open with a hook called as soon as the lock is held, before
// recovery runs: a crash test that dies during recovery can still abandon
// the half-open run.
func OpenWith(ctx context.Context, dir string, opt Options, hook func(*Run)) (*Run, error) {
	fsys, err := OpenDir(dir)
	if err != nil {
		return nil, err
	}
	return openOn(ctx, store{fsys: fsys, root: fsys.Path()}, opt, hook)
}

// OpenOn opens a run created with InitOn.
func OpenOn(ctx context.Context, fsys disk.FS, worldRoot string, opt Options, hook func(*Run)) (*Run, error) {
	return openOn(ctx, store{fsys: fsys, root: worldRoot, world: worldFS(fsys, worldRoot)}, opt, hook)
}

func openOn(ctx context.Context, s store, opt Options, hook func(*Run)) (*Run, error) {
	st := dirstore.NewStore(s.fsys)
	unlock, err := st.Lock()
	if err != nil {
		return nil, err
	}
	r := &Run{Dir: s.root, FS: s.fsys, Store: st, unlock: unlock}
	if hook != nil {
		hook(r)
	}
	if err := finishSwap(s); err != nil {
		r.Close()
		return nil, err
	}
	if err := requireManifest(s.fsys, s.root); err != nil {
		r.Close()
		return nil, err
	}
	if err := r.open(ctx, opt); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

func (r *Run) open(ctx context.Context, opt Options) error {
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
	led.Index = ix
	led.OnStage = opt.Failpoint
	led.CompressAhead = opt.SealBytes > 0
	if spec.Git != nil {
		if err := resetKeys(r.Dir); err != nil {
			return err
		}
	}
	w, err := sandbox.Open(r.Dir, spec, r.FS)
	if err != nil {
		return fmt.Errorf("open sandbox: %w", err)
	}
	r.World, r.spec = w, spec
	if opt.Failpoint != nil {
		r.Store.OnStage = opt.Failpoint
	}
	clock := opt.Clock
	if clock == nil {
		clock = Clock{}
	}
	r.openedAt = snap.Manifest.CycleSeq
	guarded := &guardedLedger{Ledger: led, check: func() error { return r.checkBeforeWrite(clock) }}
	return r.wire(ctx, opt, snap, driverParts{checkpoints: r.Store, ledger: guarded, split: guarded, sealer: led,
		inbox: dirstore.Inbox{FS: r.FS, Memo: &disk.DirMemo{}}, killSwitch: func() (bool, error) { return killSwitchOn(r.FS) }})
}

// driverParts is what a backend gives the driver of one run: its
// checkpoints, ledger and inbox, what its ledger can do besides appending
// (split, sealer; nil when it cannot), and the kill switch (nil when
// there is none).
type driverParts struct {
	checkpoints storage.Checkpoints
	ledger      storage.Ledger
	split       storage.SplitLedger
	sealer      storage.Sealer
	joint       storage.JointCommitter
	inbox       storage.Inbox
	killSwitch  func() (bool, error)
}

// wire builds the driver on a run's parts (r.World open) and opens it.
func (r *Run) wire(ctx context.Context, opt Options, snap storage.Snapshot, p driverParts) error {
	w := r.World
	w.Environ = opt.Environ
	// The driver calls Durable before it records an outcome.
	w.DeferDirSyncs(true)
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
	switch {
	case r.spec.Git != nil:
		gw, err := openGitWorld(ctx, w, r.spec, opt.Environ, opt.Failpoint)
		if err != nil {
			return err
		}
		kw = gw
	case r.stored != nil:
		kw = r.stored(w)
	}
	if opt.WrapWorld != nil {
		kw = opt.WrapWorld(kw)
	}
	r.Driver = &kernel.Driver{
		Store: p.checkpoints, Ledger: p.ledger, Split: p.split, Sealer: p.sealer, Joint: p.joint, World: kw, Inbox: p.inbox, Clock: clock, Knowledge: opt.Knowledge,
		Revision: opt.Revision, CheckpointEvery: every, SealBytes: opt.SealBytes, UncertainErr: sandbox.ErrUncertain, RefusedErr: sandbox.ErrConfinement,
		Failpoint: opt.Failpoint, Phase: phaseHook(opt.Phases), Proposer: prop, Notify: opt.Notify,
		KillSwitch: p.killSwitch, Snapshot: &snap,
	}
	return r.Driver.Open(ctx)
}

// phaseHook is one run's Phase hook from Options.Phases, if set.
func phaseHook(phases func() func(string)) func(string) {
	if phases == nil {
		return nil
	}
	return phases()
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
	r.saveVerified()
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
	if r.release != nil {
		errs = append(errs, r.release())
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

// ReadState loads the checkpoint without taking the lock, for read-only
// commands (status, wake, approve) that must work while a run is busy.
func ReadState(dir string) (kernel.EngineState, storage.Manifest, error) {
	fsys, err := RequireRun(dir)
	if err != nil {
		return kernel.EngineState{}, storage.Manifest{}, err
	}
	snap, err := dirstore.NewStore(fsys).Load()
	if err != nil {
		return kernel.EngineState{}, storage.Manifest{}, err
	}
	st, err := kernel.Decode(snap.Files)
	return st, snap.Manifest, err
}

// ReadSince reads, without the lock, the ledger records appended after the
// checkpoint whose manifest is m: what happened since it was written (the
// provider failures of invocations that did not advance the run, the
// cycles of a run still going). It never writes.
func ReadSince(dir string, m storage.Manifest) ([]event.Record, error) {
	fsys, err := RequireRun(dir)
	if err != nil {
		return nil, err
	}
	return ledger.ReadAfter(fsys, m.LedgerFrontier)
}

// NoKnowledge is the default knowledge source: it never reports a change.
type NoKnowledge struct{}

// Poll implements kernel.KnowledgeSource.
func (NoKnowledge) Poll(time.Time) ([]strategy.KnowledgeUpdate, error) { return nil, nil }

// resolveRemote makes a git world's remote that is a relative local path
// absolute, relative to the environment file, as a relative root is: the
// pinned spec must name one repository wherever acr runs from. A URL
// ("scheme://...") and git's scp-like form ("host:path", a colon before
// any slash) are left as they are.
func resolveRemote(g *world.GitSpec, envPath string) error {
	r := g.Remote
	if strings.Contains(r, "://") || filepath.IsAbs(r) {
		return nil
	}
	if i := strings.IndexByte(r, ':'); i >= 0 && !strings.Contains(r[:i], "/") {
		return nil
	}
	abs, err := filepath.Abs(filepath.Join(filepath.Dir(envPath), r))
	if err != nil {
		return &codec.FieldError{Path: "git.remote", Err: fmt.Errorf("%s: %w", r, err)}
	}
	g.Remote = abs
	return nil
}
