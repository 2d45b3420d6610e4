package runstore

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// Export and import move a run between stores as one archive (package
// archive): export reads a run at rest under its lock or lease, checks it
// as import will, and returns it; import checks an archive again and
// creates the run it holds in a store where there is none, so that it
// exists whole or not at all. The ledger, the checkpoint files, the inbox
// items and the world move byte for byte; the checkpoint's manifest is
// made again by the target store (its generation starts at 1, its ledger
// frontier's offset is the target's own position of the same line).

// ErrNotAtRest means a run's ledger goes beyond its checkpoint (a cycle a
// crash cut off, or a torn last line): it is exported once acr recover
// has brought it to a checkpoint again.
var ErrNotAtRest = errors.New("the run is not at rest")

// NotAtRestError is ErrNotAtRest with the run and what is beyond.
type NotAtRestError struct {
	Where  string
	Beyond string
}

func (e *NotAtRestError) Error() string {
	return fmt.Sprintf("%s is not at rest: %s; run acr recover on it first (it finishes or rolls forward what the ledger holds), then export again", e.Where, e.Beyond)
}

// Unwrap lets errors.Is(err, ErrNotAtRest) match.
func (e *NotAtRestError) Unwrap() error { return ErrNotAtRest }

// Exported is a run read for export, with what could not be carried.
type Exported struct {
	Run archive.Run
	// State is the run's checkpoint, decoded.
	State kernel.EngineState
	// Skipped are inbox items that do not decode: a cycle would set them
	// aside (quarantine); an archive holds only items that decode.
	Skipped []inbox.Rejected
}

// ExportDir reads the run in the state directory dir for an archive,
// holding the run's lock (storage.ErrBusy while another invocation holds
// it). It writes nothing into the directory but the lock file.
func ExportDir(dir string) (Exported, error) {
	fsys, err := RequireRun(dir)
	if err != nil {
		return Exported{}, err
	}
	st := dirstore.NewStore(fsys)
	unlock, err := st.Lock()
	if err != nil {
		return Exported{}, err
	}
	defer unlock.Unlock()
	if err := requireManifest(fsys, fsys.Path()); err != nil {
		return Exported{}, err
	}
	snap, err := st.Load()
	if err != nil {
		return Exported{}, err
	}
	led, err := ledger.Open(fsys)
	if ledger.IsNotExist(err) {
		return Exported{}, &state.IntegrityError{File: ledger.FileName, Msg: "the ledger is missing"}
	}
	if err != nil {
		return Exported{}, err
	}
	front, torn := led.Frontier(), led.Torn()
	_ = led.Close()
	where := "the run in " + fsys.Path()
	if torn != nil {
		return Exported{}, &NotAtRestError{Where: where, Beyond: fmt.Sprintf("%s ends in a torn line at byte %d (a crash cut off an append)", ledger.FileName, torn.Offset)}
	}
	if err := atRest(where, front, snap.Manifest.LedgerFrontier); err != nil {
		return Exported{}, err
	}
	b, err := ledger.ReadBytes(fsys)
	if err != nil {
		return Exported{}, err
	}
	if int64(len(b)) != front.Offset {
		return Exported{}, fmt.Errorf("read ledger: %d bytes, its end was at byte %d", len(b), front.Offset)
	}
	items, bad, err := dirstore.Inbox{FS: fsys}.List()
	if err != nil {
		return Exported{}, err
	}
	spec, err := kernel.DecodeSpec(snap.Files)
	if err != nil {
		return Exported{}, err
	}
	w, err := readWorldDir(fsys.Path(), spec)
	if err != nil {
		return Exported{}, err
	}
	return exported(snap, b, items, bad, w)
}

// Export reads the run for an archive, holding its lease for holder
// (storage.ErrBusy while a worker or another command has it). Its world
// is read from the store (see readRemoteWorld).
func (m *Remote) Export(ctx context.Context, holder storage.Holder) (Exported, error) {
	l, err := m.Store.Acquire(ctx, m.Run.ID, holder)
	if err != nil {
		return Exported{}, fmt.Errorf("run %s: %w", m.Run.ID, err)
	}
	_, stop := l.Keep(ctx)
	defer func() {
		stop()
		_ = l.Release(context.WithoutCancel(ctx))
	}()
	snap, err := m.load()
	if err != nil {
		return Exported{}, err
	}
	spec, err := kernel.DecodeSpec(snap.Files)
	if err != nil {
		return Exported{}, err
	}
	w, err := readRemoteWorld(m, spec)
	if err != nil {
		return Exported{}, err
	}
	h, err := m.Run.History()
	if err != nil {
		return Exported{}, err
	}
	b, front, err := ledgerLines(h)
	if err != nil {
		return Exported{}, err
	}
	if err := atRest("run "+m.Run.ID+" in "+m.URL, front, snap.Manifest.LedgerFrontier); err != nil {
		return Exported{}, err
	}
	items, bad, err := m.Run.Inbox().List()
	if err != nil {
		return Exported{}, err
	}
	return exported(snap, b, items, bad, w)
}

// atRest checks that the ledger ends where the checkpoint says (seq and
// hash; offsets are each backend's own).
func atRest(where string, end, ckpt state.Frontier) error {
	switch {
	case end.Seq > ckpt.Seq:
		return &NotAtRestError{Where: where, Beyond: fmt.Sprintf("the ledger goes on past the checkpoint's seq %d to seq %d (a cycle a crash cut off)", ckpt.Seq, end.Seq)}
	case end.Seq < ckpt.Seq:
		return fmt.Errorf("%s: %w: the ledger ends at seq %d, the checkpoint expects seq %d", where, ledger.ErrBehind, end.Seq, ckpt.Seq)
	case end.Hash != ckpt.Hash:
		return fmt.Errorf("%s: %w: the ledger ends at seq %d with hash %s, the checkpoint expects %s", where, ledger.ErrCorrupt, end.Seq, end.Hash, ckpt.Hash)
	}
	return nil
}

