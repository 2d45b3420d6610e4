// Package jetstream is acr's store on NATS JetStream (placeholder; see the
// full comment below once written).
package jetstream
