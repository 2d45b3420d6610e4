package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/viper"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// app carries what every command shares: the writers, the configuration
// and the logger. It is built once per invocation; nothing is global. Each
// command's own flags are decoded into that command's options struct, and
// its runX(ctx, opts, a) writes only to a's writers, so a test can call it
// without a process.
type app struct {
	stdout, stderr io.Writer
	// stdin is where acr approve reads a person's confirmation from, and
	// only when it is a terminal (term says).
	stdin io.Reader
	v     *viper.Viper
	log   zerolog.Logger
	cfg   config
	// term, wall and getenv are how acr looks at its surroundings: whether
	// a writer is a terminal, the wall clock for elapsed times on screen,
	// and the environment (NO_COLOR, TERM, ACR_*). They are fields so that
	// tests can stand in for a terminal.
	term   terminal
	wall   func() time.Time
	getenv func(string) string
	// discard undoes what a clean slate (--no-load-state) set up outside
	// the state directory; execute calls it when the command is done.
	discard []func()
	// unwatch stops the watch that ends a command on SIGINT or SIGTERM
	// (dieOnInterrupt); execute calls it when the command is done.
	unwatch func() bool
	// command is the name of the command being run (for a lease's holder).
	command string
	// storeWait is --store-wait: how long a request to a nats:// store
	// keeps trying while the server does not answer.
	storeWait time.Duration
	// stores is the store --store names, opened by the first command
	// that needs it (for a JetStream store, the connection); nil before.
	stores runstore.Store
	// timings adds up the driver's steps when ACR_TIMINGS names a file
	// and the command opened a run; execute writes it there when the
	// command is done. The first run opened makes it (a worker may open
	// several at once).
	timings     *stepTimings
	timingsOnce sync.Once
}

// config is the typed, validated configuration shared by all commands:
// the global flags, decoded like every command's options (decodeFlags).
type config struct {
	// ConfigFile is the configuration file that was read, "" if none.
	ConfigFile string
	StateDir   string `flag:"state-dir"`
	// Store is --store: "dir:PATH" (the state directory, the default) or
	// a nats:// or tls:// URL of a JetStream store; configure checks it.
	Store     string `flag:"store"`
	RunID     string `flag:"run-id"`
	NatsCreds string `flag:"nats-creds"`
	// NatsReplicas is --nats-replicas: 0 when not set (keep what the
	// store has), else 1 to 5 (configure checks it).
	NatsReplicas int `flag:"nats-replicas"`
	// StoreWait is --store-wait, a duration (configure parses it).
	StoreWait       string `flag:"store-wait"`
	JSON            bool   `flag:"json"`
	LogLevel        string `flag:"log-level"`
	NoLoadState     bool   `flag:"no-load-state"`
	CheckpointEvery int    `flag:"checkpoint-every"`
	// SealBytes is --ledger-seal-bytes: how long the ledger's uncompressed
	// part grows before its history is sealed (0: never).
	SealBytes int64 `flag:"ledger-seal-bytes"`
	// Clock is ACR_CLOCK, a frozen time for reproducible output; it is
	// not a flag.
	Clock string
}

// run executes one command line and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return newApp(stdout, stderr).execute(ctx, args)
}

// newApp returns an app that writes to stdout and stderr and looks at the
// real terminal, clock and environment.
func newApp(stdout, stderr io.Writer) *app {
	return &app{stdout: stdout, stderr: stderr, stdin: os.Stdin, v: viper.New(), log: zerolog.Nop(),
		term: osTerminal, wall: time.Now, getenv: os.Getenv}
}

// execute runs one command line and returns its exit code. ctx is
// cancelled by SIGINT or SIGTERM (see interrupt.go).
func (a *app) execute(ctx context.Context, args []string) int {
	root := newRootCommand(a)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if a.unwatch != nil {
		a.unwatch()
	}
	for _, f := range a.discard {
		f()
	}
	if a.timings != nil {
		if werr := a.timings.write(a.getenv("ACR_TIMINGS")); werr != nil {
			fmt.Fprintf(a.stderr, "acr: warning: %v\n", werr)
		}
	}
	if err != nil && !a.cfg.JSON {
		// An error before the configuration was read (a flag that does
		// not parse, an unknown command) still owes --json its object.
		a.cfg.JSON = jsonRequested(args, a.getenv)
	}
	return a.finish(err)
}

