// Package natstest starts real NATS servers with JetStream inside a test
// process: one server, or a cluster of several, each on random loopback
// ports with its store in a test temporary directory. Tests of the
// JetStream store (and later its conformance suite) use it so that CI needs
// no service.
//
// Only test code imports this package, so the acr binary does not link the
// server.
package natstest
