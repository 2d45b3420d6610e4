package main

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/acr-project/acr/internal/runstore"
)

// settingSpec is one configuration key: a flag somewhere in the command
// tree, which can also be set in acr.yaml or as ACR_<NAME>.
type settingSpec struct {
	flag     *pflag.Flag
	global   bool
	commands []string
}

// settingSpecs collects every flag of the command tree by name. A name
// used by several commands (--reason, --by) is one key: acr.yaml and the
// environment set it for whichever of them runs.
func settingSpecs(root *cobra.Command) map[string]*settingSpec {
	specs := map[string]*settingSpec{}
	root.PersistentFlags().VisitAll(func(f *pflag.Flag) {
		specs[f.Name] = &settingSpec{flag: f, global: true}
	})
	walkCommands(root, func(c *cobra.Command) {
		c.LocalNonPersistentFlags().VisitAll(func(f *pflag.Flag) {
			if f.Name == "help" || f.Name == "version" {
				return
			}
			s := specs[f.Name]
			if s == nil {
				s = &settingSpec{flag: f}
				specs[f.Name] = s
			}
			if !s.global {
				s.commands = append(s.commands, strings.TrimPrefix(c.CommandPath(), "acr "))
			}
		})
	})
	return specs
}

// knownKeys lists every configuration key, for validating acr.yaml.
func knownKeys(root *cobra.Command) []string {
	var keys []string
	for k := range settingSpecs(root) {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// envNames are the environment variables that set a key, in the order
// viper consults them.
func envNames(key string) []string {
	if key == "state-dir" {
		// CORE_ENGINE_STATE_DIR is the name ADR-0146 gives the variable.
		return []string{"ACR_STATE_DIR", "ACR_ENGINE_STATE_DIR", "CORE_ENGINE_STATE_DIR"}
	}
	if key == "sign-key" {
		// The variable names the key, as git's user.signingKey does.
		return []string{"ACR_SIGNING_KEY"}
	}
	return []string{"ACR_" + strings.ToUpper(strings.ReplaceAll(key, "-", "_"))}
}

// setting is one row of acr config show.
type setting struct {
	Key      string   `json:"key"`
	Value    any      `json:"value"`
	Source   string   `json:"source"`         // flag, env, file or default
	From     string   `json:"from,omitempty"` // the variable or file it came from
	Commands []string `json:"commands"`       // the commands that read it; empty: every command
}

// settingOf works out a key's effective value and where it came from, in
// viper's order: a flag given on this command line, the environment, the
// configuration file, the flag's default.
func (a *app) settingOf(cmd *cobra.Command, key string, spec *settingSpec) setting {
	s := setting{Key: key, Commands: spec.commands, Source: "default", Value: spec.flag.DefValue}
	if s.Commands == nil {
		s.Commands = []string{}
	}
	raw, found := spec.flag.DefValue, false
	if f := cmd.Flags().Lookup(key); f != nil && f.Changed {
		raw, found, s.Source = f.Value.String(), true, "flag"
		s.From = "--" + key
	}
	for _, name := range envNames(key) {
		if v := a.getenv(name); !found && v != "" {
			raw, found, s.Source, s.From = v, true, "env", name
		}
	}
	if !found && a.cfg.ConfigFile != "" && a.v.InConfig(key) {
		raw, s.Source, s.From = fmt.Sprint(a.v.Get(key)), "file", a.cfg.ConfigFile
	}
	switch {
	case key == "state-dir" && raw == "":
		raw = "engine_state"
	case key == "config" && raw == "":
		raw = a.cfg.ConfigFile
	}
	s.Value = raw
	if v, err := typed(spec.flag, raw); err == nil {
		s.Value = v
	}
	return s
}

// typed converts a setting's text to the flag's type.
func typed(f *pflag.Flag, raw string) (any, error) {
	switch f.Value.Type() {
	case "bool":
		b, err := strconv.ParseBool(raw)
		if err != nil {
			return nil, errors.New("want true or false")
		}
		return b, nil
	case "int", "int64":
		n, err := strconv.ParseInt(raw, 10, 64)
		if err != nil {
			return nil, errors.New("want a whole number")
		}
		return n, nil
	}
	return raw, nil
}

// checkSettings rejects a value from the environment or the file that the
// flag would not accept, naming where it came from: viper alone would read
// ACR_MAX_CYCLES=ten as 0 and the error would be about the wrong thing.
func (a *app) checkSettings(cmd *cobra.Command) error {
	for key, spec := range settingSpecs(cmd.Root()) {
		for _, name := range envNames(key) {
			if v := a.getenv(name); v != "" {
				if _, err := typed(spec.flag, v); err != nil {
					return usagef("%s=%q: %v for --%s (see acr config show)", name, v, err, key)
				}
			}
		}
		if a.cfg.ConfigFile == "" || !a.v.InConfig(key) {
			continue
		}
		v := a.v.Get(key)
		switch v.(type) {
		case []any, map[string]any:
			return &runstore.ValidationError{File: a.cfg.ConfigFile, Field: key, Err: errors.New("want a single value, not a list or a map")}
		}
		if _, err := typed(spec.flag, fmt.Sprint(v)); err != nil {
			return &runstore.ValidationError{File: a.cfg.ConfigFile, Field: key, Err: fmt.Errorf("%q: %w", fmt.Sprint(v), err)}
		}
	}
	return nil
}