// jsonRequested reports whether the command line or ACR_JSON asks for JSON
// output, without the help of the flag parser: it is asked only when
// parsing failed. Arguments after "--" are not flags.
func jsonRequested(args []string, getenv func(string) string) bool {
	for _, arg := range args {
		if arg == "--" {
			break
		}
		if name, val, ok := strings.Cut(arg, "="); ok && name == "--json" {
			b, err := strconv.ParseBool(val)
			return err == nil && b
		}
		if arg == "--json" {
			return true
		}
	}
	b, err := strconv.ParseBool(getenv("ACR_JSON"))
	return err == nil && b
}

// finish reports an error (as text on stderr, and as one JSON object on
// stdout with --json) and returns the exit code.
func (a *app) finish(err error) int {
	code, kind := errorKind(err)
	if err == nil {
		return code
	}
	msg := err.Error()
	if hint := nextStepFor(kind); hint != "" {
		msg += "\n" + hint
	}
	fmt.Fprintf(a.stderr, "acr: %s\n", msg)
	var silent *silentError
	if a.cfg.JSON && !errors.As(err, &silent) {
		a.printJSON(map[string]any{"error": err.Error(), "kind": kind, "exit_code": code})
	}
	return code
}

// nextStepFor tells the operator what to do about an error of a kind, so
// that no failure ends in a message without a way forward.
func nextStepFor(kind string) string {
	switch kind {
	case "no_run":
		return "hint: create one with: acr init --goal goal.json --contract contract.json --env environment.json"
	case "busy":
		return "hint: another acr invocation is running on this state directory; retry later"
	case "leased":
		return "hint: the process named above holds the run's lease: it lets go when its turn ends, and the lease lapses if it stops renewing it; retry later. acr runs shows every lease; if that process is gone for good, acr --run-id RUN lease break ends its lease now"
	case "conflict":
		return "hint: another writer changed the run first and nothing of this invocation's write was stored; retry (acr status shows the run)"
	case "unavailable":
		return "hint: the NATS server named by --store did not answer: check it is running and reachable, then retry; a write it did not confirm is found (or not) when the run is reopened"
	case "no_world":
		return "hint: the run was created by an earlier acr, which kept its world on the host that ran acr init: run it once there (acr run) to move its world into the store; status, wake, approve, stop, audit, log and report work from any host"
	case "integrity":
		return "hint: see docs/operations.md, \"Recovering from integrity errors\"; nothing was changed"
	case "run_exists":
		return "hint: acr status shows the run; use another --state-dir, or acr init --force to replace it (acr import never replaces a run)"
	case "bad_archive":
		return "hint: the archive is damaged, cut short or not one acr export wrote; nothing was written: export the run again from its source"
	case "not_at_rest":
		return "hint: acr recover on the run brings it to a checkpoint; then export again. Nothing was written"
	case "faulted":
		return "hint: the run is FAULTED and every run exits 70 until a person resumes it: acr status shows the cause, acr log the failures (lines starting with !); fix the cause, then acr wake --signal manual_resume"
	case "provider_failure":
		return "hint: the run did not advance: acr status shows the error (last error), acr log the failures so far (lines starting with !); fix the cause and run again (the run faults when the failures in a row reach the policy's limit)"
	case "no_space":
		return "hint: the disk is full (or the quota used up): free some space, then retry; acr never leaves a half-written checkpoint"
	case "not_writable":
		return "hint: this command writes to the state directory, which is read-only here (a read-only mount, a backup copy, or another user's files); status, log, audit, report and ledger verify work on it as it is"
	case "io":
		return "hint: an I/O error on the named file: check the disk and the path, then retry; acr never leaves a half-written checkpoint"
	}
	return ""
}

func (a *app) printJSON(v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(a.stderr, "acr: encode output: %v\n", err)
		return
	}
	fmt.Fprintln(a.stdout, string(b))
}

func (a *app) printf(format string, args ...any) { fmt.Fprintf(a.stdout, format, args...) }

// report prints a result as JSON or as a line of text.
func (a *app) report(v any, format string, args ...any) {
	if a.cfg.JSON {
		a.printJSON(v)
		return
	}
	a.printf(format, args...)
}

// next prints the next useful command after a text result; with --json
// stdout holds exactly one object, so it prints nothing.
func (a *app) next(hint string) {
	if !a.cfg.JSON {
		a.printf("next: %s\n", hint)
	}
}

