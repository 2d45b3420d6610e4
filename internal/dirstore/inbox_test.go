package dirstore_test

import (
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/state"
)

func mustParse(t *testing.T, s string) *codec.Value {
	v, err := codec.Parse([]byte(s))
	require.NoError(t, err)
	return &v
}

func wake(t *testing.T, created string) *state.WakeSignal {
	return &state.WakeSignal{
		Schema: state.WakeSignalSchema, Source: "external_event", Ref: "ticket-7", DedupKey: "dk-" + created,
		Priority: 5, CreatedAt: created, ExpiresAt: "2026-12-31T00:00:00Z", By: "alice", Reason: "ticket closed",
		Payload: mustParse(t, `{"note": "hello", "n": 3}`),
	}
}

func approvalItem(created, verdict string) *state.Approval {
	return &state.Approval{Schema: state.ApprovalSchema, ActionRef: codec.MustRefOf("areq", "x"), Verdict: verdict, By: "bob", CreatedAt: created}
}

func stopItem(created string) *state.StopRequest {
	return &state.StopRequest{Schema: state.StopSchema, By: "carol", Reason: "enough", Kill: true, CreatedAt: created}
}

func TestWriteListRemove(t *testing.T) {
	m := disk.NewMem()
	items, bad, err := dirstore.Inbox{FS: m}.List()
	require.NoError(t, err)
	assert.Nil(t, items, "no inbox directory means no items")
	assert.Nil(t, bad)

	late := stopItem("2026-01-03T00:00:00Z")
	early := approvalItem("2026-01-01T00:00:00Z", "approve")
	mid1 := wake(t, "2026-01-02T00:00:00Z")
	mid2 := approvalItem("2026-01-02T00:00:00Z", "deny")
	var ids []string
	for _, v := range []any{late, early, mid1, mid2} {
		id, err := dirstore.Inbox{FS: m}.Write(v)
		require.NoError(t, err)
		ids = append(ids, id)
	}
	// Writing the same item again is harmless.
	again, err := dirstore.Inbox{FS: m}.Write(early)
	require.NoError(t, err)
	assert.Equal(t, ids[1], again)

	// Files that are not items.
	require.NoError(t, m.WriteFile("inbox/notes.txt", []byte("ignore me")))
	require.NoError(t, m.WriteFile("inbox/.wake-tmp.json", []byte("partial")))
	require.NoError(t, m.MkdirAll("inbox/rejected"))
	require.NoError(t, m.WriteFile("inbox/rejected/wake-old.json", []byte("old")))
	// Files that claim to be items but are not.
	require.NoError(t, m.WriteFile("inbox/wake-bogus.json", []byte("{}")))
	require.NoError(t, m.WriteFile("inbox/junk.json", []byte("not json")))

	namesBefore := dirNames(t, m, "inbox")
	items, bad, err = dirstore.Inbox{FS: m}.List()
	require.NoError(t, err)
	assert.Equal(t, namesBefore, dirNames(t, m, "inbox"), "List never changes the directory")

	// Ordered by creation time, then id.
	midIDs := []string{ids[2], ids[3]}
	if midIDs[1] < midIDs[0] {
		midIDs[0], midIDs[1] = midIDs[1], midIDs[0]
	}
	var got []string
	for _, it := range items {
		got = append(got, it.ID)
	}
	assert.Equal(t, []string{ids[1], midIDs[0], midIDs[1], ids[0]}, got)

	require.Len(t, bad, 2)
	assert.Equal(t, "junk.json", bad[0].Name)
	assert.Contains(t, bad[0].Reason, "malformed name")
	assert.Equal(t, "wake-bogus.json", bad[1].Name)
	assert.NotEmpty(t, bad[1].Reason)

	// Items survive a crash: Write makes the entry durable.
	m.Crash()
	items, _, err = dirstore.Inbox{FS: m}.List()
	require.NoError(t, err)
	assert.Len(t, items, 4)

	// Remove is idempotent and ignores ids that are not there.
	require.NoError(t, dirstore.Inbox{FS: m}.Consumed([]string{ids[0], ids[1]}))
	require.NoError(t, dirstore.Inbox{FS: m}.Consumed([]string{ids[0], ids[1], "stop-doesnotexist"}))
	require.NoError(t, dirstore.Inbox{FS: m}.Consumed(nil))
	items, _, err = dirstore.Inbox{FS: m}.List()
	require.NoError(t, err)
	got = nil
	for _, it := range items {
		got = append(got, it.ID)
	}
	assert.ElementsMatch(t, []string{ids[2], ids[3]}, got)
	ok, err := disk.Exists(m, "inbox/"+ids[0]+".json")
	require.NoError(t, err)
	assert.False(t, ok)
}

func dirNames(t *testing.T, fsys disk.FS, dir string) []string {
	t.Helper()
	es, err := fsys.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, e := range es {
		out = append(out, e.Name())
	}
	return out
}

func TestQuarantineSurvivesPowerLoss(t *testing.T) {
	m := disk.NewMem()
	require.NoError(t, m.MkdirAll(dirstore.InboxDir))
	require.NoError(t, disk.ReplaceFile(m, "inbox/wake-bad.json", []byte("garbage")))

	require.NoError(t, dirstore.Inbox{FS: m}.Quarantine("wake-bad.json"))
	check := func() {
		t.Helper()
		got, err := m.ReadFile("inbox/rejected/wake-bad.json")
		require.NoError(t, err)
		assert.Equal(t, "garbage", string(got))
		_, err = m.Stat("inbox/wake-bad.json")
		assert.ErrorIs(t, err, fs.ErrNotExist)
	}
	check()
	// The move is durable.
	m.Crash()
	check()

	// The quarantined file is no longer listed or rejected again.
	items, bad, err := dirstore.Inbox{FS: m}.List()
	require.NoError(t, err)
	assert.Empty(t, items)
	assert.Empty(t, bad)

	// Quarantining a file that is not there is an error.
	assert.Error(t, dirstore.Inbox{FS: m}.Quarantine("wake-bad.json"))
}

