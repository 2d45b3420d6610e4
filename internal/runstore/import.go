package runstore

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// ImportExistsError means an import found a run, or what is left of one,
// where it would create the archive's run. Import never replaces a run.
// It matches ErrRunExists.
type ImportExistsError struct {
	Where string
	// Damaged says what is there when it is not a whole run.
	Damaged string
}

func (e *ImportExistsError) Error() string {
	if e.Damaged != "" {
		return fmt.Sprintf("%s holds %s: acr import creates a run only where there is none; clear it (acr init --force archives a state directory's run) or import elsewhere", e.Where, e.Damaged)
	}
	return fmt.Sprintf("a run already exists in %s: acr import never replaces a run; import into an empty state directory, or another store", e.Where)
}

// Unwrap lets errors.Is(err, ErrRunExists) match.
func (e *ImportExistsError) Unwrap() error { return ErrRunExists }

// Imported is what an import created.
type Imported struct {
	State kernel.EngineState
	// Records is how many ledger records the run has.
	Records int64
	// Resumed is how many of them an earlier import that was cut off had
	// stored already (a JetStream store); 0 otherwise.
	Resumed int64
}

// CheckArchive parses an archive and checks what it holds as export did:
// the archive's own hashes, then the ledger's chain, the checkpoint files
// and the inbox items. Nothing is written anywhere.
func CheckArchive(b []byte) (archive.Run, kernel.EngineState, error) {
	r, err := archive.Parse(b)
	if err != nil {
		return archive.Run{}, kernel.EngineState{}, err
	}
	st, err := checkRun(r)
	if err != nil {
		return archive.Run{}, kernel.EngineState{}, err
	}
	return r, st, nil
}

// ImportDir creates the archive's run (checked by CheckArchive) in the
// state directory dir, which must hold no run, the way init creates one:
// built complete in the staging directory inside it and swapped in, so
// that a crash leaves either no run or the whole run (a swap decided and
// not finished is finished by the next command that takes the lock). A
// failure leaves dir as it was, and removes it if the import created it.
func ImportDir(dir string, r archive.Run, st kernel.EngineState, opt Options) (Imported, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return Imported{}, err
	}
	fi, err := os.Stat(abs)
	switch {
	case err == nil && !fi.IsDir():
		return Imported{}, &NotDirError{Path: dir}
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return Imported{}, fmt.Errorf("state directory %s: %w", dir, err)
	case err == nil:
		if err := checkLayout(abs); err != nil {
			return Imported{}, err
		}
		if ok, _ := existsPath(filepath.Join(abs, dirstore.ManifestName)); ok {
			return Imported{}, &ImportExistsError{Where: abs}
		}
	}
	made, err := mkdirAllRecorded(abs)
	if err != nil {
		return Imported{}, fmt.Errorf("create state directory %s: %w", dir, err)
	}
	hadLock, _ := existsPath(filepath.Join(abs, dirstore.LockName))
	undo := func() {
		if !hadLock {
			if es, err := os.ReadDir(abs); err == nil && len(es) == 1 && es[0].Name() == dirstore.LockName {
				_ = os.Remove(filepath.Join(abs, dirstore.LockName))
			}
		}
		for _, d := range made {
			_ = os.Remove(d)
		}
	}
	fsys, err := disk.OpenOSDir(abs)
	if err != nil {
		undo()
		return Imported{}, err
	}
	if err := importOn(store{fsys: fsys, root: abs}, r, st, opt); err != nil {
		undo()
		return Imported{}, err
	}
	return Imported{State: st, Records: r.Checkpoint.LedgerSeq}, nil
}

// ImportOn is ImportDir on fsys, with the sandbox world under worldRoot
// on the real file system, as InitOn creates a run: tests use it with
// disk.Mem to cut the power in the middle of an import.
func ImportOn(fsys disk.FS, worldRoot string, r archive.Run, st kernel.EngineState, opt Options) error {
	return importOn(store{fsys: fsys, root: worldRoot, world: worldFS(fsys, worldRoot)}, r, st, opt)
}

