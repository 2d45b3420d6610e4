package archive

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Schema names the archive format.
const Schema = "acr.run-archive/v0.1"

// Run is a run at rest, as an archive holds it.
type Run struct {
	RunID      string
	Checkpoint Checkpoint
	// Ledger is every ledger line, newline-terminated.
	Ledger []byte
	// Inbox holds the items waiting for a cycle.
	Inbox []Item
	// World is the sandbox world's tree; empty for a run whose world is a
	// real directory.
	World []Entry
	// Keys are the idempotency table's files.
	Keys []File
}

// Checkpoint is the committed checkpoint without what a store adds to it
// (the manifest's generation, the ledger frontier's offset).
type Checkpoint struct {
	CycleSeq int64
	// Revision is the acr build that wrote the checkpoint.
	Revision string
	// LedgerSeq and LedgerHash name the ledger line the checkpoint covers:
	// the ledger's last.
	LedgerSeq  int64
	LedgerHash string
	// Files maps each checkpoint file's logical name to its bytes.
	Files map[string][]byte
}

// Item is one inbox item: its id and its sealed bytes.
type Item struct {
	ID   string
	Body []byte
}

// Type says what a world entry is.
type Type string

// The kinds of world entries.
const (
	TypeDir     Type = "dir"
	TypeFile    Type = "file"
	TypeSymlink Type = "symlink"
)

// Entry is one entry of the world tree. Data is a file's content or a
// symlink's target; Mode holds the permission bits of a file or a
// directory (none for a symlink).
type Entry struct {
	Path string
	Type Type
	Mode fs.FileMode
	Data []byte
}

// File is one file of the idempotency table.
type File struct {
	Path string
	Data []byte
}

// Error says what is wrong with an archive and where: the byte offset and
// the entry (as its line names it), when known.
type Error struct {
	Offset int64
	Entry  string
	Msg    string
}

func (e *Error) Error() string {
	if e.Entry == "" {
		return fmt.Sprintf("byte %d: %s", e.Offset, e.Msg)
	}
	return fmt.Sprintf("byte %d, %s: %s", e.Offset, e.Entry, e.Msg)
}

// line is every line of an archive; which members a line has depends on
// its kind (doc.go), and Encode writes exactly those.
type line struct {
	Schema     string            `json:"schema,omitempty"`
	RunID      string            `json:"run_id,omitempty"`
	Kind       string            `json:"kind,omitempty"`
	CycleSeq   *int64            `json:"cycle_seq,omitempty"`
	Revision   *string           `json:"revision,omitempty"`
	LedgerSeq  *int64            `json:"ledger_seq,omitempty"`
	LedgerHash string            `json:"ledger_hash,omitempty"`
	Name       string            `json:"name,omitempty"`
	ID         string            `json:"id,omitempty"`
	Path       string            `json:"path,omitempty"`
	Type       Type              `json:"type,omitempty"`
	Mode       string            `json:"mode,omitempty"`
	Size       *int64            `json:"size,omitempty"`
	SHA256     codec.Fingerprint `json:"sha256,omitempty"`
	Entries    *int64            `json:"entries,omitempty"`
}

// Line kinds.
const (
	kindCheckpoint     = "checkpoint"
	kindCheckpointFile = "checkpoint_file"
	kindLedger         = "ledger"
	kindInbox          = "inbox"
	kindWorld          = "world"
	kindKeys           = "keys"
	kindEnd            = "end"
)

