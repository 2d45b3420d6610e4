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
	"github.com/spf13/pflag"
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
	sources        map[string]string // where each config value came from
}

// config is the typed, validated configuration shared by all commands.
type config struct {
	StateDir        string
	JSON            bool
	LogLevel        string
	NoLoadState     bool
	CheckpointEvery int
	Clock           string
}

func run(args []string, stdout, stderr io.Writer) int {
	a := &app{stdout: stdout, stderr: stderr, v: viper.New(), log: zerolog.Nop()}
	root := newRootCommand(a)
	root.SetArgs(args)
	err := root.Execute()
	return a.finish(err)
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

func nextStepFor(kind string) string {
	switch kind {
	case "no_run":
		return "hint: create one with: acr init --goal goal.json --contract contract.json --env environment.json"
	case "busy":
		return "hint: another acr invocation is running on this state directory; retry later"
	case "integrity":
		return "hint: see docs/operations.md, \"Recovering from integrity errors\"; nothing was changed"
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
the cycles that are due, and atomically rewrites the checkpoint.` + exitStatusHelp,
		Example: `  acr init --goal goal.json --contract contract.json --env environment.json
  acr run --max-cycles 20
  acr status`,
		SilenceErrors: true,
		SilenceUsage:  true,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", s[0])
			}
			return usagef("%s (see acr --help)", msg)
		},
		RunE: func(cmd *cobra.Command, args []string) error { return cmd.Help() },
		PersistentPreRunE: func(cmd *cobra.Command, args []string) error {
			return a.configure(cmd)
		},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%v (see acr %s --help)", err, strings.TrimPrefix(c.CommandPath(), "acr "))
	})
	root.SuggestionsMinimumDistance = 2
	pf := root.PersistentFlags()
	pf.String("state-dir", "", "state directory (default ./engine_state; env ACR_ENGINE_STATE_DIR)")
	pf.Bool("json", false, "print one JSON object on stdout")
	pf.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	pf.String("config", "", "configuration file (default ./acr.yaml if present)")
	pf.Bool("no-load-state", false, "do not read the state directory: behave as if it held no run (debugging)")
	pf.Int("checkpoint-every", 16, "cycles between directory checkpoints within one invocation (each cycle is durable in the ledger regardless)")

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
	return root
}

type pflagFlag = pflag.Flag

// knownKeys lists every configuration key, for validating acr.yaml.
func knownKeys(root *cobra.Command) []string {
	var keys []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflagFlag) { keys = append(keys, f.Name) })
		c.PersistentFlags().VisitAll(func(f *pflagFlag) { keys = append(keys, f.Name) })
		for _, s := range c.Commands() {
			walk(s)
		}
	}
	walk(root)
	slices.Sort(keys)
	return slices.Compact(keys)
}

// configure binds flags, environment and the config file with viper
// (flag > environment > file > default), validates the result into a typed
// config, and builds the logger.
func (a *app) configure(cmd *cobra.Command) error {
	v := a.v
	v.SetEnvPrefix("ACR")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	if err := v.BindEnv("state-dir", "ACR_STATE_DIR", "ACR_ENGINE_STATE_DIR"); err != nil {
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
	a.sources = map[string]string{}
	if cfgFile != "" {
		v.SetConfigFile(cfgFile)
		v.SetConfigType("yaml")
		if err := v.ReadInConfig(); err != nil {
			return &rundir.ValidationError{File: cfgFile, Err: err}
		}
		known := knownKeys(cmd.Root())
		for _, k := range v.AllKeys() {
			if !slices.Contains(known, k) {
				return &rundir.ValidationError{File: cfgFile, Field: k, Err: errors.New("unknown setting")}
			}
		}
	}
	a.cfg = config{
		StateDir: v.GetString("state-dir"), JSON: v.GetBool("json"), LogLevel: v.GetString("log-level"),
		NoLoadState: v.GetBool("no-load-state"), CheckpointEvery: v.GetInt("checkpoint-every"), Clock: os.Getenv("ACR_CLOCK"),
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
	a.log = newLogger(a.stderr, lvl)
	return nil
}

// newLogger logs to stderr: human console format on a terminal, JSON lines
// otherwise. NO_COLOR turns colour off.
func newLogger(w io.Writer, lvl zerolog.Level) zerolog.Logger {
	out := w
	if isTerminal(w) {
		_, noColor := os.LookupEnv("NO_COLOR")
		out = zerolog.ConsoleWriter{Out: w, NoColor: noColor, TimeFormat: time.RFC3339}
	}
	return zerolog.New(out).Level(lvl).With().Timestamp().Logger()
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
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
	opt := rundir.Options{Clock: rundir.Clock{}, Revision: revision(), CheckpointEvery: a.cfg.CheckpointEvery, Failpoint: failpoint(os.Getenv("ACR_FAILPOINT"))}
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

// openRun opens the configured state directory, honouring --no-load-state.
func (a *app) openRun() (*rundir.Run, error) {
	if a.cfg.NoLoadState {
		return nil, fmt.Errorf("--no-load-state: %w", state.ErrNoRun)
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

// readState loads the checkpoint without the lock (for read-only commands).
func (a *app) readState() (rundirState, error) {
	if a.cfg.NoLoadState {
		return rundirState{}, fmt.Errorf("--no-load-state: %w", state.ErrNoRun)
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
