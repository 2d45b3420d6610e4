package main

import (
	"context"
	"runtime"
	"runtime/debug"

	"github.com/acr-project/acr/internal/storage"
	"github.com/spf13/cobra"
)

// version is acr's release version; release builds may override it with
// -ldflags "-X main.version=...".
var version = "0.1.20"

// revision identifies this build in manifests: the version plus the VCS
// revision when the binary was built from a checkout.
func revision() string {
	rev := "acr " + version
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, s := range bi.Settings {
			if s.Key == "vcs.revision" && len(s.Value) >= 12 {
				rev += " (" + s.Value[:12] + ")"
			}
		}
	}
	return rev
}

func newVersionCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print acr's version",
		Long:  "Print acr's version, the build revision, the on-disk schema version and the Go version.",
		Example: `  acr version
  acr version --json | jq -r .revision`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error { return runVersion(cmd.Context(), versionOptions{}, a) },
	}
}

// versionOptions are acr version's flags: it has none of its own.
type versionOptions struct{}

// runVersion prints the version, for acr version and acr --version.
func runVersion(ctx context.Context, opts versionOptions, a *app) error {
	info := map[string]any{"version": version, "revision": revision(), "schema_version": storage.SchemaVersion, "go": runtime.Version(),
		"profile": "ACR-MVP-v0.1-Phase12"}
	if a.cfg.JSON {
		a.printJSON(info)
		return nil
	}
	a.printf("%s\nschema version %d, %s, profile %s\n", revision(), storage.SchemaVersion, runtime.Version(), info["profile"])
	return nil
}
