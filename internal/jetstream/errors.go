package jetstream

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/storage"
)

// Errors callers branch on.
var (
	// ErrConflict means a write stated a sequence or revision that is no
	// longer the last one: another writer got there first. Nothing of the
	// write was stored. It matches storage.ErrConflict.
	ErrConflict error = alsoIs{"stale sequence or revision", storage.ErrConflict}

	// ErrExists means a create-if-absent found the key present.
	ErrExists = errors.New("already exists")

	// ErrNotFound means there is no such key or record.
	ErrNotFound = errors.New("not found")

	// ErrLeaseLost means a lease expired or was taken over before renewal
	// (storage.ErrLeaseLost).
	ErrLeaseLost = storage.ErrLeaseLost

	// ErrTooLarge means a message is larger than the server or the stream
	// accepts.
	ErrTooLarge = errors.New("message too large")

	// ErrUnavailable means the server, or the leader of the stream, could
	// not be reached or did not answer in time. A write that fails with it
	// may or may not have been stored: retry it unchanged (the same records
	// against the same frontier), which either stores it or reports that it
	// already was. acr maps it to exit 74. It matches storage.ErrUnavailable.
	ErrUnavailable error = alsoIs{"nats server unavailable", storage.ErrUnavailable}

	// ErrReplicas means the servers cannot place a stream or bucket with
	// the replica count asked for: more than one on a server that is not
	// in a cluster, more than the cluster's servers. Nothing was changed.
	ErrReplicas = errors.New("the servers cannot hold that many replicas")
)

// alsoIs is a sentinel error that also matches a more general one (its
// kind of failure as every store names it).
type alsoIs struct {
	msg string
	is  error
}

func (e alsoIs) Error() string { return e.msg }

// Is lets errors.Is match the general error too.
func (e alsoIs) Is(target error) bool { return target == e.is }

// JetStream API error codes this package interprets (nats-server
// server/errors.json).
const (
	codeWrongLastSequence         = 10071 // wrong last sequence: {seq}
	codeWrongLastSequenceConstant = 10164 // wrong last sequence (batch or replicated in-flight)
	codeBatchDuplicate            = 10201 // atomic publish batch contains duplicate message id
	codeMessageTooLarge           = 10054 // message size exceeds maximum allowed
	codeBatchIncomplete           = 10176 // atomic publish batch is incomplete
	codeClusterNotAvailable       = 10008 // JetStream system temporarily unavailable
	codeStreamOffline             = 10118 // stream is offline
	codeReplicasNotClustered      = 10074 // replicas > 1 not supported in non-clustered mode
	codeNoPeers                   = 10005 // no suitable peers for placement (and other placement errors)
)

// apiCode returns the JetStream error code carried by err, or 0.
func apiCode(err error) natsjs.ErrorCode {
	var api *natsjs.APIError
	if errors.As(err, &api) {
		return api.ErrorCode
	}
	return 0
}

// unavailable reports whether err says the server or the stream's leader
// did not answer: no connection, a connection lost or closed, no responder
// on the subject (no stream leader), or a timeout.
func unavailable(err error) bool {
	switch {
	case errors.Is(err, nats.ErrNoServers),
		errors.Is(err, nats.ErrConnectionClosed),
		errors.Is(err, nats.ErrConnectionReconnecting),
		errors.Is(err, nats.ErrReconnectBufExceeded),
		errors.Is(err, nats.ErrDisconnected),
		errors.Is(err, nats.ErrNoResponders),
		errors.Is(err, nats.ErrTimeout),
		errors.Is(err, natsjs.ErrNoStreamResponse),
		errors.Is(err, natsjs.ErrJetStreamNotEnabled),
		errors.Is(err, context.DeadlineExceeded):
		return true
	}
	switch apiCode(err) {
	case codeClusterNotAvailable, codeStreamOffline, codeBatchIncomplete:
		return true
	}
	return false
}

// classify wraps err with the sentinel a caller branches on, keeping the
// client's error in the chain: "append: stale sequence or revision: nats:
// API error: ...".
func classify(err error) error {
	if err == nil {
		return nil
	}
	switch {
	case errors.Is(err, ErrConflict), errors.Is(err, ErrUnavailable), errors.Is(err, ErrExists),
		errors.Is(err, ErrNotFound), errors.Is(err, ErrTooLarge), errors.Is(err, ErrLeaseLost):
		return err
	case errors.Is(err, nats.ErrMaxPayload), apiCode(err) == codeMessageTooLarge:
		return fmt.Errorf("%w: %w", ErrTooLarge, err)
	case apiCode(err) == codeWrongLastSequence, apiCode(err) == codeWrongLastSequenceConstant,
		errors.Is(err, natsjs.ErrKeyRevisionMismatch):
		return fmt.Errorf("%w: %w", ErrConflict, err)
	case errors.Is(err, natsjs.ErrKeyNotFound), errors.Is(err, natsjs.ErrMsgNotFound):
		return fmt.Errorf("%w: %w", ErrNotFound, err)
	case unavailable(err):
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	return err
}

// inFlightRetries bounds how often retryInFlight repeats a write; with the
// doubling pause starting at 1 ms it gives up after about 130 ms.
const inFlightRetries = 7

// retryInFlight runs write again while it fails with 10164 ("wrong last
// sequence" without a sequence). A replicated stream answers that when the
// subject still has a write in flight, and its leader acks a write before it
// clears that write's in-flight mark (processJetStreamMsg before the
// bookkeeping in applyStreamMsgOp), so a writer that sends its next write as
// soon as the ack arrives can be refused by its own previous write; one such
// refusal was seen in a benchmark of a few thousand back-to-back commits on
// a 3-node cluster. The write stored nothing, so repeating it is safe; a
// real conflict turns into 10071 once the other write is applied.
func retryInFlight(ctx context.Context, write func() error) error {
	pause := time.Millisecond
	for i := 0; ; i++ {
		err := write()
		if err == nil || apiCode(err) != codeWrongLastSequenceConstant || i == inFlightRetries {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
		pause *= 2
	}
}
