package main

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// TestExitCodes pins the one mapping from errors to exit codes.
func TestExitCodes(t *testing.T) {
	wrap := func(err error) error { return fmt.Errorf("step: load: %w", err) }
	cases := []struct {
		name string
		err  error
		code int
	}{
		{"nil", nil, exitOK},
		{"usage", usagef("bad flag"), exitUsage},
		{"busy", wrap(storage.ErrBusy), exitBusy},
		{"no run", wrap(storage.ErrNoRun), exitNoInput},
		{"validation", &runstore.ValidationError{File: "goal.json", Field: "schema", Err: errors.New("x")}, exitData},
		{"data", dataf("expired"), exitData},
		{"integrity", wrap(&state.IntegrityError{File: "manifest.json", Msg: "x"}), exitData},
		{"ledger damage", wrap(&ledger.DamageError{Line: 3, Msg: "x"}), exitData},
		{"ledger behind", wrap(ledger.ErrBehind), exitData},
		{"replay divergence", wrap(&kernel.ReplayError{Seq: 4, Msg: "x"}), exitData},
		{"run exists", runstore.ErrRunExists, exitData},
		{"damaged run exists", &runstore.RunExistsError{Dir: "d", Damaged: []string{"ledger"}}, exitData},
		{"state dir is a file", wrap(&runstore.NotDirError{Path: "f"}), exitUsage},
		{"no run, named", wrap(&runstore.NoRunError{Dir: "d"}), exitNoInput},
		{"manifest missing", wrap(&runstore.DamagedError{Dir: "d", Found: []string{"ledger"}}), exitData},
		{"interrupted init", wrap(&runstore.InterruptedInitError{Dir: "d"}), exitData},
		{"permission denied", wrap(&fs.PathError{Op: "open", Path: "x", Err: syscall.EACCES}), exitIO},
		{"faulted", wrap(kernel.ErrFaulted), exitInternal},
		{"provider", wrap(kernel.ErrProvider), exitInternal},
		{"disk full", wrap(&fs.PathError{Op: "write", Path: "manifest.json", Err: syscall.ENOSPC}), exitIO},
		{"read-only", wrap(&fs.PathError{Op: "open", Path: "x", Err: syscall.EROFS}), exitIO},
		{"fsync failure", wrap(fmt.Errorf("fsync ledger: %w", syscall.EIO)), exitIO},
		{"bad archive", fmt.Errorf("run.acr: %w", &archive.Error{Offset: 9, Msg: "x"}), exitData},
		{"not at rest", wrap(&runstore.NotAtRestError{Where: "d", Beyond: "x"}), exitData},
		{"import onto a run", &runstore.ImportExistsError{Where: "d"}, exitData},
		{"replicas the servers cannot hold", fmt.Errorf("--store x: %w", &runstore.SettingError{Setting: "--nats-replicas", Err: errors.New("the servers cannot hold that many replicas")}), exitUsage},
		{"anything else", errors.New("boom"), exitInternal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _ := errorKind(c.err)
			assert.Equal(t, c.code, code)
		})
	}
}

// TestJSONRequested: --json is found on a command line that did not parse,
// so that a usage error still prints one JSON object.
func TestJSONRequested(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == "ACR_JSON" {
				return v
			}
			return ""
		}
	}
	cases := []struct {
		name string
		args []string
		env  string
		want bool
	}{
		{"absent", []string{"run", "--max-cycles", "ten"}, "", false},
		{"before the command", []string{"--json", "stauts"}, "", true},
		{"after the command", []string{"run", "--max-cycles", "ten", "--json"}, "", true},
		{"with a value", []string{"run", "--json=true"}, "", true},
		{"turned off", []string{"run", "--json=false"}, "1", false},
		{"after --", []string{"run", "--", "--json"}, "", false},
		{"from the environment", []string{"stauts"}, "true", true},
		{"a bad environment value", []string{"stauts"}, "yes please", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, jsonRequested(c.args, env(c.env)))
		})
	}
}

// TestIOHints: only a full disk is told to check free space; a read-only
// state directory is told what it is.
func TestIOHints(t *testing.T) {
	for errno, want := range map[syscall.Errno]string{
		syscall.ENOSPC: "disk is full", syscall.EDQUOT: "disk is full",
		syscall.EROFS: "read-only", syscall.EACCES: "read-only", syscall.EPERM: "read-only",
		syscall.EIO: "I/O error",
	} {
		_, kind := errorKind(&fs.PathError{Op: "write", Path: "x", Err: errno})
		hint := nextStepFor(kind)
		assert.Contains(t, hint, want, errno.Error())
		if errno != syscall.ENOSPC && errno != syscall.EDQUOT {
			assert.NotContains(t, hint, "free", errno.Error())
		}
	}
}
