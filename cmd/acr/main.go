// Command acr runs a governed, crash-safe, auditable autonomous loop from a
// state directory. See README.md and docs/cli.md.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}
