package jsstore

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// hdrGeneration is set on every part of a checkpoint: its generation, so
// that a writer finds the generation it must replace from the last part's
// headers alone.
const hdrGeneration = "Acr-Generation"

// Checkpoints is a run's checkpoint on <prefix>.ckpt.<run> in the runs
// stream. It implements storage.Checkpoints.
//
// A checkpoint is one document: the manifest's canonical bytes (the same
// manifest the directory store writes, with the same content-addressed
// file paths), a newline, then every file's bytes in the order of their
// names, each as long as its manifest entry says. The document is
// compressed (Acr-Encoding: zstd on every part, pack.go; a checkpoint
// without it, as earlier releases wrote, is read as it is), split into
// parts below the server's payload limit and committed as one atomic
// batch with the run's status message; the first part rolls the previous
// checkpoint's parts up.
//
// The batch is guarded twice: the first part expects the last part of
// the generation the writer loaded (so a stale writer stores nothing:
// storage.ErrConflict), and the status message expects the ledger to
// still end at the commit's frontier (so a writer that another one has
// overtaken in the ledger cannot checkpoint either). A checkpoint is
// therefore only ever committed at the ledger's end, which is where the
// driver commits it.
type Checkpoints struct {
	run *Run
	// gen and seq are the generation this handle last loaded or
	// committed and the stream sequence of its last part.
	gen   int64
	seq   uint64
	known bool
}

// Checkpoints returns the run's checkpoint handle.
func (r *Run) Checkpoints() *Checkpoints { return &Checkpoints{run: r} }

// Load implements storage.Checkpoints: the parts of the last commit,
// joined, the manifest checked (schema, version, self-checksum) and every
// file checked against it. storage.ErrNoRun when the run has no
// checkpoint.
func (c *Checkpoints) Load() (storage.Snapshot, error) {
	packed, h, fr, err := c.run.s.blocks.Ledger.CheckpointWithHeader(c.run.ctx, c.run.ID)
	if errors.Is(err, jetstream.ErrNotFound) {
		return storage.Snapshot{}, fmt.Errorf("load checkpoint of %s: %w", c.run.ID, storage.ErrNoRun)
	}
	if err != nil {
		return storage.Snapshot{}, fmt.Errorf("load checkpoint of %s: %w", c.run.ID, err)
	}
	doc, err := c.run.s.pack.unpack(packed, h.Get(hdrEncoding))
	if err != nil {
		return storage.Snapshot{}, &state.IntegrityError{File: "checkpoint of " + c.run.ID, Msg: err.Error()}
	}
	snap, err := decodeCheckpoint(c.run.ID, doc)
	if err != nil {
		return storage.Snapshot{}, err
	}
	switch f := h.Get(hdrFrontier); f {
	case "":
	case frontierInBatch:
		// Committed with the records before it: the frontier's record
		// is in the message right before the checkpoint (Acr-Ledger:
		// -1), which the manifest, written before the batch was stored,
		// could not name.
		if h.Get(hdrLedgerAt) != "-1" || snap.Manifest.LedgerFrontier.Offset != 0 || snap.Manifest.LedgerFrontier.Seq == 0 {
			return storage.Snapshot{}, &state.IntegrityError{File: "checkpoint of " + c.run.ID, Msg: fmt.Sprintf(
				"%s %s with %s %q and a manifest frontier at stream sequence %d", hdrFrontier, f, hdrLedgerAt, h.Get(hdrLedgerAt), snap.Manifest.LedgerFrontier.Offset)}
		}
		snap.Manifest = withOffset(snap.Manifest, fr.Ledger)
	default:
		return storage.Snapshot{}, &state.IntegrityError{File: "checkpoint of " + c.run.ID, Msg: fmt.Sprintf("unknown %s %q (written by a newer acr?)", hdrFrontier, f)}
	}
	c.gen, c.seq, c.known = snap.Manifest.Generation, fr.Checkpoint, true
	return snap, nil
}

