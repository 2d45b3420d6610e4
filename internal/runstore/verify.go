package runstore

import (
	"errors"
	"fmt"
	"io/fs"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// The ledger damage rule. Opening a run reads only the ledger's tail, so
// damage further back is not seen on the way in. So that no invocation
// ever adds to a ledger it has not checked:
//
//   - Every invocation that writes to the ledger records, when it ends, the
//     ledger file's size and modification time as it leaves it, and when
//     the whole chain was last walked, in ledger/verified.json.
//   - Before an invocation writes anything to the ledger (its first append
//     or tail repair), it compares: if the file is not exactly as the last
//     writer left it (an edit, a truncation, a copy from elsewhere, a
//     writer that was killed before it could record), or the record is
//     missing, or the last walk is more than a day old by the run's clock,
//     it walks the whole chain first.
//   - Damage found stops the invocation before it writes: exit 65, nothing
//     appended, nothing repaired, no record written. Every later step, run
//     and recover walks again and finds the damage again, until the ledger
//     is restored from a backup. acr never skips, truncates or rewrites a
//     damaged line.
//   - An invocation that finds nothing to do writes nothing, and so checks
//     nothing; the next one that writes does.
//
// The record is a cache: written without fsync, and a lost, torn or wrong
// one only causes a whole walk. Bit rot on the disk, which leaves the
// modification time alone, is found by the daily walk.
const (
	// VerifiedFile records the ledger as the last writer left it.
	VerifiedFile = "ledger/verified.json"
	// FullVerifyEvery is how often (by the run's clock) the whole chain is
	// walked even when the file is as the last writer left it.
	FullVerifyEvery = 24 * time.Hour
)

const verifiedSchema = "acr.ledger-verified/v0.1"

// verifiedRecord is the content of VerifiedFile.
type verifiedRecord struct {
	Schema string `json:"schema"`
	// Size and ModTimeNS describe the ledger file as the writer left it.
	Size      int64 `json:"size"`
	ModTimeNS int64 `json:"mod_time_ns"`
	// Frontier is the ledger's last line then, for people reading this.
	Frontier state.Frontier `json:"frontier"`
	// FullAt is when the whole chain was last walked (the run's clock).
	FullAt string `json:"full_walk_at"`
	// Sealed fingerprints the sealed segments as the writer left them
	// (name, size and modification time of each), "" when there are none.
	Sealed string `json:"sealed,omitempty"`
}

// guardedLedger is the ledger as the driver sees it: the first write of
// an invocation (an append or a tail repair) waits for check, and does
// not happen if check fails.
type guardedLedger struct {
	*ledger.Ledger
	check func() error
	done  bool
	err   error
}

var _ storage.Ledger = (*guardedLedger)(nil)

func (g *guardedLedger) before() error {
	if !g.done {
		g.done, g.err = true, g.check()
	}
	return g.err
}

// Append implements storage.Ledger.
func (g *guardedLedger) Append(evs []event.Event) ([]event.Record, error) {
	if err := g.before(); err != nil {
		return nil, err
	}
	return g.Ledger.Append(evs)
}

// Write is the ledger's Write (an append whose fsync the caller makes
// with Sync) behind the same check.
func (g *guardedLedger) Write(evs []event.Event) ([]event.Record, error) {
	if err := g.before(); err != nil {
		return nil, err
	}
	return g.Ledger.Write(evs)
}

// Repair implements storage.Ledger.
func (g *guardedLedger) Repair() (*storage.Repair, error) {
	if g.Ledger.Torn() == nil {
		return nil, nil // nothing to write, so nothing to check first
	}
	if err := g.before(); err != nil {
		return nil, err
	}
	return g.Ledger.Repair()
}

// checkBeforeWrite applies the damage rule, then brings a stale cycle
// index up to date (the writer owns the index; readers never write it).
func (r *Run) checkBeforeWrite(clock kernel.Clock) error {
	now := clock.Now().UTC()
	rec, ok := readVerified(r.FS)
	if ok {
		at, err := state.ParseTime(rec.FullAt)
		size, mtime, sealed, serr := ledgerStamp(r.FS)
		ok = err == nil && serr == nil && size == rec.Size && mtime == rec.ModTimeNS && sealed == rec.Sealed && !now.Before(at) && now.Sub(at) < FullVerifyEvery
	}
	if !ok {
		rep, err := ledger.Verify(r.FS, nil)
		if err != nil {
			return fmt.Errorf("verify ledger before writing: %w", err)
		}
		if !rep.OK {
			return fmt.Errorf("%w (found before this invocation wrote anything: nothing is written until the ledger is restored, see docs/operations.md)", rep.Damage)
		}
		rec.FullAt = state.FormatTime(now)
	}
	r.verified = &verifiedRecord{Schema: verifiedSchema, FullAt: rec.FullAt}
	if r.Index != nil && (!r.Index.Valid() || r.Index.Last() < r.openedAt) {
		if err := r.Index.Rebuild(); err != nil {
			return err
		}
	}
	return nil
}

// ledgerStamp describes the ledger's files as they are: events.jsonl's
// size and modification time, and a fingerprint of the sealed segments'
// names, sizes and modification times (a segment removed, replaced or
// added by hand changes it).
func ledgerStamp(fsys disk.FS) (int64, int64, string, error) {
	fi, err := fsys.Stat(ledger.FileName)
	if err != nil {
		return 0, 0, "", err
	}
	entries, err := fsys.ReadDir(ledger.SealedDir)
	if errors.Is(err, fs.ErrNotExist) {
		return fi.Size(), fi.ModTime().UnixNano(), "", nil
	}
	if err != nil {
		return 0, 0, "", err
	}
	var list []byte
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			return 0, 0, "", err
		}
		list = fmt.Appendf(list, "%s %d %d\n", e.Name(), info.Size(), info.ModTime().UnixNano())
	}
	return fi.Size(), fi.ModTime().UnixNano(), string(codec.FingerprintOf(list)), nil
}

func readVerified(fsys disk.FS) (verifiedRecord, bool) {
	var rec verifiedRecord
	b, err := fsys.ReadFile(VerifiedFile)
	if err != nil {
		return rec, false
	}
	if err := codec.UnmarshalCanonical(b, &rec); err != nil || rec.Schema != verifiedSchema {
		return rec, false
	}
	return rec, true
}

// saveVerified records the ledger as this invocation leaves it, if it
// wrote to it. The record is a cache (see above): if it cannot be written,
// the next writer walks the chain, so the error is dropped.
func (r *Run) saveVerified() {
	if r.verified == nil || r.Ledger == nil {
		return
	}
	size, mtime, sealed, err := ledgerStamp(r.FS)
	if err != nil {
		return
	}
	rec := *r.verified
	rec.Size, rec.ModTimeNS, rec.Sealed, rec.Frontier = size, mtime, sealed, r.Ledger.Frontier()
	if b, err := codec.Marshal(rec); err == nil {
		_ = r.FS.WriteCache(VerifiedFile, b)
	}
}
