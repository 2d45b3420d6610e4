package jetstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// readBatch is how many messages one direct get request asks for. The
// server also stops at its max_pending bytes (64 MiB by default) and says
// how many remain, so a long read takes several requests.
const readBatch = 1000

// directGetRequest is the body of a $JS.API.DIRECT.GET.<stream> request
// (nats-server JSApiMsgGetRequest): messages on NextFor with sequence >=
// Seq, up to Batch of them, each answered as its own message and followed
// by a 204 EOB status message carrying Nats-Num-Pending.
type directGetRequest struct {
	Seq          uint64   `json:"seq,omitempty"`
	NextFor      string   `json:"next_by_subj,omitempty"`
	LastFor      string   `json:"last_by_subj,omitempty"`
	MultiLastFor []string `json:"multi_last,omitempty"`
	Batch        int      `json:"batch,omitempty"`
	MaxBytes     int      `json:"max_bytes,omitempty"`
}

// readSubject calls fn, in stream order, for every message on subject
// whose stream sequence is at least from, until there are none left or fn
// fails. It uses batched direct get (server >= 2.11, stream AllowDirect):
// no consumer is created, and the server answers each request under the
// stream's read isolation lock, so a read never sees part of an atomic
// batch. nats.go v1.55.0 has no API for batched direct get, hence the raw
// request here.
//
// In a cluster any current replica may answer a direct get, so a read may
// lag a just-acknowledged write by a moment; writes are protected by their
// expected sequence, not by what a read saw.
func readSubject(ctx context.Context, nc *nats.Conn, stream, subject string, from uint64, fn func(seq uint64, m *nats.Msg) error) error {
	sub, err := nc.SubscribeSync(nc.NewRespInbox())
	if err != nil {
		return classify(err)
	}
	defer sub.Unsubscribe()
	api := "$JS.API.DIRECT.GET." + stream
	if from == 0 {
		from = 1
	}
	for {
		req, err := json.Marshal(directGetRequest{Seq: from, NextFor: subject, Batch: readBatch})
		if err != nil {
			return err
		}
		if err := nc.PublishRequest(api, sub.Subject, req); err != nil {
			return classify(err)
		}
		// Without a deadline from the caller, each page (not the whole
		// read, which may be long) gets the default one.
		pctx, cancel := withTimeout(ctx)
		more, next, err := readPage(pctx, sub, subject, fn)
		cancel()
		if err != nil || !more {
			return err
		}
		from = next
	}
}

// readPage reads one direct get answer up to its end-of-batch message and
// says whether more remain and from which sequence.
func readPage(ctx context.Context, sub *nats.Subscription, subject string, fn func(seq uint64, m *nats.Msg) error) (more bool, from uint64, err error) {
	var last uint64
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return false, 0, classify(err)
		}
		switch st := m.Header.Get(hdrStatus); st {
		case "":
			seq, err := strconv.ParseUint(m.Header.Get(hdrSequence), 10, 64)
			if err != nil {
				return false, 0, fmt.Errorf("direct get %s: message without %s", subject, hdrSequence)
			}
			if err := fn(seq, m); err != nil {
				return false, 0, err
			}
			last = seq
		case "204": // end of batch
			more := m.Header.Get(hdrNumPending) != "0" && last > 0
			return more, last + 1, nil
		case "404": // nothing at or after the start
			return false, 0, nil
		case "503":
			return false, 0, classify(nats.ErrNoResponders)
		default:
			return false, 0, fmt.Errorf("direct get %s: status %s %s", subject, st, m.Header.Get(hdrDescription))
		}
	}
}

// lastOnSubject returns the last message on subject and its stream
// sequence, or ErrNotFound.
func lastOnSubject(ctx context.Context, nc *nats.Conn, stream, subject string) (uint64, *nats.Msg, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	req, err := json.Marshal(directGetRequest{LastFor: subject})
	if err != nil {
		return 0, nil, err
	}
	m, err := nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, req)
	if err != nil {
		return 0, nil, classify(err)
	}
	switch st := m.Header.Get(hdrStatus); st {
	case "":
	case "404":
		return 0, nil, fmt.Errorf("last on %s: %w", subject, ErrNotFound)
	default:
		return 0, nil, fmt.Errorf("last on %s: status %s %s", subject, st, m.Header.Get(hdrDescription))
	}
	seq, err := strconv.ParseUint(m.Header.Get(hdrSequence), 10, 64)
	if err != nil {
		return 0, nil, fmt.Errorf("last on %s: message without %s", subject, hdrSequence)
	}
	return seq, m, nil
}

