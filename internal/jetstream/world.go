package jetstream

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"

	"github.com/nats-io/nats.go"
)

// Headers of world messages.
const (
	// hdrWorld says what a world message is: "put" (a file's bytes), "del"
	// (the file was removed; empty body) or "head" (the world's head).
	hdrWorld = "Acr-World"
	// hdrPath is a file message's world path, as Token(path).
	hdrPath = "Acr-Path"
)

// What a world message is (hdrWorld).
const (
	worldPut  = "put"
	worldDel  = "del"
	worldHd   = "head"
	worldSeal = "seal"
	worldTake = "take"
)

// ErrBadWorld means a stored world message is not one this package
// writes: a damaged or foreign message on a world subject.
var ErrBadWorld = errors.New("malformed world message")

// Worlds is every run's world, the files its effects change, in the runs
// stream beside the run's ledger: one subject per file, rolled up so that
// it keeps only the file's last message, and one head per run.
//
//	P.world.<R>.<K>    a file (K: 32 hex digits of the SHA-256 of its path):
//	                   its bytes (Acr-World: put) or its removal (Acr-World:
//	                   del, empty body); Acr-Path: Token(path)
//	P.world.<R>.head   the head (Acr-World: head): moved by every write of
//	                   the world, whose stream sequence is the world's
//	                   fencing token
//
// Three writes:
//
//   - Take stores a new head that expects the head the taker read. A
//     process takes a run's world before it runs the run's cycles (two
//     processes that open the run at once: one take fails with
//     ErrConflict).
//   - Upload stores a file (or its removal) alone, one plain publish,
//     guarded by the run's ledger end (Nats-Expected-Last-Subject-Sequence
//     on the ledger subject: the record that authorises the write, the
//     effect's intent, must still be the last one), with a message id
//     derived from it, so that a retry is stored once. It is how an
//     effect's file is stored, and how a world nobody holds yet is
//     uploaded (a new run's, or one moved into the store for the first
//     time; Take with no head expected then seals it).
//   - Write stores a file and a new head in one atomic batch, the head
//     expecting the head the writer last took or wrote (what effects were
//     stored with before; kept for its tests and for readers of its
//     heads).
//
// Why the ledger's end alone fences an effect's file: while the ledger
// ends at intent I, the only file write the store takes is I's effect,
// whose bytes I fixes (its after-hash); a process that lost the run can
// store it only while nobody appended after I, and then it stores what the
// new holder's recovery of I would store. Once anything is appended after
// I, every write that claims I is refused. An atomic batch would cost a
// single-replica file stream several synchronous writes per effect.
//
// Read asks the stream's leader, so that it never lags an acknowledged
// write: a process opening the run must not run its cycles on a world
// older than its ledger.
type Worlds struct {
	nc     *nats.Conn
	pol    *policy
	names  Names
	stream string
}

// WorldState is a run's world as Read found it.
type WorldState struct {
	// Files are the world's files by path (an empty file is an empty,
	// not nil, slice).
	Files map[string][]byte
	// Head is the stream sequence of the world's head: 0 when the run's
	// world was never stored.
	Head uint64
	// Seqs are the stream sequences of the last message on each path's
	// subject, a removal's included: what a write of the path replaces
	// (see Upload).
	Seqs map[string]uint64
}

// Guard is what a world write expects.
type Guard struct {
	// Ledger is the stream sequence of the run's last ledger record.
	Ledger uint64
	// Head is the stream sequence of the run's world head (0: none).
	Head uint64
	// Writer names the writer (a random token of its handle), recorded in
	// the head it writes: a write whose answer was lost, tried again and
	// refused because its first attempt moved the head, is recognised as
	// the writer's own by the head it left.
	Writer string
}

// headBody is a head's body: what moved it, for people reading the
// stream, and for its writer to recognise its own write.
type headBody struct {
	Op     string `json:"op"`
	Path   string `json:"path,omitempty"`
	Ledger uint64 `json:"ledger"`
	// By is the writer (Guard.Writer), SHA256 the hex digest of the file
	// a put stored.
	By     string `json:"by,omitempty"`
	SHA256 string `json:"sha256,omitempty"`
}

