package jetstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	natsjs "github.com/nats-io/nats.go/jetstream"
)

// Options are a store's settings; the zero value means the defaults.
type Options struct {
	// Replicas of every stream and bucket: 1 on a single server, 3 on a
	// three-node cluster. Open sets it on a stream or bucket that has
	// another count (the server scales it). 0 leaves an existing stream's
	// or bucket's count as it is and creates a new one with 1, so that a
	// process that does not say (a status on a laptop) never scales a
	// cluster's store down.
	Replicas int
	// LedgerDedup is the runs stream's dedup window (default 2 min). The
	// expected sequence, not the window, is what stops a stale write; the
	// window only makes a retry's answer cheap.
	LedgerDedup time.Duration
	// InboxDedup is the inbox's dedup window (default 24 h): a second item
	// with the same dedup key within it is not stored.
	InboxDedup time.Duration
	// LeaseTTL is how long a lease lasts unless renewed (default 30 s).
	LeaseTTL time.Duration
	// MemoryStorage keeps everything in memory (tests and benchmarks
	// only: a server restart loses it).
	MemoryStorage bool
	// KVCheckpoints creates the checkpoint bucket of the KV design
	// (Store.Checkpoints), which the recommended design does not use;
	// kept for the tests and benchmarks that compare the two. Without it
	// Store.Checkpoints is nil.
	KVCheckpoints bool
	// Patience is how long one call keeps trying while the server, or a
	// stream's leader, does not answer: a paused or restarting server, a
	// lost connection, a leader election. 0 tries once. A call that runs
	// out of patience fails with ErrUnavailable; every call is safe to
	// repeat (see policy).
	Patience time.Duration
	// Timeout is how long one attempt of a request waits for the
	// server's answer before it counts as unanswered (default 5 s).
	Timeout time.Duration
	// Observe, when set, hears every request the store makes (for
	// metrics). It runs on the caller's goroutine: keep it cheap.
	Observe func(Call)

	// keepReplicas is set by withDefaults when Replicas was not given.
	keepReplicas bool
}

func (o Options) withDefaults() Options {
	o.keepReplicas = o.Replicas == 0
	if o.Replicas == 0 {
		o.Replicas = 1
	}
	if o.LedgerDedup == 0 {
		o.LedgerDedup = 2 * time.Minute
	}
	if o.InboxDedup == 0 {
		o.InboxDedup = 24 * time.Hour
	}
	if o.LeaseTTL == 0 {
		o.LeaseTTL = 30 * time.Second
	}
	return o
}

func (o Options) storage() natsjs.StorageType {
	if o.MemoryStorage {
		return natsjs.MemoryStorage
	}
	return natsjs.FileStorage
}

// Store is one acr store on a NATS account: the streams and buckets that
// Names derives from one prefix.
type Store struct {
	Names       Names
	Ledger      *Ledger
	Checkpoints *Checkpoints
	Idempotency *Table
	Inbox       *Inbox
	Leases      *Leases
	// Worlds are the runs' worlds, in the runs stream beside their
	// ledgers (a world write is guarded by its run's ledger end).
	Worlds *Worlds
}

// Open creates the store's streams and buckets, or updates them to this
// configuration, and returns the store. It is idempotent; every acr
// process calls it on start.
func Open(ctx context.Context, nc *nats.Conn, names Names, opts Options) (*Store, error) {
	if err := names.Validate(); err != nil {
		return nil, err
	}
	o := opts.withDefaults()
	js, err := natsjs.New(nc)
	if err != nil {
		return nil, err
	}
	pol := &policy{patience: o.Patience, timeout: o.Timeout, observe: o.Observe}
	stream := func(cfg natsjs.StreamConfig) error {
		err := pol.do(ctx, "open", func(ctx context.Context) error {
			return classify(ensureStream(ctx, js, cfg, o.keepReplicas))
		})
		if err != nil {
			return fmt.Errorf("open %s: %w", cfg.Name, o.classifyOpen(err))
		}
		return nil
	}
	bucket := func(cfg natsjs.KeyValueConfig) (kv natsjs.KeyValue, err error) {
		err = pol.do(ctx, "open", func(ctx context.Context) (err error) {
			kv, err = ensureKeyValue(ctx, js, cfg, o.keepReplicas)
			return classify(err)
		})
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", cfg.Bucket, o.classifyOpen(err))
		}
		return kv, nil
	}
	if err := stream(runsStreamConfig(names, o)); err != nil {
		return nil, err
	}
	if err := stream(inboxStreamConfig(names, o)); err != nil {
		return nil, err
	}
	var ckpt *Checkpoints
	if o.KVCheckpoints {
		kv, err := bucket(natsjs.KeyValueConfig{Bucket: names.CheckpointBucket(), History: 1, Storage: o.storage(), Replicas: o.Replicas})
		if err != nil {
			return nil, err
		}
		ckpt = &Checkpoints{kv: kv, pol: pol}
	}
	idem, err := bucket(natsjs.KeyValueConfig{Bucket: names.IdempotencyBucket(), History: 1, Storage: o.storage(), Replicas: o.Replicas})
	if err != nil {
		return nil, err
	}
	lease, err := bucket(natsjs.KeyValueConfig{Bucket: names.LeaseBucket(), History: 1, TTL: o.LeaseTTL, Storage: o.storage(), Replicas: o.Replicas})
	if err != nil {
		return nil, err
	}
	return &Store{
		Names:       names,
		Ledger:      &Ledger{nc: nc, pol: pol, names: names, stream: names.RunsStream()},
		Checkpoints: ckpt,
		Idempotency: &Table{kv: idem, pol: pol},
		Inbox:       &Inbox{nc: nc, pol: pol, js: js, names: names, stream: names.InboxStream()},
		Leases:      &Leases{nc: nc, pol: pol, kv: lease, ttl: o.LeaseTTL, bucket: names.LeaseBucket()},
		Worlds:      &Worlds{nc: nc, pol: pol, names: names, stream: names.RunsStream()},
	}, nil
}

