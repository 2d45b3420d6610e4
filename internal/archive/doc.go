// Package archive is the run archive: one file that holds a whole run at
// rest (its committed checkpoint, every ledger line, the inbox items
// waiting, its world and its idempotency table) so that `acr export` can
// take a run out of one store and `acr import` put it into another, or
// keep it as a backup. The archive names no store: the same run gives the
// same bytes whether it was exported from a state directory or from a
// JetStream store, and the backend-specific parts of a checkpoint (the
// manifest's generation and the ledger frontier's offset) are left out
// and made again by the store that imports it.
//
// The package is the format only (Encode, Parse): no file, no store. What
// the parts mean (a ledger chain that verifies, checkpoint files that
// decode and belong together) is checked by internal/runstore, which
// reads and writes runs.
//
// # Bytes
//
// An archive is a sequence of lines, each one canonical JSON object (see
// package codec) ending in a newline; a line that announces a body (it has
// a "size") is followed by exactly that many bytes and a newline that is
// not part of the body. In this order:
//
//	{"run_id":"<id>","schema":"acr.run-archive/v0.1"}
//	{"cycle_seq":C,"kind":"checkpoint","ledger_hash":"sha256:<H>","ledger_seq":S,"revision":"<R>"}
//	{"kind":"checkpoint_file","name":"<name>","sha256":"sha256:<F>","size":N}  body   one per file, by name
//	{"kind":"ledger","sha256":"sha256:<F>","size":N}                           body   the ledger's lines
//	{"id":"<id>","kind":"inbox","sha256":"sha256:<F>","size":N}                body   one per item, by id
//	{"kind":"world","mode":"0755","path":"<p>","type":"dir"}                          by path
//	{"kind":"world","mode":"0644","path":"<p>","sha256":"…","size":N,"type":"file"}  body
//	{"kind":"world","path":"<p>","sha256":"…","size":N,"type":"symlink"}     body   the link's target
//	{"kind":"keys","path":"<p>","sha256":"sha256:<F>","size":N}                body   by path
//	{"entries":E,"kind":"end","sha256":"sha256:<D>"}
//
// where:
//
//   - the checkpoint line is the committed checkpoint's manifest without
//     what belongs to a store: C is its cycle, S and H the seq and hash of
//     the ledger line it covers (the ledger's last: only a run at rest is
//     archived), R the acr build that wrote it. Its files follow, each the
//     exact bytes the store holds (canonical JSON), F the SHA-256 of the
//     body. Names are lower-case letters, digits and '_'.
//   - the ledger body is every ledger line, byte for byte the file
//     ledger/events.jsonl (internal/ledger/doc.go) and the messages of a
//     JetStream ledger.
//   - inbox items are the sealed items waiting for a cycle (not those the
//     checkpoint already consumed), each its canonical bytes under its
//     content-derived id (internal/inbox), so a cycle of the importing
//     store consumes them as the original would have.
//   - world entries are the sandbox world's tree (sandbox/world): every
//     directory, regular file and symbolic link, paths relative to it,
//     slash-separated, sorted bytewise, every directory listed before
//     anything in it. mode is the permission bits, four octal digits.
//     Empty for a run whose world is a real directory (root), which is not
//     part of the run.
//   - keys entries are the idempotency table's files (sandbox/keys:
//     table.log, and the per-key files of earlier releases), paths
//     relative to it.
//   - the end line counts the entries (every line but the first and the
//     last) and D is the SHA-256 of every byte before it. Nothing follows
//     it.
//
// Every hash is over the exact bytes as they are in the archive. Parse
// checks every one of them, the order, the paths, and that encoding what
// it read gives back exactly the bytes it was given: an archive has one
// valid form, so a flipped byte, a truncated file, an entry removed,
// added or moved, is an *Error naming the entry and the byte.
package archive
