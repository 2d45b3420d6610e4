package sandbox

import (
	"io/fs"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
)

// A cycle reads its action's target several times in a row: the
// readback after the effect, the next observation, and the next Prepare.
// When nothing has touched the file in between, the later read would only
// repeat the earlier one, so the earlier read hands its result on instead,
// to exactly one kind of reader each:
//
//   - Readback → Observe: the bytes (or only the hash, when no check
//     judges the file) the readback just read serve the next observation
//     of that one file. An observation is a walk over time anyway; this
//     one reads that file a moment earlier.
//   - Observe → Prepare: the bytes the observation judged, the bytes the
//     decision was derived from, are what Prepare plans the effect on.
//     Commit still reads the target itself before the effect and refuses
//     any other bytes than the intent's before-hash, so a plan made on
//     handed-over bytes can never be applied to a file that differs.
//
// Commit's read and the readback's read are never served from a handoff:
// one guards the effect, the other is the independent look after it.
//
// A handoff is taken only when the file still has the identity it had
// when it was read (disk.Identity: device, inode, link count, mode, size,
// and modification and change times to the nanosecond), checked with an
// lstat instead of an open and a read. A write through any path changes
// the change time, and a replace changes the inode. What an identity
// cannot show is a write within the same timestamp tick that keeps the
// size and inode, or a change a network file system's cached attributes
// do not show yet. Such a change only makes the handed-over bytes older
// than the file: the observation reports them, as one read a moment
// earlier would have; a plan made on them that writes meets Commit's own
// read, which finds the target changed and records the effect stale,
// never applied (see unapplied), and one that does not write records
// what a Prepare a moment earlier would have.
type handoff struct {
	path string
	id   disk.Identity
	sum  codec.Fingerprint
	size int64
	// data is the whole content, or nil when only the hash was kept.
	data []byte
}

// takes reports whether the file now described by fi is still the file
// the handoff was read from, so that its result may stand for a read.
func (h *handoff) takes(p string, fi fs.FileInfo) bool {
	if h == nil || h.path != p {
		return false
	}
	id, ok := disk.Identify(fi)
	return ok && id == h.id
}

// content is the handed-over bytes, capped so that a caller that appends
// to them gets a copy rather than writing into the handoff's array.
func (h *handoff) content() []byte {
	return h.data[:len(h.data):len(h.data)]
}

// newHandoff describes the content just read from p (hash sum, size
// bytes; data when the whole content is kept, else nil), whose lstat or
// fstat before the read is fi. It returns nil when the platform gives no
// identity, so that nothing is ever handed on there. A file changed
// between fi and the read has a newer identity than fi, so a later check
// misses and reads again: recording fi, not what follows the read, keeps
// the check on the safe side.
func newHandoff(p string, fi fs.FileInfo, sum codec.Fingerprint, size int64, data []byte) *handoff {
	id, ok := disk.Identify(fi)
	if !ok {
		return nil
	}
	return &handoff{path: p, id: id, sum: sum, size: size, data: data}
}

// dropHandoffs forgets every handoff: the World is about to change the
// world itself. Identities would expose the change anyway; dropping them
// keeps a handoff from ever outliving a write the World made.
func (w *World) dropHandoffs() {
	w.toObserve, w.observed = nil, nil
}

// beforeChange comes before anything that may change the world: a write
// of it, or a program run in it. Reads made before it stand for none
// after, and a directory fsync still running (DeferDirSyncs) finishes
// first, so that nothing changed later is durable ahead of it.
func (w *World) beforeChange() error {
	if err := w.beforeStaging(); err != nil {
		return err
	}
	return w.proceed()
}

// beforeStaging is beforeChange for a write that does not change the
// world yet (the temporary file of an atomic replace): it leaves the
// gate of a gated Commit for the rename (see CommitWhen).
func (w *World) beforeStaging() error {
	w.dropHandoffs()
	return w.awaitDirSync()
}
