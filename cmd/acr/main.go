// Command acr runs a governed, crash-safe, auditable autonomous loop from a
// state directory. See README.md and docs/cli.md.
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
)

func main() {
	// ACR_CPUPROFILE=file writes a CPU profile of this invocation (see
	// docs/PERFORMANCE.md). It is read here, before anything else runs.
	if p := os.Getenv("ACR_CPUPROFILE"); p != "" {
		if f, err := os.Create(p); err == nil && pprof.StartCPUProfile(f) == nil {
			code := run(os.Args[1:], os.Stdout, os.Stderr)
			pprof.StopCPUProfile()
			f.Close()
			os.Exit(code)
		}
		fmt.Fprintf(os.Stderr, "acr: cannot write CPU profile to %s\n", p)
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
