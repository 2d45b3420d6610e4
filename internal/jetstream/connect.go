package jetstream

import (
	"fmt"

	"github.com/nats-io/nats.go"
)

// Connect opens a client connection for a store. It turns off the
// client's reconnect buffer (nats.ReconnectBufSize(-1)), so that while the
// server is away a write fails at once with ErrUnavailable instead of being
// buffered and sent after the server returns, long after its caller gave
// up. opts come after that and may override it.
func Connect(url string, opts ...nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.ReconnectBufSize(-1)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("connect %s: %w", url, classify(err))
	}
	return nc, nil
}
