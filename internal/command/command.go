// Package command runs the programs a run declares (command checks,
// run_command fixes, an external proposer) the one way acr runs programs:
// no shell unless argv names one, stdin closed, an environment built from
// an allow-list instead of inherited, its own process group, killed as a
// group when the time is up, and output kept up to a bound but hashed and
// counted whole. A program is untrusted: it may hang, flood its output,
// fork children that outlive it, or print bytes that are not text, and none
// of that may hang or break the loop.
package command

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"hash"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"
	"unicode/utf8"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Spec is one program to run.
type Spec struct {
	// Argv is the program and its arguments. A relative program path
	// (with a slash) is taken relative to Dir; a bare name is looked up on
	// the PATH of the environment acr itself runs in.
	Argv []string
	// Dir is the working directory.
	Dir string
	// Env is the program's complete environment, NAME=value.
	Env []string
	// Timeout bounds the run; past it the process group is killed.
	Timeout time.Duration
	// MaxOutput bounds the bytes of each stream kept in the result
	// (0: world.MaxOutputBytes).
	MaxOutput int
	// Stdin is fed to the program, then closed; nil means closed at once.
	Stdin []byte
}

// Result is how a run ended. Stdout and Stderr in it are the kept prefix,
// made valid UTF-8; StdoutRaw holds stdout's kept bytes as written, for a
// caller that must parse them.
type Result struct {
	world.CommandResult
	Duration time.Duration
	// StdoutRaw is stdout's kept prefix, unmodified.
	StdoutRaw []byte
}

// ErrStart means the program could not be started at all (not found, not
// executable, no such directory). Nothing ran.
var ErrStart = errors.New("command could not be started")

// waitDelay bounds how long a finished program's children may keep its
// output pipes open before the pipes are closed on them.
const waitDelay = 2 * time.Second

// Run runs s and waits for it. It returns an error when the program could
// not be started (ErrStart), when the machine failed, or when ctx ended
// before the program did (the error wraps ctx's): acr itself is stopping,
// the program was killed for that and not for anything it did, so its
// result says nothing about the world and must not be judged. How the
// program ended on its own, its own timeout included, is in the Result.
func Run(parent context.Context, s Spec) (Result, error) {
	if len(s.Argv) == 0 || s.Argv[0] == "" {
		return Result{}, fmt.Errorf("%w: empty argv", ErrStart)
	}
	max := s.MaxOutput
	if max <= 0 {
		max = world.MaxOutputBytes
	}
	if s.Timeout <= 0 {
		s.Timeout = world.DefaultCommandTimeout * time.Second
	}
	if err := parent.Err(); err != nil {
		return Result{}, fmt.Errorf("%s not started: %w", s.Argv[0], err)
	}
	ctx, cancel := context.WithTimeout(parent, s.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, s.Argv[0], s.Argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = s.Env
	if cmd.Env == nil {
		cmd.Env = []string{}
	}
	if s.Stdin != nil {
		cmd.Stdin = strings.NewReader(string(s.Stdin))
	}
	stdout, stderr := newCapture(max), newCapture(max)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	// Its own process group, so that a timeout kills the children too;
	// and killed when acr dies (kill -9 included), so that a program does
	// not go on changing the world while recovery decides whether it ran.
	// The signal follows the thread that started the program, so that
	// thread stays locked until the program is waited for.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	cmd.Cancel = func() error { return killGroup(cmd.Process) }
	cmd.WaitDelay = waitDelay
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("%w: %s: %w", ErrStart, s.Argv[0], err)
	}
	waitErr := cmd.Wait()
	dur := time.Since(start)
	// Whatever the program left running in its group goes too: a check
	// must not leave processes behind that outlive the cycle.
	_ = killGroup(cmd.Process)

	r := Result{Duration: dur, StdoutRaw: stdout.kept}
	r.Argv = append([]string{}, s.Argv...)
	r.Stdout, r.Stderr = text(stdout.kept), text(stderr.kept)
	r.StdoutSHA256, r.StderrSHA256 = stdout.sum(), stderr.sum()
	r.StdoutBytes, r.StderrBytes = stdout.n, stderr.n
	r.ExitCode = -1
	if ps := cmd.ProcessState; ps != nil {
		r.ExitCode = ps.ExitCode()
		if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.Signal = ws.Signal().String()
		}
	}
	if err := parent.Err(); err != nil {
		return r, fmt.Errorf("%s stopped before it finished: %w", s.Argv[0], err)
	}
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		r.TimedOut = true
	}
	var exitErr *exec.ExitError
	switch {
	case waitErr == nil, errors.As(waitErr, &exitErr), errors.Is(waitErr, exec.ErrWaitDelay):
	case r.TimedOut:
	default:
		return r, fmt.Errorf("wait for %s: %w", s.Argv[0], waitErr)
	}
	return r, nil
}

// killGroup sends SIGKILL to the process group p leads.
func killGroup(p *os.Process) error {
	if p == nil {
		return nil
	}
	err := syscall.Kill(-p.Pid, syscall.SIGKILL)
	if errors.Is(err, syscall.ESRCH) {
		return nil
	}
	return err
}

// text makes kept output valid UTF-8: canonical JSON carries strings, and
// a program may print anything.
func text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD")
}

// capture hashes and counts everything written and keeps a prefix.
type capture struct {
	h    hash.Hash
	n    int64
	max  int
	kept []byte
}

func newCapture(max int) *capture { return &capture{h: sha256.New(), max: max} }

func (c *capture) Write(p []byte) (int, error) {
	c.h.Write(p)
	c.n += int64(len(p))
	if room := c.max - len(c.kept); room > 0 {
		c.kept = append(c.kept, p[:min(room, len(p))]...)
	}
	return len(p), nil
}

func (c *capture) sum() codec.Fingerprint {
	return codec.FingerprintSum(c.h.Sum(nil))
}

// Environment builds a program's environment from the one acr runs in:
// PATH, HOME and LANG, the names in pass (when set), then extra (which
// wins). lookup reads acr's own environment; cmd/acr passes os.LookupEnv.
func Environment(lookup func(string) (string, bool), pass []string, extra map[string]string) []string {
	var env []string
	seen := map[string]bool{}
	add := func(k, v string) {
		if !seen[k] {
			seen[k] = true
			env = append(env, k+"="+v)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		add(k, extra[k])
	}
	if lookup != nil {
		for _, k := range append([]string{"PATH", "HOME", "LANG"}, pass...) {
			if v, ok := lookup(k); ok {
				add(k, v)
			}
		}
	}
	return env
}
