// Package storagetest is the conformance suite of acr's storage backends:
// the same tests, run against every implementation of storage.Checkpoints,
// storage.Ledger and storage.Inbox, so that the kernel can rely on one
// contract whichever backend keeps a run (the way restic's
// internal/backend/test keeps its backends honest).
//
// A backend's test calls Run with a function that opens a fresh run and
// returns its parts as a Backend, with the hooks the tests need to act as
// other processes (Reopen, Put), to end a process (Close) and to kill one
// in the middle of an append (CrashAppend). What a backend promises beyond
// the common contract is declared in its Features, and the tests hold it
// to exactly that:
//
//   - checkpoints: a fresh run has none (storage.ErrNoRun); a commit that
//     states the wrong generation is storage.ErrConflict and stores
//     nothing; the right one stores generation Expect+1; a load returns
//     the committed manifest and every file's bytes, also after a reopen;
//   - ledger: appends return records with consecutive seqs and chained
//     hashes, After returns the same records from any frontier, the
//     frontier and the chain carry across a reopen, CheckFrontier accepts
//     every frontier the ledger passed and refuses one past its end
//     (ledger.ErrBehind) or one whose record differs (ledger.ErrCorrupt),
//     Repair on a clean ledger cuts nothing, and an append cut short by a
//     crash leaves a prefix of its batch (all or nothing when the backend
//     says AtomicAppend) after which the chain goes on;
//   - inbox: items are listed oldest first, the same item written twice is
//     one item, consumed items go, undecodable ones are reported and
//     quarantined, and (Expiry) expired ones go;
//   - two writers: one writer at a time (Exclusive: the second open is
//     storage.ErrBusy), or both open and one wins each commit and each
//     append while the other stores nothing (Fenced); a writer that lost
//     the run to another stores no checkpoint.
package storagetest
