package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/acr-project/acr/internal/runstore"
)

// importOptions are acr import's flags: it has none of its own; the
// archive is its argument.
type importOptions struct {
	// File is the archive, "-" for stdin.
	File string
}

func newImportCommand(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "import [FILE|-]",
		Short: "Create the run an archive of acr export holds, where there is none",
		Long: `Create the run an archive holds (acr export) in the store --store names: a state
directory (dir:PATH, or --state-dir) or a JetStream store (nats://...; the
run id is the archive's, and --run-id may be left out). The ledger, the
checkpoint files, the inbox items and the world arrive byte for byte; the
store writes its own manifest for the checkpoint (generation 1, and its own
position of the ledger's last line). Then acr ledger verify passes, acr status
and acr audit print what they printed at the source, and acr run goes on
from there.

The whole archive is checked before anything is written: every entry's and
the whole file's SHA-256, its order and paths, the ledger's hash chain, and
that the checkpoint files decode and belong together. A damaged, cut short or
altered archive exits 65 naming the entry and the byte. The archive is read
whole into memory.

Import never replaces a run: a store that already has a run of that id (or,
in a state directory, any run) exits 65 and nothing is written. An import
that fails or is cut off leaves no run: a state directory's run is built
beside it and renamed into place at the end (a crash after that decision is
finished by the next command that takes the lock); a JetStream run exists
once its checkpoint is committed, its last write, and running the same
import again takes up the records an earlier one stored. A run whose world is
a real directory (root) cannot go into a nats:// store (64).

With no FILE, or with -, the archive is read from stdin, but not from a
terminal.`,
		Example: `  acr --state-dir /srv/new-place import backup.acr
  acr --store nats://localhost:4222/acr import api.acr
  acr --state-dir old export | acr --store nats://localhost:4222/acr import`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return usagef("acr import takes at most one FILE (see acr import --help)")
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			opts := importOptions{File: "-"}
			if len(args) == 1 {
				opts.File = args[0]
			}
			return runImport(cmd.Context(), opts, a)
		},
	}
}

// runImport reads and checks an archive, then creates its run in the
// store.
func runImport(ctx context.Context, opts importOptions, a *app) error {
	if a.cfg.NoLoadState {
		return usagef("--no-load-state: acr import creates a run in a store; there is none to create it in")
	}
	name, b, err := readArchive(opts.File, a)
	if err != nil {
		return err
	}
	r, st, err := runstore.CheckArchive(b)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	if a.cfg.RunID != "" && a.cfg.RunID != r.RunID {
		return usagef("--run-id %s: %s holds run %s, and a run keeps its id (its ledger records name it)", a.cfg.RunID, name, r.RunID)
	}
	opt, err := a.clock()
	if err != nil {
		return err
	}
	// A run keeps its id: the archive's names the run in a store of many.
	a.cfg.RunID = r.RunID
	rs, err := a.run(ctx)
	if err != nil {
		return err
	}
	im, err := rs.Import(ctx, r, st, holder("import", ""), opt)
	if err != nil {
		return err
	}
	where := rs.Where()
	sum := summariseArchive(r, b)
	a.log.Info().Str("run_id", r.RunID).Str("store", a.cfg.Store).Int64("resumed_records", im.Resumed).Msg("run imported")
	if a.cfg.JSON {
		a.printJSON(struct {
			archiveSummary
			From    string `json:"from"`
			Into    string `json:"into"`
			Resumed int64  `json:"resumed_records,omitempty"`
		}{sum, name, where, im.Resumed})
		return nil
	}
	a.printf("imported run %s at cycle %d from %s into %s\n", r.RunID, r.Checkpoint.CycleSeq, name, where)
	sum.print(a)
	if im.Resumed > 0 {
		a.printf("  %d ledger records were stored by an earlier import that was cut off; taken up from there\n", im.Resumed)
	}
	s, err := a.store(ctx)
	if err != nil {
		return err
	}
	a.next(strings.Join(strings.Fields("acr "+s.Flags(r.RunID)+" status"), " "))
	return nil
}

// readArchive reads the whole archive from a file or from stdin, and
// names it for messages.
func readArchive(file string, a *app) (string, []byte, error) {
	if file != "-" {
		b, err := os.ReadFile(file)
		if err != nil {
			return file, nil, &runstore.ValidationError{File: file, Err: errors.Unwrap(err)}
		}
		return file, b, nil
	}
	if a.stdinTerminal() {
		return "", nil, usagef("acr import reads the archive from stdin, which is a terminal: give FILE, or redirect stdin")
	}
	b, err := io.ReadAll(a.stdin)
	if err != nil {
		return "stdin", nil, fmt.Errorf("read archive from stdin: %w", err)
	}
	return "stdin", b, nil
}
