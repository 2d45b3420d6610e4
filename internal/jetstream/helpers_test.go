package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// testNames is the store prefix every test uses.
var testNames = Names{Prefix: "t"}

// open starts a server, connects and opens a store on it.
func open(t testing.TB, opts Options, sopts ...natstest.Option) (*natstest.Server, *nats.Conn, *Store) {
	t.Helper()
	s := natstest.Start(t, sopts...)
	nc := natstest.Connect(t, s.ClientURL())
	st := openOn(t, nc, opts)
	return s, nc, st
}

// openOn opens the store on an existing connection.
func openOn(t testing.TB, nc *nats.Conn, opts Options) *Store {
	t.Helper()
	st, err := Open(ctx(t), nc, testNames, opts)
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	return st
}

// ctx is a context that ends with the test, with a deadline well inside
// the test timeout.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return c
}

// records returns n records of size bytes, tagged so that two calls with
// other tags differ.
func records(tag string, n, size int) [][]byte {
	out := make([][]byte, n)
	for i := range out {
		r := fmt.Appendf(nil, `{"tag":%q,"i":%d,"pad":"`, tag, i)
		for len(r) < size-2 {
			r = append(r, 'x')
		}
		out[i] = append(r, '"', '}')
	}
	return out
}

// readAll returns run's records after seq after.
func readAll(t testing.TB, l *Ledger, run string, after uint64) []Record {
	t.Helper()
	var got []Record
	if err := l.Read(ctx(t), run, after, func(r Record) error { got = append(got, r); return nil }); err != nil {
		t.Fatalf("read %s: %v", run, err)
	}
	return got
}

// sameData fails unless got holds exactly want, in order.
func sameData(t testing.TB, got []Record, want [][]byte) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d records, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Data, want[i]) {
			t.Fatalf("record %d: got %.40q, want %.40q", i, got[i].Data, want[i])
		}
		if i > 0 && got[i].Seq <= got[i-1].Seq {
			t.Fatalf("record %d: seq %d after %d", i, got[i].Seq, got[i-1].Seq)
		}
	}
}

// must fails the test on err.
func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// wantErr fails unless err is target.
func wantErr(t testing.TB, err, target error) {
	t.Helper()
	if !errors.Is(err, target) {
		t.Fatalf("got error %v, want %v", err, target)
	}
}

// upload is Worlds.Upload of a write that replaces nothing named: each
// call of a test writes other bytes, or means to be a retry.
func upload(w *Worlds, run, path string, data []byte, remove bool, at uint64) error {
	c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := w.Upload(c, run, path, data, remove, at, "")
	return err
}
