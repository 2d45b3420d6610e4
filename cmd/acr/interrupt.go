package main

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"
)

// Interrupts. main's context is cancelled by the first SIGINT or SIGTERM,
// with an *interruptError as its cause. The commands that run cycles (run,
// step, worker) read the context and stop at a cycle boundary: a check or
// proposer call in progress is stopped and its cycle not written, a cycle
// that has recorded its decision finishes (see kernel.Driver.Run), the run
// is checkpointed, and the command exits 0 saying it was interrupted. Every other command ends as it always has when a
// signal comes: killed by that signal (acr validate, a long acr replay or
// acr report stop at once; any command that writes is crash-safe).
//
// After the first signal the signals have their default effect again, so
// a second one ends even acr run at once, as a crash that the next
// invocation recovers from; a single signal is all acr run needs.

// interruptError is the cause of a context cancelled by a signal.
type interruptError struct{ sig syscall.Signal }

func (e *interruptError) Error() string { return "interrupted by " + unix.SignalName(e.sig) }

// interruptContext returns a context that the first SIGINT or SIGTERM
// cancels, and a function that stops listening for them.
func interruptContext(parent context.Context) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	for _, sig := range []os.Signal{syscall.SIGINT, syscall.SIGTERM} {
		// A signal ignored from the start stays ignored, as it always
		// was: a non-interactive shell starts "acr run &" with SIGINT
		// ignored.
		if !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			// Give the signals back their default effect before anything
			// learns of this one: a second signal ends the process.
			signal.Stop(sigs)
			cancel(&interruptError{sig: sig.(syscall.Signal)})
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel(nil)
	}
}

// interruptedBy names the signal that cancelled ctx ("SIGTERM"), or is ""
// if no signal did (ctx is live, or a test cancelled it).
func interruptedBy(ctx context.Context) string {
	var ie *interruptError
	if ctx.Err() != nil && errors.As(context.Cause(ctx), &ie) {
		return unix.SignalName(ie.sig)
	}
	return ""
}

// interruptedText says what stopped a command early: "interrupted by
// SIGTERM", or "interrupted".
func interruptedText(ctx context.Context) string {
	if by := interruptedBy(ctx); by != "" {
		return "interrupted by " + by
	}
	return "interrupted"
}

// interruptAnnotation marks a command that stops at a cycle boundary when
// interrupted; see finishesCycleOnInterrupt.
const interruptAnnotation = "acr:interrupt"

// finishesCycleOnInterrupt marks cmd as one that reads the context and,
// when a signal cancels it, stops at a cycle boundary (see
// kernel.Driver.Run), instead of being killed by the signal.
func finishesCycleOnInterrupt(cmd *cobra.Command) *cobra.Command {
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[interruptAnnotation] = "finish-cycle"
	return cmd
}

// dieOnInterrupt makes the command that is about to run end the way it
// always has on SIGINT or SIGTERM, killed by the signal, unless it is
// marked with finishesCycleOnInterrupt. It returns a function that stops
// watching. A context cancelled by anything but a signal kills nothing.
func dieOnInterrupt(ctx context.Context, cmd *cobra.Command) (stop func() bool) {
	if cmd.Annotations[interruptAnnotation] != "" || ctx == nil {
		return func() bool { return true }
	}
	return context.AfterFunc(ctx, func() {
		var ie *interruptError
		if errors.As(context.Cause(ctx), &ie) {
			signal.Reset(ie.sig)
			_ = syscall.Kill(os.Getpid(), ie.sig)
		}
	})
}
