package jetstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
)

// Ledger is every run's ledger and checkpoint in the runs stream: run R's
// records on <prefix>.ledger.<R>, its checkpoint on <prefix>.ckpt.<R>.
// Writes are atomic batches guarded by the expected last sequence of each
// subject they touch, so a stale writer stores nothing.
type Ledger struct {
	nc     *nats.Conn
	pol    *policy
	names  Names
	stream string
}

// Frontier is where a run stands in the runs stream: the stream sequence
// of its last ledger record and of the last part of its checkpoint, 0 for
// none yet. A commit states the frontier it expects and returns the next
// one; the pair is the run's generation.
type Frontier struct {
	Ledger     uint64
	Checkpoint uint64
}

// Record is one stored ledger message: what this package stores and
// returns as a unit (acr's jsstore packs several ledger lines into one).
type Record struct {
	Seq    uint64      // stream sequence
	ID     string      // Nats-Msg-Id
	Batch  string      // Nats-Batch-Id of the batch that stored it
	Header nats.Header // every header it was stored with
	Data   []byte
}

// record is the Record of a stored message at seq.
func record(seq uint64, m *nats.Msg) Record {
	return Record{Seq: seq, ID: m.Header.Get(hdrMsgID), Batch: m.Header.Get(hdrBatchID), Header: m.Header, Data: m.Data}
}

// Committed is the result of a commit.
type Committed struct {
	// Frontier is the run's frontier after the commit.
	Frontier Frontier
	// First is the stream sequence of the commit's first message.
	First uint64
	// Duplicate says the same commit had already been stored (a retry
	// after a lost ack); nothing was stored twice.
	Duplicate bool
}

// Append adds records to run's ledger in one atomic batch, provided the
// run's last ledger record is still at stream sequence after (0 for an
// empty ledger). See Commit.
func (l *Ledger) Append(ctx context.Context, run string, after uint64, records [][]byte) (Committed, error) {
	if len(records) == 0 {
		return Committed{}, errors.New("append: no records")
	}
	return l.Commit(ctx, run, Frontier{Ledger: after}, records, nil)
}

// Commit stores records on run's ledger and, when checkpoint is not nil,
// replaces run's checkpoint with it, all in one atomic batch: either every
// message is stored or none is. It is CommitBatch with records and a
// checkpoint only.
func (l *Ledger) Commit(ctx context.Context, run string, at Frontier, records [][]byte, checkpoint []byte) (Committed, error) {
	return l.CommitBatch(ctx, run, at, Batch{Records: records, Checkpoint: checkpoint})
}

// Batch is what one commit stores: ledger records, a checkpoint, a status,
// any of them (at least one).
type Batch struct {
	// Records are appended to the run's ledger, in order, one message
	// each.
	Records [][]byte
	// RecordHeaders, when not nil, has one entry per record: headers of
	// the caller's own (such as how many ledger lines a message packs)
	// copied onto that record's message. A nil entry adds none.
	RecordHeaders []nats.Header
	// Checkpoint, when not nil, replaces the run's checkpoint.
	Checkpoint []byte
	// Header is copied onto every checkpoint part (acr's own headers,
	// such as the generation, that a reader wants without the body).
	Header nats.Header
	// Status, when not nil, replaces the run's status message on
	// <prefix>.status.<run> (rolled up: the subject keeps only the last).
	Status []byte
	// Failpoint, when set, is called once the messages are staged on the
	// server and before the commit message is sent, with the stage
	// "batch-staged". Crash tests end the writer there: a batch whose
	// commit never arrives is never stored.
	Failpoint func(stage string)
}

