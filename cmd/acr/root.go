package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/acr-project/acr/internal/rundir"
	"github.com/acr-project/acr/internal/state"
)

// app carries what every command shares: the writers, the configuration
// and the logger. It is built once per invocation; nothing is global.
type app struct {
	stdout, stderr io.Writer
	v              *viper.Viper
	log            zerolog.Logger
	cfg            config
	// term, wall and getenv are how acr looks at its surroundings: whether
	// a writer is a terminal, the wall clock for elapsed times on screen,
	// and the environment for NO_COLOR and TERM. They are fields so that
	// tests can stand in for a terminal.
	term   terminal
	wall   func() time.Time
	getenv func(string) string
	// discard undoes what a clean slate (--no-load-state) set up outside
	// the state directory; execute calls it when the command is done.
	discard []func()
}

// config is the typed, validated configuration shared by all commands.
type config struct {
	// ConfigFile is the configuration file that was read, "" if none.
	ConfigFile      string
	StateDir        string
	JSON            bool
	LogLevel        string
	NoLoadState     bool
	CheckpointEvery int
	Clock           string
}

func run(args []string, stdout, stderr io.Writer) int {
	return newApp(stdout, stderr).execute(args)
}

// newApp returns an app that writes to stdout and stderr and looks at the
// real terminal, clock and environment.
func newApp(stdout, stderr io.Writer) *app {
	return &app{stdout: stdout, stderr: stderr, v: viper.New(), log: zerolog.Nop(),
		term: osTerminal, wall: time.Now, getenv: os.Getenv}
}

// execute runs one command line and returns its exit code.
func (a *app) execute(args []string) int {
	root := newRootCommand(a)
	root.SetArgs(args)
	err := root.Execute()
	for _, f := range a.discard {
		f()
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
	case "integrity":
		return "hint: see docs/operations.md, \"Recovering from integrity errors\"; nothing was changed"
	case "run_exists":
		return "hint: acr status shows the run; use another --state-dir, or acr init --force to replace it"
	case "faulted", "provider_failure":
		return "hint: acr status and acr log show the failures; fix the cause, then acr wake --signal manual_resume"
	case "no_space":
		return "hint: the disk is full (or the quota used up): free some space, then retry; acr never leaves a half-written checkpoint"
	case "not_writable":
		return "hint: this command writes to the state directory, which is read-only here (a read-only mount, a backup copy, or another user's files); status, log, audit, report and ledger verify work on it as it is"
	case "io":
		return "hint: an I/O error on the named file: check the disk and the path, then retry; acr never leaves a half-written checkpoint"
	}
	return ""
}

func newRootCommand(a *app) *cobra.Command {
	root := &cobra.Command{
		Use:   "acr",
		Short: "Run a governed, crash-safe, auditable autonomous loop from a state directory",
		Long: `acr runs a bounded autonomous loop from a state directory. Give it a goal, a
contract and an environment once (acr init); then call acr run or acr step
from a shell, cron or a systemd timer. Every call loads the checkpoint, runs
the cycles that are due, and atomically rewrites the checkpoint.

Every flag can also be set in acr.yaml or as ACR_<NAME> (dashes as
underscores); acr config show prints what is in effect and why.
`,
		Example: `  acr init --goal goal.json --contract contract.json --env environment.json
  acr run --max-cycles 20
  acr status`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args:          groupArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			// Read from the flag itself: --version is not a setting, so
			// neither ACR_VERSION nor acr.yaml can turn it on.
			if v, _ := cmd.Flags().GetBool("version"); v {
				return runVersion(a)
			}
			return cmd.Help()
		},
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.configure(cmd)
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(flagError)
	pf := root.PersistentFlags()
	pf.String("state-dir", "", "state directory (default ./engine_state; env ACR_STATE_DIR, ACR_ENGINE_STATE_DIR or CORE_ENGINE_STATE_DIR)")
	pf.Bool("json", false, "print one JSON object on stdout")
	pf.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	pf.String("config", "", "configuration file (default ./acr.yaml if present)")
	pf.Bool("no-load-state", false, "start from a clean slate in memory: the state directory is neither read nor written (debugging, testing)")
	pf.Int("checkpoint-every", 16, "cycles between directory checkpoints within one invocation (each cycle is durable in the ledger regardless)")
	root.Flags().Bool("version", false, "print acr's version (the same as acr version)")

	for _, c := range []*cobra.Command{
		newInitCommand(a), newStatusCommand(a), newStepCommand(a), newRunCommand(a), newWakeCommand(a),
		newApproveCommand(a, "approve"), newApproveCommand(a, "deny"), newStopCommand(a), newRecoverCommand(a),
		newLedgerCommand(a), newAuditCommand(a), newLogCommand(a), newReplayCommand(a), newScenarioCommand(a), newValidateCommand(a),
		newReportCommand(a),
		newVersionCommand(a),
	} {
		c.Long = strings.TrimSpace(c.Long) + "\n" + exitStatusHelp
		root.AddCommand(c)
	}
	root.CompletionOptions.DisableDefaultCmd = true
	for _, c := range []*cobra.Command{newCompletionCommand(a), newConfigCommand(a), newManCommand(a)} {
		root.AddCommand(c)
	}
	finishCommandTree(root)
	if err := addCompletions(a, root); err != nil {
		// Only a programming error (a flag name that does not exist) gets
		// here; the tests build this tree, so it cannot ship.
		panic(err)
	}
	return root
}

