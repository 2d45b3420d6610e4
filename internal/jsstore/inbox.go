package jsstore

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
type Inbox struct {
	run *Run
	// seqs maps the name of every item the last List saw (its id, or
	// "seq-N" for a message without one) to its stream sequences.
	seqs map[string][]uint64
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

// List implements storage.Inbox: every item waiting, decoded and checked,
// sorted by creation time then id as the directory inbox sorts them, and
// the messages that failed to decode (named "<id>.json", as the directory
// inbox names its files). A message stored twice under one id is one item.
func (ib *Inbox) List() ([]inbox.Item, []inbox.Rejected, error) {
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
	return nil
}

// lookup returns the stream sequences of the named items, from the last
// List, listing again when one is not known.
func (ib *Inbox) lookup(names []string) ([]uint64, error) {
	for _, n := range names {
		if _, ok := ib.seqs[n]; !ok {
			if _, _, err := ib.List(); err != nil {
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
