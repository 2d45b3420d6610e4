package jsstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/state"
)

// Inbox is a run's inbox on <prefix>.inbox.<run> in the inbox stream. It
// implements storage.Inbox, and Put is what `acr wake`, `approve`, `deny`
// and `stop` call instead of dirstore.Inbox.Write.
//
// An item is one message: its body the item's canonical bytes (what
// inbox.Seal returns), Nats-Msg-Id the run and the item's content-derived
// id (the same item put twice within the stream's dedup window is stored
// once; List also keeps one of each id), Acr-Key the id, and for a wake
// signal Nats-TTL its expiry plus the store's ExpiryGrace. Consumption is
// the run state's record of consumed ids, made durable by the checkpoint;
// Consumed then deletes the messages.
//
// A handle that Watch was called on hears every item put in the run's
// inbox (a plain subscription: a JetStream publish is delivered to core
// subscribers of its subject too), and List reads the stream only when
// something was put since its last read: a cycle that finds nothing new
// costs the server no message.
type Inbox struct {
	run *Run
	// seqs maps the name of every item the last List saw (its id, or
	// "seq-N" for a message without one) to its stream sequences.
	seqs map[string][]uint64
	// w is the watch, nil until Watch.
	w *watch
}

// watch is what an Inbox that watches its subject knows: whether an item
// was put since its last read, and what that read found (less what was
// consumed or quarantined since).
type watch struct {
	sub *nats.Subscription
	// heard is set by the subscription's handler for every message put.
	heard atomic.Bool
	// mu guards awaited: the keys of the messages heard that no read has
	// found yet, with when each was heard. A subscriber hears a put as
	// the server receives it, before the stream stores it, and on a
	// replicated stream a read may be answered by a replica still
	// without it: until a read finds the key (or awaitLimit passes),
	// every List reads again.
	mu      sync.Mutex
	awaited map[string]time.Time
	// fresh: items and bad are what the stream holds, unless heard, the
	// connection reconnected since (reconnects; a subscriber misses what
	// is published while it is away), the subscription dropped a message
	// (a slow consumer), or the read is older than maxAge (readAt).
	fresh      bool
	reconnects uint64
	readAt     time.Time
	// maxAge bounds how long a read answers for (Options.InboxRecheck):
	// a put that was never heard (a route between cluster servers lost
	// it: core delivery is at most once) is found by the next read after
	// it.
	maxAge time.Duration
	items  []inbox.Item
	bad    []inbox.Rejected
}

// awaitLimit is how long a heard key is read for before it is given up
// (a put the stream refused, or a duplicate it dropped, is heard and
// never stored); the read every Options.InboxRecheck goes on after it.
const awaitLimit = 10 * time.Second

// pending reports whether a heard key is still waiting to be found by a
// read.
func (w *watch) pending() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.awaited) > 0
}

// found forgets the awaited keys a read found (in seqs) and those heard
// longer than awaitLimit before now.
func (w *watch) found(seqs map[string][]uint64, now time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, at := range w.awaited {
		if len(seqs[k]) > 0 || now.Sub(at) > awaitLimit {
			delete(w.awaited, k)
		}
	}
}

// Inbox returns the run's inbox.
func (r *Run) Inbox() *Inbox { return &Inbox{run: r} }

// Put seals an item (a *state.WakeSignal, *state.Approval or
// *state.StopRequest) and stores it in the run's inbox; it returns the
// item's id. Putting the same item again is harmless.
func (ib *Inbox) Put(v any) (string, error) {
	id, b, err := inbox.Seal(v)
	if err != nil {
		return "", err
	}
	ttl, err := ib.ttl(v)
	if err != nil {
		return "", fmt.Errorf("put inbox item %s: %w", id, err)
	}
	if _, _, err := ib.run.s.blocks.Inbox.Put(ib.run.ctx, ib.run.ID, id, b, ttl); err != nil {
		return "", fmt.Errorf("put inbox item %s in %s: %w", id, ib.run.ID, err)
	}
	return id, nil
}