// logNotice writes what the driver reports (a recovery, a provider
// failure, a quarantined inbox file, a run faulted) to the log, with the
// run and cycle, at the level the driver gave it: nothing the loop does
// out of a cycle's sight is silent on stderr.
func (a *app) logNotice(n kernel.Notice) {
	lvl, err := zerolog.ParseLevel(n.Level)
	if err != nil {
		lvl = zerolog.WarnLevel
	}
	ev := a.log.WithLevel(lvl).Str("run_id", n.RunID).Int64("cycle", n.Cycle)
	keys := make([]string, 0, len(n.Fields))
	for k := range n.Fields {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		ev = ev.Interface(k, n.Fields[k])
	}
	ev.Msg(n.What)
}

// logCycle writes one completed cycle to the log at debug level.
func (a *app) logCycle(s kernel.Summary) {
	a.log.Debug().Int64("cycle", s.CycleSeq).Str("disposition", s.LoopDisposition.String()).Str("decision", s.GovernanceDecision).
		Str("action", s.Action).Str("outcome", s.Outcome).Strs("reasons", s.ReasonCodes).Msg("cycle completed")
}

// clock returns the time source: the wall clock, or a frozen time given in
// ACR_CLOCK (RFC 3339), which scenario tests use for reproducible output.
func (a *app) clock() (runstore.Options, error) {
	opt := runstore.Options{Clock: runstore.Clock{}, Revision: revision(), CheckpointEvery: a.cfg.CheckpointEvery, SealBytes: a.cfg.SealBytes, Failpoint: failpoint(a.getenv("ACR_FAILPOINT")),
		Environ: os.LookupEnv, Notify: a.logNotice}
	if a.getenv("ACR_TIMINGS") != "" {
		opt.Phases = func() func(string) {
			a.timingsOnce.Do(func() { a.timings = newStepTimings(a.wall) })
			return a.timings.tracker()
		}
	}
	if a.cfg.Clock != "" {
		t, err := state.ParseTime(a.cfg.Clock)
		if err != nil {
			return opt, usagef("ACR_CLOCK: %v", err)
		}
		opt.Clock = frozenClock{t}
	}
	return opt, nil
}

type frozenClock struct{ t time.Time }

func (c frozenClock) Now() time.Time { return c.t }

// now is the time used for relative times in human output.
func (a *app) now() time.Time {
	opt, err := a.clock()
	if err != nil {
		return time.Now().UTC()
	}
	return opt.Clock.Now()
}

// failpoint returns the crash hook for ACR_FAILPOINT=<name>[:<n>[:hang]]:
// at the n-th time (default first) the process reaches the named substage
// it kills itself with SIGKILL, leaving no chance to clean up. With "hang"
// it blocks there instead, holding the run lock, until something kills it;
// if ACR_FAILPOINT_READY names a file, that file is created first so a test
// knows the process is in place.
func failpoint(spec string) func(string) {
	if spec == "" {
		return nil
	}
	parts := strings.SplitN(spec, ":", 3)
	name, want := parts[0], 1
	if len(parts) > 1 {
		if n, err := strconv.Atoi(parts[1]); err == nil && n > 0 {
			want = n
		}
	}
	hang := len(parts) == 3 && parts[2] == "hang"
	var hits atomic.Int64 // a worker runs several runs at once
	return func(stage string) {
		if stage != name {
			return
		}
		if hits.Add(1) != int64(want) {
			return
		}
		if hang {
			if ready := os.Getenv("ACR_FAILPOINT_READY"); ready != "" {
				_ = os.WriteFile(ready, []byte(stage+"\n"), 0o644)
			}
			select {}
		}
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // never return
	}
}

// openRun opens the configured run (its lock or lease taken, recovered
// if needed), or with --no-load-state a clean slate in memory.
func (a *app) openRun(ctx context.Context, slate slateOptions) (*runstore.Run, error) {
	if a.cfg.NoLoadState {
		return a.cleanSlate(ctx, slate)
	}
	opt, err := a.clock()
	if err != nil {
		return nil, err
	}
	rs, err := a.run(ctx)
	if err != nil {
		return nil, err
	}
	r, err := rs.Open(ctx, holder(a.command, ""), opt)
	if err != nil {
		return nil, err
	}
	if r.Driver != nil {
		if m := r.Driver.Manifest(); m.WrittenAtRevision != "" && m.WrittenAtRevision != revision() {
			a.log.Warn().Str("written_at_revision", m.WrittenAtRevision).Str("this_revision", revision()).
				Msg("checkpoint was written by another acr revision; continuing")
		}
	}
	return r, nil
}

