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
	m, doc, err := encodeCheckpoint(cm)
	if err != nil {
		return storage.Manifest{}, fmt.Errorf("commit checkpoint of %s: %w", c.run.ID, err)
	}
	st, err := json.Marshal(statusOf(cm, m))
	if err != nil {
		return storage.Manifest{}, err
	}
	h := nats.Header{hdrGeneration: {strconv.FormatInt(m.Generation, 10)}}
	packed, enc := c.run.s.pack.pack(doc)
	if enc != "" {
		h.Set(hdrEncoding, enc)
	}
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
