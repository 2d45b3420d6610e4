package main

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/runstore"
)

// exportOptions are acr export's flags.
type exportOptions struct {
	// Out is --output: a file, or "-" for stdout. Not --out, which
	// report and validate share: an out: in acr.yaml meant for the
	// report must not become where an archive is written.
	Out string `flag:"output"`
}

func newExportCommand(a *app) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "export [--output FILE]",
		Short: "Write the run, whole, into one archive file: a backup, or a move to another store",
		Long: `Write the run as one archive file: its committed checkpoint, every ledger
line, the inbox items waiting, its world (the sandbox copy of the files) and
its idempotency table, byte for byte, each hashed (docs/formats.md, "Run
archive"). acr import creates the same run from it in any store: a state
directory (--store dir:PATH) or a JetStream store (--store nats://...), so
export and import move a run between them, and the file is a backup that can
be checked and restored.

The run must be at rest: its ledger ends where its checkpoint does. A run
whose ledger holds a cycle a crash cut off, or a torn last line, is refused
(exit 65, nothing written): run acr recover on it, then export. A run whose
ledger does not verify is refused as damaged (65). Export holds the run's
lock (a state directory) or lease (a nats:// store) while it reads, so a run
in progress makes it exit 75; it writes nothing into the store. On a nats://
store the run's world is read from the store.

--output FILE (-o) writes the archive atomically (a temporary file, fsync,
rename); without it, or with -o -, it goes to stdout, but not to a terminal.
The archive names no store: the same run gives the same file from either.`,
		Example: `  acr export -o backup.acr
  acr --store nats://localhost:4222/acr --run-id repo:api export -o api.acr
  acr --state-dir old export | acr --store nats://localhost:4222/acr import`,
		Args: noArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			var opts exportOptions
			if err := decodeFlags(cmd, a.v, &opts); err != nil {
				return err
			}
			return runExport(cmd.Context(), opts, a)
		},
	}
	cmd.Flags().StringP("output", "o", "-", "file to write the archive to, atomically; - for stdout")
	return cmd
}

// runExport reads the run at rest under its lock or lease and writes its
// archive to stdout or opts.Out.
func runExport(ctx context.Context, opts exportOptions, a *app) error {
	if a.cfg.NoLoadState {
		return noLoadState(a)
	}
	out := opts.Out
	toStdout := out == "" || out == "-"
	if toStdout && a.cfg.JSON {
		return usagef("--json prints a summary on stdout, so the archive needs --output FILE")
	}
	if isTerm, _ := a.term(a.stdout); toStdout && isTerm {
		return usagef("refusing to write an archive to a terminal: use --output FILE, or redirect stdout")
	}
	if !toStdout {
		if err := outsideStateDir("--output", out, a.cfg.StateDir, "acr export"); err != nil {
			return err
		}
	}
	rs, err := a.run(ctx)
	if err != nil {
		return err
	}
	ex, err := rs.Export(ctx, holder("export", ""))
	if err != nil {
		return err
	}
	b, err := archive.Encode(ex.Run)
	if err != nil {
		return err
	}
	for _, s := range ex.Skipped {
		a.log.Warn().Str("file", s.Name).Str("reason", s.Reason).Msg("inbox item does not decode: not exported")
	}
	sum := summariseArchive(ex.Run, b)
	for _, s := range ex.Skipped {
		sum.Skipped = append(sum.Skipped, skippedItem{Name: s.Name, Reason: s.Reason})
	}
	if toStdout {
		if _, err := a.stdout.Write(b); err != nil {
			return fmt.Errorf("write archive to stdout: %w", err)
		}
		a.log.Info().Str("run_id", sum.RunID).Int("bytes", sum.Bytes).Str("sha256", string(sum.SHA256)).Msg("exported")
		return nil
	}
	if err := runstore.WriteOutput(out, b); err != nil {
		return fmt.Errorf("write archive: %w", err)
	}
	sum.Out = out
	if a.cfg.JSON {
		a.printJSON(sum)
		return nil
	}
	a.printf("exported run %s at cycle %d to %s (%d bytes, %s)\n", sum.RunID, sum.CycleSeq, out, sum.Bytes, sum.SHA256)
	sum.print(a)
	for _, s := range ex.Skipped {
		a.printf("  not exported: inbox/%s, which does not decode (%s)\n", s.Name, s.Reason)
	}
	a.next("acr --store dir:NEW_DIR import " + out + "   (or --store nats://HOST:PORT/PREFIX)")
	return nil
}

// archiveSummary is what export and import say about an archive.
type archiveSummary struct {
	RunID           string            `json:"run_id"`
	Out             string            `json:"out,omitempty"`
	Bytes           int               `json:"bytes"`
	SHA256          codec.Fingerprint `json:"sha256"`
	CycleSeq        int64             `json:"cycle_seq"`
	LedgerRecords   int64             `json:"ledger_records"`
	LedgerHash      string            `json:"ledger_hash"`
	CheckpointFiles int               `json:"checkpoint_files"`
	InboxItems      int               `json:"inbox_items"`
	WorldFiles      int               `json:"world_files"`
	WorldDirs       int               `json:"world_directories"`
	WorldSymlinks   int               `json:"world_symlinks"`
	KeysFiles       int               `json:"idempotency_files"`
	Skipped         []skippedItem     `json:"skipped_inbox_files,omitempty"`
}

// skippedItem is an inbox file export left out: it does not decode.
type skippedItem struct {
	Name   string `json:"name"`
	Reason string `json:"reason"`
}

func summariseArchive(r archive.Run, b []byte) archiveSummary {
	s := archiveSummary{RunID: r.RunID, Bytes: len(b), SHA256: codec.FingerprintOf(b), CycleSeq: r.Checkpoint.CycleSeq,
		LedgerRecords: r.Checkpoint.LedgerSeq, LedgerHash: r.Checkpoint.LedgerHash, CheckpointFiles: len(r.Checkpoint.Files),
		InboxItems: len(r.Inbox), KeysFiles: len(r.Keys)}
	for _, e := range r.World {
		switch e.Type {
		case archive.TypeDir:
			s.WorldDirs++
		case archive.TypeSymlink:
			s.WorldSymlinks++
		default:
			s.WorldFiles++
		}
	}
	return s
}

// print writes the summary's parts, one line each.
func (s archiveSummary) print(a *app) {
	a.printf("  ledger       %s, the last %s\n", counted(int(s.LedgerRecords), "record", "records"), s.LedgerHash)
	a.printf("  checkpoint   %s\n", counted(s.CheckpointFiles, "file", "files"))
	a.printf("  inbox        %s waiting\n", counted(s.InboxItems, "item", "items"))
	a.printf("  world        %s, %s, %s\n", counted(s.WorldFiles, "file", "files"), counted(s.WorldDirs, "directory", "directories"),
		counted(s.WorldSymlinks, "symlink", "symlinks"))
	a.printf("  idempotency  %s\n", counted(s.KeysFiles, "file", "files"))
}

// counted is n and the noun for n.
func counted(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
