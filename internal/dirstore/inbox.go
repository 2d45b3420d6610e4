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
	// while it stays as List last found it empty (see EmptyMemo). A
	// writer's loop sets it; one-shot readers need not.
	Memo *EmptyMemo
}

// EmptyMemo remembers that the inbox directory was empty, with its
// identity (disk.Identity) at that moment, so that the next List costs a
// stat rather than an open and a listing while nothing has arrived: a
// loop lists its inbox every cycle, and it is almost always empty.
//
// An item arrives by a rename into the directory, which stamps the
// directory's modification and change times and so changes its identity,
// unless it lands within the same timestamp tick as the change the memo
// saw. So the memo is taken only from a directory whose last change is
// older than the listing by more than a tick can be: 50 ms when its
// timestamps have sub-millisecond digits (a tick is then the kernel's
// clock tick, at most 10 ms), 2 s otherwise (file systems that keep
// whole seconds, or two). And whatever the stat says, the directory is
// listed again once the memo is a second old, so that a clock stepped
// back or a file server's own clock can delay an item by a second at
// most, never hide it.
type EmptyMemo struct {
	// Now reads the clock; nil is time.Now.
	Now func() time.Time

	id    disk.Identity
	taken time.Time
	ok    bool
}

// emptyMemoLife is how long an EmptyMemo answers before the directory is
// listed again whatever its stat says.
const emptyMemoLife = time.Second

func (m *EmptyMemo) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

// holds reports whether the directory whose stat is fi, at now, is still
// the empty one the memo saw.
func (m *EmptyMemo) holds(fi fs.FileInfo, now time.Time) bool {
	if !m.ok || now.Sub(m.taken) >= emptyMemoLife || now.Before(m.taken) {
		return false
	}
	id, ok := disk.Identify(fi)
	return ok && id == m.id
}

// remember records that the directory, stat fi taken at now before it was
// listed, was found empty; it records nothing when the directory changed
// too recently for its timestamps to show a change that follows.
func (m *EmptyMemo) remember(fi fs.FileInfo, now time.Time) {
	m.ok = false
	id, ok := disk.Identify(fi)
	if !ok {
		return
	}
	if !settled(id.Changed(), now) {
		return
	}
	m.id, m.taken, m.ok = id, now, true
}

// settled reports whether a directory whose timestamps say it last
// changed at changed, stat taken at now, would show any later change in
// a new timestamp: the time since must exceed a timestamp tick, taken as
// 50 ms when changed has digits below the millisecond and 2 s otherwise.
func settled(changed, now time.Time) bool {
	tick := 2 * time.Second
	if changed.Nanosecond()%int(time.Millisecond) != 0 {
		tick = 50 * time.Millisecond
	}
	return now.Sub(changed) > tick
}

// forget drops the memo.
func (m *EmptyMemo) forget() {
	if m != nil {
		m.ok = false
	}
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
		listedAt = m.now()
		fi, err := fsys.Stat(InboxDir)
		if err == nil && m.holds(fi, listedAt) {
			return nil, nil, nil
		}
		m.forget()
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
		ib.Memo.remember(dirInfo, listedAt)
	}
	return items, bad, nil
}

// Consumed deletes consumed items. It is called only after a checkpoint that
// records their consumption is durable; a crash before the removal is
// harmless because the run state lists the ids as seen. The removals are not
// fsynced for the same reason.
func (ib Inbox) Consumed(ids []string) error {
	fsys := ib.FS
	ib.Memo.forget()
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
	ib.Memo.forget()
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