// Commit implements storage.Checkpoints: it stores generation
// cm.Expect+1 provided the run's checkpoint is still generation cm.Expect
// (none for 0) and its ledger still ends at cm.Frontier; otherwise
// storage.ErrConflict and nothing is stored.
func (c *Checkpoints) Commit(cm storage.Commit) (storage.Manifest, error) {
	if cm.Frontier.Offset < 0 || cm.Expect < 0 {
		return storage.Manifest{}, fmt.Errorf("commit checkpoint of %s: negative frontier or generation", c.run.ID)
	}
	if cm.RunID != c.run.ID {
		return storage.Manifest{}, fmt.Errorf("commit checkpoint of %s: the checkpoint is of run %q", c.run.ID, cm.RunID)
	}
	at, err := c.expected(cm.Expect)
	if err != nil {
		return storage.Manifest{}, err
	}
	m, doc, st, err := c.encode(cm)
	if err != nil {
		return storage.Manifest{}, err
	}
	packed, h := c.firstPart(m, doc)
	res, err := c.run.s.blocks.Ledger.CommitBatch(c.run.ctx, c.run.ID,
		jetstream.Frontier{Ledger: uint64(cm.Frontier.Offset), Checkpoint: at},
		jetstream.Batch{Checkpoint: packed, Header: h, Status: st})
	if errors.Is(err, jetstream.ErrConflict) {
		c.known = false
		return storage.Manifest{}, fmt.Errorf("commit checkpoint of %s: %w: expected generation %d with the ledger at seq %d: %w",
			c.run.ID, storage.ErrConflict, cm.Expect, cm.Frontier.Seq, err)
	}
	if err != nil {
		c.known = false
		return storage.Manifest{}, fmt.Errorf("commit checkpoint of %s: %w", c.run.ID, err)
	}
	c.gen, c.seq, c.known = m.Generation, res.Frontier.Checkpoint, true
	return m, nil
}

// expected returns the stream sequence of the last part of generation
// gen: remembered from the last load or commit, or read from the last
// part's headers. A run whose checkpoint is another generation is a
// conflict, found without writing.
func (c *Checkpoints) expected(gen int64) (uint64, error) {
	if c.known && c.gen == gen {
		return c.seq, nil
	}
	seq, h, err := c.run.s.blocks.Ledger.CheckpointHead(c.run.ctx, c.run.ID)
	found := int64(0)
	switch {
	case errors.Is(err, jetstream.ErrNotFound):
		seq = 0
	case err != nil:
		return 0, fmt.Errorf("commit checkpoint of %s: %w", c.run.ID, err)
	default:
		found, err = strconv.ParseInt(h.Get(hdrGeneration), 10, 64)
		if err != nil || found < 1 {
			return 0, &state.IntegrityError{File: "checkpoint of " + c.run.ID, Msg: fmt.Sprintf("part at stream sequence %d: bad %s %q", seq, hdrGeneration, h.Get(hdrGeneration))}
		}
	}
	if found != gen {
		return 0, fmt.Errorf("commit checkpoint of %s: %w: expected generation %d, found %d", c.run.ID, storage.ErrConflict, gen, found)
	}
	return seq, nil
}

// checkpointPath is the directory store's content-addressed file name of
// a checkpoint file (dirstore's checkpointPath), so that a manifest is
// the same on both backends.
func checkpointPath(name string, data []byte) string {
	return "checkpoint/" + name + "." + codec.Digest(data)[:16] + ".json"
}

// encode is a commit's checkpoint document, its manifest and the status
// the runs table shows beside it: what both ways of committing store.
func (c *Checkpoints) encode(cm storage.Commit) (storage.Manifest, []byte, []byte, error) {
	m, doc, err := encodeCheckpoint(cm)
	if err != nil {
		return storage.Manifest{}, nil, nil, fmt.Errorf("commit checkpoint of %s: %w", c.run.ID, err)
	}
	st, err := json.Marshal(statusOf(cm, m))
	if err != nil {
		return storage.Manifest{}, nil, nil, fmt.Errorf("commit checkpoint of %s: status: %w", c.run.ID, err)
	}
	return m, doc, st, nil
}

// firstPart is a checkpoint document as stored (compressed when that
// makes it smaller) with the headers of its first part: its generation
// and its encoding.
func (c *Checkpoints) firstPart(m storage.Manifest, doc []byte) ([]byte, nats.Header) {
	h := nats.Header{hdrGeneration: {strconv.FormatInt(m.Generation, 10)}}
	packed, enc := c.run.s.pack.pack(doc)
	if enc != "" {
		h.Set(hdrEncoding, enc)
	}
	return packed, h
}

