package jsstore

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/jetstream"
)

// Errors callers branch on. Conflicts are storage.ErrConflict, a run held
// by another writer storage.ErrBusy, no checkpoint storage.ErrNoRun.
var (
	// ErrUnavailable: the server, or the leader of a stream, could not be
	// reached or did not answer in time (acr's exit 74). The outcome of a
	// write that fails with it is unknown: reopen the run, which reads
	// what is stored.
	ErrUnavailable = jetstream.ErrUnavailable
	// ErrLeaseLost: a lease expired or another holder took it.
	ErrLeaseLost = jetstream.ErrLeaseLost
	// ErrExists: an idempotency key already has a record.
	ErrExists = jetstream.ErrExists
	// ErrTooLarge: a ledger record or an idempotency record is larger
	// than the server takes in one message, or a batch has more records
	// than one atomic batch holds.
	ErrTooLarge = jetstream.ErrTooLarge
	// ErrReplicas: the servers cannot hold the replica count
	// Options.Replicas asks for; nothing was changed.
	ErrReplicas = jetstream.ErrReplicas
)

// Options are a store's settings; the zero value means the defaults.
type Options struct {
	// Prefix names the store's streams, buckets and subjects (default
	// "acr"), so that several stores can share a NATS account.
	Prefix string
	// Replicas of every stream and bucket: 1 on a single server, 3 on a
	// three-node cluster; 0 leaves existing ones as they are and creates
	// new ones with 1 (jetstream.Options.Replicas).
	Replicas int
	// LeaseTTL is how long a run lease lasts unless renewed (default 30 s).
	LeaseTTL time.Duration
	// ExpiryGrace is how long an inbox item is kept past its own expiry
	// (default 24 h; negative: not at all). The kernel, not the server,
	// decides that an item has expired and records it; the message TTL
	// only collects items no cycle looked at in time.
	ExpiryGrace time.Duration
	// InboxDedup is the window in which the same inbox item put twice is
	// stored once (default 24 h). Beyond it the run state's consumed ids
	// are the dedup.
	InboxDedup time.Duration
	// MemoryStorage keeps everything in memory (tests and benchmarks
	// only).
	MemoryStorage bool
	// Now is the clock for inbox expiry and lease times (default
	// time.Now).
	Now func() time.Time
	// Patience is how long a request keeps trying while the server does
	// not answer (jetstream.Options.Patience): 0 tries once.
	Patience time.Duration
	// Timeout is how long one attempt of a request waits for its answer
	// (default 5 s).
	Timeout time.Duration
	// Observe, when set, hears every request to the server.
	Observe func(jetstream.Call)
	// InboxRecheck is how long a watched inbox's last read answers for
	// when nothing was heard (default 1 s, as a directory inbox's memo):
	// the bound on how late an item is seen whose put was never heard.
	InboxRecheck time.Duration
}

func (o Options) withDefaults() Options {
	if o.Prefix == "" {
		o.Prefix = jetstream.DefaultPrefix
	}
	if o.ExpiryGrace == 0 {
		o.ExpiryGrace = 24 * time.Hour
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.InboxRecheck <= 0 {
		o.InboxRecheck = time.Second
	}
	return o
}

// Store is one acr store on a NATS account: the streams and buckets of
// every run under one prefix. It is safe for concurrent use; each run is
// reached through Run.
type Store struct {
	blocks *jetstream.Store
	opts   Options
	nc     *nats.Conn
	owned  bool // Close closes nc
	pack   *packer
}

// Open creates the store's streams and buckets on nc's account, or
// updates them to this configuration, and returns the store. It is
// idempotent; every acr process calls it on start. The caller keeps nc
// (Close leaves it open).
func Open(ctx context.Context, nc *nats.Conn, opts Options) (*Store, error) {
	o := opts.withDefaults()
	blocks, err := jetstream.Open(ctx, nc, jetstream.Names{Prefix: o.Prefix}, jetstream.Options{
		Replicas: o.Replicas, InboxDedup: o.InboxDedup, LeaseTTL: o.LeaseTTL, MemoryStorage: o.MemoryStorage,
		Patience: o.Patience, Timeout: o.Timeout, Observe: o.Observe,
	})
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", o.Prefix, err)
	}
	p, err := newPacker()
	if err != nil {
		return nil, fmt.Errorf("open store %s: %w", o.Prefix, err)
	}
	return &Store{blocks: blocks, opts: o, nc: nc, pack: p}, nil
}

