// Package jsstore is the JetStream backend of acr's runs: many runs in one
// store on a NATS account, each run's checkpoint, ledger and inbox behind
// storage.Checkpoints, storage.Ledger and storage.Inbox, plus the run's
// world (World: the files its effects change, which every host that runs
// the run copies), the idempotency table (Keys) and the run lease a worker
// holds. It assembles
// the building blocks of internal/jetstream; storagetest holds it to the
// same contract as the directory backend.
//
// # Names
//
// A store has a prefix P (default "acr"; nats://host:4222/P). A run id R
// appears in subjects and keys as jetstream.Token(R) (':' and other bytes
// escaped as '=' and two hex digits).
//
//	stream P-runs   P.ledger.<R>      one message per append: its ledger lines
//	                                  (line.go; earlier releases: one per record)
//	                P.ckpt.<R>        the parts of the last checkpoint (rolled up)
//	                P.status.<R>      the run's status, written with each checkpoint (rolled up)
//	                P.world.<R>.<K>   a world file (K: 32 hex digits of the SHA-256 of
//	                                  its path), its last content or removal (rolled up)
//	                P.world.<R>.head  the world's head: its fencing token (rolled up)
//	stream P-inbox  P.inbox.<R>       inbox items, with a TTL for wake signals
//	                P.quarantine.<R>  items that failed to decode, set aside
//	bucket P-idem   <R>.<key>         idempotency records
//	bucket P-lease  <R>               run leases (bucket TTL = lease duration)
//
// # Headers
//
//	Nats-Expected-Last-Subject-Sequence  on the first record of an append: the
//	                                     frontier's stream sequence; on the first
//	                                     checkpoint part: the last part of the
//	                                     generation the writer loaded; on the
//	                                     status message, with
//	Nats-Expected-Last-Subject-Sequence-Subject = P.ledger.<R>: the ledger's
//	                                     end at the commit's frontier
//	Nats-Msg-Id        records and parts: derived from subject, frontier, place and
//	                   bytes (a retried write is recognised); world files: also
//	                   from the message the write replaces, so that A, B, A at one
//	                   ledger position stores the last A; inbox items: <R>.<item id>
//	Nats-Rollup: sub   first checkpoint part and the status: the subject keeps only
//	                   the last commit's messages
//	Nats-Batch-*       the atomic batch of a write of more than one message
//	Nats-TTL           wake signals: expires_at − now + Options.ExpiryGrace
//	Acr-Part i/n, Acr-Ledger, Acr-Generation   checkpoint parts
//	Acr-Frontier: batch  first checkpoint part of a Joint commit: the manifest's
//	                   ledger frontier has stream sequence 0, its record is in
//	                   the ledger message right before the part (Acr-Ledger: -1);
//	                   Load fills the sequence in. Without it the manifest names
//	                   the sequence itself.
//	Acr-Lines n        ledger messages: the body is n whole ledger lines (the
//	                   packed format; a message without it is one line, as
//	                   earlier releases wrote)
//	Acr-Encoding       ledger messages and checkpoint parts: zstd-d1, the body
//	                   (the checkpoint's whole document) is zstd-compressed with
//	                   acr's dictionary 1 (what is written); zstd, compressed
//	                   without a dictionary (the release before); without it,
//	                   the bytes as they are (pack.go)
//	Acr-Key            inbox and quarantined items: the item id
//	Acr-World, Acr-Path  world messages: put, del or head; the file's path as
//	                   jetstream.Token(path). A file message carries
//	                   Nats-Expected-Last-Subject-Sequence(-Subject) on the
//	                   ledger subject, a head the head's own
//
// # What each method maps to
//
//	Ledger.Append        the records' lines packed into one message (more only past
//	                     the payload limit, then one atomic batch), guarded by the
//	                     frontier's stream sequence: all stored or none;
//	                     storage.ErrConflict if another writer appended since
//	Ledger.Frontier      cached; read at open from the subject's last message
//	Ledger.CheckFrontier a direct get of the message at Frontier.Offset, which
//	                     must hold the frontier's record
//	Ledger.After         batched direct gets from Frontier.Offset (the rest of
//	                     that message, then the ones after it)
//	Ledger.Repair        nothing to repair (nil): writes are atomic
//	Checkpoints.Load     batched direct get of P.ckpt.<R>: the manifest line and
//	                     the files, checked as the directory store checks them
//	Checkpoints.Commit   one atomic batch: the parts (the first rolls the old ones
//	                     up) and the status, guarded by the generation's last part
//	                     and by the ledger's end; storage.ErrConflict otherwise
//	Joint.AppendAndCommit  one atomic batch: the held records' message (guarded by
//	                     the ledger's end), the parts and the status
//	                     (storage.JointCommitter: the checkpoint after a held batch)
//	Inbox.List           batched direct get of P.inbox.<R>, sorted as the directory
//	                     inbox sorts
//	Inbox.Consumed       deletes the items' messages (after the checkpoint that
//	                     records them as consumed)
//	Inbox.Quarantine     copy to P.quarantine.<R>, then delete
//	Inbox.Put            publish with the item id as Nats-Msg-Id
//	Keys.Get/Create/Put  KV get, create (first writer wins), put
//	Store.Acquire, Lease KV create (the value: the Holder, with a token of its
//	                     own), update on the revision, delete on the revision;
//	                     the same process's own lease taken over by an update
//	Store.Leases         one multi-last direct get on the lease bucket's stream
//	Store.BreakLease     delete on the revision seen, then a persistent.lease.broken
//	                     record appended to the ledger and the world taken (fences)
//	Store.Runs, Due      one multi-last direct get of P.status.* (a consumer beyond
//	                     1024 runs) and the inbox stream's per-subject counts
//	Store.WatchInbox     a plain subscription on P.inbox.*: a worker hears of an
//	                     item as it is put
//	World.Load           message gets of P.world.<R>.* from the stream's leader
//	                     (never a lagging replica): every file and the head
//	World.Take           publish of a new head expecting the head Load read
//	World.Put, Remove    one publish of the file, guarded by the ledger's end the
//	                     caller gives (the effect's intent); storage.ErrConflict
//	                     (earlier releases: an atomic batch with a new head)
//	World.Seal           each file published alone, guarded by the ledger's end,
//	                     then the first head (init; a world an earlier release
//	                     kept on one host, moved into the store)
//
// # Positions and bytes
//
// A ledger message's body is exactly the lines the file ledger writes for
// the same append (internal/chain), so hashes, chains, `acr ledger
// verify` and an export mean the same on both backends. A
// state.Frontier's Offset, and an event.Record's, is the stream sequence
// in P-runs of the message that holds the record (0 for genesis);
// Record.Length is the line's length. The checkpoint's manifest
// is the directory store's, byte for byte, except for that Offset.
//
// # Errors
//
// storage.ErrConflict: another writer got there first, nothing stored.
// storage.ErrNoRun: the run has no checkpoint. storage.ErrBusy: the lease
// is held. storage.ErrBehind, storage.ErrCorrupt: as for the file ledger.
// ErrUnavailable (exit 74): the server was away or did not answer for
// longer than Options.Patience (every request is tried again until then,
// and a write whose answer was lost is recognised, not stored twice; see
// internal/jetstream); the outcome of a write that failed with it is
// unknown, and the ledger handle refuses further appends
// (storage.ErrPoisoned) until the run is reopened. A *HeldError
// (storage.ErrBusy): another holder has the run's lease, named in it.
//
// # Safety
//
// The lease saves work; the expected sequences keep a run intact. A writer
// that lost its lease to another stores nothing the other would not: its
// append expects a stale ledger end, its checkpoint a stale generation or
// a stale ledger end, its world write a stale ledger end (a world write
// is stored only while the intent that authorises it is the ledger's last
// record: until the new holder appends, that is the one write its own
// recovery of the intent would make, byte for byte).
//
// # The world and the hosts' copies
//
// The store's world is the truth; each host that runs a run keeps a copy
// (runstore brings it to the store's world at every open for cycles, and
// puts every effect's file in the store before the effect's outcome is
// recorded). A file is one message, so a world file is at most Room bytes
// (the server's max_payload less headers, about 1 KiB). The idempotency
// table (Keys) is not used for a run's world: effects on one file need no
// record (the intent in the ledger and the target's hash decide), and the
// commands that do record are not run on runs kept here.
package jsstore
