package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Table is the idempotency table: one KV key per (run, idempotency key),
// written once. The KV key is Token(run) + "." + Token(key); acr's keys
// ("idem:sha256:<hex>") contain ':' which KV keys do not allow.
type Table struct {
	kv  natsjs.KeyValue
	pol *policy
}

func tableKey(run, key string) string { return Token(run) + "." + Token(key) }

// Create stores value under key unless the key has a value: the first
// writer wins, a later one gets ErrExists and stores nothing.
//
// A create whose answer was lost, tried again, finds the key taken: it is
// this create's when the key holds exactly value.
func (t *Table) Create(ctx context.Context, run, key string, value []byte) (uint64, error) {
	var rev uint64
	retried := false
	err := t.pol.do(ctx, "table.create", func(ctx context.Context) error {
		again := retried
		retried = true
		err := retryInFlight(ctx, func() (err error) { rev, err = t.kv.Create(ctx, tableKey(run, key), value); return err })
		if errors.Is(err, natsjs.ErrKeyExists) {
			if again {
				if e, gerr := t.kv.Get(ctx, tableKey(run, key)); gerr == nil && bytes.Equal(e.Value(), value) {
					rev = e.Revision()
					return nil
				}
			}
			return ErrExists
		}
		return classify(err)
	})
	if err != nil {
		return 0, fmt.Errorf("record %s: %w", key, err)
	}
	return rev, nil
}

// Get returns the value under key, or ErrNotFound. It is one direct get
// of the key's last message, whose cost does not grow with the table.
func (t *Table) Get(ctx context.Context, run, key string) ([]byte, error) {
	var v []byte
	err := t.pol.do(ctx, "table.get", func(ctx context.Context) error {
		e, err := t.kv.Get(ctx, tableKey(run, key))
		if err != nil {
			return classify(err)
		}
		v = e.Value()
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", key, err)
	}
	return v, nil
}

// Put stores value under key whatever is there: a cache write (an outcome
// record that can be derived again), not a claim.
func (t *Table) Put(ctx context.Context, run, key string, value []byte) error {
	err := t.pol.do(ctx, "table.put", func(ctx context.Context) error {
		return classify(retryInFlight(ctx, func() error { _, err := t.kv.Put(ctx, tableKey(run, key), value); return err }))
	})
	if err != nil {
		return fmt.Errorf("cache %s: %w", key, err)
	}
	return nil
}
