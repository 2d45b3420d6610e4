package ledger

import (
	"io/fs"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
)

// sealedLists counts the listings of the sealed directory made through it.
type sealedLists struct {
	disk.FS
	lists int
}

func (c *sealedLists) ReadDir(name string) ([]fs.DirEntry, error) {
	if name == SealedDir {
		c.lists++
	}
	return c.FS.ReadDir(name)
}

// A Reader lists the sealed directory once while it is unchanged, sees a
// seal made since at its next read, and lists again when the directory
// changed within a timestamp tick or the memo is a second old.
func TestReaderListsSealedOnce(t *testing.T) {
	osfs, err := disk.CreateOSDir(t.TempDir())
	require.NoError(t, err)
	l, err := Create(osfs)
	require.NoError(t, err)
	defer l.Close()
	appendCycles(t, l, 1, 2)
	require.NoError(t, l.Seal(1))
	appendCycles(t, l, 3, 3) // cycle 3 in events.jsonl

	c := &sealedLists{FS: osfs}
	r := NewReader(c)
	memo := &r.fsys.(*cachedFS).cache.listed
	now := time.Now().Add(10 * time.Second)
	memo.Clock = func() time.Time { return now }
	for cycle := int64(1); cycle <= 3; cycle++ {
		_, err := r.Cycle(cycle)
		require.NoError(t, err)
		_, err = r.CycleCompleted(cycle)
		require.NoError(t, err)
	}
	assert.Equal(t, 1, c.lists, "six reads, one listing")

	// A seal since moved cycle 3 into a new segment and emptied
	// events.jsonl: the directory's identity changed, so it is listed
	// again and cycle 3 found there.
	want, err := NewReader(osfs).Cycle(3)
	require.NoError(t, err)
	appendCycles(t, l, 4, 4)
	require.NoError(t, l.Seal(1))
	got, err := r.Cycle(3)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	assert.Equal(t, 2, c.lists)

	now = now.Add(disk.DirMemoLife)
	_, err = r.Cycle(1)
	require.NoError(t, err)
	assert.Equal(t, 3, c.lists, "listed again once the memo is a second old")

	fi, err := osfs.Stat(SealedDir)
	require.NoError(t, err)
	id, ok := disk.Identify(fi)
	require.True(t, ok)
	now = id.Changed().Add(10 * time.Millisecond)
	memo.Forget()
	for i := range 2 {
		before := c.lists
		_, err = r.Cycle(2)
		require.NoError(t, err)
		assert.Greater(t, c.lists, before, "read %d: a directory changed within a tick is listed every time", i)
	}
}

func TestRecentFrames(t *testing.T) {
	a, b := &segment{name: "a"}, &segment{name: "b"}
	var r recentFrames
	for i := range recentFramesKept {
		r.put(a, i, []byte{byte(i)})
	}
	got, ok := r.get(a, 0)
	require.True(t, ok)
	assert.Equal(t, []byte{0}, got)
	_, ok = r.get(b, 0)
	assert.False(t, ok, "frames are told apart by segment")
	r.put(b, 0, []byte{9})
	_, ok = r.get(a, 1)
	assert.False(t, ok, "the least recently used frame went")
	for _, i := range []int{0, 2, 3} {
		_, ok = r.get(a, i)
		assert.True(t, ok, "frame %d", i)
	}
	assert.Len(t, r.frames, recentFramesKept)
}
