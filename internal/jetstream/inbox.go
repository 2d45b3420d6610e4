package jetstream

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Inbox is every run's inbox in the inbox stream, run R's items on
// <prefix>.inbox.<R>. An item is stored with Nats-Msg-Id = its dedup key
// (a second put within the stream's dedup window is not stored) and
// Nats-TTL = its expiry (the server deletes it then). Consuming is not an
// acknowledgement: the reader keeps the sequence it has read up to in its
// checkpoint and reads after it next time.
type Inbox struct {
	nc     *nats.Conn
	js     natsjs.JetStream
	names  Names
	stream string
}

// Item is one stored inbox item.
type Item struct {
	Seq  uint64
	Key  string // the dedup key it was put with
	Data []byte
}

// Put stores an item for run unless one with the same dedup key was put
// within the dedup window, in which case it returns that item's sequence
// and dup. A ttl of 0 means no expiry; otherwise it is whole seconds, at
// least one (the server's Nats-TTL resolution).
func (b *Inbox) Put(ctx context.Context, run, key string, data []byte, ttl time.Duration) (seq uint64, dup bool, err error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	opts := []natsjs.PublishOpt{natsjs.WithMsgID(Token(run) + "." + key)}
	if ttl > 0 {
		if ttl < time.Second {
			return 0, false, fmt.Errorf("inbox put %s: ttl %v is under the server's 1 s minimum", key, ttl)
		}
		opts = append(opts, natsjs.WithMsgTTL(ttl))
	}
	m := &nats.Msg{Subject: b.names.InboxSubject(run), Data: data, Header: nats.Header{}}
	m.Header.Set(hdrInboxKey, key)
	ack, err := b.js.PublishMsg(ctx, m, opts...)
	if err != nil {
		return 0, false, fmt.Errorf("inbox put %s: %w", key, classify(err))
	}
	return ack.Sequence, ack.Duplicate, nil
}

// hdrInboxKey carries an item's dedup key as given (the message id has
// the run prefixed).
const hdrInboxKey = "Acr-Key"

// Read calls fn, in order, for each of run's unexpired items with a
// sequence greater than after.
func (b *Inbox) Read(ctx context.Context, run string, after uint64, fn func(Item) error) error {
	return readSubject(ctx, b.nc, b.stream, b.names.InboxSubject(run), after+1, func(seq uint64, m *nats.Msg) error {
		return fn(Item{Seq: seq, Key: m.Header.Get(hdrInboxKey), Data: m.Data})
	})
}

// Trim deletes run's items up to and including sequence upto, once the
// reader's checkpoint records that it has read them, so that items without
// a TTL do not pile up.
func (b *Inbox) Trim(ctx context.Context, run string, upto uint64) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	s, err := b.js.Stream(ctx, b.stream)
	if err != nil {
		return fmt.Errorf("inbox trim: %w", classify(err))
	}
	if err := s.Purge(ctx, natsjs.WithPurgeSubject(b.names.InboxSubject(run)), natsjs.WithPurgeSequence(upto+1)); err != nil {
		return fmt.Errorf("inbox trim: %w", classify(err))
	}
	return nil
}
