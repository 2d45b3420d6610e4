package jsstore

import (
	"context"
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/storage/storagetest"
)

// TestConformance runs the storage suite on the JetStream backend: one
// embedded server, a fresh run id per case, and a connection of its own
// for every process a case opens.
func TestConformance(t *testing.T) {
	srv := natstest.Start(t)
	var n atomic.Int64
	storagetest.Run(t, func(t *testing.T) storagetest.Backend {
		id := fmt.Sprintf("run:conformance:%d", n.Add(1))
		b, err := openJS(t, srv.ClientURL(), id)
		require.NoError(t, err)
		return b
	})
}

// testOptions are the store options of the tests: no grace after an
// inbox item's expiry, so that the suite sees it go.
var testOptions = Options{Prefix: "t", ExpiryGrace: -1}

// connect opens a connection as a store process does, closed with the
// test.
func connect(t testing.TB, url string, opts ...nats.Option) *nats.Conn {
	t.Helper()
	opts = append([]nats.Option{nats.ReconnectBufSize(-1), nats.ReconnectWait(20 * time.Millisecond)}, opts...)
	return natstest.Connect(t, url, opts...)
}

// openStore opens the test store on a new connection.
func openStore(t testing.TB, url string) (*nats.Conn, *Store) {
	t.Helper()
	nc := connect(t, url)
	s, err := Open(ctx(t), nc, testOptions)
	require.NoError(t, err)
	return nc, s
}

func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// openJS opens run id as one process: its own connection, store and
// handles.
func openJS(t testing.TB, url, id string) (storagetest.Backend, error) {
	nc, s := openStore(t, url)
	r, err := s.Run(ctx(t), id)
	require.NoError(t, err)
	led, err := r.OpenLedger()
	if err != nil {
		return storagetest.Backend{}, err
	}
	ib := r.Inbox()
	return storagetest.Backend{
		RunID:       id,
		Checkpoints: r.Checkpoints(),
		Ledger:      led,
		Inbox:       ib,
		Reopen:      func(t testing.TB) (storagetest.Backend, error) { return openJS(t, url, id) },
		Close:       nc.Close,
		Put:         ib.Put,
		PutRaw:      ib.putRaw,
		// The writer dies with its batch staged on the server and the
		// commit not sent: the goroutine ends at the failpoint and the
		// connection closes.
		CrashAppend: func(t testing.TB, events []event.Event) {
			done := make(chan struct{})
			go func() {
				defer close(done)
				led.Failpoint = func(string) { runtime.Goexit() }
				_, err := led.Append(events)
				t.Errorf("append went on past its failpoint: %v", err)
			}()
			<-done
			nc.Close()
		},
		Features: storagetest.Features{AtomicAppend: true, Fenced: true, Expiry: 3 * time.Second},
	}, nil
}

// BenchmarkJetStream measures the suite's operations on an embedded
// server with file storage (sync_interval default) and, as
// SyncAlways, with every write fsynced before its ack.
func BenchmarkJetStream(b *testing.B) {
	for _, mode := range []struct {
		name string
		opts []natstest.Option
	}{{"sync-default", nil}, {"sync-always", []natstest.Option{natstest.SyncAlways()}}} {
		b.Run(mode.name, func(b *testing.B) {
			srv := natstest.Start(b, mode.opts...)
			var n atomic.Int64
			storagetest.Benchmark(b, func(tb testing.TB) storagetest.Backend {
				be, err := openJS(tb, srv.ClientURL(), fmt.Sprintf("run:bench:%d", n.Add(1)))
				require.NoError(tb, err)
				return be
			})
		})
	}
}
