package dirstore

import (
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/inbox"
)

// InboxDir is the inbox directory inside the state directory.
const InboxDir = "inbox"

// Inbox keeps inbox items as one atomic file each in the state directory,
// named by the item's id. Writers (`acr wake`, `acr approve`) never take the
// run lock; a cycle reads what is there.
type Inbox struct {
	FS disk.FS
	// Memo, when set, lets List answer from a stat of the directory
	// while it stays as List last found it empty, listed again at least
	// once a second (see disk.DirMemo): a loop lists its inbox every
	// cycle, and it is almost always empty. A writer's loop sets it;
	// one-shot readers need not.
	Memo *disk.DirMemo
}

// Write seals an item and drops it into the inbox atomically (temp file,
// fsync, rename, fsync of the directory). It returns the item's id. Writing
// the same item twice is harmless: it has the same id and file.
func (ib Inbox) Write(v any) (string, error) {
	fsys := ib.FS
	id, b, err := inbox.Seal(v)
	if err != nil {
		return "", err
	}
	if err := fsys.MkdirAll(InboxDir); err != nil {
		return "", fmt.Errorf("write inbox item: %w", err)
	}
	if err := disk.ReplaceFile(fsys, InboxDir+"/"+id+".json", b); err != nil {
		return "", fmt.Errorf("write inbox item %s: %w", id, err)
	}
	return id, nil
}

// List reads every item in the inbox, sorted by creation time then id, and
// reports files that fail to decode or whose content does not match their
// name. It never changes the directory.
func (ib Inbox) List() ([]inbox.Item, []inbox.Rejected, error) {
	fsys := ib.FS
	var dirInfo fs.FileInfo
	var listedAt time.Time
	if m := ib.Memo; m != nil {
		listedAt = m.Now()
		fi, err := fsys.Stat(InboxDir)
		if err == nil && m.Holds(fi, listedAt) {
			return nil, nil, nil
		}
		m.Forget()
		dirInfo = fi
	}
	entries, err := fsys.ReadDir(InboxDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("list inbox: %w", err)
	}
	var items []inbox.Item
	var bad []inbox.Rejected
	empty := true
	for _, e := range entries {
		name := e.Name()
		if e.IsDir() || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, ".json") {
			continue
		}
		empty = false
		b, err := fsys.ReadFile(InboxDir + "/" + name)
		if err != nil {
			return nil, nil, fmt.Errorf("read inbox item %s: %w", name, err)
		}
		it, err := inbox.Decode(strings.TrimSuffix(name, ".json"), b)
		if err != nil {
			bad = append(bad, inbox.Rejected{Name: name, Reason: err.Error()})
			continue
		}
		items = append(items, it)
	}
	slices.SortFunc(items, func(a, b inbox.Item) int {
		if c := strings.Compare(a.CreatedAt(), b.CreatedAt()); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	if empty && dirInfo != nil {
		ib.Memo.Remember(dirInfo, listedAt)
	}
	return items, bad, nil
}

// Consumed deletes consumed items. It is called only after a checkpoint that
// records their consumption is durable; a crash before the removal is
// harmless because the run state lists the ids as seen. The removals are not
// fsynced for the same reason.
func (ib Inbox) Consumed(ids []string) error {
	fsys := ib.FS
	ib.Memo.Forget()
	for _, id := range ids {
		err := fsys.Remove(InboxDir + "/" + id + ".json")
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("remove inbox item %s: %w", id, err)
		}
	}
	return nil
}

// Quarantine moves a file that failed to decode out of the way, into
// inbox/rejected/, so that it is reported once and kept for the operator.
func (ib Inbox) Quarantine(name string) error {
	fsys := ib.FS
	ib.Memo.Forget()
	b, err := fsys.ReadFile(InboxDir + "/" + name)
	if err != nil {
		return fmt.Errorf("quarantine inbox file %s: %w", name, err)
	}
	if err := fsys.MkdirAll(InboxDir + "/rejected"); err != nil {
		return err
	}
	if err := disk.ReplaceFile(fsys, InboxDir+"/rejected/"+name, b); err != nil {
		return fmt.Errorf("quarantine inbox file %s: %w", name, err)
	}
	if err := fsys.Remove(InboxDir + "/" + name); err != nil {
		return fmt.Errorf("quarantine inbox file %s: %w", name, err)
	}
	return fsys.SyncDir(InboxDir)
}