// importOn is ImportDir under the run lock: build in the staging
// directory, decide, swap (init.go has the protocol).
func importOn(s store, r archive.Run, st kernel.EngineState, opt Options) error {
	unlock, err := dirstore.NewStore(s.fsys).Lock()
	if err != nil {
		return err
	}
	defer unlock.Unlock()
	if err := finishSwap(s); err != nil {
		return err
	}
	k, found, err := inspect(s.fsys)
	if err != nil {
		return err
	}
	switch k {
	case kindRun:
		return &ImportExistsError{Where: s.root}
	case kindDamaged:
		return &ImportExistsError{Where: s.root, Damaged: fmt.Sprintf("what is left of a damaged run (no %s, but %v)", dirstore.ManifestName, found)}
	}
	if err := buildImport(s, r, st, opt); err != nil {
		return discard(s, err)
	}
	// Parts a run does not start from (a stray inbox or sandbox of no
	// run) are archived as init archives them.
	name, err := archiveName(s, opt)
	if err != nil {
		return discard(s, err)
	}
	rec, err := codec.Marshal(swapRecord{Schema: swapSchema, Archive: name})
	if err != nil {
		return discard(s, err)
	}
	if err := disk.ReplaceFile(s.fsys, stagingDir+"/"+swapFile, rec); err != nil {
		return discard(s, fmt.Errorf("import: %w", err))
	}
	if err := finishSwap(s); err != nil {
		return err
	}
	// The swap's renames are atomic and redone from the swap record after
	// a crash; this makes them durable now, so the run is there whole
	// when import returns.
	return s.fsys.SyncDir(".")
}

