// Package chain is the format of a run's history, the causal ledger, as
// every store keeps it: how an event becomes a line, hashed and chained to
// the line before; how a line, an event and a whole history are checked
// and decoded; the structure a whole history of cycles has; and a history
// held in memory with what its readers ask of it. It does no I/O of its
// own (it reads what it is handed) and links no file system, so that a
// store on a server (internal/jsstore) and the state directory's file
// (internal/ledger) write and check the same bytes with the same code.
//
// # Line format
//
// Every line is one canonical JSON object (see package state) with exactly
// four members, which canonical key order puts in this order:
//
//		{"chain":"sha256:<P>","event":<E>,"hash":"sha256:<H>","seq":<N>}\n
//
//	  - seq N is 1 for the first line and increases by one per line.
//	  - chain P is the hash H of the previous line; for the first line it is
//	    64 zeros (the genesis value).
//	  - event E is the canonical encoding of an Event.
//	  - hash H is the lower-case hex SHA-256 of the line's bytes with the
//	    ,"hash":"sha256:<H>" member removed and without the newline, that is of
//	    {"chain":"sha256:<P>","event":<E>,"seq":<N>}.
//
// Because chain, event and hash always sit at fixed distances from the ends
// of the line, verification hashes the bytes as they are, without decoding
// and re-encoding the event: what is hashed is exactly what was written.
//
// The event's own ref, "evt:sha256:<hex>" over E alone, does not depend on
// its position in the file; causal links between events use it.
package chain
