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
func readSubject(ctx context.Context, pol *policy, nc *nats.Conn, stream, subject string, from uint64, fn func(seq uint64, m *nats.Msg) error) error {
	api := "$JS.API.DIRECT.GET." + stream
	if from == 0 {
		from = 1
	}
	for more := true; more; {
		// One page per attempt; an attempt that failed part way resumes
		// after the last message it handed to fn, so fn never sees one
		// twice.
		err := pol.do(ctx, "read", func(ctx context.Context) error {
			sub, err := nc.SubscribeSync(nc.NewRespInbox())
			if err != nil {
				return classify(err)
			}
			defer sub.Unsubscribe()
			req, err := json.Marshal(directGetRequest{Seq: from, NextFor: subject, Batch: readBatch})
			if err != nil {
				return err
			}
			if err := nc.PublishRequest(api, sub.Subject, req); err != nil {
				return classify(err)
			}
			more, err = readPage(ctx, sub, subject, func(seq uint64, m *nats.Msg) error {
				if err := fn(seq, m); err != nil {
					return err
				}
				from = seq + 1
				return nil
			})
			return err
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// readPage reads one direct get answer up to its end-of-batch message and
// says whether more remain (after the last message it handed to fn).
func readPage(ctx context.Context, sub *nats.Subscription, subject string, fn func(seq uint64, m *nats.Msg) error) (more bool, err error) {
	var last uint64
	for {
		m, err := sub.NextMsgWithContext(ctx)
		if err != nil {
			return false, classify(err)
		}
		switch st := m.Header.Get(hdrStatus); st {
		case "":
			seq, err := strconv.ParseUint(m.Header.Get(hdrSequence), 10, 64)
			if err != nil {
				return false, fmt.Errorf("direct get %s: message without %s", subject, hdrSequence)
			}
			if err := fn(seq, m); err != nil {
				return false, err
			}
			last = seq
		case "204": // end of batch
			return m.Header.Get(hdrNumPending) != "0" && last > 0, nil
		case "404": // nothing at or after the start
			return false, nil
		case "503":
			return false, classify(nats.ErrNoResponders)
		default:
			return false, fmt.Errorf("direct get %s: status %s %s", subject, st, m.Header.Get(hdrDescription))
		}
	}
}

// directGet asks for one message (a 503 status, a stream without a
// leader to answer, is a server that does not answer).
func directGet(ctx context.Context, pol *policy, nc *nats.Conn, stream string, r directGetRequest) (*nats.Msg, error) {
	req, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	var m *nats.Msg
	err = pol.do(ctx, "read", func(ctx context.Context) (err error) {
		m, err = nc.RequestWithContext(ctx, "$JS.API.DIRECT.GET."+stream, req)
		if err == nil && m.Header.Get(hdrStatus) == "503" {
			err = nats.ErrNoResponders
		}
		return classify(err)
	})
	return m, err
}

// lastOnSubject returns the last message on subject and its stream
// sequence, or ErrNotFound.
func lastOnSubject(ctx context.Context, pol *policy, nc *nats.Conn, stream, subject string) (uint64, *nats.Msg, error) {
	m, err := directGet(ctx, pol, nc, stream, directGetRequest{LastFor: subject})
	if err != nil {
		return 0, nil, err
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
func getSeq(ctx context.Context, pol *policy, nc *nats.Conn, stream string, seq uint64) (*nats.Msg, error) {
	m, err := directGet(ctx, pol, nc, stream, directGetRequest{Seq: seq})
	if err != nil {
		return nil, err
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

// parseUint reads a decimal header value.
func parseUint(s string) (uint64, error) { return strconv.ParseUint(s, 10, 64) }

// errTooManySubjects: a multi-last direct get matched more subjects than
// the server answers in one request (1024 in nats-server 2.15).
var errTooManySubjects = errors.New("too many subjects for one multi-last request")

// readLastPerSubject calls fn with the subject and data of the last
// message on every subject that filter (a wildcard) matches, with one
// multi-last direct get (server >= 2.11). It fails with
// errTooManySubjects when the server refuses because the filter matches
// too many subjects.
func readLastPerSubject(ctx context.Context, pol *policy, nc *nats.Conn, stream, filter string, fn func(subject string, m *nats.Msg) error) error {
	req, err := json.Marshal(directGetRequest{MultiLastFor: []string{filter}})
	if err != nil {
		return err
	}
	// The whole answer is gathered before fn sees any of it: an attempt
	// that fails part way is repeated whole.
	var got []*nats.Msg
	err = pol.do(ctx, "read", func(ctx context.Context) error {
		got = got[:0]
		sub, err := nc.SubscribeSync(nc.NewRespInbox())
		if err != nil {
			return classify(err)
		}
		defer sub.Unsubscribe()
		if err := nc.PublishRequest("$JS.API.DIRECT.GET."+stream, sub.Subject, req); err != nil {
			return classify(err)
		}
		for {
			m, err := sub.NextMsgWithContext(ctx)
			if err != nil {
				return classify(err)
			}
			switch st := m.Header.Get(hdrStatus); st {
			case "":
				got = append(got, m)
			case "204", "404": // end of batch (multi-last answers everything at once), or nothing
				return nil
			case "413":
				return errTooManySubjects
			case "503":
				return classify(nats.ErrNoResponders)
			default:
				return fmt.Errorf("direct get last of %s: status %s %s", filter, st, m.Header.Get(hdrDescription))
			}
		}
	})
	if err != nil {
		return err
	}
	for _, m := range got {
		if err := fn(m.Header.Get(hdrSubject), m); err != nil {
			return err
		}
	}
	return nil
}

// scanLastPerSubject is readLastPerSubject for any number of subjects: an
// ephemeral consumer that delivers the last message per subject, deleted
// afterwards (and by the server after a short inactivity if the delete is
// lost).
func scanLastPerSubject(ctx context.Context, pol *policy, nc *nats.Conn, stream, filter string, fn func(subject string, m *nats.Msg) error) error {
	js, err := natsjs.New(nc)
	if err != nil {
		return err
	}
	type msg struct {
		subject string
		m       *nats.Msg
	}
	var got []msg
	err = pol.do(ctx, "read", func(ctx context.Context) error {
		got = got[:0]
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
				md, err := m.Metadata()
				if err != nil {
					return err
				}
				h := nats.Header{}
				for k, vs := range m.Headers() {
					h[k] = vs
				}
				h.Set(hdrTimeStamp, md.Timestamp.UTC().Format(time.RFC3339Nano))
				h.Set(hdrSequence, strconv.FormatUint(md.Sequence.Stream, 10))
				got = append(got, msg{m.Subject(), &nats.Msg{Subject: m.Subject(), Data: m.Data(), Header: h}})
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
	})
	if err != nil {
		return err
	}
	for _, g := range got {
		if err := fn(g.subject, g.m); err != nil {
			return err
		}
	}
	return nil
}

// msgGetRequest is the body of a $JS.API.STREAM.MSG.GET.<stream> request:
// the first message on NextFor with sequence >= Seq.
type msgGetRequest struct {
	Seq     uint64 `json:"seq"`
	NextFor string `json:"next_by_subj"`
}

// msgGetResponse is its answer (nats-server JSApiMsgGetResponse).
type msgGetResponse struct {
	Message *struct {
		Subject string `json:"subject"`
		Seq     uint64 `json:"seq"`
		Header  []byte `json:"hdrs,omitempty"`
		Data    []byte `json:"data,omitempty"`
	} `json:"message"`
	Error *natsjs.APIError `json:"error"`
}

// codeNoMessage is the API error of a message get that finds nothing.
const codeNoMessage = 10037

// readSubjectLeader is readSubject answered by the stream's leader
// alone, one message per request (the stream message get API, which
// only the leader answers): for a read that must not lag the last
// acknowledged write, as a direct get answered by a replica may. Each
// message's headers carry Nats-Subject as a direct get's do.
func readSubjectLeader(ctx context.Context, pol *policy, nc *nats.Conn, stream, subject string, from uint64, fn func(seq uint64, m *nats.Msg) error) error {
	api := "$JS.API.STREAM.MSG.GET." + stream
	for seq := max(from, 1); ; {
		req, err := json.Marshal(msgGetRequest{Seq: seq, NextFor: subject})
		if err != nil {
			return err
		}
		var resp msgGetResponse
		err = pol.do(ctx, "read", func(ctx context.Context) error {
			m, err := nc.RequestWithContext(ctx, api, req)
			if err != nil {
				return classify(err)
			}
			resp = msgGetResponse{}
			if err := json.Unmarshal(m.Data, &resp); err != nil {
				return fmt.Errorf("message get %s: %w", subject, err)
			}
			return nil
		})
		if err != nil {
			return err
		}
		if resp.Error != nil {
			if resp.Error.ErrorCode == codeNoMessage {
				return nil
			}
			return classify(resp.Error)
		}
		if resp.Message == nil || resp.Message.Seq < seq {
			return fmt.Errorf("message get %s: an answer without the message at or after %d", subject, seq)
		}
		m := &nats.Msg{Subject: resp.Message.Subject, Data: resp.Message.Data, Header: nats.Header{}}
		if len(resp.Message.Header) > 0 {
			if m.Header, err = nats.DecodeHeadersMsg(resp.Message.Header); err != nil {
				return fmt.Errorf("message get %s: headers of %d: %w", subject, resp.Message.Seq, err)
			}
		}
		m.Header.Set(hdrSubject, resp.Message.Subject)
		if err := fn(resp.Message.Seq, m); err != nil {
			return err
		}
		seq = resp.Message.Seq + 1
	}
}
