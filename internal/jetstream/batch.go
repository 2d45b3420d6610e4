package jetstream

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Headers of the atomic batch publish (nats-server >= 2.12, on a stream
// with AllowAtomicPublish). nats.go v1.55.0 has the stream setting but no
// publishing API for it, so publishBatch sets them itself.
const (
	hdrBatchID     = "Nats-Batch-Id"       // same on every message, at most 64 characters
	hdrBatchSeq    = "Nats-Batch-Sequence" // 1, 2, … without gaps
	hdrBatchCommit = "Nats-Batch-Commit"   // "1" on the last message (or "eob": commit, do not store it)
)

// Other headers this package sets or reads.
const (
	hdrMsgID      = natsjs.MsgIDHeader               // Nats-Msg-Id: dedup within the stream's Duplicates window
	hdrExpectSubj = natsjs.ExpectedLastSubjSeqHeader // Nats-Expected-Last-Subject-Sequence
	// Nats-Expected-Last-Subject-Sequence-Subject: the subject whose last
	// sequence Nats-Expected-Last-Subject-Sequence names, when it is not
	// the message's own.
	hdrExpectSubjSubj = natsjs.ExpectedLastSubjSeqSubjHeader
	hdrRollup         = natsjs.MsgRollup      // Nats-Rollup: "sub" purges the subject's earlier messages
	hdrSequence       = natsjs.SequenceHeader // Nats-Sequence, on direct get answers
	hdrSubject        = natsjs.SubjectHeader  // Nats-Subject, on direct get answers
	hdrNumPending     = "Nats-Num-Pending"    // on batched direct get answers
	hdrTimeStamp      = "Nats-Time-Stamp"     // on direct get answers: when the message was stored
	hdrStatus         = "Status"              // set by nats.go on status-only messages
	hdrDescription    = "Description"
	hdrPart           = "Acr-Part"   // "i/n" on the parts of a checkpoint
	hdrLedgerAt       = "Acr-Ledger" // on a checkpoint's first part: where the ledger stands
)

// MaxBatch is the server's default limit on the messages of one atomic
// batch (jetstream { limits { batch { max_msgs } } }). A larger batch is
// refused whole.
const MaxBatch = 1000

// defaultTimeout bounds a request whose context has no deadline.
const defaultTimeout = 5 * time.Second

// batchAck is the server's answer to a batch's commit message: a PubAck
// whose seq is the stream sequence of the batch's last message, plus the
// batch id and its size, or an error.
type batchAck struct {
	Stream string           `json:"stream"`
	Seq    uint64           `json:"seq"`
	Batch  string           `json:"batch"`
	Count  uint64           `json:"count"`
	Error  *natsjs.APIError `json:"error"`
}

// first returns the stream sequence of the batch's first message: a
// batch's messages get consecutive sequences.
func (a batchAck) first() uint64 { return a.Seq - a.Count + 1 }

// publishBatch stores msgs as one atomic batch: the server stages every
// message, and only the commit (the last message) checks every message's
// headers (expected sequences, dedup ids, rollups) and stores all of them
// or none. A batch whose commit never arrives (a writer that died, a lost
// connection) is dropped by the server after max_batch_timeout (10 s by
// default) and never becomes visible.
//
// Only the commit is a request: staging messages go without a reply, so a
// batch costs one round trip. A staging error surfaces as the commit's
// "batch is incomplete" error; messages larger than the server's payload
// limit are refused by the client before anything is sent.
//
// The caller sets the other headers; publishBatch adds the batch headers to
// msgs and clears their Reply.
func publishBatch(ctx context.Context, nc *nats.Conn, msgs []*nats.Msg) (batchAck, error) {
	return publishBatchFailpoint(ctx, nc, msgs, nil)
}

// publishBatchFailpoint is publishBatch that calls failpoint, when not
// nil, between staging the messages and sending the commit.
func publishBatchFailpoint(ctx context.Context, nc *nats.Conn, msgs []*nats.Msg, failpoint func(string)) (batchAck, error) {
	if len(msgs) == 0 {
		return batchAck{}, errors.New("empty batch")
	}
	if len(msgs) > MaxBatch {
		return batchAck{}, fmt.Errorf("%w: batch of %d messages, at most %d", ErrTooLarge, len(msgs), MaxBatch)
	}
	mp := nc.MaxPayload()
	for _, m := range msgs {
		// The header block, once encoded, counts towards the payload
		// limit; 256 bytes covers the batch headers added below.
		if int64(len(m.Data)+headerSize(m.Header)+256) > mp {
			return batchAck{}, fmt.Errorf("%w: %d bytes on %s, the server takes %d", ErrTooLarge, len(m.Data), m.Subject, mp)
		}
	}
	id := rand.Text() // 26 characters; the server takes up to 64
	last := len(msgs) - 1
	for i, m := range msgs {
		if m.Header == nil {
			m.Header = nats.Header{}
		}
		m.Header.Set(hdrBatchID, id)
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		m.Reply = ""
		if i < last {
			if err := nc.PublishMsg(m); err != nil {
				return batchAck{}, classify(err)
			}
		}
	}
	if failpoint != nil {
		if err := nc.Flush(); err != nil {
			return batchAck{}, classify(err)
		}
		failpoint("batch-staged")
	}
	msgs[last].Header.Set(hdrBatchCommit, "1")
	resp, err := nc.RequestMsgWithContext(ctx, msgs[last])
	if err != nil {
		return batchAck{}, classify(err)
	}
	var ack batchAck
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return batchAck{}, fmt.Errorf("batch ack %q: %w", resp.Data, err)
	}
	if ack.Error != nil {
		return batchAck{}, classify(ack.Error)
	}
	if ack.Seq == 0 || ack.Count != uint64(len(msgs)) || ack.Batch != id {
		return batchAck{}, fmt.Errorf("batch ack %q: not the ack of batch %s of %d messages", resp.Data, id, len(msgs))
	}
	return ack, nil
}