// CommitBatch stores b in one atomic batch: either every message is
// stored or none is. A commit of a single message (one record) is a
// plain publish with the same headers, atomic by itself and without the
// batch's staging cost.
//
// The batch is guarded by the frontier at: its first ledger record carries
// Nats-Expected-Last-Subject-Sequence = at.Ledger and the first checkpoint
// part = at.Checkpoint. A batch without records but with a status guards
// the ledger from the status message instead
// (Nats-Expected-Last-Subject-Sequence-Subject names the ledger subject),
// so that a checkpoint is only stored while the ledger still ends where
// its writer thinks. If another writer moved a guarded subject, the
// commit fails with ErrConflict and nothing is stored.
//
// Messages are ordered records, checkpoint parts, status. Every record
// and part has a Nats-Msg-Id derived from its subject, at, its place in
// the batch and its bytes, so retrying the same commit is idempotent:
// within the stream's dedup window the server refuses the copy, after it
// the expected sequence does; either way CommitBatch then reads what is
// stored after at and answers Duplicate when it is this commit.
//
// The checkpoint is split into parts that fit the server's payload limit,
// all on <prefix>.ckpt.<run>; the first part carries Nats-Rollup: sub, so
// committing purges the previous checkpoint's parts in the same step.
func (l *Ledger) CommitBatch(ctx context.Context, run string, at Frontier, b Batch) (Committed, error) {
	if len(b.Records) == 0 && b.Checkpoint == nil && b.Status == nil {
		return Committed{}, errors.New("commit: nothing to commit")
	}
	msgs, nparts := l.batch(run, at, b)
	var ack batchAck
	// A commit whose answer was lost is sent again as it was: the same
	// message ids, so that the server refuses a copy of one it stored (or
	// the expected sequence does, after the dedup window), and stored
	// below then recognises it.
	err := l.pol.do(ctx, "commit", func(ctx context.Context) error {
		return retryInFlight(ctx, func() (err error) {
			if len(msgs) == 1 {
				ack, err = publishOne(ctx, l.nc, msgs[0], b.Failpoint)
			} else {
				ack, err = publishBatchFailpoint(ctx, l.nc, msgs, b.Failpoint)
			}
			return err
		})
	})
	if err == nil {
		return l.committed(at, ack.first(), len(b.Records), nparts, false), nil
	}
	if code := apiCode(err); code != codeBatchDuplicate && !errors.Is(err, ErrConflict) {
		return Committed{}, fmt.Errorf("commit %s: %w", run, err)
	}
	// Stale, or a copy: it is a copy if what follows at is this batch.
	first, ok, rerr := l.stored(ctx, run, at, len(b.Records), msgs)
	if rerr != nil {
		return Committed{}, fmt.Errorf("commit %s: check a refused commit: %w", run, rerr)
	}
	if !ok {
		return Committed{}, fmt.Errorf("commit %s: %w", run, classify(err))
	}
	return l.committed(at, first, len(b.Records), nparts, true), nil
}

func (l *Ledger) committed(at Frontier, first uint64, nrec, nparts int, dup bool) Committed {
	c := Committed{Frontier: at, First: first, Duplicate: dup}
	if nrec > 0 {
		c.Frontier.Ledger = first + uint64(nrec) - 1
	}
	if nparts > 0 {
		c.Frontier.Checkpoint = first + uint64(nrec+nparts) - 1
	}
	return c
}

// batch builds the messages of a commit and says how many are
// checkpoint parts.
func (l *Ledger) batch(run string, at Frontier, b Batch) ([]*nats.Msg, int) {
	lsubj, csubj := l.names.LedgerSubject(run), l.names.CheckpointSubject(run)
	msgs := make([]*nats.Msg, 0, len(b.Records)+2)
	for i, r := range b.Records {
		m := &nats.Msg{Subject: lsubj, Data: r, Header: nats.Header{}}
		if i < len(b.RecordHeaders) {
			for k, vs := range b.RecordHeaders[i] {
				m.Header[k] = append([]string(nil), vs...)
			}
		}
		m.Header.Set(hdrMsgID, msgID(lsubj, at.Ledger, i, r))
		if i == 0 {
			m.Header.Set(hdrExpectSubj, strconv.FormatUint(at.Ledger, 10))
		}
		msgs = append(msgs, m)
	}
	nparts := 0
	if b.Checkpoint != nil {
		parts := split(b.Checkpoint, partSize(l.nc))
		nparts = len(parts)
		for i, p := range parts {
			m := &nats.Msg{Subject: csubj, Data: p, Header: nats.Header{}}
			for k, vs := range b.Header {
				m.Header[k] = append([]string(nil), vs...)
			}
			m.Header.Set(hdrMsgID, msgID(csubj, at.Checkpoint, i, p))
			m.Header.Set(hdrPart, fmt.Sprintf("%d/%d", i+1, len(parts)))
			if i == 0 {
				m.Header.Set(hdrExpectSubj, strconv.FormatUint(at.Checkpoint, 10))
				m.Header.Set(hdrRollup, "sub")
				// Where the ledger stands once this batch is stored: its
				// records sit right before this part.
				if len(b.Records) == 0 {
					m.Header.Set(hdrLedgerAt, "="+strconv.FormatUint(at.Ledger, 10))
				} else {
					m.Header.Set(hdrLedgerAt, "-1")
				}
			}
			msgs = append(msgs, m)
		}
	}
	if b.Status != nil {
		m := &nats.Msg{Subject: l.names.StatusSubject(run), Data: b.Status, Header: nats.Header{}}
		m.Header.Set(hdrRollup, "sub")
		if len(b.Records) == 0 {
			m.Header.Set(hdrExpectSubj, strconv.FormatUint(at.Ledger, 10))
			m.Header.Set(hdrExpectSubjSubj, lsubj)
		}
		msgs = append(msgs, m)
	}
	return msgs, nparts
}