// encodeCheckpoint builds generation cm.Expect+1's manifest, as the
// directory store builds it, and the checkpoint document.
func encodeCheckpoint(cm storage.Commit) (storage.Manifest, []byte, error) {
	m := storage.Manifest{
		Schema: storage.ManifestSchema, SchemaVersion: storage.SchemaVersion, WrittenAtRevision: cm.Revision,
		Generation: cm.Expect + 1, RunID: cm.RunID, CycleSeq: cm.CycleSeq,
		Files: make(map[string]storage.FileEntry, len(cm.Files)), LedgerFrontier: cm.Frontier,
	}
	names := slices.Sorted(maps.Keys(cm.Files))
	size := 0
	for _, name := range names {
		data := cm.Files[name]
		m.Files[name] = storage.FileEntry{Path: checkpointPath(name, data), SHA256: codec.FingerprintOf(data), Size: int64(len(data))}
		size += len(data)
	}
	m.Checksum = m.Sum()
	mb, err := codec.Marshal(m)
	if err != nil {
		return storage.Manifest{}, nil, err
	}
	doc := make([]byte, 0, len(mb)+1+size)
	doc = append(append(doc, mb...), '\n')
	for _, name := range names {
		doc = append(doc, cm.Files[name]...)
	}
	return m, doc, nil
}

// decodeCheckpoint splits a checkpoint document and checks it as the
// directory store checks a manifest and its files.
func decodeCheckpoint(run string, doc []byte) (storage.Snapshot, error) {
	where := "checkpoint of " + run
	i := bytes.IndexByte(doc, '\n')
	if i < 0 {
		return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: "no manifest line"}
	}
	var m storage.Manifest
	if err := codec.UnmarshalExact(doc[:i], &m); err != nil {
		return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: "manifest: " + err.Error()}
	}
	if m.Schema != storage.ManifestSchema {
		return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: fmt.Sprintf("manifest field schema: want %q, found %q", storage.ManifestSchema, m.Schema)}
	}
	if m.Checksum != m.Sum() {
		return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: fmt.Sprintf("manifest checksum %s does not match the content (%s)", m.Checksum, m.Sum())}
	}
	if m.SchemaVersion != storage.SchemaVersion {
		return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: fmt.Sprintf(
			"manifest field schema_version: this acr reads version %d, the checkpoint has version %d", storage.SchemaVersion, m.SchemaVersion)}
	}
	if m.RunID != run {
		return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: fmt.Sprintf("manifest is of run %q", m.RunID)}
	}
	rest := doc[i+1:]
	snap := storage.Snapshot{Manifest: m, Files: make(map[string][]byte, len(m.Files))}
	for _, name := range slices.Sorted(maps.Keys(m.Files)) {
		fe := m.Files[name]
		if fe.Size < 0 || fe.Size > int64(len(rest)) {
			return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: fmt.Sprintf("file %s: %d bytes named, %d left", name, fe.Size, len(rest))}
		}
		b := rest[:fe.Size:fe.Size]
		rest = rest[fe.Size:]
		if fe.Path != checkpointPath(name, b) || codec.FingerprintOf(b) != fe.SHA256 {
			return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: fmt.Sprintf("file %s: content does not match the manifest (want %s, found %s)", name, fe.SHA256, codec.FingerprintOf(b))}
		}
		snap.Files[name] = b
	}
	if len(rest) != 0 {
		return storage.Snapshot{}, &state.IntegrityError{File: where, Msg: fmt.Sprintf("%d bytes after the last file", len(rest))}
	}
	return snap, nil
}

// hdrFrontier, on a checkpoint's first part, says where its manifest's
// ledger frontier is: "batch" for a checkpoint committed in one atomic
// batch with the records before it (Joint), whose stream sequence was not
// known when the manifest was written: the manifest holds Offset 0, and
// the frontier's record is in the ledger message right before the
// checkpoint's first part (Acr-Ledger: -1). Without it the manifest holds
// the frontier's stream sequence (every checkpoint before this release,
// and every commit without records).
const hdrFrontier = "Acr-Frontier"

// frontierInBatch is hdrFrontier's one value.
const frontierInBatch = "batch"

// hdrLedgerAt is the header internal/jetstream sets on a checkpoint's
// first part: where the ledger stood, "-1" when the commit's records are
// right before it.
const hdrLedgerAt = "Acr-Ledger"