var (
	fileNameRE = regexp.MustCompile(`^[a-z0-9_]{1,64}$`)
	itemIDRE   = regexp.MustCompile(`^[a-z]{1,16}-[0-9a-f]{24}$`)
	hashRE     = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// Encode writes r as an archive: its parts in the canonical order (doc.go),
// whatever order r lists them in. A part that could not be read back (a
// path that is not clean, a directory missing for an entry, a duplicate)
// is an error, so that Encode never writes what Parse refuses.
func Encode(r Run) ([]byte, error) {
	if err := check(&r); err != nil {
		return nil, err
	}
	var w writer
	w.line(line{Schema: Schema, RunID: r.RunID}, nil)
	c := r.Checkpoint
	w.line(line{Kind: kindCheckpoint, CycleSeq: &c.CycleSeq, Revision: &c.Revision, LedgerSeq: &c.LedgerSeq, LedgerHash: c.LedgerHash}, nil)
	for _, name := range slices.Sorted(maps.Keys(c.Files)) {
		w.line(line{Kind: kindCheckpointFile, Name: name}, c.Files[name])
	}
	w.line(line{Kind: kindLedger}, r.Ledger)
	for _, it := range r.Inbox {
		w.line(line{Kind: kindInbox, ID: it.ID}, it.Body)
	}
	for _, e := range r.World {
		l := line{Kind: kindWorld, Path: e.Path, Type: e.Type}
		if e.Type != TypeSymlink {
			l.Mode = fmt.Sprintf("%04o", e.Mode.Perm())
		}
		if e.Type == TypeDir {
			w.line(l, nil)
			continue
		}
		w.line(l, e.Data)
	}
	for _, f := range r.Keys {
		w.line(line{Kind: kindKeys, Path: f.Path}, f.Data)
	}
	if w.err != nil {
		return nil, w.err
	}
	n := int64(w.entries - 1)
	sum := codec.FingerprintOf(w.buf.Bytes())
	w.line(line{Kind: kindEnd, Entries: &n, SHA256: sum}, nil)
	return w.buf.Bytes(), w.err
}

// writer appends lines and bodies.
type writer struct {
	buf     bytes.Buffer
	entries int
	err     error
}

// line writes l, and when body is not nil (a body-bearing kind), its size,
// hash and the body.
func (w *writer) line(l line, body []byte) {
	if w.err != nil {
		return
	}
	if body != nil || bodyKind(l) {
		n := int64(len(body))
		l.Size, l.SHA256 = &n, codec.FingerprintOf(body)
	}
	b, err := codec.Marshal(l)
	if err != nil {
		w.err = err
		return
	}
	w.buf.Write(b)
	w.buf.WriteByte('\n')
	if l.Size != nil {
		w.buf.Write(body)
		w.buf.WriteByte('\n')
	}
	w.entries++
}

// bodyKind reports whether a line of l's kind (and type) carries a body,
// even an empty one.
func bodyKind(l line) bool {
	switch l.Kind {
	case kindCheckpointFile, kindLedger, kindInbox, kindKeys:
		return true
	case kindWorld:
		return l.Type == TypeFile || l.Type == TypeSymlink
	}
	return false
}

// check validates r and sorts its lists into the canonical order.
func check(r *Run) error {
	if r.RunID == "" {
		return errors.New("archive: empty run id")
	}
	c := r.Checkpoint
	if c.CycleSeq < 0 || c.LedgerSeq < 0 {
		return errors.New("archive: negative cycle or ledger seq")
	}
	if !hashRE.MatchString(c.LedgerHash) {
		return fmt.Errorf("archive: ledger hash %q is not sha256:<64 hex>", c.LedgerHash)
	}
	if len(c.Files) == 0 {
		return errors.New("archive: a checkpoint without files")
	}
	for name := range c.Files {
		if !fileNameRE.MatchString(name) {
			return fmt.Errorf("archive: checkpoint file name %q: want lower-case letters, digits and '_'", name)
		}
	}
	r.Inbox = slices.Clone(r.Inbox)
	slices.SortFunc(r.Inbox, func(a, b Item) int { return strings.Compare(a.ID, b.ID) })
	for i, it := range r.Inbox {
		if !itemIDRE.MatchString(it.ID) {
			return fmt.Errorf("archive: inbox item id %q: want <kind>-<24 hex>", it.ID)
		}
		if i > 0 && r.Inbox[i-1].ID == it.ID {
			return fmt.Errorf("archive: inbox item %s twice", it.ID)
		}
	}
	r.World = slices.Clone(r.World)
	slices.SortFunc(r.World, func(a, b Entry) int { return strings.Compare(a.Path, b.Path) })
	dirs := map[string]bool{}
	for i, e := range r.World {
		if err := checkEntry(e, dirs); err != nil {
			return fmt.Errorf("archive: world entry %q: %w", e.Path, err)
		}
		if i > 0 && r.World[i-1].Path == e.Path {
			return fmt.Errorf("archive: world entry %q twice", e.Path)
		}
	}
	r.Keys = slices.Clone(r.Keys)
	slices.SortFunc(r.Keys, func(a, b File) int { return strings.Compare(a.Path, b.Path) })
	for i, f := range r.Keys {
		if _, err := world.CleanPath(f.Path); err != nil {
			return fmt.Errorf("archive: keys file: %w", err)
		}
		if i > 0 && r.Keys[i-1].Path == f.Path {
			return fmt.Errorf("archive: keys file %q twice", f.Path)
		}
	}
	return nil
}

// checkEntry checks one world entry against the directories listed before
// it (dirs), and adds it there if it is one.
func checkEntry(e Entry, dirs map[string]bool) error {
	if _, err := world.CleanPath(e.Path); err != nil {
		return err
	}
	if i := strings.LastIndexByte(e.Path, '/'); i >= 0 && !dirs[e.Path[:i]] {
		return fmt.Errorf("its directory %q is not listed before it", e.Path[:i])
	}
	if e.Mode&^fs.ModePerm != 0 {
		return fmt.Errorf("mode %v: only permission bits", e.Mode)
	}
	switch e.Type {
	case TypeDir:
		if len(e.Data) > 0 {
			return errors.New("a directory with data")
		}
		dirs[e.Path] = true
	case TypeFile:
	case TypeSymlink:
		if len(e.Data) == 0 || bytes.IndexByte(e.Data, 0) >= 0 {
			return errors.New("a symlink needs a target without NUL bytes")
		}
		if e.Mode != 0 {
			return errors.New("a symlink has no mode")
		}
	default:
		return fmt.Errorf("unknown type %q", e.Type)
	}
	return nil
}