// Read returns run's world: every file's last message in stream order,
// checked (its subject must be its path's), and the head. It is read
// from the stream's leader (one request per message), never from a
// replica that may lag it.
func (w *Worlds) Read(ctx context.Context, run string) (WorldState, error) {
	st := WorldState{Files: map[string][]byte{}, Seqs: map[string]uint64{}}
	head := w.names.WorldHeadSubject(run)
	err := readSubjectLeader(ctx, w.pol, w.nc, w.stream, w.names.WorldFilter(run), 1, func(seq uint64, m *nats.Msg) error {
		subj, op := m.Header.Get(hdrSubject), m.Header.Get(hdrWorld)
		if subj == head {
			if op != worldHd {
				return fmt.Errorf("%w: head at stream sequence %d: %s %q", ErrBadWorld, seq, hdrWorld, op)
			}
			st.Head = seq
			return nil
		}
		path, err := ParseToken(m.Header.Get(hdrPath))
		if err != nil || w.names.WorldSubject(run, path) != subj {
			return fmt.Errorf("%w: stream sequence %d on %s: %s %q is not its path", ErrBadWorld, seq, subj, hdrPath, m.Header.Get(hdrPath))
		}
		st.Seqs[path] = seq
		switch op {
		case worldPut:
			st.Files[path] = append([]byte{}, m.Data...)
		case worldDel:
			delete(st.Files, path)
		default:
			return fmt.Errorf("%w: stream sequence %d on %s: %s %q", ErrBadWorld, seq, subj, hdrWorld, op)
		}
		return nil
	})
	if err != nil {
		return WorldState{}, fmt.Errorf("read world of %s: %w", run, err)
	}
	return st, nil
}

// Write stores data as the file at path of run's world (or, with remove,
// the file's removal) and moves the head, in one atomic batch guarded by
// g: the run's ledger must end at g.Ledger and its head be g.Head. It
// returns the new head; ErrConflict (nothing stored) if either moved.
func (w *Worlds) Write(ctx context.Context, run, path string, data []byte, remove bool, g Guard) (uint64, error) {
	op := worldPut
	body := headBody{Op: op, Path: path, Ledger: g.Ledger, By: g.Writer}
	if remove {
		op, data = worldDel, nil
		body.Op = op
	} else {
		sum := sha256.Sum256(data)
		body.SHA256 = hex.EncodeToString(sum[:])
	}
	head, err := w.headMsg(run, g.Head, body)
	if err != nil {
		return 0, err
	}
	var seq uint64
	err = w.pol.do(ctx, "world.write", w.recognised(run, head, g, &seq, func(ctx context.Context) error {
		file := w.fileMsg(run, path, op, data, g.Ledger)
		ack, err := publishBatch(ctx, w.nc, []*nats.Msg{file, head})
		seq = ack.Seq
		return err
	}))
	if err != nil {
		return 0, fmt.Errorf("write %s of the world of %s: %w", path, run, err)
	}
	return seq, nil
}

// Take stores a new head for run's world, expecting its head to be
// g.Head (0: none, which seals a world just uploaded); g.Ledger is only
// recorded. It returns the new head; ErrConflict if the head moved.
func (w *Worlds) Take(ctx context.Context, run string, g Guard) (uint64, error) {
	op := worldTake
	if g.Head == 0 {
		op = worldSeal
	}
	m, err := w.headMsg(run, g.Head, headBody{Op: op, Ledger: g.Ledger, By: g.Writer})
	if err != nil {
		return 0, err
	}
	var seq uint64
	err = w.pol.do(ctx, "world.take", w.recognised(run, m, g, &seq, func(ctx context.Context) error {
		ack, err := publishOne(ctx, w.nc, m, nil)
		seq = ack.Seq
		return err
	}))
	if err != nil {
		return 0, fmt.Errorf("take the world of %s: %w", run, err)
	}
	return seq, nil
}