// Joint is a run's ledger and checkpoint handles as one
// storage.JointCommitter: the records a driver held and the checkpoint
// after them in one atomic batch. Both handles must be the driver's own
// (the frontier and the generation they know move with the commit).
type Joint struct {
	Ledger      *Ledger
	Checkpoints *Checkpoints
}

var _ storage.JointCommitter = Joint{}

// AppendAndCommit implements storage.JointCommitter: events are appended
// after the ledger handle's frontier and cm (its Frontier set to the
// ledger's end after them) is committed, in one atomic batch guarded by
// the ledger's end and the checkpoint's generation, all or nothing:
// storage.ErrConflict if another writer moved either, and nothing is
// stored. The returned manifest is the one a separate Append and Commit
// would have returned, byte for byte. Records that need more than one
// message go as a separate Append and Commit.
func (j Joint) AppendAndCommit(events []event.Event, cm storage.Commit) (storage.Manifest, error) {
	l, c := j.Ledger, j.Checkpoints
	if l.poisoned {
		return storage.Manifest{}, storage.ErrPoisoned
	}
	if len(events) == 0 {
		cm.Frontier = l.front
		return c.Commit(cm)
	}
	lines, recs, err := encodeEvents(l.front, events)
	if err != nil {
		return storage.Manifest{}, err
	}
	bodies, counts := packLines(lines, l.run.s.blocks.Ledger.RecordRoom())
	if len(bodies) != 1 {
		if _, err := l.Append(events); err != nil {
			return storage.Manifest{}, err
		}
		cm.Frontier = l.front
		return c.Commit(cm)
	}
	if cm.RunID != c.run.ID || cm.Expect < 0 {
		return storage.Manifest{}, fmt.Errorf("commit checkpoint of %s: the checkpoint is of run %q, generation %d", c.run.ID, cm.RunID, cm.Expect)
	}
	at, err := c.expected(cm.Expect)
	if err != nil {
		return storage.Manifest{}, err
	}
	last := recs[len(recs)-1]
	cm.Frontier = state.Frontier{Seq: last.Seq, Hash: last.Hash}
	m, doc, st, err := c.encode(cm)
	if err != nil {
		return storage.Manifest{}, err
	}
	hdrs := linesHeaders(counts)
	var enc string
	if bodies[0], enc = l.run.s.pack.pack(bodies[0]); enc != "" {
		hdrs[0].Set(hdrEncoding, enc)
	}
	packed, h := c.firstPart(m, doc)
	h.Set(hdrFrontier, frontierInBatch)
	res, err := l.run.s.blocks.Ledger.CommitBatch(l.run.ctx, l.run.ID,
		jetstream.Frontier{Ledger: uint64(l.front.Offset), Checkpoint: at},
		jetstream.Batch{Records: bodies, RecordHeaders: hdrs, Checkpoint: packed, Header: h, Status: st})
	if errors.Is(err, jetstream.ErrConflict) {
		c.known = false
		return storage.Manifest{}, fmt.Errorf("append to the ledger of %s and commit its checkpoint: %w: expected generation %d with the ledger at seq %d: %w",
			l.run.ID, storage.ErrConflict, cm.Expect, l.front.Seq, err)
	}
	if err != nil {
		c.known = false
		if !errors.Is(err, jetstream.ErrTooLarge) {
			l.poisoned = true
		}
		return storage.Manifest{}, fmt.Errorf("append to the ledger of %s and commit its checkpoint: %w", l.run.ID, err)
	}
	l.front = state.Frontier{Seq: last.Seq, Hash: last.Hash, Offset: int64(res.Frontier.Ledger)}
	l.last = jetstream.Record{Seq: res.Frontier.Ledger, Header: hdrs[0], Data: bodies[0]}
	c.gen, c.seq, c.known = m.Generation, res.Frontier.Checkpoint, true
	return withOffset(m, res.Frontier.Ledger), nil
}

// withOffset is m with its ledger frontier's stream sequence set, and its
// checksum over that: the manifest of a checkpoint committed with the
// records before it as a separate commit would have written it.
func withOffset(m storage.Manifest, seq uint64) storage.Manifest {
	m.LedgerFrontier.Offset = int64(seq)
	m.Checksum = m.Sum()
	return m
}
