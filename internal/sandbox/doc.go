// Package sandbox is acr's world adapter: the confined directory tree the
// loop observes and changes, and the idempotency table that makes every
// change happen at most once per key, across kill -9 and power loss.
//
// # Layout
//
// Inside the state directory:
//
//	sandbox/world/                        the world tree (an os.Root)
//	sandbox/keys/<hh>/<hex>.json          outcome record of key idem:sha256:<hex>
//	sandbox/keys/<hh>/<hex>.intent.json   intent record, present only while an effect is in flight
//
// <hh> is the first two hex digits of the key, so no directory grows with
// the whole history and a lookup is one file read, never a scan: startup
// cost must not depend on how many actions a run has executed.
//
// # Confinement
//
// The world is a place where untrusted content lives (files a person seeded,
// artifacts the loop wrote), so nothing in it is allowed to steer a write or
// a read somewhere else:
//
//   - Every access goes through an os.Root opened on sandbox/world, which
//     refuses any path that resolves outside it, symlinks included, at the
//     system-call level rather than by string checks that a race can beat.
//   - Paths are world-relative slash paths (world.CleanPath): no absolute
//     paths, no "..", no empty or "." components.
//   - A write is refused when its target or any parent component is a
//     symlink, even one that stays inside the root. An in-root symlink would
//     let an action approved for one path change another, and the hashes the
//     idempotency table records would then describe the wrong file.
//   - Paths the spec excludes (secrets, .git, and anything below an excluded
//     directory) are never written, opened or read. Observation counts them
//     without looking inside.
//   - Reads for checks and evidence do not follow symlinks either; a check
//     on such a path fails with a detail instead of aborting observation,
//     because a hostile tree must not be able to stop the loop from seeing.
//   - Names starting with ".acr-tmp-" are reserved for the temporary files of
//     atomic replacement; they are invisible to observation and swept on
//     Create and Open.
//
// A refused path is an error wrapping ErrConfinement and is not recorded in
// the idempotency table: nothing happened, so there is no outcome to replay.
//
// Every world write replaces the whole file: temp file in the target's own
// directory, write, fsync, rename, fsync the directory. A file is therefore
// always either entirely old or entirely new, which is what lets recovery
// classify it by hash.
//
// # Intent, effect, outcome
//
// Execute runs in this order, and each step must be durable before the next
// begins:
//
//  1. If an outcome record exists for the key, return it. Nothing runs.
//  2. Compute the target's new content from its current content. If the
//     action changes the world, write an intent record naming the target's
//     hash before and the hash it will have after ("before" and "after"
//     always differ; an action that would not change the bytes is recorded
//     as no_change without an intent).
//  3. Apply the effect (atomic replace of the one target file).
//  4. Write the outcome record, then drop the intent.
//
// A crash can stop this sequence anywhere. On the next Execute of the same
// key, an outcome record means the whole action finished. An intent without
// an outcome means the crash fell between steps 2 and 4, and because the
// effect is a single atomic replace of a single file, the target can only
// hold the before bytes (the effect did not happen: run it now) or the after
// bytes (it did: record it as committed without touching the world). The
// intent is what makes this certain: without a durable before/after pair
// written ahead of the effect, a file that looks "done" could not be told
// apart from one that some other change made to look that way. Any third
// hash means the world was changed by something else in between; the
// package does not guess, it returns ErrUncertain and the kernel escalates
// to a person.
//
// The outcome record is the only commit point. The intent is removed after
// the outcome is durable, best effort: a leftover intent next to an outcome
// is never consulted.
//
// The effects are deliberately whole-file: mark_issue appends a line by
// rewriting ISSUES.md, so even an append has a single before and a single
// after hash. A duplicate effect would show up as a duplicate line.
//
// A World serialises its own calls; a second process is kept out by the run
// lock the kernel holds, not by this package.
package sandbox

//
// # Prepare and Commit: the intent in the caller's log
//
// Execute keeps its own intent record, which costs a file creation and two
// fsyncs per action. A caller that already keeps a durable log can carry
// the intent instead: Prepare computes it (the planned outcome and the
// target's before and after hashes) without touching the world; the kernel
// appends it to the ledger in the same write and fsync as the cycle's
// decision; Commit then applies the effect durably and writes the outcome
// record as a cache, without fsync. After a crash or a power loss the
// recorded intent and the target's hash decide exactly as above (after:
// the effect happened; before: apply it now; anything else: ask a person),
// so a lost cache record costs nothing but a re-check.