// Dial connects to the store a URL names and opens it; Close closes the
// connection. The URL is nats://HOST:PORT[/PREFIX] (tls:// for TLS, several
// servers separated by commas, credentials as nats.Options such as
// nats.UserCredentials); a prefix in the URL overrides opts.Prefix.
func Dial(ctx context.Context, storeURL string, opts Options, natsOpts ...nats.Option) (*Store, error) {
	servers, prefix, err := ParseURL(storeURL)
	if err != nil {
		return nil, err
	}
	if prefix != "" {
		opts.Prefix = prefix
	}
	nc, err := jetstream.Connect(servers, natsOpts...)
	if err != nil {
		return nil, err
	}
	s, err := Open(ctx, nc, opts)
	if err != nil {
		nc.Close()
		return nil, err
	}
	s.owned = true
	return s, nil
}

// ParseURL splits a store URL into the server URLs nats.Connect takes and
// the store prefix ("" when the URL names none): nats://h:4222/p gives
// "nats://h:4222" and "p". Schemes nats, tls, ws and wss are accepted.
func ParseURL(storeURL string) (servers, prefix string, err error) {
	var hosts []string
	for _, part := range strings.Split(storeURL, ",") {
		u, err := url.Parse(strings.TrimSpace(part))
		if err != nil {
			return "", "", fmt.Errorf("store url %q: %w", storeURL, err)
		}
		switch u.Scheme {
		case "nats", "tls", "ws", "wss":
		default:
			return "", "", fmt.Errorf("store url %q: scheme %q is not nats, tls, ws or wss", storeURL, u.Scheme)
		}
		if u.Host == "" {
			return "", "", fmt.Errorf("store url %q: no host", storeURL)
		}
		if p := strings.Trim(u.Path, "/"); p != "" {
			if prefix != "" && p != prefix {
				return "", "", fmt.Errorf("store url %q: two prefixes, %q and %q", storeURL, prefix, p)
			}
			prefix = p
		}
		u.Path, u.RawPath = "", ""
		hosts = append(hosts, u.String())
	}
	if prefix != "" {
		if err := (jetstream.Names{Prefix: prefix}).Validate(); err != nil {
			return "", "", fmt.Errorf("store url %q: %w", storeURL, err)
		}
	}
	return strings.Join(hosts, ","), prefix, nil
}

// Close closes the connection if Dial opened it.
func (s *Store) Close() {
	if s.owned {
		s.nc.Close()
	}
}

// Prefix is the store's prefix.
func (s *Store) Prefix() string { return s.opts.Prefix }

// Run is one run of the store as one process opens it: its checkpoint,
// ledger, inbox and idempotency table. The storage interfaces take no
// context, so a Run carries the one it was opened with: cancelling it
// ends every request in flight; a request without a deadline gets 5 s.
type Run struct {
	ID  string
	s   *Store
	ctx context.Context
}

// requestCtx is the run's context bounded, when it has no deadline, by
// the store's request timeout (5 s by default): for a request made
// outside internal/jetstream's policy (a flush).
func (r *Run) requestCtx() (context.Context, context.CancelFunc) {
	if _, ok := r.ctx.Deadline(); ok {
		return context.WithCancel(r.ctx)
	}
	t := r.s.opts.Timeout
	if t <= 0 {
		t = 5 * time.Second
	}
	return context.WithTimeout(r.ctx, t)
}

// Run returns the handle of run id. Nothing is read or written: a run
// exists once its first checkpoint is committed (Checkpoints.Load says
// storage.ErrNoRun before).
func (s *Store) Run(ctx context.Context, id string) (*Run, error) {
	if id == "" {
		return nil, errors.New("open run: empty run id")
	}
	return &Run{ID: id, s: s, ctx: ctx}, nil
}
