// Command acr runs a governed, crash-safe, auditable autonomous loop from a
// state directory. See README.md and docs/cli.md.
package main

import (
	"context"
	"fmt"
	"os"
	"runtime/pprof"
)

func main() {
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
