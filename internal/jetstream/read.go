package jetstream

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
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
	Seq      uint64 `json:"seq,omitempty"`
	NextFor  string `json:"next_by_subj,omitempty"`
	LastFor  string `json:"last_by_subj,omitempty"`
	Batch    int    `json:"batch,omitempty"`
	MaxBytes int    `json:"max_bytes,omitempty"`
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