// stored reports whether the messages right after at are msgs (a commit
// that had already been stored), and the first one's sequence. A commit
// with records is recognised by its records for as long as the ledger
// lasts; a commit without records by its checkpoint parts, only until the
// next commit rolls them up, after which its retry is reported as the
// conflict it then is. A status-only commit is never recognised.
func (l *Ledger) stored(ctx context.Context, run string, at Frontier, nrec int, msgs []*nats.Msg) (uint64, bool, error) {
	subj, from, want := l.names.LedgerSubject(run), at.Ledger+1, msgs[:nrec]
	if nrec == 0 {
		subj, from, want = l.names.CheckpointSubject(run), at.Checkpoint+1, nil
		for _, m := range msgs {
			if m.Subject == subj {
				want = append(want, m)
			}
		}
		if len(want) == 0 {
			return 0, false, nil
		}
	}
	var got []uint64
	errStop := errors.New("stop")
	err := readSubject(ctx, l.pol, l.nc, l.stream, subj, from, func(seq uint64, m *nats.Msg) error {
		i := len(got)
		if m.Header.Get(hdrMsgID) != want[i].Header.Get(hdrMsgID) || !bytes.Equal(m.Data, want[i].Data) {
			return errStop
		}
		got = append(got, seq)
		if len(got) == len(want) {
			return errStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return 0, false, err
	}
	if len(got) != len(want) {
		return 0, false, nil
	}
	return got[0], true, nil
}

// msgID is a message's Nats-Msg-Id: the same commit retried gets the same
// ids, a different commit (other bytes, or the same bytes at another
// frontier) different ones.
func msgID(subject string, at uint64, i int, data []byte) string {
	h := sha256.New()
	h.Write([]byte(subject))
	var n [16]byte
	binary.BigEndian.PutUint64(n[:8], at)
	binary.BigEndian.PutUint64(n[8:], uint64(i))
	h.Write(n[:])
	h.Write(data)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// RecordRoom is the largest record body one ledger message holds: the
// server's payload limit less room for the headers (the batch's, the
// guard's and 512 bytes of the caller's RecordHeaders).
func (l *Ledger) RecordRoom() int { return partSize(l.nc) }

// partSize is the largest checkpoint part that fits the server's payload
// limit with room for the headers.
func partSize(nc *nats.Conn) int {
	return int(nc.MaxPayload()) - 1024
}

// split cuts b into parts of at most n bytes; an empty b is one empty part.
func split(b []byte, n int) [][]byte {
	if len(b) <= n {
		return [][]byte{b}
	}
	var parts [][]byte
	for len(b) > n {
		parts = append(parts, b[:n])
		b = b[n:]
	}
	return append(parts, b)
}

// Read calls fn, in order, for each of run's records whose stream
// sequence is greater than after, until they run out or fn fails.
func (l *Ledger) Read(ctx context.Context, run string, after uint64, fn func(Record) error) error {
	return readSubject(ctx, l.pol, l.nc, l.stream, l.names.LedgerSubject(run), after+1, func(seq uint64, m *nats.Msg) error {
		return fn(record(seq, m))
	})
}

// Last returns run's last ledger record, or ErrNotFound.
func (l *Ledger) Last(ctx context.Context, run string) (Record, error) {
	seq, m, err := lastOnSubject(ctx, l.pol, l.nc, l.stream, l.names.LedgerSubject(run))
	if err != nil {
		return Record{}, err
	}
	return record(seq, m), nil
}

// CheckpointHead returns the stream sequence and headers of the last part
// of run's checkpoint (ErrNotFound when it has none): the checkpoint's
// position and the headers its commit set, without reading its body.
func (l *Ledger) CheckpointHead(ctx context.Context, run string) (uint64, nats.Header, error) {
	seq, m, err := lastOnSubject(ctx, l.pol, l.nc, l.stream, l.names.CheckpointSubject(run))
	if err != nil {
		return 0, nil, err
	}
	return seq, m.Header, nil
}

// Get returns run's ledger record at stream sequence seq, or ErrNotFound
// when there is none there (or it is not one of run's records).
func (l *Ledger) Get(ctx context.Context, run string, seq uint64) (Record, error) {
	m, err := getSeq(ctx, l.pol, l.nc, l.stream, seq)
	if err != nil {
		return Record{}, err
	}
	if m.Subject != l.names.LedgerSubject(run) {
		return Record{}, fmt.Errorf("record %d of %s: %w", seq, run, ErrNotFound)
	}
	return record(seq, m), nil
}

// Statuses calls fn with the last status message of every run that has
// one, in no particular order: one direct get of the last message on
// every status subject when there are at most 1024 runs, otherwise a
// scan by a short-lived consumer.
func (l *Ledger) Statuses(ctx context.Context, fn func(run string, data []byte) error) error {
	filter := l.names.Prefix + ".status.*"
	each := func(subject string, m *nats.Msg) error {
		run, err := ParseToken(strings.TrimPrefix(subject, l.names.Prefix+".status."))
		if err != nil {
			return fmt.Errorf("status subject %s: %w", subject, err)
		}
		return fn(run, m.Data)
	}
	err := readLastPerSubject(ctx, l.pol, l.nc, l.stream, filter, each)
	if errors.Is(err, errTooManySubjects) {
		return scanLastPerSubject(ctx, l.pol, l.nc, l.stream, filter, each)
	}
	return err
}

// Checkpoint returns run's checkpoint and the frontier right after the
// commit that stored it, or ErrNotFound. The parts it reads must be the
// complete set of one batch; anything else is an error, never a partial
// checkpoint. The frontier comes from the checkpoint's own headers, so it
// is consistent with it even if the ledger has moved on since (which only
// a ledger-only Append can do).
func (l *Ledger) Checkpoint(ctx context.Context, run string) ([]byte, Frontier, error) {
	doc, _, f, err := l.CheckpointWithHeader(ctx, run)
	return doc, f, err
}

// CheckpointWithHeader is Checkpoint that also returns the headers of the
// checkpoint's first part (those a commit's Batch.Header set, among
// others).
func (l *Ledger) CheckpointWithHeader(ctx context.Context, run string) ([]byte, nats.Header, Frontier, error) {
	var (
		head   nats.Header
		buf    bytes.Buffer
		batch  string
		last   uint64
		ledger uint64
		n      int
		total  = -1
	)
	err := readSubject(ctx, l.pol, l.nc, l.stream, l.names.CheckpointSubject(run), 1, func(seq uint64, m *nats.Msg) error {
		i, of, ok := parsePart(m.Header.Get(hdrPart))
		switch {
		case !ok:
			return fmt.Errorf("checkpoint part %d: bad %s %q", seq, hdrPart, m.Header.Get(hdrPart))
		case n == 0:
			batch, total, head = m.Header.Get(hdrBatchID), of, m.Header
			at, ok := parseLedgerAt(m.Header.Get(hdrLedgerAt), seq)
			if !ok {
				return fmt.Errorf("checkpoint part %d: bad %s %q", seq, hdrLedgerAt, m.Header.Get(hdrLedgerAt))
			}
			ledger = at
		case m.Header.Get(hdrBatchID) != batch || of != total:
			return fmt.Errorf("checkpoint part %d: from another commit", seq)
		}
		if i != n+1 {
			return fmt.Errorf("checkpoint part %d: part %d where %d was due", seq, i, n+1)
		}
		buf.Write(m.Data)
		last, n = seq, n+1
		return nil
	})
	if err != nil {
		return nil, nil, Frontier{}, fmt.Errorf("checkpoint %s: %w", run, err)
	}
	if n == 0 {
		return nil, nil, Frontier{}, fmt.Errorf("checkpoint %s: %w", run, ErrNotFound)
	}
	if n != total {
		return nil, nil, Frontier{}, fmt.Errorf("checkpoint %s: %d of %d parts", run, n, total)
	}
	return buf.Bytes(), head, Frontier{Ledger: ledger, Checkpoint: last}, nil
}

// parseLedgerAt reads the Acr-Ledger header of a checkpoint's first part
// stored at seq: "=N" (the ledger stood at N) or "-1" (the ledger's last
// record is the message right before this part).
func parseLedgerAt(s string, seq uint64) (uint64, bool) {
	if s == "-1" {
		return seq - 1, seq > 1
	}
	n, ok := strings.CutPrefix(s, "=")
	if !ok {
		return 0, false
	}
	v, err := strconv.ParseUint(n, 10, 64)
	return v, err == nil
}

func parsePart(s string) (i, n int, ok bool) {
	a, b, ok := strings.Cut(s, "/")
	if !ok {
		return 0, 0, false
	}
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	return i, n, err1 == nil && err2 == nil && i >= 1 && i <= n
}
