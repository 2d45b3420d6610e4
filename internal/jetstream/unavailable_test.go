package jetstream

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// short gives an operation against a server that may be away one second.
func short(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), time.Second)
	t.Cleanup(cancel)
	return c
}

// waitConnected waits for nc to reconnect after a restart.
func waitConnected(t *testing.T, nc *nats.Conn) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !nc.IsConnected() {
		if time.Now().After(deadline) {
			t.Fatalf("no reconnect: %v", nc.Status())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Every operation against a server that is down fails with ErrUnavailable
// (the caller's exit 74), whatever the client was doing: connecting,
// reconnecting (no buffer), or closed after giving up.
func TestUnavailableServerErrors(t *testing.T) {
	s := natstest.Start(t)
	url := s.ClientURL()
	for _, mode := range []struct {
		name string
		opts []nats.Option
		want error
	}{
		{"reconnecting", []nats.Option{nats.ReconnectWait(20 * time.Millisecond)}, nats.ErrReconnectBufExceeded},
		{"closed", []nats.Option{nats.NoReconnect()}, nats.ErrConnectionClosed},
	} {
		nc, err := Connect(url, mode.opts...)
		must(t, err)
		st := openOn(t, nc, Options{KVCheckpoints: true})
		s.Shutdown()
		// Until the client has seen the connection drop, a request is
		// written to a dead socket and ends with its deadline instead.
		for deadline := time.Now().Add(5 * time.Second); nc.IsConnected(); time.Sleep(5 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatal("the client did not notice the server stop")
			}
		}
		ops := map[string]func() error{
			"append": func() error { _, err := st.Ledger.Append(short(t), run, 0, records("x", 2, 10)); return err },
			"commit": func() error { _, err := st.Ledger.Commit(short(t), run, Frontier{}, nil, []byte("ck")); return err },
			"read":   func() error { return st.Ledger.Read(short(t), run, 0, func(Record) error { return nil }) },
			"last":   func() error { _, err := st.Ledger.Last(short(t), run); return err },
			"kv":     func() error { _, err := st.Checkpoints.Update(short(t), run, []byte("x"), 1); return err },
			"idem":   func() error { _, err := st.Idempotency.Create(short(t), run, "k", nil); return err },
			"get":    func() error { _, err := st.Idempotency.Get(short(t), run, "k"); return err },
			"inbox":  func() error { _, _, err := st.Inbox.Put(short(t), run, "k", nil, 0); return err },
			"lease":  func() error { _, err := st.Leases.Acquire(short(t), run, []byte("w")); return err },
			"open":   func() error { _, err := Open(short(t), nc, testNames, Options{}); return err },
		}
		for op, f := range ops {
			err := f()
			if !errors.Is(err, ErrUnavailable) || !errors.Is(err, mode.want) {
				t.Errorf("%s, %s: %v, want ErrUnavailable and %v", mode.name, op, err, mode.want)
			}
		}
		nc.Close()
		s.Restart()
	}
	s.Shutdown()
	_, err := Connect(url)
	if !errors.Is(err, ErrUnavailable) || !errors.Is(err, nats.ErrNoServers) {
		t.Fatalf("connect to a stopped server: %v", err)
	}
}

// A server that stops between a batch's staging and its commit (killed
// mid-append) shows nothing of the batch when it returns: its staged
// messages are dropped on restart, the late commit is refused, the records
// committed before are intact, and the writer's retry at the same frontier
// succeeds.
func TestServerRestartMidBatchLeavesNothingHalfWritten(t *testing.T) {
	s := natstest.Start(t)
	nc, err := Connect(s.ClientURL(), nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1))
	must(t, err)
	t.Cleanup(nc.Close)
	st := openOn(t, nc, Options{})
	before := records("before", 5, 300)
	c, err := st.Ledger.Commit(ctx(t), run, Frontier{}, before, []byte("ck before"))
	must(t, err)

	recs := records("cycle", 10, 300)
	msgs, _ := st.Ledger.batch(run, c.Frontier, Batch{Records: recs, Checkpoint: []byte("ck cycle")})
	for i, m := range msgs[:len(msgs)-1] {
		m.Header.Set(hdrBatchID, "interrupted")
		m.Header.Set(hdrBatchSeq, strconv.Itoa(i+1))
		must(t, nc.PublishMsg(m))
	}
	must(t, nc.Flush())

	s.Restart()
	waitConnected(t, nc)

	commit := msgs[len(msgs)-1]
	commit.Header.Set(hdrBatchID, "interrupted")
	commit.Header.Set(hdrBatchSeq, strconv.Itoa(len(msgs)))
	commit.Header.Set(hdrBatchCommit, "1")
	resp, err := nc.RequestMsg(commit, 5*time.Second)
	must(t, err)
	if !containsCode(resp.Data, codeBatchIncomplete) {
		t.Fatalf("late commit after restart: %s", resp.Data)
	}
	sameData(t, readAll(t, st.Ledger, run, 0), before)
	ck, f, err := st.Ledger.Checkpoint(ctx(t), run)
	must(t, err)
	if string(ck) != "ck before" || f != c.Frontier {
		t.Fatalf("checkpoint after restart: %q at %+v", ck, f)
	}

	_, err = st.Ledger.Commit(ctx(t), run, c.Frontier, recs, []byte("ck cycle"))
	must(t, err)
	sameData(t, readAll(t, st.Ledger, run, 0), append(before, recs...))
}

// With the client's default reconnect buffer, a commit that timed out
// while the client was reconnecting is still sent when the server
// returns, and lands: an ErrUnavailable commit has an unknown outcome
// (which is why Connect turns the buffer off). Retrying it unchanged
// settles it as a Duplicate; it is never half there.
func TestTimedOutCommitMayLandLater(t *testing.T) {
	s := natstest.Start(t)
	nc := natstest.Connect(t, s.ClientURL(), nats.ReconnectWait(20*time.Millisecond), nats.MaxReconnects(-1))
	st := openOn(t, nc, Options{})
	s.Shutdown()
	for nc.Status() != nats.RECONNECTING {
		time.Sleep(10 * time.Millisecond)
	}
	recs := records("buffered", 10, 300)
	_, err := st.Ledger.Commit(short(t), run, Frontier{}, recs, []byte("ck"))
	wantErr(t, err, ErrUnavailable)

	s.Restart()
	waitConnected(t, nc)
	must(t, nc.Flush())
	var got []Record
	for deadline := time.Now().Add(5 * time.Second); len(got) == 0 && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		got = readAll(t, st.Ledger, run, 0)
	}
	sameData(t, got, recs)
	c, err := st.Ledger.Commit(ctx(t), run, Frontier{}, recs, []byte("ck"))
	must(t, err)
	if !c.Duplicate {
		t.Fatalf("retry of a commit that landed: %+v", c)
	}
	sameData(t, readAll(t, st.Ledger, run, 0), recs)
}