// noLoadState is the "no run" of --no-load-state: the directory is not
// read, and the message says so.
func noLoadState(a *app) error {
	return fmt.Errorf("--no-load-state: %w", &runstore.NoRunError{Dir: a.cfg.StateDir + " (not read)"})
}

// runState is a checkpoint read without the lock.
type runState struct {
	State    kernel.EngineState
	Manifest storage.Manifest
}

// readState loads the checkpoint without the lock (for read-only commands).
func (a *app) readState() (runState, error) {
	if a.cfg.NoLoadState {
		return runState{}, noLoadState(a)
	}
	rs, err := a.run(context.Background())
	if err != nil {
		return runState{}, err
	}
	st, m, err := rs.ReadState(context.Background())
	return runState{State: st, Manifest: m}, err
}

// readSince reads, without the lock, the ledger records appended after
// the checkpoint whose manifest is m.
func (a *app) readSince(m storage.Manifest) ([]event.Record, error) {
	rs, err := a.run(context.Background())
	if err != nil {
		return nil, err
	}
	return rs.ReadSince(context.Background(), m)
}

// queue opens the run's inbox for the commands that queue into it (and
// status), without the lock or the lease.
func (a *app) queue() (runstore.Queue, error) {
	rs, err := a.run(context.Background())
	if err != nil {
		return nil, err
	}
	return rs.Queue(context.Background())
}

// store opens the store --store names, once per invocation; execute
// closes it when the command is done.
func (a *app) store(ctx context.Context) (runstore.Store, error) {
	if a.stores != nil {
		return a.stores, nil
	}
	s, err := runstore.OpenStore(ctx, a.cfg.Store, a.connection(), a.cfg.StateDir)
	if err != nil {
		return nil, fmt.Errorf("--store %s: %w", a.cfg.Store, err)
	}
	a.stores = s
	a.discard = append(a.discard, func() { _ = s.Close() })
	return s, nil
}

// run is the handle of the run --run-id names (a state directory's own
// run without it).
func (a *app) run(ctx context.Context) (runstore.RunStore, error) {
	s, err := a.store(ctx)
	if err != nil {
		return nil, err
	}
	return s.Run(ctx, a.cfg.RunID)
}

// worldLine says in words which world the run looks after.
func (a *app) worldLine(ctx context.Context, spec world.Spec) string {
	rs, err := a.run(ctx)
	if err != nil {
		return "(unknown: " + err.Error() + ")"
	}
	_, what := rs.WorldPlace(spec)
	return what
}

// connection is how this invocation connects to a JetStream store.
func (a *app) connection() runstore.Connection {
	return runstore.Connection{Creds: a.cfg.NatsCreds, Replicas: a.cfg.NatsReplicas, Patience: a.storeWait}
}

// holder names this process in a run's lease, for operators (acr runs,
// the busy message): host:pid, the command, a worker's labels.
func holder(command, label string) storage.Holder {
	host, _ := os.Hostname()
	return storage.Holder{Name: fmt.Sprintf("%s:%d", host, os.Getpid()), Host: host, PID: os.Getpid(), Command: command, Label: label}
}

// history opens the run's ledger for reading, which is read whether or not
// the rest of the run is intact.
func (a *app) history() (runstore.History, error) {
	if a.cfg.NoLoadState {
		return nil, noLoadState(a)
	}
	rs, err := a.run(context.Background())
	if err != nil {
		return nil, err
	}
	return rs.History(context.Background())
}

// nothingQueued reports a request that would change nothing (the same
// wake signal or answer already queued, a stop for a stopped run, an
// amendment identical to the pinned document): nothing is written, and
// that is success, so that a script or a unit repeating itself does not
// fail. With --json the result says "effect": "none".
func (a *app) nothingQueued(format string, args ...any) error {
	why := fmt.Sprintf(format, args...)
	a.report(map[string]any{"effect": "none", "queued": false, "reason": why}, "nothing queued: %s\n", why)
	return nil
}