// ledgerLines gives a history's lines as the file ledger holds them, and
// the last line's frontier. The lines are framed again from what each
// line was parsed into (ledger/doc.go: the framing is fixed and every
// member sits where the parser found it); verifyLedger then walks the
// result, so a framing that differed in one byte would fail its hash.
func ledgerLines(h History) ([]byte, state.Frontier, error) {
	var b []byte
	front := state.GenesisFrontier()
	err := h.ScanLines(func(l ledger.Line) error {
		b = append(b, `{"chain":"`...)
		b = append(b, l.Chain...)
		b = append(b, `","event":`...)
		b = append(b, l.Event...)
		b = append(b, `,"hash":"`...)
		b = append(b, l.Hash...)
		b = append(b, `","seq":`...)
		b = strconv.AppendInt(b, l.Seq, 10)
		b = append(b, "}\n"...)
		front = state.Frontier{Seq: l.Seq, Hash: l.Hash, Offset: int64(len(b))}
		return nil
	})
	return b, front, err
}

// exported builds the archive of a run at rest and checks it as an import
// will, so that export never writes an archive import refuses.
func exported(snap storage.Snapshot, led []byte, items []inbox.Item, bad []inbox.Rejected, w movedWorld) (Exported, error) {
	m := snap.Manifest
	r := archive.Run{
		RunID: m.RunID,
		Checkpoint: archive.Checkpoint{CycleSeq: m.CycleSeq, Revision: m.WrittenAtRevision,
			LedgerSeq: m.LedgerFrontier.Seq, LedgerHash: m.LedgerFrontier.Hash, Files: snap.Files},
		Ledger: led, World: w.Tree, Keys: w.Keys,
	}
	for _, it := range items {
		r.Inbox = append(r.Inbox, archive.Item{ID: it.ID, Body: it.Body})
	}
	st, err := checkRun(r)
	if err != nil {
		return Exported{}, fmt.Errorf("export: %w", err)
	}
	return Exported{Run: r, State: st, Skipped: bad}, nil
}

// checkRun checks what an archive holds beyond its own hashes: the ledger
// walks (framing, hashes, chain, strict events) and ends at the line the
// checkpoint covers; the checkpoint files decode and belong together
// (every ref in the run state matches a file) and are of the archive's
// run and cycle; every inbox item decodes under its id; a world that is a
// real directory comes without a world tree.
func checkRun(r archive.Run) (kernel.EngineState, error) {
	c := r.Checkpoint
	if err := verifyLedger(r.Ledger, state.Frontier{Seq: c.LedgerSeq, Hash: c.LedgerHash, Offset: int64(len(r.Ledger))}); err != nil {
		return kernel.EngineState{}, err
	}
	st, err := kernel.Decode(c.Files)
	if err != nil {
		return kernel.EngineState{}, fmt.Errorf("checkpoint: %w", err)
	}
	if st.Run.RunID != r.RunID || st.Run.CycleSeq != c.CycleSeq {
		return kernel.EngineState{}, &state.IntegrityError{File: kernel.FileRunState, Msg: fmt.Sprintf(
			"is run %s at cycle %d, the archive's checkpoint is run %s at cycle %d", st.Run.RunID, st.Run.CycleSeq, r.RunID, c.CycleSeq)}
	}
	for _, it := range r.Inbox {
		if _, err := inbox.Decode(it.ID, it.Body); err != nil {
			return kernel.EngineState{}, &state.IntegrityError{File: "inbox item " + it.ID, Msg: err.Error()}
		}
	}
	if st.Spec.Root != "" && len(r.World) > 0 {
		return kernel.EngineState{}, &state.IntegrityError{File: "world", Msg: "the run's world is the directory " + st.Spec.Root + ", yet a world tree comes with it"}
	}
	if st.Spec.Git != nil && len(r.World) > 0 {
		return kernel.EngineState{}, &state.IntegrityError{File: "world", Msg: "the run's world is " + st.Spec.Git.Describe() + ", yet a world tree comes with it"}
	}
	return st, nil
}

// verifyLedger walks ledger lines in memory as acr ledger verify walks a
// file, and checks that they end exactly at the line front names.
func verifyLedger(b []byte, front state.Frontier) error {
	mem := disk.NewMem()
	if err := mem.MkdirAll(disk.Dir(ledger.FileName)); err != nil {
		return err
	}
	if err := mem.WriteFile(ledger.FileName, b); err != nil {
		return err
	}
	rep, err := ledger.Verify(mem, &front)
	if err != nil {
		return fmt.Errorf("verify ledger: %w", err)
	}
	if !rep.OK {
		return fmt.Errorf("ledger: %w", rep.Damage)
	}
	if rep.Torn != nil {
		return fmt.Errorf("ledger: %w: a torn last line at byte %d", ledger.ErrCorrupt, rep.Torn.Offset)
	}
	if rep.Frontier.Seq != front.Seq || rep.Frontier.Hash != front.Hash {
		return fmt.Errorf("ledger: %w: it ends at seq %d, the checkpoint covers seq %d", ledger.ErrCorrupt, rep.Frontier.Seq, front.Seq)
	}
	return nil
}
