package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/viper"

	"github.com/acr-project/acr/internal/runstore"
)

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
				return runVersion(cmd.Context(), versionOptions{}, a)
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
	pf.String("store", "", "where runs are kept: dir:PATH, a state directory (the same as --state-dir); or nats://HOST:PORT[/PREFIX] or tls://HOST:PORT[/PREFIX], a JetStream store of many runs, several servers comma-separated")
	pf.String("run-id", "", "the run: required with a nats:// store; with a state directory optional, and it must be the directory's run (acr init: the new run's id, default derived from the inputs and the start time)")
	pf.String("nats-creds", "", "NATS credentials file for a nats:// or tls:// store")
	pf.Int("nats-replicas", 0, "replicas of a nats:// store's streams and buckets, 1 to 5 (3 on a three-node cluster); set when acr creates them or they differ; not given: as they are (1 for a new store)")
	pf.String("store-wait", "20s", "how long a command waits for a nats:// store that does not answer (a paused or restarting server, a lost connection, a leader election) before it exits 74; 0 tries once")
	pf.Bool("json", false, "print one JSON object on stdout")
	pf.String("log-level", "warn", "log level on stderr: debug, info, warn, error")
	pf.String("config", "", "configuration file (default ./acr.yaml if present)")
	pf.Bool("no-load-state", false, "start from a clean slate in memory: the state directory is neither read nor written (debugging, testing)")
	pf.Int64("ledger-seal-bytes", 256<<10, "seal the ledger's history into compressed segments once ledger/events.jsonl holds this many bytes (at the end of an invocation; 32 times as many within one); 0 never seals")
	pf.Int("checkpoint-every", 64, "cycles between directory checkpoints within one invocation (each cycle is durable in the ledger regardless)")
	root.Flags().Bool("version", false, "print acr's version (the same as acr version)")

	for _, c := range []*cobra.Command{
		newInitCommand(a), newStatusCommand(a), newStepCommand(a), newRunCommand(a), newWakeCommand(a),
		newApproveCommand(a, "approve"), newApproveCommand(a, "deny"), newResolveCommand(a), newStopCommand(a), newAmendCommand(a), newRecoverCommand(a),
		newLedgerCommand(a), newAuditCommand(a), newLogCommand(a), newReplayCommand(a), newScenarioCommand(a), newValidateCommand(a),
		newReportCommand(a), newRunsCommand(a), newWorkerCommand(a), newLeaseCommand(a), newExportCommand(a), newImportCommand(a),
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
// (flag > environment > file > default), validates every setting, decodes
// the global ones into a typed config, and builds the logger. Each command
// then decodes its own flags into its options struct (decodeFlags).
func (a *app) configure(cmd *cobra.Command) error {
	v := a.v
	v.SetEnvPrefix("ACR")
	v.SetEnvKeyReplacer(strings.NewReplacer("-", "_"))
	v.AutomaticEnv()
	for _, key := range []string{"state-dir", "sign-key"} {
		if err := v.BindEnv(append([]string{key}, envNames(key)...)...); err != nil {
			return err
		}
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
			return &runstore.ValidationError{File: cfgFile, Err: err}
		}
		known := knownKeys(cmd.Root())
		for _, k := range v.AllKeys() {
			if v.InConfig(k) && !slices.Contains(known, k) {
				msg := "unknown setting (acr config show lists them)"
				if s := nearest(k, known); s != "" {
					msg = fmt.Sprintf("unknown setting; did you mean %s?", s)
				}
				return &runstore.ValidationError{File: cfgFile, Field: k, Err: errors.New(msg)}
			}
		}
	}
	a.cfg = config{}
	if err := decodeFlags(cmd, v, &a.cfg); err != nil {
		return err
	}
	a.cfg.ConfigFile, a.cfg.Clock = cfgFile, a.getenv("ACR_CLOCK")
	if err := a.checkSettings(cmd); err != nil {
		return err
	}
	if err := a.resolveStore(); err != nil {
		return err
	}
	if err := a.checkReplicas(cmd); err != nil {
		return err
	}
	wait, err := time.ParseDuration(a.cfg.StoreWait)
	if err != nil || wait < 0 {
		return a.settingError(cmd, "store-wait", a.cfg.StoreWait, "want a duration such as 20s or 2m (0: try once)")
	}
	a.storeWait, a.command = wait, cmd.Name()
	if a.cfg.SealBytes < 0 {
		return usagef("--ledger-seal-bytes must be 0 (never) or more")
	}
	if a.cfg.CheckpointEvery < 1 {
		return usagef("--checkpoint-every must be at least 1")
	}
	lvl, err := zerolog.ParseLevel(a.cfg.LogLevel)
	if err != nil || a.cfg.LogLevel == "" {
		return usagef("--log-level %q: want debug, info, warn or error", a.cfg.LogLevel)
	}
	a.log = a.newLogger(lvl)
	a.unwatch = dieOnInterrupt(cmd.Context(), cmd)
	return nil
}

