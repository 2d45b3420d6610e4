// Package runstore is the one place that opens a run on a store: it
// creates a run (init: build beside, swap, archive), opens it for a writer
// (the single-writer lock, recovery to a safe boundary, the ledger damage
// check) and wires its checkpoint store, ledger, sandbox world and inbox
// into a kernel.Driver; it verifies and rebuilds a damaged run, and it
// gives read-only commands the checkpoint, the inbox and the ledger
// without the lock. It also reads and validates the three documents a run
// starts from.
//
// A run is kept in one of two stores. A state directory (Open, Init,
// ReadState, OpenQueue, OpenHistory) holds one run, locked by a writer. A
// JetStream store (Dial, Remote) holds many, each picked by its run id:
// its checkpoint, ledger, inbox and world are on the server, a host that
// runs its cycles keeps a copy of its world in a local directory (brought
// to the store's world at every open; every effect put in the store before
// it counts as done), and a writer holds the run's lease instead of the
// lock.
// Both give the same Run (a kernel.Driver on storage interfaces), Queue
// and History, so commands do not care which one they have.
//
// It exists so that no command, test harness or scenario runner opens a
// state directory or a store on its own: the CLI, the worker, the scenario
// runner and the tools all come here, so the rules about what a run must
// look like, and in what order its parts are opened and closed, live in
// one package.
package runstore