// ttl is the message TTL of an item: none for answers and stop requests;
// for a wake signal the time until its expiry plus the store's grace,
// in whole seconds, at least one.
func (ib *Inbox) ttl(v any) (time.Duration, error) {
	w, ok := v.(*state.WakeSignal)
	if !ok || w.ExpiresAt == "" {
		return 0, nil
	}
	exp, err := time.Parse(time.RFC3339, w.ExpiresAt)
	if err != nil {
		return 0, fmt.Errorf("expires_at %q: %w", w.ExpiresAt, err)
	}
	o := ib.run.s.opts
	ttl := exp.Sub(o.Now())
	if o.ExpiryGrace > 0 {
		ttl += o.ExpiryGrace
	}
	ttl = ttl.Truncate(time.Second) + time.Second // whole seconds, rounded up
	return max(ttl, time.Second), nil
}

// putRaw stores bytes as an item under name without sealing or checking
// them (tests of quarantine).
func (ib *Inbox) putRaw(name string, b []byte) error {
	_, _, err := ib.run.s.blocks.Inbox.Put(ib.run.ctx, ib.run.ID, name, b, 0)
	return err
}

// Watch subscribes to the run's inbox subject, so that List reads the
// stream only when an item was put since its last read (see Inbox). Call
// it before the first List: an item put before the subscription is then
// found by that List's read, one put after it is heard. stop ends the
// watch (List then reads every time); the handle watches once.
func (ib *Inbox) Watch() (stop func(), err error) {
	if ib.w != nil {
		return nil, fmt.Errorf("watch inbox of %s: already watched", ib.run.ID)
	}
	w := &watch{awaited: map[string]time.Time{}, maxAge: ib.run.s.opts.InboxRecheck}
	w.sub, err = ib.run.s.nc.Subscribe(ib.run.s.blocks.Names.InboxSubject(ib.run.ID), func(m *nats.Msg) {
		if k := jetstream.ItemKey(m); k != "" {
			w.mu.Lock()
			if _, ok := w.awaited[k]; !ok {
				w.awaited[k] = time.Now()
			}
			w.mu.Unlock()
		}
		w.heard.Store(true)
	})
	if err != nil {
		return nil, fmt.Errorf("watch inbox of %s: %w", ib.run.ID, err)
	}
	if err := w.sub.SetPendingLimits(-1, -1); err != nil {
		_ = w.sub.Unsubscribe()
		return nil, fmt.Errorf("watch inbox of %s: %w", ib.run.ID, err)
	}
	ib.w = w
	// Once unsubscribed, Dropped fails and List reads every time.
	return func() { _ = w.sub.Unsubscribe() }, nil
}

// List implements storage.Inbox: every item waiting, decoded and checked,
// sorted by creation time then id as the directory inbox sorts them, and
// the messages that failed to decode (named "<id>.json", as the directory
// inbox names its files). A message stored twice under one id is one item.
//
// A watched inbox answers from its last read when nothing was heard
// since and the read is younger than Options.InboxRecheck (a second).
// The connection is flushed first (a ping, not a message): what the
// server handed this connection before it answers the ping has arrived
// by then, which covers an item put a moment before. An item heard
// later, or not at all (the connection was away, a route lost it), is
// never lost: the next List reads the stream again, as a List that ran
// just before the put would have had to, and one past InboxRecheck reads
// it anyway. An item heard before the stream (or the replica answering
// the read) stored it is read for until a read finds it.
func (ib *Inbox) List() ([]inbox.Item, []inbox.Rejected, error) {
	if w := ib.w; w != nil && w.fresh && ib.unchanged(w) {
		return slices.Clone(w.items), slices.Clone(w.bad), nil
	}
	return ib.read()
}

// unchanged reports whether a watched inbox certainly holds what its last
// read found: the flush succeeded, nothing was heard, the connection did
// not reconnect and the subscription dropped nothing.
func (ib *Inbox) unchanged(w *watch) bool {
	ctx, cancel := ib.run.requestCtx()
	defer cancel()
	nc := ib.run.s.nc
	if time.Since(w.readAt) > w.maxAge || w.pending() {
		return false
	}
	if nc.FlushWithContext(ctx) != nil || w.heard.Load() || nc.Stats().Reconnects != w.reconnects {
		return false
	}
	dropped, err := w.sub.Dropped()
	return err == nil && dropped == 0
}

