// Package state holds the run's schema types: the run state, the cycle
// record, the checkpoint record, wake signals, approvals and stop
// requests, dispositions, and the ledger frontier a checkpoint has seen.
// These are the seed's persistent-loop objects as they are written to the
// checkpoint and the ledger (in canonical JSON, see package codec). The
// package holds types and their invariants only; storing them is the
// storage side's business (packages storage, dirstore, ledger).
package state
