// Package ledger is acr's causal ledger (CTCL): the append-only, hash-chained
// history of everything a run did. The checkpoint is a cache of the present;
// the ledger is the evidence of the past, and nothing in acr deletes from it.
//
// # File
//
// ledger/events.jsonl inside the state directory (and, once history is
// sealed, the segments before it: see Sealed history). It holds one
// line per event; the newline is the commit marker: a line without its
// newline was never committed and is a torn tail.
//
// # Sealed history
//
// The ledger is one sequence of bytes. Seal moves what events.jsonl holds
// into a compressed segment under ledger/sealed (zstd frames of whole
// lines, named by the range of ledger bytes they hold) and empties
// events.jsonl; readers see the segments and events.jsonl as one file, so
// offsets, frontiers, hashes and refs are unchanged by a seal. A segment
// is first written under a pending name; it counts once events.jsonl is
// empty, which a seal makes true only after the segment is durable, and
// the next writer renames or removes it before appending (segment.go).
//
// # Line format
//
// One canonical JSON object per line, hash-chained to the line before:
// package chain has the format, its checks and the history's structure,
// which every store shares.
//
// # Writing
//
// Appends happen in batches: all lines of a batch are written with one
// write. Append makes them durable with one fsync before it returns; Write
// leaves the fsync to the next Append or Sync, for a batch nothing depends
// on until then (a cycle's last batch, which the next cycle's decision
// fsyncs). Either way, a crash keeps a prefix of the batches, never a gap.
// The frontier (last seq, last hash, byte length) is read from the tail of
// the file in O(1), never by scanning.
//
// # Damage
//
// A torn final line (no newline) is the expected result of a crash during
// an append. Repair keeps a copy of the torn bytes in events.jsonl.broken,
// truncates the file to the last complete line and fsyncs it; the caller
// records the repair as an event. Damage anywhere else (a line whose hash
// does not match, a broken chain, a skipped seq) is never repaired: Verify
// reports it with its line number and byte offset.
package ledger