// classifyOpen is classify for creating or updating a stream or bucket:
// a placement the servers refuse for a replica count given is
// ErrReplicas.
func (o Options) classifyOpen(err error) error {
	if c := apiCode(err); !o.keepReplicas && o.Replicas > 1 && (c == codeReplicasNotClustered || c == codeNoPeers) {
		return fmt.Errorf("%w (%d asked for: a single server holds 1, a cluster at most as many as its servers): %w", ErrReplicas, o.Replicas, err)
	}
	return classify(err)
}

// ensureStream creates the stream, which the server accepts without a
// change when it exists with this configuration, and updates it only when
// the configuration differs. CreateOrUpdateStream would send an update
// every time: on a cluster each is a proposal through the meta leader, and
// every acr process opens the store when it starts, so under load those
// updates queue behind each other (a reopen once timed out after 30 s in CI).
//
// With keep (no replica count given), a stream that exists keeps its
// replica count: the configuration compared and sent is the stream's own
// count, so a process that does not name one neither updates nor scales a
// stream an operator set to three replicas. A stream whose count is all
// that differs then costs two more requests (its info, the create again),
// and no update.
func ensureStream(ctx context.Context, js natsjs.JetStream, cfg natsjs.StreamConfig, keep bool) error {
	_, err := js.CreateStream(ctx, cfg)
	if !errors.Is(err, natsjs.ErrStreamNameAlreadyInUse) {
		return err
	}
	if keep {
		n, err := replicasOf(ctx, js, cfg.Name)
		if err != nil {
			return err
		}
		if n != cfg.Replicas {
			cfg.Replicas = n
			if _, err = js.CreateStream(ctx, cfg); !errors.Is(err, natsjs.ErrStreamNameAlreadyInUse) {
				return err
			}
		}
	}
	_, err = js.UpdateStream(ctx, cfg)
	return err
}

// ensureKeyValue is ensureStream for a bucket (its stream is KV_<bucket>).
func ensureKeyValue(ctx context.Context, js natsjs.JetStream, cfg natsjs.KeyValueConfig, keep bool) (natsjs.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, cfg)
	if !errors.Is(err, natsjs.ErrBucketExists) {
		return kv, err
	}
	if keep {
		n, err := replicasOf(ctx, js, "KV_"+cfg.Bucket)
		if err != nil {
			return nil, err
		}
		if n != cfg.Replicas {
			cfg.Replicas = n
			if kv, err = js.CreateKeyValue(ctx, cfg); !errors.Is(err, natsjs.ErrBucketExists) {
				return kv, err
			}
		}
	}
	return js.CreateOrUpdateKeyValue(ctx, cfg)
}

// replicasOf is the replica count of an existing stream.
func replicasOf(ctx context.Context, js natsjs.JetStream, stream string) (int, error) {
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return 0, err
	}
	return s.CachedInfo().Config.Replicas, nil
}

