package jetstream

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// syncModes are the two durability settings compared: the default (each
// write reaches the OS before the ack, fsync every 2 minutes) and
// `sync: always` (fsync before the ack; one per atomic batch).
var syncModes = []struct {
	name string
	opts []natstest.Option
}{
	{"sync=default", nil},
	{"sync=always", []natstest.Option{natstest.SyncAlways()}},
}

func benchOpen(b *testing.B, sopts ...natstest.Option) (*nats.Conn, *Store) {
	b.Helper()
	_, nc, st := open(b, Options{KVCheckpoints: true}, sopts...)
	return nc, st
}

// A cycle's append: 10 records of ~300 B in one atomic batch, one ack.
func BenchmarkAppend10x300B(b *testing.B) {
	for _, m := range syncModes {
		b.Run(m.name, func(b *testing.B) {
			_, st := benchOpen(b, m.opts...)
			c := context.Background()
			var at uint64
			for i := 0; b.Loop(); i++ {
				r, err := st.Ledger.Append(c, run, at, records(strconv.Itoa(i), 10, 300))
				if err != nil {
					b.Fatal(err)
				}
				at = r.Frontier.Ledger
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
		})
	}
}

// The same ten records as ten acknowledged publishes, for comparison.
func BenchmarkAppend10x300BOneAckEach(b *testing.B) {
	for _, m := range syncModes {
		b.Run(m.name, func(b *testing.B) {
			nc, _ := benchOpen(b, m.opts...)
			js, err := natsjs.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			c := context.Background()
			subj := testNames.LedgerSubject(run)
			var at uint64
			for i := 0; b.Loop(); i++ {
				for _, r := range records(strconv.Itoa(i), 10, 300) {
					ack, err := js.Publish(c, subj, r, natsjs.WithExpectLastSequencePerSubject(at))
					if err != nil {
						b.Fatal(err)
					}
					at = ack.Sequence
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "batches/s")
		})
	}
}

// The recommended cycle commit: 10 records and a 4 KiB checkpoint in one
// atomic batch.
func BenchmarkCommit10x300BWithCheckpoint4KB(b *testing.B) {
	ck := make([]byte, 4096)
	for _, m := range syncModes {
		b.Run(m.name, func(b *testing.B) {
			_, st := benchOpen(b, m.opts...)
			c := context.Background()
			var at Frontier
			for i := 0; b.Loop(); i++ {
				ck[0] = byte(i)
				r, err := st.Ledger.Commit(c, run, at, records(strconv.Itoa(i), 10, 300), ck)
				if err != nil {
					b.Fatal(err)
				}
				at = r.Frontier
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// The KV design's checkpoint commit: Update of a 4 KiB value on its revision.
func BenchmarkCheckpointKVUpdate4KB(b *testing.B) {
	doc := make([]byte, 4096)
	for _, m := range syncModes {
		b.Run(m.name, func(b *testing.B) {
			_, st := benchOpen(b, m.opts...)
			c := context.Background()
			rev, err := st.Checkpoints.Create(c, run, doc)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				doc[0] = byte(i)
				if rev, err = st.Checkpoints.Update(c, run, doc, rev); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// One idempotency record written (create-if-absent) and read back.
func BenchmarkIdempotencyCreateGet(b *testing.B) {
	for _, m := range syncModes {
		b.Run(m.name, func(b *testing.B) {
			_, st := benchOpen(b, m.opts...)
			c := context.Background()
			val := make([]byte, 512)
			for i := 0; b.Loop(); i++ {
				key := fmt.Sprintf("idem:sha256:%064x", i)
				if _, err := st.Idempotency.Create(c, run, key, val); err != nil {
					b.Fatal(err)
				}
				if _, err := st.Idempotency.Get(c, run, key); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Lookups in a table of 1e5 records: the cost of Get does not depend on
// the table's size (one direct get of the key's last message).
func BenchmarkIdempotencyGetAt1e5(b *testing.B) {
	const n = 100_000
	nc, st := benchOpen(b)
	js, err := natsjs.New(nc, natsjs.WithPublishAsyncMaxPending(4096))
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	val := make([]byte, 512)
	for i := range n {
		subj := "$KV." + testNames.IdempotencyBucket() + "." + tableKey(run, fmt.Sprintf("idem:sha256:%064x", i))
		for {
			_, err := js.PublishAsync(subj, val)
			if err == nil {
				break
			}
			if !errors.Is(err, natsjs.ErrTooManyStalledMsgs) {
				b.Fatal(err)
			}
			<-js.PublishAsyncComplete()
		}
	}
	select {
	case <-js.PublishAsyncComplete():
	case <-time.After(2 * time.Minute):
		b.Fatal("filling the table timed out")
	}
	b.Logf("filled %d records in %v", n, time.Since(start).Round(time.Millisecond))
	c := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	b.Run("get", func(b *testing.B) {
		for b.Loop() {
			if _, err := st.Idempotency.Get(c, run, fmt.Sprintf("idem:sha256:%064x", r.IntN(n))); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("get-missing", func(b *testing.B) {
		for i := 0; b.Loop(); i++ {
			if _, err := st.Idempotency.Get(c, run, fmt.Sprintf("idem:sha256:%064x", n+i)); err == nil {
				b.Fatal("found a missing key")
			}
		}
	})
}

// Reading a run's 1000 records, and its last 10 (what recovery reads
// after a checkpoint): batched direct get (what Read uses) against an
// ordered consumer, created for the read and deleted after it.
func BenchmarkReadLedger1000(b *testing.B) {
	nc, st := benchOpen(b)
	c := context.Background()
	var at uint64
	for i := range 100 {
		r, err := st.Ledger.Append(c, run, at, records(strconv.Itoa(i), 10, 300))
		if err != nil {
			b.Fatal(err)
		}
		at = r.Frontier.Ledger
		// Another run interleaved, as in a shared stream.
		if _, err := st.Ledger.Append(c, "other-"+strconv.Itoa(i), 0, records("o", 10, 300)); err != nil {
			b.Fatal(err)
		}
	}
	js, err := natsjs.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	s, err := js.Stream(c, testNames.RunsStream())
	if err != nil {
		b.Fatal(err)
	}
	for _, tail := range []int{1000, 10} {
		after := uint64(0)
		if tail == 10 {
			after = at - 10
		}
		b.Run("records="+strconv.Itoa(tail)+"/direct-get", func(b *testing.B) {
			for b.Loop() {
				n := 0
				if err := st.Ledger.Read(c, run, after, func(Record) error { n++; return nil }); err != nil || n != tail {
					b.Fatal(n, err)
				}
			}
		})
		b.Run("records="+strconv.Itoa(tail)+"/ordered-consumer", func(b *testing.B) {
			for b.Loop() {
				cons, err := s.OrderedConsumer(c, natsjs.OrderedConsumerConfig{
					FilterSubjects: []string{testNames.LedgerSubject(run)},
					DeliverPolicy:  natsjs.DeliverByStartSequencePolicy, OptStartSeq: after + 1,
				})
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for n < tail {
					batch, err := cons.Fetch(tail-n, natsjs.FetchMaxWait(time.Second))
					if err != nil {
						b.Fatal(err)
					}
					for range batch.Messages() {
						n++
					}
					if batch.Error() != nil {
						b.Fatal(batch.Error())
					}
				}
				// Ordered consumers outlive the read (5 min inactivity)
				// and a stream takes 1000 consumers by default.
				if err := s.DeleteConsumer(c, cons.CachedInfo().Name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// Aggregate commits/s with several writers, each on its own run and
// connection, against one server.
func BenchmarkCommitParallelRuns(b *testing.B) {
	for _, workers := range []int{1, 4} {
		b.Run("writers="+strconv.Itoa(workers), func(b *testing.B) {
			s, _, _ := open(b, Options{})
			ledgers := make([]*Ledger, workers)
			for i := range ledgers {
				ledgers[i] = openOn(b, natstest.Connect(b, s.ClientURL()), Options{}).Ledger
			}
			ck := make([]byte, 4096)
			var mu sync.Mutex
			next := 0
			b.SetParallelism((workers + 1) / 2) // GOMAXPROCS is 2 here
			b.RunParallel(func(pb *testing.PB) {
				mu.Lock()
				w := next % workers
				next++
				mu.Unlock()
				l, r := ledgers[w], "run-"+strconv.Itoa(w)+"-"+strconv.Itoa(next)
				var at Frontier
				for i := 0; pb.Next(); i++ {
					c, err := l.Commit(context.Background(), r, at, records(strconv.Itoa(i), 10, 300), ck)
					if err != nil {
						b.Error(err)
						return
					}
					at = c.Frontier
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// The alternative the batch cost invites: a cycle's ten records framed into
// one message (atomic by being one message) appended on the expected
// subject sequence, then the checkpoint as a KV update: two acks, no
// staging, but the ledger can be ahead of the checkpoint after a crash.
func BenchmarkOneMessageThenKV(b *testing.B) {
	ck := make([]byte, 4096)
	for _, m := range syncModes {
		b.Run(m.name, func(b *testing.B) {
			nc, st := benchOpen(b, m.opts...)
			js, err := natsjs.New(nc)
			if err != nil {
				b.Fatal(err)
			}
			c := context.Background()
			subj := testNames.LedgerSubject(run)
			var at uint64
			rev, err := st.Checkpoints.Create(c, run, ck)
			if err != nil {
				b.Fatal(err)
			}
			for i := 0; b.Loop(); i++ {
				var frame []byte
				for _, r := range records(strconv.Itoa(i), 10, 300) {
					frame = append(append(frame, r...), '\n')
				}
				ack, err := js.Publish(c, subj, frame, natsjs.WithExpectLastSequencePerSubject(at))
				if err != nil {
					b.Fatal(err)
				}
				at = ack.Sequence
				if rev, err = st.Checkpoints.Update(c, run, ck, rev); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}

// The recommended commit on a three-node cluster, R3.
func BenchmarkClusterCommit10x300BWithCheckpoint4KB(b *testing.B) {
	for _, m := range syncModes {
		b.Run(m.name, func(b *testing.B) {
			c := natstest.StartCluster(b, 3, m.opts...)
			nc := natstest.Connect(b, c.URLs())
			st := openOn(b, nc, Options{Replicas: 3})
			ck := make([]byte, 4096)
			var at Frontier
			for i := 0; b.Loop(); i++ {
				r, err := st.Ledger.Commit(context.Background(), run, at, records(strconv.Itoa(i), 10, 300), ck)
				if err != nil {
					b.Fatal(err)
				}
				at = r.Frontier
			}
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "commits/s")
		})
	}
}
