// Package jetstream holds the building blocks of acr's store on NATS
// JetStream: a run's ledger and checkpoint, the idempotency table, the
// inbox and the run lease, each mapped onto one JetStream primitive whose
// own consistency check (an expected sequence or revision) is what protects
// the run. The storage interfaces acr's driver consumes are not fixed yet;
// these blocks are what a backend behind them assembles. NOTES.md has what
// was learnt about the APIs and measured on them.
//
// # Names
//
// One store lives on one NATS account under a prefix P (default "acr"), one
// subject token. A run id R appears in subjects and KV keys as Token(R):
// letters, digits, '-' and '_' as they are, any other byte as '=' and two
// hex digits (acr's default run ids contain ':', which KV keys refuse).
//
//	stream P-runs    subjects P.ledger.*  run R's ledger records on P.ledger.<R>
//	                          P.ckpt.*    run R's checkpoint parts on P.ckpt.<R>
//	                          P.status.*  run R's status (for listing runs) on P.status.<R>
//	                          P.world.*.* run R's world: a file on P.world.<R>.<K>
//	                                      (K: 32 hex digits of the SHA-256 of its
//	                                      path), its head on P.world.<R>.head
//	stream P-inbox   subject  P.inbox.*   run R's inbox items on P.inbox.<R>
//	                          P.quarantine.*  items set aside, on P.quarantine.<R>
//	bucket P-idem    key <R>.<key>        idempotency records (stream KV_P-idem)
//	bucket P-lease   key <R>              run leases (stream KV_P-lease)
//	bucket P-ckpt    key <R>              checkpoints, KV design, only with Options.KVCheckpoints
//
// # Commit: records and checkpoint in one atomic batch
//
// A commit is one JetStream atomic batch (server 2.12 or later, stream
// AllowAtomicPublish): every message carries Nats-Batch-Id and
// Nats-Batch-Sequence (1, 2, …), the last one Nats-Batch-Commit: 1. The
// server stages the messages and, on the commit, checks every message's
// headers and stores all of them on consecutive sequences or none.
//
//	P.ledger.<R>  record 1  Nats-Expected-Last-Subject-Sequence: F.Ledger
//	P.ledger.<R>  record 2…n
//	P.ckpt.<R>    part 1/k  Nats-Expected-Last-Subject-Sequence: F.Checkpoint
//	                        Nats-Rollup: sub   Acr-Part: 1/k   Acr-Ledger: -1 | =F.Ledger
//	P.ckpt.<R>    part 2/k…k/k                 (the last message: Nats-Batch-Commit: 1)
//
//	P.status.<R>  status    Nats-Rollup: sub   (a batch without records:
//	                        Nats-Expected-Last-Subject-Sequence: F.Ledger,
//	                        Nats-Expected-Last-Subject-Sequence-Subject: P.ledger.<R>)
//
// F is the Frontier the writer read: the stream sequences of the run's
// last record and last checkpoint part. If another writer has moved either
// subject since, the whole batch is refused (ErrConflict) and nothing is
// stored. A checkpoint-only batch guards the ledger from its status
// message, so a checkpoint is stored only while the ledger still ends
// where its writer thinks. A commit of one message (a one-record append)
// is a plain publish with the same headers: one message is atomic by
// itself, and it skips the batch's staging cost. Every message has a Nats-Msg-Id derived from its subject, F, its
// place and its bytes, so a retried commit is recognised (ErrConflict or
// the server's duplicate error, then a read of what follows F) and answered
// as a Duplicate instead of being stored twice.
//
// The checkpoint is split into parts below the server's max_payload, so it
// may be larger than one message; the rollup on part 1 purges the previous
// checkpoint's parts in the same step, so P.ckpt.<R> always holds exactly
// the parts of the last commit. Acr-Ledger says where the ledger stood
// after that commit ("-1": right before part 1; "=N": at N, for a
// checkpoint-only commit), so reading the checkpoint also yields the
// frontier it was committed at. A ledger-only Append is the same batch
// without checkpoint parts; a writer that appends ahead of its checkpoint
// (a write-ahead intent before an effect) finds the ledger frontier with
// Last.
//
// Reads are batched direct gets ($JS.API.DIRECT.GET.P-runs with seq,
// next_by_subj and batch, stream AllowDirect): no consumer is created, and
// the server serves each request under the stream's isolation lock, so a
// read never sees part of a batch. In a cluster a follower may answer, a
// moment behind the leader; the expected sequences, not reads, protect
// writes.
//
// # The KV checkpoint, and why it is not the recommendation
//
// Checkpoints in bucket P-ckpt are Create for the first and Update on the
// revision read after; a stale writer stores nothing. But a KV bucket is its
// own stream and an atomic batch covers one stream, so a KV checkpoint can
// never commit together with the ledger records: a crash between the two
// writes leaves the ledger ahead of the checkpoint. A KV value is also one
// message, at most max_payload (1 MiB by default). Keeping the checkpoint on
// P.ckpt.<R> in the runs stream removes both limits.
//
// # Idempotency, inbox, lease
//
// Idempotency records are KV Create (first writer wins, ErrExists after)
// and Get (one direct get of the key's last message; cost independent of
// the table's size). Inbox items are published with Nats-Msg-Id = Token(R)
// "." dedup key (not stored again within the stream's Duplicates window,
// 24 h by default) and Nats-TTL = expiry (whole seconds, at least 1; stream
// AllowMsgTTL). Consuming is a read position: the reader keeps the last
// sequence it read in its checkpoint and later Trims up to it. Leases are
// KV keys in a bucket whose TTL (MaxAge) is the lease duration: Create
// acquires, Update on the revision renews (a new revision restarts the
// clock), a failed Update means the lease was lost. The revision grows on
// every write and serves as a fencing token, but safety never rests on the
// lease: a writer whose lease expired still fails its commit, because its
// frontier is stale once anyone else committed.
//
// # Worlds
//
// A run's world lives beside its ledger, so that a world write can be
// guarded by the ledger (an atomic batch covers one stream). Each file is
// one subject, rolled up to its last content or removal; the head, moved
// by every write, is the world's fencing token: a process takes the world
// (a new head expecting the one it read) before it runs the run's cycles,
// and each write is an atomic batch of the file, expecting the run's
// ledger to end at the writer's intent, and a new head, expecting the
// writer's last one. See Worlds.
//
// # Retention and limits
//
// P-runs and P-inbox use limits retention with no limits (nothing expires
// or is discarded; if an operator sets limits, new writes are refused,
// DiscardNew). P-runs: Duplicates 2 min (only to answer retries cheaply),
// AllowAtomicPublish, AllowRollup (rollup needs purge allowed), DenyDelete,
// AllowDirect. P-inbox: Duplicates 24 h, AllowMsgTTL (cannot be turned off
// once on), AllowDirect. Buckets keep one revision per key. Replicas are 1
// on one server, 3 on a cluster; everything is file storage.
//
// Server limits that shape the design: max_payload 1 MiB per message by
// default (the server warns above 8 MiB); at most 1000 messages in an
// atomic batch, 50 batches in flight per stream and 1000 per server, and an
// uncommitted batch dropped after 10 s (jetstream { limits { batch {
// max_msgs, max_inflight_per_stream, max_inflight_total, timeout } } });
// headers under 64 KiB per message; 1000 consumers per stream by default.
//
// # Durability
//
// By default the server writes every message to its file before the ack
// but fsyncs only every 2 min (sync_interval): an acknowledged commit
// survives the server process dying, not the host losing power. With
// `jetstream { sync: always }` (Options.SyncAlways embedded) the
// ack waits for the fsync; an atomic batch is then synced once, not once per
// message. On a single server (R1) an atomic batch is first staged in a
// small file store of its own with synchronous writes whatever the sync
// setting (so that a crash in the middle of a commit rolls forward on
// restart): about five synchronous disk writes per batch, 8-17 ms on the
// test machine against under 1 ms for ten plain publishes, and batches of
// one stream are staged one at a time. With three replicas the batch is
// staged in memory and committed as one raft proposal (2-3 ms). NOTES.md
// has the figures.
//
// # Errors
//
// ErrConflict: a stale sequence or revision, nothing stored. ErrUnavailable
// (acr's exit 74): no server, connection lost or closed, no stream leader,
// a timeout. Connect turns the client's reconnect buffer off so that a
// write made while the server is away fails at once rather than being
// sent when it returns.
//
// # A server that does not answer
//
// Every call tries again while its attempts fail with ErrUnavailable, for
// up to Options.Patience, each attempt with its own timeout (Options.Timeout,
// 5 s) and a growing, jittered pause between them (policy.go): a paused
// server, a lost connection, a leader election are waited out. A write's
// attempt whose answer was lost may have been stored, so every write is
// made safe to send again: ledger commits and uploads carry message ids
// the server recognises (and a commit refused after the dedup window is
// recognised by reading what follows its frontier); a world write or take
// is recognised by the head it left, which names its writer
// (Guard.Writer); a lease or idempotency record by its bytes, which are
// the writer's own. Only a call that runs out of patience returns
// ErrUnavailable, and then its outcome is unknown: the caller writes
// nothing that assumes either way and reads what is stored. Options.Observe
// hears every attempt (metrics).
package jetstream