// publishOne stores a single message with a plain acknowledged publish:
// one message is stored whole or not at all without a batch, and a plain
// publish skips the batch's staging (which costs several synchronous
// disk writes on a single-replica file stream). The answer is shaped as a
// batch's, with Count 1; a copy within the dedup window is answered with
// the first one's sequence and refused as the batch would refuse it
// (codeBatchDuplicate), so that callers handle both alike. failpoint, when
// not nil, is called before the message is sent.
func publishOne(ctx context.Context, nc *nats.Conn, m *nats.Msg, failpoint func(string)) (batchAck, error) {
	if int64(len(m.Data)+headerSize(m.Header)) > nc.MaxPayload() {
		return batchAck{}, fmt.Errorf("%w: %d bytes on %s, the server takes %d", ErrTooLarge, len(m.Data), m.Subject, nc.MaxPayload())
	}
	if failpoint != nil {
		failpoint("batch-staged")
	}
	m.Reply = ""
	resp, err := nc.RequestMsgWithContext(ctx, m)
	if err != nil {
		return batchAck{}, classify(err)
	}
	var ack struct {
		Stream    string           `json:"stream"`
		Seq       uint64           `json:"seq"`
		Duplicate bool             `json:"duplicate"`
		Error     *natsjs.APIError `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &ack); err != nil {
		return batchAck{}, fmt.Errorf("publish ack %q: %w", resp.Data, err)
	}
	if ack.Error != nil {
		return batchAck{}, classify(ack.Error)
	}
	if ack.Duplicate {
		return batchAck{}, &natsjs.APIError{Code: 400, ErrorCode: codeBatchDuplicate, Description: "duplicate message id"}
	}
	if ack.Seq == 0 {
		return batchAck{}, fmt.Errorf("publish ack %q: no sequence", resp.Data)
	}
	return batchAck{Stream: ack.Stream, Seq: ack.Seq, Count: 1}, nil
}

// headerSize approximates the encoded size of h.
func headerSize(h nats.Header) int {
	n := len("NATS/1.0\r\n\r\n")
	for k, vs := range h {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}
