package main

import (
	"errors"
	"fmt"
	"io/fs"
	"syscall"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// Exit codes follow sysexits(3) so scripts and cron can branch on them.
const (
	exitOK       = 0
	exitUsage    = 64 // EX_USAGE: bad flags or arguments
	exitData     = 65 // EX_DATAERR: bad input data or an integrity failure
	exitNoInput  = 66 // EX_NOINPUT: no run in the state directory or store
	exitInternal = 70 // EX_SOFTWARE: internal error or FAULTED
	exitIO       = 74 // EX_IOERR: I/O error, or the store is unreachable
	exitBusy     = 75 // EX_TEMPFAIL: another invocation holds the run, or won a write
)

// exitStatusHelp is appended to every command's help.
const exitStatusHelp = `
EXIT STATUS
  0   done; any non-fault disposition (IDLE, SLEEP, WAIT_APPROVAL, DEFERRED, STOPPED); also a request
      that changes nothing (a coalesced wake, an answer already queued, stop on a stopped run): nothing queued
  64  usage error (bad flags or arguments)
  65  bad input data (goal/contract/environment/signal, a ref that names no pending request) or integrity failure of ledger or checkpoint
  66  no run in the state directory or the store (or, on a nats:// store, no world stored for the run nor a copy on this host)
  70  internal error, provider failure or FAULTED run (every run and step until it is resumed)
  74  I/O error (disk full, read-only state directory, fsync failure) or the --store server is unreachable
  75  busy: another invocation holds the run (its lock or lease), or wrote it first; retry later`

// usageError marks errors in how acr was called.
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return &usageError{fmt.Errorf(format, args...)} }

// dataError marks bad input data that is not a file validation error
// (an expired signal, an unknown approval ref).
type dataError struct{ err error }

func (e *dataError) Error() string { return e.err.Error() }
func (e *dataError) Unwrap() error { return e.err }

func dataf(format string, args ...any) error { return &dataError{fmt.Errorf(format, args...)} }

// errorKind classifies an error for exit codes and --json output. It is the
// one place where errors become exit codes.
func errorKind(err error) (int, string) {
	var (
		ue *usageError
		de *dataError
		ve *runstore.ValidationError
		ie *state.IntegrityError
		re *kernel.ReplayError
		pe *fs.PathError
		se *codec.SyntaxError
		fe *codec.FieldError
		nd *runstore.NotDirError
		dm *runstore.DamagedError
		ii *runstore.InterruptedInitError
		ae *archive.Error
		he *storage.HeldError
		sg *runstore.SettingError
		ri *runstore.RunIDError
	)
	switch {
	case err == nil:
		return exitOK, ""
	case errors.As(err, &ue), errors.As(err, &nd), errors.As(err, &sg), errors.As(err, &ri),
		errors.Is(err, runstore.ErrRootWorld), errors.Is(err, runstore.ErrCommandWorld), errors.Is(err, runstore.ErrCreateOnce),
		errors.Is(err, runstore.ErrNoLeases), errors.Is(err, runstore.ErrRunID), errors.Is(err, runstore.ErrOneRun):
		return exitUsage, "usage"
	case runstore.Unavailable(err):
		return exitIO, "unavailable"
	case errors.As(err, &he):
		return exitBusy, "leased"
	case errors.Is(err, storage.ErrBusy):
		return exitBusy, "busy"
	case errors.Is(err, storage.ErrConflict):
		return exitBusy, "conflict"
	case errors.Is(err, storage.ErrNoRun):
		return exitNoInput, "no_run"
	case errors.Is(err, runstore.ErrNoWorld):
		return exitNoInput, "no_world"
	case errors.As(err, &ae):
		return exitData, "bad_archive"
	case errors.Is(err, runstore.ErrNotAtRest):
		return exitData, "not_at_rest"
	case errors.As(err, &ve), errors.As(err, &de), errors.As(err, &se), errors.As(err, &fe):
		return exitData, "bad_input"
	case errors.As(err, &dm), errors.As(err, &ii):
		return exitData, "integrity"
	case errors.As(err, &ie), errors.Is(err, storage.ErrCorrupt), errors.Is(err, storage.ErrBehind), errors.As(err, &re),
		errors.Is(err, runstore.ErrKeyConflict):
		return exitData, "integrity"
	case errors.Is(err, runstore.ErrRunExists):
		return exitData, "run_exists"
	case errors.Is(err, errValidation):
		return exitInternal, "validation_failed"
	case errors.Is(err, kernel.ErrFaulted):
		return exitInternal, "faulted"
	case errors.Is(err, kernel.ErrProvider):
		return exitInternal, "provider_failure"
	case errors.Is(err, syscall.ENOSPC), errors.Is(err, syscall.EDQUOT):
		return exitIO, "no_space"
	case errors.Is(err, syscall.EROFS), errors.Is(err, syscall.EACCES), errors.Is(err, syscall.EPERM):
		return exitIO, "not_writable"
	case errors.Is(err, syscall.EIO), errors.As(err, &pe):
		return exitIO, "io"
	}
	return exitInternal, "internal"
}

// silentError carries an exit code for a command that already printed its
// --json result, so that finish does not print a second JSON object.
type silentError struct{ err error }

func (e *silentError) Error() string { return e.err.Error() }
func (e *silentError) Unwrap() error { return e.err }