// recognised wraps the attempt of a write that moves the head: an attempt
// refused because the head moved, after an attempt whose answer was lost,
// is the first attempt's success when the head is the one this write left
// (same body, which names the writer). A head without a writer is never
// taken for one's own.
func (w *Worlds) recognised(run string, head *nats.Msg, g Guard, seq *uint64, attempt func(ctx context.Context) error) func(ctx context.Context) error {
	unknown := false
	return func(ctx context.Context) error {
		err := retryInFlight(ctx, func() error { return attempt(ctx) })
		switch {
		case errors.Is(err, ErrUnavailable):
			unknown = true
		case unknown && g.Writer != "" && errors.Is(err, ErrConflict):
			at, m, gerr := lastOnSubject(ctx, &policy{}, w.nc, w.stream, w.names.WorldHeadSubject(run))
			if gerr != nil {
				return gerr
			}
			if at > g.Head && bytes.Equal(m.Data, head.Data) {
				*seq = at
				return nil
			}
		}
		return err
	}
}

// Upload stores data as the file at path of run's world (or, with
// remove, the file's removal) without moving the head, provided the run's
// ledger ends at ledger (ErrConflict if not): an effect's file, or a file
// of a world that nobody can hold yet, sealed by a Take after the last
// file. It returns the write's message id.
//
// replaces names the message the write follows on the path's subject, as
// the writer knows it: the id an earlier Upload returned, or
// SeqIdentity of the sequence Read found (empty when the path has none).
// It is part of the message id with the subject, the ledger position and
// the bytes, so that a write sent again by its writer (its answer lost) is
// stored once (another writer's recovery of it, which names the message by
// its sequence, may store the same bytes again, which changes nothing),
// while the same bytes written again after another write of the path at
// the same ledger position (A, B, then A) are a write of their own and
// are stored, not dropped as a duplicate of the first.
func (w *Worlds) Upload(ctx context.Context, run, path string, data []byte, remove bool, ledger uint64, replaces string) (string, error) {
	op := worldPut
	if remove {
		op, data = worldDel, nil
	}
	m := w.fileMsg(run, path, op, data, ledger)
	id := msgID(m.Subject+" "+op+" "+replaces, ledger, 0, data)
	m.Header.Set(hdrMsgID, id)
	err := w.pol.do(ctx, "world.upload", func(ctx context.Context) error {
		err := retryInFlight(ctx, func() error {
			_, err := publishOne(ctx, w.nc, m, nil)
			return err
		})
		if apiCode(err) == codeBatchDuplicate {
			return nil
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("upload %s to the world of %s: %w", path, run, err)
	}
	return id, nil
}

// SeqIdentity is how Upload's replaces names a message known by its
// stream sequence (from Read) rather than by an id Upload returned.
func SeqIdentity(seq uint64) string {
	if seq == 0 {
		return ""
	}
	return "seq:" + strconv.FormatUint(seq, 10)
}

// Room is the largest file at path that a world message of run holds at
// any ledger position: the server's max_payload less the message's
// headers (with the longest ledger sequence) and the batch's.
func (w *Worlds) Room(run, path string) int {
	m := w.fileMsg(run, path, worldPut, nil, math.MaxUint64)
	return int(w.nc.MaxPayload()) - headerSize(m.Header) - batchHeaderRoom
}

// batchHeaderRoom is what publishBatch keeps for the batch headers it
// adds to a message.
const batchHeaderRoom = 256

// fileMsg is the message of a file write: rolled up on its subject,
// guarded by the run's ledger end.
func (w *Worlds) fileMsg(run, path, op string, data []byte, ledger uint64) *nats.Msg {
	m := &nats.Msg{Subject: w.names.WorldSubject(run, path), Data: data, Header: nats.Header{}}
	m.Header.Set(hdrWorld, op)
	m.Header.Set(hdrPath, Token(path))
	m.Header.Set(hdrRollup, "sub")
	m.Header.Set(hdrExpectSubj, strconv.FormatUint(ledger, 10))
	m.Header.Set(hdrExpectSubjSubj, w.names.LedgerSubject(run))
	return m
}

// headMsg is the message of a new head, rolled up, expecting head.
func (w *Worlds) headMsg(run string, head uint64, body headBody) (*nats.Msg, error) {
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	m := &nats.Msg{Subject: w.names.WorldHeadSubject(run), Data: b, Header: nats.Header{}}
	m.Header.Set(hdrWorld, worldHd)
	m.Header.Set(hdrRollup, "sub")
	m.Header.Set(hdrExpectSubj, strconv.FormatUint(head, 10))
	return m, nil
}
