// Package sandbox is acr's world adapter: the confined directory tree the
// loop observes and changes, and the idempotency table that makes every
// change happen at most once per key, across kill -9 and power loss.
//
// # Layout
//
// Inside the state directory:
//
//	sandbox/world/            the world tree (an os.Root)
//	sandbox/keys/table.log    the idempotency table: every record of every key, appended
//	sandbox/keys/<hh>/…       per-key records of earlier releases, read and never written
//
// The table is one file that only grows at its end, so recording a key
// costs an append to a file that is already open: no file, no directory
// and no directory fsync per key. It is created by its first record, so a
// run that never records anything has none.
//
// # The table
//
// One record per line. A line is canonical JSON (package codec) with four
// members, which canonical key order puts in this order:
//
//	{"key":"idem:sha256:<K>","kind":"<kind>","record":<R>,"sha256":"<S>"}\n
//
// where:
//
//   - K is the key's 64 lower-case hex digits.
//   - kind is intent, outcome or started; any other word is refused.
//   - R is the record object: an acr.sandbox-intent/v0.1,
//     acr.sandbox-outcome/v0.1 or acr.sandbox-command-started/v0.1 record
//     in canonical form, the same object earlier releases kept in a file of
//     its own.
//   - S is the hex SHA-256 of every byte of the line before ,"sha256", as
//     written (no re-encoding), so a line is checked without decoding R;
//     R's own form is checked, strictly, when it is decoded.
//   - The newline is the commit marker: a line without one was never
//     written whole.
//
// A key may have several lines. The latest line of a kind supersedes the
// earlier ones of that kind (an Execute that runs again after a crash
// proved its effect did not happen writes a new intent), and an outcome
// supersedes the intent before it: an intent is never consulted once its
// key has an outcome, so nothing is ever removed.
//
// # Reading and damage
//
// Nothing reads the table until the first look-up of a World, so an
// invocation that does not act never touches it. That look-up reads the
// whole file once, in order and in large blocks, checking every line, into
// an in-memory index from key to the offset of its latest line of each
// kind; from then on a look-up is one read of one line, whatever the
// table's size. Building the index on first use rather than in Open keeps
// idle invocations free of it; its cost is one sequential read of the
// file, about the cost of hashing it, once per invocation that acts.
//
// A crash during an append can only damage the end of the file: a line
// cut short, or, after a power loss, a line whose bytes never reached the
// disk (zeros, or a mix of old and new pages), which its checksum exposes.
// So the first line that is not intact ends what the table holds, provided
// no intact line follows it. Such a torn tail is not an error: look-ups
// ignore it, and the next append truncates the file to the last intact
// line first (made durable by that append's fsync), so that new lines
// never follow a torn one. A damaged line followed by an intact one is not
// something a crash makes; it is reported as a *DamageError naming the
// file and the byte offset, every look-up fails with it, and nothing is
// repaired: guessing would risk running an effect twice.
//
// # Earlier layout
//
// Earlier releases kept one file per record: sandbox/keys/<hh>/<hex>.json
// (outcome), <hex>.intent.json and <hex>.started.json, where <hh> is the
// key's first two hex digits. Such files are read where they are, never
// moved: a key the table does not know is looked up in its old file, but
// only when the index build found fan-out directories in sandbox/keys, so
// a state directory made by this release never pays for it. Reading in
// place was chosen over a migration because it writes nothing (there is
// no half-done migration for a crash to leave behind, and no second copy
// of a record that could disagree with the first), and the records that
// matter there are few: a key is only ever looked up again to recover the
// cycle a crash interrupted. Outcome files that earlier releases wrote
// from Commit were caches, written without fsync; Prepare and Commit treat
// one that does not decode as absent, as those releases did.
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
// classify it by hash. With DeferDirSyncs (a run's driver turns it on) the
// directory's fsync runs on after Commit returns, and the effect is durable
// once Durable returns; until then the World makes no other change to the
// disk.
//
// # Intent, effect, outcome
//
// Execute runs in this order, and each step must be durable before the next
// begins:
//
//  1. If an outcome is recorded for the key, return it. Nothing runs.
//  2. Compute the target's new content from its current content. If the
//     action changes the world, append an intent record naming the
//     target's hash before and the hash it will have after ("before" and
//     "after" always differ; an action that would not change the bytes is
//     recorded as no_change without an intent), and fsync the table.
//  3. Apply the effect (atomic replace of the one target file).
//  4. Append the outcome record and fsync the table.
//
// A crash can stop this sequence anywhere. On the next Execute of the same
// key, an outcome means the whole action finished. An intent without an
// outcome means the crash fell between steps 2 and 4, and because the
// effect is a single atomic replace of a single file, the target can only
// hold the before bytes (the effect did not happen: run it now) or the after
// bytes (it did: record it as committed without touching the world). The
// intent is what makes this certain: without a durable before/after pair
// written ahead of the effect, a file that looks "done" could not be told
// apart from one that some other change made to look that way. Any third
// hash means the world was changed by something else in between; the
// package does not guess, it returns ErrUncertain and the kernel escalates
// to a person. A torn intent or outcome line is no record at all, which is
// right: a line is torn only if its fsync never returned, and then the
// step after it never began.
//
// The outcome record is the only commit point.
//
// Each durable append is one write and one fsync of the table file. The
// first durable append of a World also fsyncs sandbox/keys, the directory
// that holds the file's name: only once, but not only when the file is
// created, because a process killed between creating the file and that
// fsync leaves a file whose name the next process cannot know to be
// durable.
//
// The effects are deliberately whole-file: mark_issue appends a line by
// rewriting ISSUES.md, so even an append has a single before and a single
// after hash. A duplicate effect would show up as a duplicate line.
//
// # Prepare and Commit: the intent in the caller's log
//
// Execute keeps its own intent record, which costs an append and an fsync
// per action. A caller that already keeps a durable log can carry the
// intent instead: Prepare computes it (the planned outcome and the target's
// before and after hashes) without touching the world; the kernel appends
// it to its ledger in the same write and fsync as the cycle's decision;
// Commit then applies the effect durably, and the kernel records the
// outcome in its ledger. Commit records nothing in the table for a file
// effect or a restore: after a crash or a power loss the recorded intent
// and the target's hash decide exactly as above (after: the effect
// happened; before: apply it now; anything else: ask a person), so a
// record would only repeat what the world already says. One case needs no
// person: a Commit of the plan this same World's Prepare made, which
// nothing has applied since, that finds a third hash knows the effect did
// not happen, and records it stale, as Prepare does for a target that
// changed before the plan.
//
// A run_command is different: a program has no single before and after, so
// Commit appends a started marker, durably, before the program starts, and
// the program's outcome after it ends, without fsync. A marker without an
// outcome means the program may have run, and then its check (passing: the
// effect is taken as done), its declaration that running it twice is
// harmless, or a person decides. A kill -9 loses no unsynced append, so a
// finished command is found finished; a power loss may lose its outcome,
// and then the marker and those rules decide instead. Both records name
// the caller's intent (intent_ref), and an outcome found is reused only
// when it agrees with that intent, with the files as they are and with its
// own command result: a record rewritten by hand is not a verdict but
// ErrUncertain (checkCommandOutcome).
//
// # Reads handed on
//
// A cycle reads its target several times: the readback after the effect,
// the next observation, the next Prepare. A read may stand for the next
// one of these when an lstat shows the file unchanged since (same
// disk.Identity): the readback's read serves the next observation, the
// observation's judged bytes serve Prepare. Commit's read and the
// readback's read are always made: one guards the effect, the other
// checks it. A program the World runs, and any write it makes, drops
// every handoff. handoff.go says why a handoff cannot let an effect apply
// to bytes other than its intent's before-hash.
//
// A World serialises its own calls; a second process is kept out by the run
// lock the kernel holds, not by this package.
//
// # A copy of a world kept elsewhere
//
// A sandbox copy may be the local copy of a world whose truth is kept in a
// store (a run in a JetStream store, internal/runstore): Files reads the
// copy to upload it, Mirror makes the copy exactly a given set of files
// (atomic replaces and removals, made durable as effects are, following no
// link), and PlannedSize tells the caller how large the target of a
// prepared write will be, so that it can refuse a write its store would
// not keep before the intent is recorded.
package sandbox
