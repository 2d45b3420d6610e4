// Package kernel is the persistent loop: the cycle as a pure function and
// the driver that performs its I/O.
//
// Begin(state, inputs) runs a cycle up to the governance boundary and
// returns the events to make durable and the one effect (if any) the cycle
// may perform; Answer continues a cycle that asked the external proposer;
// Finish completes it with what the world answered. None of them reads a
// clock, a file or the environment: time, observations, inbox items, the
// proposer's reply and the effect's outcome are inputs, recorded in the
// ledger, so any recorded cycle can be derived again (Replay) and an
// interrupted one rolled forward (Driver.Open).
//
// The Driver gathers inputs from its providers, asks Eligible, calls the
// pure functions, and writes in the order their result types prescribe:
// a cycle's first batch before its effect, the effect at most once per
// idempotency key, the second batch before the next cycle, the checkpoint
// after its events. Its dependencies are small interfaces declared here.
package kernel