// getSeq returns the message at stream sequence seq, or ErrNotFound.
func getSeq(ctx context.Context, nc *nats.Conn, stream string, seq uint64) (*nats.Msg, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	req, err := json.Marshal(directGetRequest{Seq: seq})
	if err != nil {
		return nil, err
	}
	m, err := nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, req)
	if err != nil {
		return nil, classify(err)
	}
	switch st := m.Header.Get(hdrStatus); st {
	case "":
	case "404":
		return nil, fmt.Errorf("message %d: %w", seq, ErrNotFound)
	default:
		return nil, fmt.Errorf("message %d: status %s %s", seq, st, m.Header.Get(hdrDescription))
	}
	m.Subject = m.Header.Get(hdrSubject)
	return m, nil
}

// errTooManySubjects: a multi-last direct get matched more subjects than
// the server answers in one request (1024 in nats-server 2.15).
var errTooManySubjects = errors.New("too many subjects for one multi-last request")

// readLastPerSubject calls fn with the subject and data of the last
// message on every subject that filter (a wildcard) matches, with one
// multi-last direct get (server >= 2.11). It fails with
// errTooManySubjects when the server refuses because the filter matches
// too many subjects.
func readLastPerSubject(ctx context.Context, nc *nats.Conn, stream, filter string, fn func(subject string, data []byte) error) error {
	sub, err := nc.SubscribeSync(nc.NewRespInbox())
	if err != nil {
		return classify(err)
	}
	defer sub.Unsubscribe()
	req, err := json.Marshal(directGetRequest{MultiLastFor: []string{filter}})
	if err != nil {
		return err
	}
	if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, sub.Subject, req); err != nil {
		return classify(err)
	}
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return classify(err)
		}
		switch st := m.Header.Get(hdrStatus); st {
		case "":
			if err := fn(m.Header.Get(hdrSubject), m.Data); err != nil {
				return err
			}
		case "204": // end of batch: multi-last answers everything at once
			return nil
		case "404":
			return nil
		case "413":
			return errTooManySubjects
		case "503":
			return classify(nats.ErrNoResponders)
		default:
			return fmt.Errorf("direct get last of %s: status %s %s", filter, st, m.Header.Get(hdrDescription))
		}
	}
}

// scanLastPerSubject is readLastPerSubject for any number of subjects: an
// ephemeral consumer that delivers the last message per subject, deleted
// afterwards (and by the server after a short inactivity if the delete is
// lost).
func scanLastPerSubject(ctx context.Context, nc *nats.Conn, stream, filter string, fn func(subject string, data []byte) error) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	js, err := natsjs.New(nc)
	if err != nil {
		return err
	}
	c, err := js.CreateConsumer(ctx, stream, natsjs.ConsumerConfig{
		FilterSubject:     filter,
		DeliverPolicy:     natsjs.DeliverLastPerSubjectPolicy,
		AckPolicy:         natsjs.AckNonePolicy,
		InactiveThreshold: 30 * time.Second,
		MemoryStorage:     true,
	})
	if err != nil {
		return classify(err)
	}
	name := c.CachedInfo().Name
	defer func() {
		dctx, dcancel := context.WithTimeout(context.Background(), defaultTimeout)
		defer dcancel()
		_ = js.DeleteConsumer(dctx, stream, name)
	}()
	for pending := c.CachedInfo().NumPending; pending > 0; {
		batch, err := c.Fetch(int(min(pending, readBatch)), natsjs.FetchContext(ctx))
		if err != nil {
			return classify(err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			if err := fn(m.Subject(), m.Data()); err != nil {
				return err
			}
			md, err := m.Metadata()
			if err != nil {
				return err
			}
			pending = md.NumPending
		}
		if err := batch.Error(); err != nil {
			return classify(err)
		}
		if n == 0 {
			return fmt.Errorf("scan last of %s: consumer delivered nothing with %d pending", filter, pending)
		}
	}
	return nil
}
