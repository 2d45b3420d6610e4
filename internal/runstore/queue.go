package runstore

import (
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/inbox"
)

// Queue is a run's inbox as the commands that queue into it see it (wake,
// approve, deny, stop) and status, which shows what waits. They work
// without the run lock, while a writer runs, so Queue is all they get:
// what waits, and a way to add an item.
type Queue interface {
	// List returns the items waiting, oldest first, and the ones that
	// could not be decoded.
	List() ([]inbox.Item, []inbox.Rejected, error)
	// Put seals an item and adds it durably; it returns the item's id.
	// Putting the same item twice is one item.
	Put(v any) (string, error)
}

// dirQueue is the directory inbox as a Queue.
type dirQueue struct{ dirstore.Inbox }

// Put implements Queue.
func (q dirQueue) Put(v any) (string, error) { return q.Write(v) }

// OpenQueue opens the inbox of the run in the state directory dir, which
// must be one (see OpenDir). It never takes the lock.
func OpenQueue(dir string) (Queue, error) {
	fsys, err := OpenDir(dir)
	if err != nil {
		return nil, err
	}
	return dirQueue{dirstore.Inbox{FS: fsys}}, nil
}