// runsStreamConfig is the runs stream: every run's ledger and checkpoint.
func runsStreamConfig(n Names, o Options) natsjs.StreamConfig {
	return natsjs.StreamConfig{
		Name:        n.RunsStream(),
		Description: "acr ledgers, checkpoints and worlds, a few subjects per run",
		Subjects:    []string{n.Prefix + ".ledger.*", n.Prefix + ".ckpt.*", n.Prefix + ".status.*", n.Prefix + ".world.*.*"},
		Storage:     o.storage(),
		Replicas:    o.Replicas,
		// Limits retention with no limits: nothing expires, nothing is
		// discarded; if an operator sets limits, new writes are refused
		// rather than old records dropped.
		Retention:         natsjs.LimitsPolicy,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgsPerSubject: -1,
		Discard:           natsjs.DiscardNew,
		Duplicates:        o.LedgerDedup,
		// Atomic batches carry a cycle's records and its checkpoint.
		AllowAtomicPublish: true,
		// The checkpoint's first part rolls its subject up. Rollup needs
		// purge allowed; deleting single records is refused.
		AllowRollup: true,
		DenyDelete:  true,
		// Reads are batched direct gets.
		AllowDirect: true,
	}
}

// inboxStreamConfig is the inbox stream: items with a dedup key and a
// per-message TTL.
func inboxStreamConfig(n Names, o Options) natsjs.StreamConfig {
	return natsjs.StreamConfig{
		Name:              n.InboxStream(),
		Description:       "acr inboxes (wake, approval, stop), one subject per run",
		Subjects:          []string{n.Prefix + ".inbox.*", n.Prefix + ".quarantine.*"},
		Storage:           o.storage(),
		Replicas:          o.Replicas,
		Retention:         natsjs.LimitsPolicy,
		MaxMsgs:           -1,
		MaxBytes:          -1,
		MaxMsgsPerSubject: -1,
		Discard:           natsjs.DiscardNew,
		Duplicates:        o.InboxDedup,
		AllowMsgTTL:       true,
		AllowDirect:       true,
	}
}

// Checkpoints is the KV design of the checkpoint: one key per run in the
// checkpoint bucket, replaced only on the expected revision. One value is
// limited to the server's max_payload (1 MiB by default); see doc.go for
// why the recommended design keeps the checkpoint in the runs stream.
type Checkpoints struct {
	kv  natsjs.KeyValue
	pol *policy
}

// Get returns run's checkpoint and its revision, or ErrNotFound.
func (c *Checkpoints) Get(ctx context.Context, run string) (doc []byte, rev uint64, err error) {
	err = c.pol.do(ctx, "checkpoint.get", func(ctx context.Context) error {
		e, err := c.kv.Get(ctx, Token(run))
		if err != nil {
			return classify(err)
		}
		doc, rev = e.Value(), e.Revision()
		return nil
	})
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint %s: %w", run, err)
	}
	return doc, rev, nil
}

// Create stores run's first checkpoint; ErrConflict if it has one. A
// create whose answer was lost is recognised by its bytes.
func (c *Checkpoints) Create(ctx context.Context, run string, doc []byte) (uint64, error) {
	var rev uint64
	err := c.pol.do(ctx, "checkpoint.create", func(ctx context.Context) error {
		err := retryInFlight(ctx, func() (err error) { rev, err = c.kv.Create(ctx, Token(run), doc); return err })
		if errors.Is(err, natsjs.ErrKeyExists) {
			if e, gerr := c.kv.Get(ctx, Token(run)); gerr == nil && bytes.Equal(e.Value(), doc) {
				rev = e.Revision()
				return nil
			}
			return fmt.Errorf("%w: %w", ErrConflict, err)
		}
		return classify(err)
	})
	if err != nil {
		return 0, fmt.Errorf("create checkpoint %s: %w", run, err)
	}
	return rev, nil
}

// Update replaces run's checkpoint if its revision is still rev and
// returns the new revision; ErrConflict (nothing stored) if not. An
// update whose answer was lost is recognised by its bytes.
func (c *Checkpoints) Update(ctx context.Context, run string, doc []byte, rev uint64) (uint64, error) {
	var next uint64
	err := c.pol.do(ctx, "checkpoint.update", func(ctx context.Context) error {
		err := retryInFlight(ctx, func() (err error) { next, err = c.kv.Update(ctx, Token(run), doc, rev); return err })
		if errors.Is(err, natsjs.ErrKeyRevisionMismatch) {
			if e, gerr := c.kv.Get(ctx, Token(run)); gerr == nil && e.Revision() > rev && bytes.Equal(e.Value(), doc) {
				next = e.Revision()
				return nil
			}
		}
		return classify(err)
	})
	if err != nil {
		return 0, fmt.Errorf("update checkpoint %s: %w", run, err)
	}
	return next, nil
}