// buildImport writes the whole run into the staging directory: inbox,
// ledger, world and idempotency table, and the checkpoint with its
// manifest last, each durable.
func buildImport(s store, r archive.Run, st kernel.EngineState, opt Options) error {
	for _, f := range s.all() {
		if err := f.RemoveAll(stagingDir); err != nil {
			return fmt.Errorf("import: remove an unfinished earlier attempt: %w", err)
		}
		if err := f.MkdirAll(stagingDir); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	sub := disk.Sub(s.fsys, stagingDir)
	if err := sub.MkdirAll(dirstore.InboxDir); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	for _, it := range r.Inbox {
		if err := sub.WriteFile(dirstore.InboxDir+"/"+it.ID+".json", it.Body); err != nil {
			return fmt.Errorf("import: inbox item %s: %w", it.ID, err)
		}
	}
	if err := sub.SyncDir(dirstore.InboxDir); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := sub.MkdirAll(disk.Dir(ledger.FileName)); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := disk.ReplaceFile(sub, ledger.FileName, r.Ledger); err != nil {
		return fmt.Errorf("import: ledger: %w", err)
	}
	if err := writeWorldDir(filepath.Join(s.root, stagingDir), sub, st.Spec, movedWorld{Tree: r.World, Keys: r.Keys}); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	c := r.Checkpoint
	_, err := dirstore.NewStore(sub).Commit(storage.Commit{RunID: r.RunID, CycleSeq: c.CycleSeq, Revision: c.Revision,
		Frontier: state.Frontier{Seq: c.LedgerSeq, Hash: c.LedgerHash, Offset: int64(len(r.Ledger))}, Files: c.Files})
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	return nil
}

// importBatch bounds the records of one ledger append into a JetStream
// store (an atomic batch holds at most 1000 messages) and its bytes.
const (
	importBatch      = 256
	importBatchBytes = 4 << 20
)

// Import creates the archive's run (checked by CheckArchive) in the
// store, holding its lease for holder. The run exists once its checkpoint
// is committed, which is the last write: before it, the world is written
// (built beside its place and renamed in), then the ledger records the
// store does not hold yet, then the inbox items. An import cut off before
// its checkpoint leaves no run, and the same import run again resumes
// from the records it finds (they must be the archive's own, or the run
// is refused as damaged).
func (m *Remote) Import(ctx context.Context, r archive.Run, st kernel.EngineState, holder storage.Holder) (Imported, error) {
	if st.Spec.Root != "" {
		return Imported{}, ErrRootWorld
	}
	if r.RunID != m.Run.ID {
		return Imported{}, fmt.Errorf("import: the archive holds run %s, not %s", r.RunID, m.Run.ID)
	}
	where := m.URL + " run " + m.Run.ID
	l, err := m.Store.Acquire(ctx, m.Run.ID, holder)
	if err != nil {
		return Imported{}, fmt.Errorf("run %s: %w", m.Run.ID, err)
	}
	held, stop := l.Keep(ctx)
	defer func() {
		stop()
		_ = l.Release(context.WithoutCancel(ctx))
	}()
	if _, err := m.Run.Checkpoints().Load(); err == nil {
		return Imported{}, &ImportExistsError{Where: where}
	} else if !errors.Is(err, storage.ErrNoRun) {
		return Imported{}, err
	}
	recs, err := archiveRecords(r.Ledger)
	if err != nil {
		return Imported{}, err
	}
	led, err := m.Run.OpenLedger()
	if err != nil {
		return Imported{}, err
	}
	done := led.Frontier().Seq
	if done > 0 && (done > int64(len(recs)) || recs[done-1].Hash != led.Frontier().Hash) {
		return Imported{}, &ImportExistsError{Where: where, Damaged: fmt.Sprintf("%d ledger records without a checkpoint that are not this archive's (an init or import cut off)", done)}
	}
	if err := writeRemoteWorld(m, st.Spec, movedWorld{Tree: r.World, Keys: r.Keys}); err != nil {
		return Imported{}, err
	}
	for i := done; i < int64(len(recs)); {
		if err := held.Err(); err != nil {
			return Imported{}, fmt.Errorf("import: %w", context.Cause(held))
		}
		j, size := i, 0
		for j < int64(len(recs)) && j-i < importBatch && (j == i || size+int(recs[j].Length) <= importBatchBytes) {
			size += int(recs[j].Length)
			j++
		}
		evs := make([]event.Event, 0, j-i)
		for _, rec := range recs[i:j] {
			evs = append(evs, rec.Event)
		}
		out, err := led.Append(evs)
		if err != nil {
			return Imported{}, fmt.Errorf("import: %w", err)
		}
		if got := out[len(out)-1]; got.Seq != recs[j-1].Seq || got.Hash != recs[j-1].Hash {
			return Imported{}, fmt.Errorf("import: ledger record seq %d was stored with hash %s, the archive has %s", got.Seq, got.Hash, recs[j-1].Hash)
		}
		i = j
	}
	q := m.Run.Inbox()
	for _, it := range r.Inbox {
		item, err := inbox.Decode(it.ID, it.Body)
		if err != nil {
			return Imported{}, err
		}
		id, err := q.Put(itemValue(item))
		if err != nil {
			return Imported{}, fmt.Errorf("import: %w", err)
		}
		if id != it.ID {
			return Imported{}, fmt.Errorf("import: inbox item %s was stored as %s", it.ID, id)
		}
	}
	c := r.Checkpoint
	if f := led.Frontier(); f.Seq != c.LedgerSeq || f.Hash != c.LedgerHash {
		return Imported{}, fmt.Errorf("import: the ledger ends at seq %d, the checkpoint covers seq %d", f.Seq, c.LedgerSeq)
	}
	if _, err := m.Run.Checkpoints().Commit(storage.Commit{RunID: r.RunID, CycleSeq: c.CycleSeq, Revision: c.Revision,
		Frontier: led.Frontier(), Files: c.Files}); err != nil {
		return Imported{}, fmt.Errorf("import: %w", err)
	}
	return Imported{State: st, Records: int64(len(recs)), Resumed: done}, nil
}

// archiveRecords decodes an archive's ledger lines (verified) into
// records whose events encode back to exactly their lines' event bytes:
// a JetStream ledger frames them again, and must store the same bytes.
func archiveRecords(b []byte) ([]event.Record, error) {
	mem := disk.NewMem()
	if err := mem.MkdirAll(disk.Dir(ledger.FileName)); err != nil {
		return nil, err
	}
	if err := mem.WriteFile(ledger.FileName, b); err != nil {
		return nil, err
	}
	var recs []event.Record
	err := ledger.ScanLines(mem, func(l ledger.Line) error {
		rec, err := l.Record()
		if err != nil {
			return err
		}
		eb, _, err := rec.Event.Encode()
		if err != nil {
			return err
		}
		if !bytes.Equal(eb, l.Event) {
			return fmt.Errorf("import: ledger line seq %d: its event does not encode back to its bytes; this acr cannot store it in a JetStream ledger byte for byte", l.Seq)
		}
		recs = append(recs, rec)
		return nil
	})
	return recs, err
}

// itemValue is the value inside an inbox item, for Queue.Put.
func itemValue(it inbox.Item) any {
	switch {
	case it.Wake != nil:
		return it.Wake
	case it.Approval != nil:
		return it.Approval
	case it.Amendment != nil:
		return it.Amendment
	}
	return it.Stop
}