// listCounter counts the directory listings made through it.
type listCounter struct {
	disk.FS
	lists int
}

func (c *listCounter) ReadDir(name string) ([]fs.DirEntry, error) {
	c.lists++
	return c.FS.ReadDir(name)
}

// memoInbox is an inbox on the real file system, listed through a
// counter, with a memo whose clock the test sets.
func memoInbox(t *testing.T) (dirstore.Inbox, *listCounter, *time.Time) {
	t.Helper()
	osfs, err := disk.OpenOSDir(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, osfs.MkdirAll(dirstore.InboxDir))
	fi, err := osfs.Stat(dirstore.InboxDir)
	require.NoError(t, err)
	// Well past any timestamp tick after the directory's last change.
	now := fi.ModTime().Add(10 * time.Second)
	c := &listCounter{FS: osfs}
	return dirstore.Inbox{FS: c, Memo: &disk.DirMemo{Clock: func() time.Time { return now }}}, c, &now
}

func TestInboxMemo(t *testing.T) {
	listed := func(t *testing.T, ib dirstore.Inbox, c *listCounter) (int, int) {
		t.Helper()
		before := c.lists
		items, bad, err := ib.List()
		require.NoError(t, err)
		assert.Empty(t, bad)
		return c.lists - before, len(items)
	}
	t.Run("an empty, settled inbox is listed once", func(t *testing.T) {
		ib, c, _ := memoInbox(t)
		for range 3 {
			listed(t, ib, c)
		}
		assert.Equal(t, 1, c.lists)
	})
	t.Run("an item that arrives is seen at once", func(t *testing.T) {
		ib, c, _ := memoInbox(t)
		listed(t, ib, c)
		_, err := dirstore.Inbox{FS: c.FS}.Write(wake(t, "2026-01-02T00:00:00Z"))
		require.NoError(t, err)
		n, items := listed(t, ib, c)
		assert.Equal(t, 1, n)
		assert.Equal(t, 1, items)
		n, items = listed(t, ib, c)
		assert.Equal(t, 1, n, "an inbox that holds an item is listed every time")
		assert.Equal(t, 1, items)
	})
	t.Run("a directory changed within a tick is listed every time", func(t *testing.T) {
		ib, c, now := memoInbox(t)
		fi, err := c.FS.Stat(dirstore.InboxDir)
		require.NoError(t, err)
		*now = fi.ModTime().Add(10 * time.Millisecond)
		listed(t, ib, c)
		n, _ := listed(t, ib, c)
		assert.Equal(t, 1, n)
	})
	t.Run("a memo answers for a second", func(t *testing.T) {
		ib, c, now := memoInbox(t)
		listed(t, ib, c)
		*now = now.Add(999 * time.Millisecond)
		n, _ := listed(t, ib, c)
		assert.Equal(t, 0, n)
		*now = now.Add(2 * time.Millisecond)
		n, _ = listed(t, ib, c)
		assert.Equal(t, 1, n, "listed again once the memo is a second old")
	})
	t.Run("a clock set back", func(t *testing.T) {
		ib, c, now := memoInbox(t)
		listed(t, ib, c)
		*now = now.Add(-time.Millisecond)
		n, _ := listed(t, ib, c)
		assert.Equal(t, 1, n)
	})
	t.Run("consuming and quarantining forget", func(t *testing.T) {
		ib, c, _ := memoInbox(t)
		listed(t, ib, c)
		require.NoError(t, ib.Consumed([]string{"gone"}))
		n, _ := listed(t, ib, c)
		assert.Equal(t, 1, n)
		require.NoError(t, c.FS.WriteFile(dirstore.InboxDir+"/junk.json", []byte("junk")))
		_, bad, err := ib.List()
		require.NoError(t, err)
		require.Len(t, bad, 1)
		require.NoError(t, ib.Quarantine(bad[0].Name))
		listed(t, ib, c)
		n, _ = listed(t, ib, c)
		assert.Equal(t, 0, n, "the rejected/ directory is not an item")
	})
	t.Run("the directory removed and made again", func(t *testing.T) {
		ib, c, _ := memoInbox(t)
		listed(t, ib, c)
		require.NoError(t, c.FS.RemoveAll(dirstore.InboxDir))
		n, items := listed(t, ib, c)
		assert.Equal(t, 1, n)
		assert.Zero(t, items)
		require.NoError(t, c.FS.MkdirAll(dirstore.InboxDir))
		listed(t, ib, c)
		_, err := dirstore.Inbox{FS: c.FS}.Write(stopItem("2026-01-03T00:00:00Z"))
		require.NoError(t, err)
		n, items = listed(t, ib, c)
		assert.Equal(t, 1, n)
		assert.Equal(t, 1, items)
	})
	t.Run("a file system without identities is listed every time", func(t *testing.T) {
		c := &listCounter{FS: disk.NewMem()}
		require.NoError(t, c.MkdirAll(dirstore.InboxDir))
		ib := dirstore.Inbox{FS: c, Memo: &disk.DirMemo{}}
		listed(t, ib, c)
		n, _ := listed(t, ib, c)
		assert.Equal(t, 1, n)
	})
}
