// Package runstore is the one place that opens a run on a store: it
// creates a run (init: build beside, swap, archive), opens it for a writer
// (the single-writer lock, recovery to a safe boundary, the ledger damage
// check) and wires its checkpoint store, ledger, sandbox world and inbox
// into a kernel.Driver; it verifies and rebuilds a damaged run, and it
// gives read-only commands the checkpoint, the inbox and the ledger
// without the lock. It also reads and validates the three documents a run
// starts from.
//
// It exists so that no command, test harness or scenario runner opens a
// state directory (or, later, another backend) on its own: the CLI, the
// scenario runner and the tools all come here, so the rules about what a
// run on disk must look like, and in what order its parts are opened and
// closed, live in one package.
package runstore