// read reads the run's inbox from the stream (see List) and, when
// watched, remembers what it found.
func (ib *Inbox) read() ([]inbox.Item, []inbox.Rejected, error) {
	w := ib.w
	var reconnects uint64
	if w != nil {
		// Cleared before the read: an item put during it is heard again,
		// and the next List reads once more.
		w.heard.Store(false)
		w.fresh = false
		w.readAt = time.Now()
		reconnects = ib.run.s.nc.Stats().Reconnects
	}
	seqs := map[string][]uint64{}
	var items []inbox.Item
	var bad []inbox.Rejected
	err := ib.run.s.blocks.Inbox.Read(ib.run.ctx, ib.run.ID, 0, func(m jetstream.Item) error {
		name := m.Key
		if name == "" {
			name = "seq-" + strconv.FormatUint(m.Seq, 10)
		}
		seen := len(seqs[name]) > 0
		seqs[name] = append(seqs[name], m.Seq)
		if seen {
			return nil
		}
		it, err := inbox.Decode(name, m.Data)
		if err != nil {
			bad = append(bad, inbox.Rejected{Name: name + ".json", Reason: err.Error()})
			return nil
		}
		items = append(items, it)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("list inbox of %s: %w", ib.run.ID, err)
	}
	ib.seqs = seqs
	slices.SortFunc(items, func(a, b inbox.Item) int {
		if c := strings.Compare(a.CreatedAt(), b.CreatedAt()); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if w != nil {
		w.found(seqs, time.Now())
		w.items, w.bad = slices.Clone(items), slices.Clone(bad)
		w.reconnects, w.fresh = reconnects, true
	}
	return items, bad, nil
}

// Consumed implements storage.Inbox: it deletes the messages of the
// given items (called once a durable checkpoint records them as
// consumed). Ids the inbox does not hold are ignored.
func (ib *Inbox) Consumed(ids []string) error {
	seqs, err := ib.lookup(ids)
	if err != nil {
		return fmt.Errorf("consume inbox items of %s: %w", ib.run.ID, err)
	}
	if err := ib.run.s.blocks.Inbox.Delete(ib.run.ctx, ib.run.ID, seqs...); err != nil {
		return fmt.Errorf("consume inbox items of %s: %w", ib.run.ID, err)
	}
	for _, id := range ids {
		delete(ib.seqs, id)
	}
	if w := ib.w; w != nil {
		w.items = slices.DeleteFunc(w.items, func(it inbox.Item) bool { return slices.Contains(ids, it.ID) })
	}
	return nil
}

// Quarantine implements storage.Inbox: the messages of a rejected item
// (named as List names it) move to <prefix>.quarantine.<run>, kept for
// the operator.
func (ib *Inbox) Quarantine(name string) error {
	id := strings.TrimSuffix(name, ".json")
	seqs, err := ib.lookup([]string{id})
	if err != nil {
		return fmt.Errorf("quarantine inbox item %s of %s: %w", name, ib.run.ID, err)
	}
	if len(seqs) == 0 {
		return fmt.Errorf("quarantine inbox item %s of %s: %w", name, ib.run.ID, jetstream.ErrNotFound)
	}
	for _, seq := range seqs {
		if err := ib.run.s.blocks.Inbox.Quarantine(ib.run.ctx, ib.run.ID, seq); err != nil {
			return fmt.Errorf("quarantine inbox item %s of %s: %w", name, ib.run.ID, err)
		}
	}
	delete(ib.seqs, id)
	if w := ib.w; w != nil {
		w.bad = slices.DeleteFunc(w.bad, func(r inbox.Rejected) bool { return r.Name == name })
		w.items = slices.DeleteFunc(w.items, func(it inbox.Item) bool { return it.ID == id })
	}
	return nil
}

// lookup returns the stream sequences of the named items, from the last
// List, listing again when one is not known.
func (ib *Inbox) lookup(names []string) ([]uint64, error) {
	for _, n := range names {
		if _, ok := ib.seqs[n]; !ok {
			if _, _, err := ib.read(); err != nil {
				return nil, err
			}
			break
		}
	}
	var out []uint64
	for _, n := range names {
		out = append(out, ib.seqs[n]...)
	}
	return out, nil
}
