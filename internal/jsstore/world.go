package jsstore

import (
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// ErrNoWorld means the store holds no world for a run: a run created by
// a release that kept the worlds of a store's runs on the host that ran
// acr init (or an init that never finished, which made no run).
var ErrNoWorld = errors.New("the store holds no world for the run")

// World is a run's world in the store, the truth that every host's copy
// of it (its cache) follows: one message per file on the run's world
// subjects in the runs stream, and the head that fences its writers (see
// jetstream.Worlds).
//
// A World is one writer's handle. Load reads the world (from the stream's
// leader) and remembers its head; Take makes this handle the world's
// writer; Put and Remove then change one file each, one message each,
// guarded by the run's ledger end the caller gives (the stream sequence
// of its last record: the intent that authorises the change). Another
// process that appended to the ledger since makes the write fail with
// storage.ErrConflict, and nothing of it is stored; one that only took
// the world since does not (see jetstream.Worlds: the intent at the
// ledger's end fixes the only file write the store then takes).
type World struct {
	run  *Run
	head uint64
	// writer names this handle in the heads it writes, so that a write
	// whose answer was lost is recognised as its own.
	writer string
	// known names, for each path, the last message on its subject as this
	// handle knows it (jetstream.Worlds.Upload's replaces); last is this
	// handle's last write of each path, so that the same write made again
	// replaces what it replaced the first time.
	known map[string]string
	last  map[string]upload
}

// upload is a write World made: where, what, and what it replaced.
type upload struct {
	ledger   int64
	remove   bool
	sum      [sha256.Size]byte
	replaced string
}

// World returns the run's world handle; nothing is read.
func (r *Run) World() *World { return &World{run: r, writer: rand.Text()} }

// Load returns the run's world, file by file; ErrNoWorld if the store
// holds none for the run. A damaged world message is a
// *state.IntegrityError.
func (w *World) Load() (map[string][]byte, error) {
	st, err := w.run.s.blocks.Worlds.Read(w.run.ctx, w.run.ID)
	if errors.Is(err, jetstream.ErrBadWorld) {
		return nil, &state.IntegrityError{File: "world of " + w.run.ID, Msg: err.Error()}
	}
	if err != nil {
		return nil, err
	}
	if st.Head == 0 {
		return nil, fmt.Errorf("world of %s: %w", w.run.ID, ErrNoWorld)
	}
	w.head = st.Head
	w.learn(st.Seqs)
	return st.Files, nil
}

// Take makes this handle the world's writer: it moves the head from the
// one Load read, so that two handles that open the run at once do not
// both go on (the second take is a storage.ErrConflict). It does not
// fence an earlier holder's effect: an effect's file is guarded by the
// ledger's end alone (see jetstream.Worlds), so such a write can land
// only while the ledger still ends at its intent, and then holds what
// this handle's recovery of that intent would store. Load reads the
// stream's leader, so a take never starts on a world older than an
// acknowledged write. ledgerAt is recorded with the head.
func (w *World) Take(ledgerAt int64) error {
	if w.head == 0 {
		return fmt.Errorf("take the world of %s: %w (load it first)", w.run.ID, ErrNoWorld)
	}
	h, err := w.run.s.blocks.Worlds.Take(w.run.ctx, w.run.ID, jetstream.Guard{Ledger: uint64(ledgerAt), Head: w.head, Writer: w.writer})
	if err != nil {
		return w.failed(err)
	}
	w.head = h
	return nil
}

// Seal stores a whole world for a run that nobody can hold yet, provided
// the run's ledger ends at ledgerAt: every file, the removal of the files
// a world already there has and files does not, then a head that expects
// the one read first. It is for a run that has no world (acr init; a
// world that an earlier release kept on one host, moved into the store)
// or whose world was left by an init or import cut off before its first
// checkpoint (no process runs a run without a checkpoint). Files are
// uploaded in path order; an upload cut short leaves files and the old
// head (or none), and a later Seal writes them again.
func (w *World) Seal(files map[string][]byte, ledgerAt int64) error {
	st, err := w.run.s.blocks.Worlds.Read(w.run.ctx, w.run.ID)
	if errors.Is(err, jetstream.ErrBadWorld) {
		return &state.IntegrityError{File: "world of " + w.run.ID, Msg: err.Error()}
	}
	if err != nil {
		return fmt.Errorf("seal the world of %s: %w", w.run.ID, err)
	}
	w.learn(st.Seqs)
	for _, p := range slices.Sorted(maps.Keys(files)) {
		if err := w.upload(p, files[p], false, ledgerAt); err != nil {
			return w.failed(err)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(st.Files)) {
		if _, ok := files[p]; ok {
			continue
		}
		if err := w.upload(p, nil, true, ledgerAt); err != nil {
			return w.failed(err)
		}
	}
	h, err := w.run.s.blocks.Worlds.Take(w.run.ctx, w.run.ID, jetstream.Guard{Ledger: uint64(ledgerAt), Head: st.Head, Writer: w.writer})
	if err != nil {
		return w.failed(err)
	}
	w.head = h
	return nil
}

// Put stores data as the file at path, provided the run's ledger still
// ends at ledgerAt (storage.ErrConflict otherwise, nothing stored). A
// file larger than Room is ErrTooLarge.
func (w *World) Put(path string, data []byte, ledgerAt int64) error {
	return w.write(path, data, false, ledgerAt)
}

// Remove stores the removal of the file at path, guarded as Put is.
func (w *World) Remove(path string, ledgerAt int64) error {
	return w.write(path, nil, true, ledgerAt)
}

func (w *World) write(path string, data []byte, remove bool, ledgerAt int64) error {
	if w.head == 0 {
		return fmt.Errorf("write the world of %s: %w (take it first)", w.run.ID, ErrNoWorld)
	}
	if err := w.upload(path, data, remove, ledgerAt); err != nil {
		return w.failed(err)
	}
	return nil
}

// learn sets what each path's last message is, as the store said.
func (w *World) learn(seqs map[string]uint64) {
	w.known = make(map[string]string, len(seqs))
	w.last = map[string]upload{}
	for p, seq := range seqs {
		w.known[p] = jetstream.SeqIdentity(seq)
	}
}

// upload sends one file write. A write equal to this handle's last write
// of the path at the same ledger position is that write sent again: it
// names what the first one replaced, so the server stores it once.
// Anything else replaces the path's last message.
func (w *World) upload(path string, data []byte, remove bool, ledgerAt int64) error {
	u := upload{ledger: ledgerAt, remove: remove, sum: sha256.Sum256(data), replaced: w.known[path]}
	if prev, ok := w.last[path]; ok && prev.ledger == u.ledger && prev.remove == u.remove && prev.sum == u.sum {
		u.replaced = prev.replaced
	}
	id, err := w.run.s.blocks.Worlds.Upload(w.run.ctx, w.run.ID, path, data, remove, uint64(ledgerAt), u.replaced)
	if err != nil {
		return err
	}
	w.known[path], w.last[path] = id, u
	return nil
}

// Room is the largest file at path the store keeps in one message: the
// server's max_payload (1 MiB by default) less about 1 KiB of headers
// (more for a long path).
func (w *World) Room(path string) int { return w.run.s.blocks.Worlds.Room(w.run.ID, path) }

// failed maps a refused write to storage.ErrConflict; after any failure
// the handle's head is unknown, so it writes nothing more.
func (w *World) failed(err error) error {
	w.head = 0
	if errors.Is(err, jetstream.ErrConflict) {
		return fmt.Errorf("world of %s: %w: another writer took the run's world or appended to its ledger since: %w", w.run.ID, storage.ErrConflict, err)
	}
	return fmt.Errorf("world of %s: %w", w.run.ID, err)
}