// finishCommandTree gives every command, cobra's own help command
// included, the exit status table in its long description, once, and a
// help layout that shows the table last, after usage, examples and flags,
// where a reader of man pages looks for it.
func finishCommandTree(root *cobra.Command) {
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		desc := strings.TrimSpace(strings.Replace(c.Long, exitStatusHelp, "", 1))
		fmt.Fprintf(c.OutOrStdout(), "%s\n\n%s%s\n", desc, c.UsageString(), exitStatusHelp)
	})
	root.InitDefaultHelpCmd()
	for _, c := range root.Commands() {
		if c.Name() == "help" {
			c.Example = "  acr help run\n  acr help ledger verify"
		}
	}
	walkCommands(root, func(c *cobra.Command) {
		if !strings.Contains(c.Long, "EXIT STATUS") {
			if c.Long == "" {
				c.Long = c.Short + "."
			}
			c.Long = strings.TrimSpace(c.Long) + "\n" + exitStatusHelp
		}
	})
}

// configure binds flags, environment and the config file with viper
// (flag > environment > file > default), validates the result into a typed
// config, and builds the logger.
func (a *app) configure(cmd *cobra.Command) error {
	v := a.v
	v.SetEnvPrefix("ACR")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindEnv(append([]string{"state-dir"}, envNames("state-dir")...)...); err != nil {
		return err
	}
	if err := v.BindPFlags(cmd.Root().PersistentFlags()); err != nil {
		return err
	}
	if err := v.BindPFlags(cmd.Flags()); err != nil {
		return err
	}
	cfgFile := v.GetString("config")
	if cfgFile == "" {
		if _, err := os.Stat("acr.yaml"); err == nil {
			cfgFile = "acr.yaml"
		}
	}
	if cfgFile != "" {
		v.SetConfigFile(cfgFile)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return &rundir.ValidationError{File: cfgFile, Err: err}
		}
		known := knownKeys(cmd.Root())
		for _, k := range v.AllKeys() {
			if v.InConfig(k) && !slices.Contains(known, k) {
				msg := "unknown setting (acr config show lists them)"
				if s := nearest(k, known); s != "" {
					msg = fmt.Sprintf("unknown setting; did you mean %s?", s)
				}
				return &rundir.ValidationError{File: cfgFile, Field: k, Err: errors.New(msg)}
			}
		}
	}
	a.cfg = config{
		ConfigFile: cfgFile,
		StateDir:   v.GetString("state-dir"), JSON: v.GetBool("json"), LogLevel: v.GetString("log-level"),
		NoLoadState: v.GetBool("no-load-state"), CheckpointEvery: v.GetInt("checkpoint-every"), Clock: os.Getenv("ACR_CLOCK"),
	}
	if err := a.checkSettings(cmd); err != nil {
		return err
	}
	if a.cfg.StateDir == "" {
		a.cfg.StateDir = "engine_state"
	}
	if a.cfg.CheckpointEvery < 1 {
		return usagef("--checkpoint-every must be at least 1")
	}
	lvl, err := zerolog.ParseLevel(a.cfg.LogLevel)
	if err != nil || a.cfg.LogLevel == "" {
		return usagef("--log-level %q: want debug, info, warn or error", a.cfg.LogLevel)
	}
	a.log = a.newLogger(lvl)
	return nil
}

// newLogger logs to stderr: human console format on a terminal, JSON lines
// otherwise. NO_COLOR turns colour off.
func (a *app) newLogger(lvl zerolog.Level) zerolog.Logger {
	out := a.stderr
	if isTerm, _ := a.term(a.stderr); isTerm {
		out = zerolog.ConsoleWriter{Out: a.stderr, NoColor: !a.colour(), TimeFormat: time.RFC3339}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger()
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

// clock returns the time source: the wall clock, or a frozen time given in
// ACR_CLOCK (RFC 3339), which scenario tests use for reproducible output.
func (a *app) clock() (rundir.Options, error) {
	opt := rundir.Options{Clock: rundir.Clock{}, Revision: revision(), CheckpointEvery: a.cfg.CheckpointEvery, Failpoint: failpoint(os.Getenv("ACR_FAILPOINT")),
		Environ: os.LookupEnv}
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
	hits := 0
	return func(stage string) {
		if stage != name {
			return
		}
		hits++
		if hits != want {
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

// openRun opens the configured state directory, or with --no-load-state a
// clean slate in memory.
func (a *app) openRun() (*rundir.Run, error) {
	if a.cfg.NoLoadState {
		return a.cleanSlate()
	}
	opt, err := a.clock()
	if err != nil {
		return nil, err
	}
	r, err := rundir.Open(a.cfg.StateDir, opt)
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
	return fmt.Errorf("--no-load-state: %w", &rundir.NoRunError{Dir: a.cfg.StateDir + " (not read)"})
}

// readState loads the checkpoint without the lock (for read-only commands).
func (a *app) readState() (rundirState, error) {
	if a.cfg.NoLoadState {
		return rundirState{}, noLoadState(a)
	}
	st, m, err := rundir.ReadState(a.cfg.StateDir)
	return rundirState{State: st, Manifest: m}, err
}

func exactArgs(n int, what string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s (see acr %s --help)", cmd.CommandPath(), what, cmd.Name())
		}
		return nil
	}
}

func noArgs(cmd *cobra.Command, args []string) error {
	if len(args) > 0 {
		return usagef("%s takes no arguments, got %q (see %s --help)", cmd.CommandPath(), args[0], cmd.CommandPath())
	}
	return nil
}
