package disk

import (
	"io/fs"
	"time"
)

// DirMemo remembers a directory's Identity from the moment a listing of
// it was taken, so that a caller that lists the same directory again and
// again (a loop's inbox, a reader's sealed segments) can tell from a stat
// alone that its last listing still holds.
//
// An entry is added or removed by a rename, create or unlink in the
// directory, which stamps the directory's modification and change times
// and so changes its identity, unless it lands within the same timestamp
// tick as the change the identity shows. So a memo is taken only from a
// directory whose last change is older than a tick can be (see Settled),
// and whatever the stat says, a memo answers for DirMemoLife at most, so
// that a clock stepped back or a file server's own clock can delay what a
// listing shows by that long, never hide it.
type DirMemo struct {
	// Clock reads the time; nil is time.Now.
	Clock func() time.Time

	id    Identity
	taken time.Time
	ok    bool
}

// DirMemoLife is how long a DirMemo answers before the directory must be
// listed again, whatever its stat says.
const DirMemoLife = time.Second

// Now reads the memo's clock: take it before the stat that Remember gets.
func (m *DirMemo) Now() time.Time {
	if m.Clock != nil {
		return m.Clock()
	}
	return time.Now()
}

// Holds reports whether the directory whose stat is fi, at now, is still
// the one remembered, so that the listing taken then still holds.
func (m *DirMemo) Holds(fi fs.FileInfo, now time.Time) bool {
	if m == nil || !m.ok || now.Sub(m.taken) >= DirMemoLife || now.Before(m.taken) {
		return false
	}
	id, ok := Identify(fi)
	return ok && id == m.id
}

// Remember records fi, the directory's stat taken at now before it was
// listed. It records nothing when the directory changed too recently for
// its timestamps to show a change that follows, or when fi carries no
// identity.
func (m *DirMemo) Remember(fi fs.FileInfo, now time.Time) {
	m.ok = false
	id, ok := Identify(fi)
	if !ok || !Settled(id.Changed(), now) {
		return
	}
	m.id, m.taken, m.ok = id, now, true
}

// Forget drops the memo.
func (m *DirMemo) Forget() {
	if m != nil {
		m.ok = false
	}
}

// Settled reports whether a file or directory whose timestamps say it
// last changed at changed, stat taken at now, would show any later change
// in a new timestamp: the time since must exceed a timestamp tick, taken
// as 50 ms when changed has digits below the millisecond (the kernel's
// clock tick is at most 10 ms) and 2 s otherwise (file systems that keep
// whole seconds, or two).
func Settled(changed, now time.Time) bool {
	tick := 2 * time.Second
	if changed.Nanosecond()%int(time.Millisecond) != 0 {
		tick = 50 * time.Millisecond
	}
	return now.Sub(changed) > tick
}