// resolveStore checks --store and makes it and --state-dir name the same
// thing: a dir: store is the state directory; a nats:// or tls:// store
// needs --run-id, and keeps this host's copies of the worlds of the runs
// it runs in the state directory (runstore.Remote).
func (a *app) resolveStore() error {
	store, dir := a.cfg.Store, a.cfg.StateDir
	switch {
	case store == "":
		if dir == "" {
			dir = runstore.DefaultDir
		}
		store = "dir:" + dir
	case strings.HasPrefix(store, "dir:"):
		p := strings.TrimPrefix(store, "dir:")
		if p == "" {
			return usagef("--store dir: names no directory (want dir:PATH)")
		}
		if dir != "" && filepath.Clean(dir) != filepath.Clean(p) {
			return usagef("--store %s and --state-dir %s name two places; give one of them", store, dir)
		}
		dir = p
	case strings.HasPrefix(store, "nats://"), strings.HasPrefix(store, "tls://"):
		if err := runstore.CheckStoreURL(store); err != nil {
			return usagef("--store: %v", err)
		}
		if dir == "" {
			dir = runstore.DefaultDir
		}
	default:
		return usagef("--store %q: want dir:PATH, nats://HOST:PORT[/PREFIX] or tls://HOST:PORT[/PREFIX]", store)
	}
	a.cfg.Store, a.cfg.StateDir = store, dir
	return nil
}

// checkReplicas refuses a --nats-replicas outside 1 to 5, naming where it
// came from (a value in acr.yaml is bad input data, as every bad value
// there is). Not given at all, it is 0: keep what the store has.
func (a *app) checkReplicas(cmd *cobra.Command) error {
	n := a.cfg.NatsReplicas
	if (n == 0 && !a.v.IsSet("nats-replicas")) || (n >= 1 && n <= 5) {
		return nil
	}
	const want = "want 1 to 5 (the replicas of the store's streams and buckets: 1 on a single server, at most the servers of a cluster)"
	switch {
	case cmd.Flags().Changed("nats-replicas"):
		return usagef("--nats-replicas %d: %s", n, want)
	case a.getenv("ACR_NATS_REPLICAS") != "":
		return usagef("ACR_NATS_REPLICAS=%d: %s", n, want)
	}
	return &runstore.ValidationError{File: a.cfg.ConfigFile, Field: "nats-replicas", Err: fmt.Errorf("%d: %s", n, want)}
}

// settingError refuses a bad value of a setting, naming where it came
// from: a flag or ACR_ variable is a usage error (64), a value in
// acr.yaml bad input data (65), as every bad value there is.
func (a *app) settingError(cmd *cobra.Command, name, value, want string) error {
	env := "ACR_" + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	switch {
	case cmd.Flags().Changed(name):
		return usagef("--%s %q: %s", name, value, want)
	case a.v.InConfig(name):
		return &runstore.ValidationError{File: a.cfg.ConfigFile, Field: name, Err: fmt.Errorf("%q: %s", value, want)}
	case a.getenv(env) != "" || os.Getenv(env) != "":
		return usagef("%s=%s: %s", env, value, want)
	}
	return usagef("--%s %q: %s", name, value, want)
}

// newLogger logs to stderr: human console format on a terminal, JSON lines
// otherwise. NO_COLOR turns colour off.
func (a *app) newLogger(lvl zerolog.Level) zerolog.Logger {
	out := a.stderr
	if isTerm, _ := a.term(a.stderr); isTerm {
		out = zerolog.ConsoleWriter{Out: a.stderr, NoColor: !a.colour(), TimeFormat: time.RFC3339}
	}
	// A worker logs from the goroutine of each run it holds: one line at
	// a time.
	return zerolog.New(zerolog.SyncWriter(out)).Level(lvl).With().Timestamp().Logger()
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

// decodeFlags fills the fields of the struct opts points to from the
// settings their `flag:"NAME"` tags name, each with viper's precedence: the
// flag on the command line, else ACR_NAME, else acr.yaml, else the flag's
// default (configure has bound them and refused a value the flag would
// not take). An untagged struct field is decoded in the same way.
//
// It reads each value with viper's typed getter for the field's kind, the
// way the commands always read them, rather than with viper.Unmarshal:
// mapstructure's weak typing would read `by: true` in acr.yaml as "1".
// A tag naming a flag that cmd does not have is a programming error, and
// the tests run every command.
func decodeFlags(cmd *cobra.Command, v *viper.Viper, opts any) error {
	rv := reflect.ValueOf(opts)
	if rv.Kind() != reflect.Pointer || rv.Elem().Kind() != reflect.Struct {
		return fmt.Errorf("decode flags: %T is not a pointer to a struct", opts)
	}
	return decodeStruct(cmd, v, rv.Elem())
}

func decodeStruct(cmd *cobra.Command, v *viper.Viper, rv reflect.Value) error {
	for i := range rv.NumField() {
		f, fv := rv.Type().Field(i), rv.Field(i)
		name, ok := f.Tag.Lookup("flag")
		if !ok {
			if fv.Kind() == reflect.Struct {
				if err := decodeStruct(cmd, v, fv); err != nil {
					return err
				}
			}
			continue
		}
		if cmd.Flag(name) == nil {
			return fmt.Errorf("decode flags: %s has no flag --%s for field %s", cmd.CommandPath(), name, f.Name)
		}
		switch fv.Kind() {
		case reflect.String:
			fv.SetString(v.GetString(name))
		case reflect.Bool:
			fv.SetBool(v.GetBool(name))
		case reflect.Int, reflect.Int64:
			fv.SetInt(v.GetInt64(name))
		default:
			return fmt.Errorf("decode flags: field %s: cannot decode a %s", f.Name, fv.Kind())
		}
	}
	return nil
}
