package jetstream

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
	pol    *policy
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
//
// A put whose answer was lost is sent again with the same message id, so
// the server stores it once; its second answer then says dup.
func (b *Inbox) Put(ctx context.Context, run, key string, data []byte, ttl time.Duration) (seq uint64, dup bool, err error) {
	opts := []natsjs.PublishOpt{natsjs.WithMsgID(Token(run) + "." + key)}
	if ttl > 0 {
		if ttl < time.Second {
			return 0, false, fmt.Errorf("inbox put %s: ttl %v is under the server's 1 s minimum", key, ttl)
		}
		opts = append(opts, natsjs.WithMsgTTL(ttl))
	}
	err = b.pol.do(ctx, "inbox.put", func(ctx context.Context) error {
		m := &nats.Msg{Subject: b.names.InboxSubject(run), Data: data, Header: nats.Header{}}
		m.Header.Set(hdrInboxKey, key)
		ack, err := b.js.PublishMsg(ctx, m, opts...)
		if err != nil {
			return classify(err)
		}
		seq, dup = ack.Sequence, ack.Duplicate
		return nil
	})
	if err != nil {
		return 0, false, fmt.Errorf("inbox put %s: %w", key, err)
	}
	return seq, dup, nil
}

// hdrInboxKey carries an item's dedup key as given (the message id has
// the run prefixed).
const hdrInboxKey = "Acr-Key"

// ItemKey is the dedup key an inbox message was put with ("" for a
// message without one), as Read's Item.Key gives it: what a subscriber
// to the inbox subject heard can be matched with what a read finds.
func ItemKey(m *nats.Msg) string { return m.Header.Get(hdrInboxKey) }

// Read calls fn, in order, for each of run's unexpired items with a
// sequence greater than after.
func (b *Inbox) Read(ctx context.Context, run string, after uint64, fn func(Item) error) error {
	return readSubject(ctx, b.pol, b.nc, b.stream, b.names.InboxSubject(run), after+1, func(seq uint64, m *nats.Msg) error {
		return fn(Item{Seq: seq, Key: m.Header.Get(hdrInboxKey), Data: m.Data})
	})
}

// Trim deletes run's items up to and including sequence upto, once the
// reader's checkpoint records that it has read them, so that items without
// a TTL do not pile up.
func (b *Inbox) Trim(ctx context.Context, run string, upto uint64) error {
	err := b.pol.do(ctx, "inbox.trim", func(ctx context.Context) error {
		s, err := b.js.Stream(ctx, b.stream)
		if err != nil {
			return classify(err)
		}
		return classify(s.Purge(ctx, natsjs.WithPurgeSubject(b.names.InboxSubject(run)), natsjs.WithPurgeSequence(upto+1)))
	})
	if err != nil {
		return fmt.Errorf("inbox trim: %w", err)
	}
	return nil
}

// Delete removes run's items at the given stream sequences (items a
// reader has consumed and checkpointed). An item already gone (expired,
// deleted before) is not an error.
func (b *Inbox) Delete(ctx context.Context, run string, seqs ...uint64) error {
	for len(seqs) > 0 {
		err := b.pol.do(ctx, "inbox.delete", func(ctx context.Context) error {
			s, err := b.js.Stream(ctx, b.stream)
			if err != nil {
				return classify(err)
			}
			for len(seqs) > 0 {
				err := s.DeleteMsg(ctx, seqs[0])
				if err != nil && !errors.Is(err, natsjs.ErrMsgNotFound) && !errors.Is(err, natsjs.ErrMsgDeleteUnsuccessful) {
					return fmt.Errorf("%d: %w", seqs[0], classify(err))
				}
				seqs = seqs[1:]
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("inbox delete %w", err)
		}
	}
	return nil
}

// Quarantine moves run's item at stream sequence seq aside, onto
// <prefix>.quarantine.<run> (kept, without expiry, for the operator), and
// deletes it from the inbox. The copy is stored first, with a message id
// derived from seq, so a quarantine interrupted before the delete is
// finished by doing it again and stores no second copy within the dedup
// window.
func (b *Inbox) Quarantine(ctx context.Context, run string, seq uint64) error {
	m, err := getSeq(ctx, b.pol, b.nc, b.stream, seq)
	if err != nil {
		return fmt.Errorf("quarantine %d: %w", seq, err)
	}
	if m.Subject != b.names.InboxSubject(run) {
		return fmt.Errorf("quarantine %d: not an item of %s: %w", seq, run, ErrNotFound)
	}
	err = b.pol.do(ctx, "inbox.quarantine", func(ctx context.Context) error {
		q := &nats.Msg{Subject: b.names.QuarantineSubject(run), Data: m.Data, Header: nats.Header{}}
		q.Header.Set(hdrInboxKey, m.Header.Get(hdrInboxKey))
		_, err := b.js.PublishMsg(ctx, q, natsjs.WithMsgID(fmt.Sprintf("%s.quarantine.%d", Token(run), seq)))
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("quarantine %d: %w", seq, err)
	}
	return b.Delete(ctx, run, seq)
}

// Quarantined calls fn, in order, for each of run's quarantined items.
func (b *Inbox) Quarantined(ctx context.Context, run string, fn func(Item) error) error {
	return readSubject(ctx, b.pol, b.nc, b.stream, b.names.QuarantineSubject(run), 1, func(seq uint64, m *nats.Msg) error {
		return fn(Item{Seq: seq, Key: m.Header.Get(hdrInboxKey), Data: m.Data})
	})
}

// Pending calls fn with every run whose inbox holds at least one item and
// how many it holds: one stream info request, however many runs there are.
func (b *Inbox) Pending(ctx context.Context, fn func(run string, items uint64) error) error {
	prefix := b.names.Prefix + ".inbox."
	var info *natsjs.StreamInfo
	err := b.pol.do(ctx, "inbox.pending", func(ctx context.Context) error {
		s, err := b.js.Stream(ctx, b.stream)
		if err != nil {
			return classify(err)
		}
		info, err = s.Info(ctx, natsjs.WithSubjectFilter(prefix+"*"))
		return classify(err)
	})
	if err != nil {
		return fmt.Errorf("inbox pending: %w", err)
	}
	for subj, n := range info.State.Subjects {
		run, err := ParseToken(strings.TrimPrefix(subj, prefix))
		if err != nil {
			return fmt.Errorf("inbox subject %s: %w", subj, err)
		}
		if err := fn(run, n); err != nil {
			return err
		}
	}
	return nil
}
