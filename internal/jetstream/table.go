package jetstream

import (
	"context"
	"errors"
	"fmt"

	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Table is the idempotency table: one KV key per (run, idempotency key),
// written once. The KV key is Token(run) + "." + Token(key); acr's keys
// ("idem:sha256:<hex>") contain ':' which KV keys do not allow.
type Table struct {
	kv natsjs.KeyValue
}

func tableKey(run, key string) string { return Token(run) + "." + Token(key) }

// Create stores value under key unless the key has a value: the first
// writer wins, a later one gets ErrExists and stores nothing.
func (t *Table) Create(ctx context.Context, run, key string, value []byte) (uint64, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	var rev uint64
	err := retryInFlight(ctx, func() (err error) { rev, err = t.kv.Create(ctx, tableKey(run, key), value); return err })
	if errors.Is(err, natsjs.ErrKeyExists) {
		return 0, fmt.Errorf("record %s: %w", key, ErrExists)
	}
	if err != nil {
		return 0, fmt.Errorf("record %s: %w", key, classify(err))
	}
	return rev, nil
}

// Get returns the value under key, or ErrNotFound. It is one direct get
// of the key's last message, whose cost does not grow with the table.
func (t *Table) Get(ctx context.Context, run, key string) ([]byte, error) {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	e, err := t.kv.Get(ctx, tableKey(run, key))
	if err != nil {
		return nil, fmt.Errorf("lookup %s: %w", key, classify(err))
	}
	return e.Value(), nil
}

// Put stores value under key whatever is there: a cache write (an outcome
// record that can be derived again), not a claim.
func (t *Table) Put(ctx context.Context, run, key string, value []byte) error {
	ctx, cancel := withTimeout(ctx)
	defer cancel()
	err := retryInFlight(ctx, func() error { _, err := t.kv.Put(ctx, tableKey(run, key), value); return err })
	if err != nil {
		return fmt.Errorf("cache %s: %w", key, classify(err))
	}
	return nil
}
