// Package event is the catalog of what acr records: the ledger's event
// type (Event, carried by a Record), every kind of event with its name
// (kinds.go), and the payloads that are the kernel's own records (a cycle's
// inputs, an evaluation). The kernel writes these and every reader (audit,
// the report, the log, validate, replay) reads them, so a kind is named in
// one place and a reader never needs the kernel to decode one.
//
// It is vocabulary, below the subsystems: it imports codec, world and
// state only. The records a subsystem produces (a decision, a controller
// transition) are that subsystem's types, carried as an event's Object
// and decoded by the subsystem or the reader that needs them.
//
// Kind names are part of the ledger format: a ledger written by one
// version of acr is read by the next, so names are never changed or
// reused.
package event
