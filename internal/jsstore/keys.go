package jsstore

import (
	"errors"
	"fmt"

	"github.com/acr-project/acr/internal/jetstream"
)

// Keys is the idempotency table a sandbox needs from its store, one
// record per idempotency key of one run, proposed for package storage
// (as storage.Keys) so that the sandbox can keep its records in either
// backend:
//
//   - Get reads the record under a key; its cost does not grow with the
//     table (a file read, a KV direct get).
//   - Create stores a record if the key has none: the first writer wins,
//     a later one gets ErrExists and stores nothing. It is the durable
//     claim (an outcome, or a "started" mark for a command that must not
//     run twice).
//   - Put stores a record whatever is there: a cache write of what can be
//     derived again (the outcome of an effect whose intent is in the
//     ledger), where losing it costs only a re-check.
//
// The sandbox's own intent files (written before an effect, removed
// after) are not part of it: on the Prepare/Commit path the kernel uses,
// the intent is in the ledger.
type Keys interface {
	Get(key string) (record []byte, ok bool, err error)
	Create(key string, record []byte) error
	Put(key string, record []byte) error
}

// KVKeys is a run's idempotency table in the store's idempotency bucket
// (<prefix>-idem), one KV key per idempotency key: Token(run) "."
// Token(key). A record is at most the server's max_payload (1 MiB by
// default; ErrTooLarge).
type KVKeys struct{ run *Run }

var _ Keys = (*KVKeys)(nil)

// Keys returns the run's idempotency table.
func (r *Run) Keys() *KVKeys { return &KVKeys{run: r} }

// Get implements Keys: one direct get of the key's last revision.
func (k *KVKeys) Get(key string) ([]byte, bool, error) {
	b, err := k.run.s.blocks.Idempotency.Get(k.run.ctx, k.run.ID, key)
	if errors.Is(err, jetstream.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("idempotency record of %s: %w", k.run.ID, err)
	}
	return b, true, nil
}

// Create implements Keys: KV create, which expects the key to have no
// revision; ErrExists if it has one.
func (k *KVKeys) Create(key string, record []byte) error {
	if _, err := k.run.s.blocks.Idempotency.Create(k.run.ctx, k.run.ID, key, record); err != nil {
		return fmt.Errorf("idempotency record of %s: %w", k.run.ID, err)
	}
	return nil
}

// Put implements Keys: KV put.
func (k *KVKeys) Put(key string, record []byte) error {
	if err := k.run.s.blocks.Idempotency.Put(k.run.ctx, k.run.ID, key, record); err != nil {
		return fmt.Errorf("idempotency record of %s: %w", k.run.ID, err)
	}
	return nil
}
