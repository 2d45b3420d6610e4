package jetstream

import (
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

const run = "run:persistent:0123456789abcdef"

// Appends land in order, each batch on consecutive sequences, and a read
// from any sequence returns the records after it.
func TestAppendThenReadInOrder(t *testing.T) {
	_, _, st := open(t, Options{})
	l := st.Ledger
	var all [][]byte
	var after uint64
	var frontiers []uint64
	for b := range 3 {
		recs := records("b"+strconv.Itoa(b), 10, 300)
		c, err := l.Append(ctx(t), run, after, recs)
		must(t, err)
		if c.Duplicate || c.Frontier.Ledger != c.First+9 {
			t.Fatalf("batch %d: %+v", b, c)
		}
		after = c.Frontier.Ledger
		frontiers = append(frontiers, after)
		all = append(all, recs...)
	}
	// Another run's records interleave in the stream but not in the read.
	_, err := l.Append(ctx(t), "other", 0, records("o", 2, 50))
	must(t, err)
	got := readAll(t, l, run, 0)
	sameData(t, got, all)
	for i, r := range got {
		if r.ID == "" || r.Batch != got[i/10*10].Batch {
			t.Fatalf("record %d: id %q batch %q", i, r.ID, r.Batch)
		}
	}
	sameData(t, readAll(t, l, run, frontiers[0]), all[10:])
	sameData(t, readAll(t, l, run, frontiers[2]), nil)
	last, err := l.Last(ctx(t), run)
	must(t, err)
	if last.Seq != frontiers[2] {
		t.Fatalf("last seq %d, want %d", last.Seq, frontiers[2])
	}
	_, err = l.Last(ctx(t), "nobody")
	wantErr(t, err, ErrNotFound)
}

// Two writers race on the same run from the same frontier, each on its own
// connection: exactly one batch lands, the other gets ErrConflict and
// stores nothing.
func TestRacingWritersOneBatchLands(t *testing.T) {
	s, _, st := open(t, Options{})
	first, err := st.Ledger.Append(ctx(t), run, 0, records("genesis", 1, 100))
	must(t, err)
	const writers = 4
	ledgers := make([]*Ledger, writers)
	for i := range ledgers {
		ledgers[i] = openOn(t, natstest.Connect(t, s.ClientURL()), Options{}).Ledger
	}
	for round := range 5 {
		at := first.Frontier.Ledger
		var wg sync.WaitGroup
		errs := make([]error, writers)
		wins := make([]Committed, writers)
		start := make(chan struct{})
		for i, l := range ledgers {
			wg.Go(func() {
				<-start
				wins[i], errs[i] = l.Append(ctx(t), run, at, records("w"+strconv.Itoa(i)+"r"+strconv.Itoa(round), 10, 300))
			})
		}
		close(start)
		wg.Wait()
		winner := -1
		for i, err := range errs {
			switch {
			case err == nil && winner < 0:
				winner = i
			case err == nil:
				t.Fatalf("round %d: writers %d and %d both landed", round, winner, i)
			case !errors.Is(err, ErrConflict):
				t.Fatalf("round %d: writer %d: %v, want ErrConflict", round, i, err)
			}
		}
		if winner < 0 {
			t.Fatalf("round %d: no writer landed: %v", round, errs)
		}
		sameData(t, readAll(t, st.Ledger, run, at), records("w"+strconv.Itoa(winner)+"r"+strconv.Itoa(round), 10, 300))
		first = wins[winner]
	}
}

// stage publishes the first n messages of an atomic batch on subject and
// never the commit.
func stage(t *testing.T, nc *nats.Conn, subject string, n int) {
	t.Helper()
	for i := range n {
		m := nats.NewMsg(subject)
		m.Data = []byte("staged " + strconv.Itoa(i))
		m.Header.Set(hdrBatchID, "abandoned")
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		must(t, nc.PublishMsg(m))
	}
	must(t, nc.Flush())
}

// A batch is all or nothing: staged messages without their commit are
// invisible, whether the writer simply stops or its connection dies mid
// batch, and they do not block the next writer.
func TestBatchWithoutCommitStoresNothing(t *testing.T) {
	s, nc, st := open(t, Options{})
	subj := testNames.LedgerSubject(run)

	stage(t, nc, subj, 5)
	sameData(t, readAll(t, st.Ledger, run, 0), nil)

	dying := natstest.Connect(t, s.ClientURL())
	stage(t, dying, subj, 7)
	dying.Close()
	sameData(t, readAll(t, st.Ledger, run, 0), nil)

	recs := records("after", 3, 100)
	_, err := st.Ledger.Append(ctx(t), run, 0, recs)
	must(t, err)
	sameData(t, readAll(t, st.Ledger, run, 0), recs)

	// A commit whose staging was lost (here: sequence 2 never sent) is
	// refused whole.
	for _, seq := range []string{"1", "3"} {
		m := nats.NewMsg(subj)
		m.Header.Set(hdrBatchID, "gappy")
		m.Header.Set(hdrBatchSeq, seq)
		if seq == "3" {
			m.Header.Set(hdrBatchCommit, "1")
			resp, err := nc.RequestMsg(m, 5*time.Second)
			must(t, err)
			if !containsCode(resp.Data, codeBatchIncomplete) {
				t.Fatalf("commit after a gap: %s", resp.Data)
			}
			continue
		}
		must(t, nc.PublishMsg(m))
	}
	sameData(t, readAll(t, st.Ledger, run, 0), recs)
}

func containsCode(ack []byte, code int) bool {
	return strings.Contains(string(ack), `"err_code":`+strconv.Itoa(code))
}

// A retried batch (the ack was lost) is stored once: within the dedup
// window the server refuses the copy by its message ids, after it the
// expected sequence refuses it; either way Append reports Duplicate with
// the original frontier. A different batch at the same frontier is a
// conflict, not a duplicate.
func TestRetriedBatchIsDeduplicated(t *testing.T) {
	_, nc, st := open(t, Options{LedgerDedup: time.Second})
	l := st.Ledger
	recs := records("once", 10, 300)
	c1, err := l.Append(ctx(t), run, 0, recs)
	must(t, err)

	// What the server itself answers to the copy.
	msgs, _ := l.batch(run, Frontier{}, Batch{Records: recs})
	_, err = publishBatch(ctx(t), nc, msgs)
	if apiCode(err) != codeBatchDuplicate {
		t.Fatalf("raw retry: %v, want err_code %d", err, codeBatchDuplicate)
	}

	c2, err := l.Append(ctx(t), run, 0, recs)
	must(t, err)
	if !c2.Duplicate || c2.Frontier != c1.Frontier || c2.First != c1.First {
		t.Fatalf("retry: %+v, first: %+v", c2, c1)
	}
	sameData(t, readAll(t, l, run, 0), recs)

	time.Sleep(1500 * time.Millisecond) // past the dedup window
	msgs, _ = l.batch(run, Frontier{}, Batch{Records: recs})
	_, err = publishBatch(ctx(t), nc, msgs)
	wantErr(t, err, ErrConflict)
	c3, err := l.Append(ctx(t), run, 0, recs)
	must(t, err)
	if !c3.Duplicate || c3.Frontier != c1.Frontier {
		t.Fatalf("late retry: %+v", c3)
	}

	_, err = l.Append(ctx(t), run, 0, records("other", 10, 300))
	wantErr(t, err, ErrConflict)
	sameData(t, readAll(t, l, run, 0), recs)
}

// Run ids are encoded into one subject token; the encoding round-trips and
// never produces a character subjects or KV keys reject.
func TestToken(t *testing.T) {
	for _, s := range []string{"run:persistent:0123abcd", "a.b*c>d e", "=3A", "plain-run_1", "é"} {
		tok := Token(s)
		for i := 0; i < len(tok); i++ {
			if !plain(tok[i]) && tok[i] != '=' {
				t.Fatalf("Token(%q) = %q has %q", s, tok, tok[i])
			}
		}
		back, err := ParseToken(tok)
		if err != nil || back != s {
			t.Fatalf("ParseToken(Token(%q)) = %q, %v", s, back, err)
		}
	}
	for _, bad := range []string{"a.b", "=4", "=41", "=zz"} {
		if _, err := ParseToken(bad); err == nil {
			t.Fatalf("ParseToken(%q) accepted", bad)
		}
	}
}

// A read longer than one direct get batch (1000 messages) continues where
// the previous answer stopped, in order, without gaps or repeats; a batch
// above MaxBatch is refused before anything is sent.
func TestReadPagesThroughLongLedger(t *testing.T) {
	_, _, st := open(t, Options{})
	var all [][]byte
	var at uint64
	for b := range 3 {
		recs := records("page"+strconv.Itoa(b), MaxBatch, 60)
		c, err := st.Ledger.Append(ctx(t), run, at, recs)
		must(t, err)
		at = c.Frontier.Ledger
		all = append(all, recs...)
	}
	got := readAll(t, st.Ledger, run, 0)
	sameData(t, got, all)
	sameData(t, readAll(t, st.Ledger, run, got[1499].Seq), all[1500:])

	_, err := st.Ledger.Append(ctx(t), run, at, records("big", MaxBatch+1, 10))
	wantErr(t, err, ErrTooLarge)
}

// A one-record append is a plain publish: a retry is recognised as the
// batch's would be (within the dedup window by its message id, after it
// by reading what follows the frontier), another record at the same
// frontier is a conflict.
func TestSingleRecordAppend(t *testing.T) {
	_, _, st := open(t, Options{LedgerDedup: time.Second})
	l := st.Ledger
	rec := records("one", 1, 100)
	c1, err := l.Append(ctx(t), run, 0, rec)
	must(t, err)
	if c1.First != c1.Frontier.Ledger || c1.Duplicate {
		t.Fatalf("append: %+v", c1)
	}
	c2, err := l.Append(ctx(t), run, 0, rec)
	must(t, err)
	if !c2.Duplicate || c2.Frontier != c1.Frontier || c2.First != c1.First {
		t.Fatalf("retry: %+v, first: %+v", c2, c1)
	}
	_, err = l.Append(ctx(t), run, 0, records("other", 1, 100))
	wantErr(t, err, ErrConflict)
	time.Sleep(1500 * time.Millisecond) // past the dedup window
	c3, err := l.Append(ctx(t), run, 0, rec)
	must(t, err)
	if !c3.Duplicate || c3.Frontier != c1.Frontier {
		t.Fatalf("late retry: %+v", c3)
	}
	c4, err := l.Append(ctx(t), run, c1.Frontier.Ledger, records("two", 1, 100))
	must(t, err)
	sameData(t, readAll(t, l, run, 0), append(rec, records("two", 1, 100)...))
	if c4.Frontier.Ledger != c4.First {
		t.Fatalf("second append: %+v", c4)
	}
}

// A one-message append with headers of the caller's (what acr's ledger
// writes since it packs an append into one message) is a plain publish:
// its retry after a lost answer, within the dedup window and after it, is
// refused by the server and then recognised by the stored message's id
// and bytes as the same write (Duplicate, the first frontier), stored
// once with its headers as they were; another writer's message at the
// same frontier is a conflict.
func TestRetriedSingleMessageIsDeduplicated(t *testing.T) {
	_, nc, st := open(t, Options{LedgerDedup: time.Second})
	l := st.Ledger
	b := Batch{Records: records("one", 1, 300), RecordHeaders: []nats.Header{{"Acr-Lines": {"3"}}}}
	c1, err := l.CommitBatch(ctx(t), run, Frontier{}, b)
	must(t, err)

	msgs, _ := l.batch(run, Frontier{}, b)
	// The server refuses the copy: by its expected sequence, which it
	// checks before the message id on a plain publish.
	if _, err := publishOne(ctx(t), nc, msgs[0], nil); apiCode(err) != codeBatchDuplicate && !errors.Is(err, ErrConflict) {
		t.Fatalf("raw retry: %v, want a duplicate or a conflict", err)
	}
	c2, err := l.CommitBatch(ctx(t), run, Frontier{}, b)
	must(t, err)
	if !c2.Duplicate || c2.Frontier != c1.Frontier || c2.First != c1.First {
		t.Fatalf("retry: %+v, first: %+v", c2, c1)
	}

	time.Sleep(1500 * time.Millisecond) // past the dedup window
	c3, err := l.CommitBatch(ctx(t), run, Frontier{}, b)
	must(t, err)
	if !c3.Duplicate || c3.Frontier != c1.Frontier {
		t.Fatalf("late retry: %+v", c3)
	}
	_, err = l.CommitBatch(ctx(t), run, Frontier{}, Batch{Records: records("other", 1, 300), RecordHeaders: b.RecordHeaders})
	wantErr(t, err, ErrConflict)

	got := readAll(t, l, run, 0)
	sameData(t, got, b.Records)
	if got[0].Header.Get("Acr-Lines") != "3" {
		t.Fatalf("stored headers %v", got[0].Header)
	}
}
