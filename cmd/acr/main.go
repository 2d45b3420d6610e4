// Command acr runs a governed, crash-safe, auditable autonomous loop from a
// state directory. See README.md and docs/cli.md.
//
// Each command lives in cmd_<name>.go: an options struct that its flags
// are decoded into (decodeFlags: flag > ACR_* > acr.yaml > default), a
// newXCommand(a) that builds its cobra command, and a runX(ctx, opts, a)
// that does the work and writes only to the app's writers, so that a test
// calls it without a process. app.go holds what one invocation shares (the
// writers, the viper instance, the typed global config, the logger), root.go
// the command tree and its configuration, exit.go the one map from errors
// to exit codes, interrupt.go what SIGINT and SIGTERM do. main builds the
// context that those signals cancel and nothing else.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/debug"
	"runtime/pprof"
)

// gcPercent is the garbage collector's target when GOGC is not set. A cycle
// allocates a few hundred kilobytes of short-lived encodings and keeps a
// heap of a few megabytes, so at Go's default of 100 the collector runs
// several times per cycle and takes about a third of the CPU; at 400 it
// runs a quarter as often for about 10 MB more peak memory
// (docs/PERFORMANCE.md). GOGC, when set, wins.
const gcPercent = 400

func main() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
	ctx, stop := interruptContext(context.Background())
	code := profiled(os.Getenv("ACR_CPUPROFILE"), func() int { return run(ctx, os.Args[1:], os.Stdout, os.Stderr) })
	stop()
	os.Exit(code)
}

// profiled runs fn, writing a CPU profile of it to the file named by
// ACR_CPUPROFILE if that is set (see docs/PERFORMANCE.md).
func profiled(file string, fn func() int) int {
	if file == "" {
		return fn()
	}
	f, err := os.Create(file)
	if err != nil || pprof.StartCPUProfile(f) != nil {
		fmt.Fprintf(os.Stderr, "acr: cannot write CPU profile to %s\n", file)
		if f != nil {
			f.Close()
		}
		return fn()
	}
	code := fn()
	pprof.StopCPUProfile()
	f.Close()
	return code
}
