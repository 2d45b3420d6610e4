package ledger

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"

	"github.com/acr-project/acr/internal/disk"
)

// SealedDir holds the sealed segments: committed history moved out of
// events.jsonl into compressed files (see Seal).
const SealedDir = "ledger/sealed"

// Seal stages, reported to Ledger.OnStage so that crash tests can kill a
// process inside a seal.
const (
	// StageSealPending: the segment is durable under its pending name;
	// events.jsonl still holds the same lines.
	StageSealPending = "mid-seal"
	// StageSealHot: events.jsonl was replaced by an empty file; the
	// segment still has its pending name.
	StageSealHot = "after-seal-hot"
)

// seal moves the lines of events.jsonl (all complete) into new segments.
// The order makes every crash recoverable without loss:
//
//  1. the segments are written and fsynced under pending names, and the
//     directory fsynced: their lines are now in two places;
//  2. events.jsonl is replaced by an empty file, renamed over it (the
//     commit point: pending segments count once events.jsonl is empty);
//  3. the segments are renamed to their final names, so that appends to
//     the new events.jsonl cannot make them look uncommitted.
//
// A reader that opened the ledger before step 2 keeps reading the old
// events.jsonl through its open handle, so it never sees a gap. One
// segment holds at most maxSegment bytes of lines, which bounds the
// memory a seal takes when events.jsonl is long (a run that did not seal
// before).
func (l *logFile) seal(onStage func(string)) error {
	if err := l.settle(); err != nil {
		return err
	}
	size, err := l.hot.Size()
	if err != nil || size == 0 {
		return err
	}
	if err := l.fsys.MkdirAll(SealedDir); err != nil {
		return fmt.Errorf("seal ledger: %w", err)
	}
	var made []*segment
	if l.ahead != nil && l.ahead.size == size {
		// Everything in the file went through Write on this handle: its
		// frames are (mostly) compressed already.
		frames := l.ahead
		l.ahead = nil
		s, err := l.writePending(l.base, size, frames)
		if err != nil {
			return err
		}
		made = append(made, s)
	} else {
		l.dropAhead()
		if made, err = l.sealFromFile(size); err != nil {
			return err
		}
	}
	if err := l.fsys.SyncDir(SealedDir); err != nil {
		return fmt.Errorf("seal ledger: %w", err)
	}
	stage(onStage, StageSealPending)
	// The new events.jsonl is empty, so only its name needs to be durable:
	// created beside, renamed over the old one, the directory fsynced.
	// The handle stays open as the file appends go to.
	hot, err := l.fsys.OpenAppend(nextFileName)
	if err == nil {
		err = hot.Truncate(0) // a leftover of an interrupted seal is empty too; be sure
		if err != nil {
			hot.Close()
		}
	}
	if err != nil {
		return fmt.Errorf("seal ledger: %w", err)
	}
	if err := l.fsys.Rename(nextFileName, FileName); err != nil {
		hot.Close()
		return fmt.Errorf("seal ledger: empty %s: %w", FileName, err)
	}
	if err := l.fsys.SyncDir(disk.Dir(FileName)); err != nil {
		hot.Close()
		return fmt.Errorf("seal ledger: %w", err)
	}
	stage(onStage, StageSealHot)
	l.hot.Close()
	l.hot = hot
	l.segs, l.base, l.pending = append(l.segs, made...), l.base+size, made
	return l.settle()
}

// maxSegment is the most bytes of lines one segment holds when a seal
// compresses events.jsonl from the file.
const maxSegment = 64 << 20

// sealFromFile writes events.jsonl's size bytes as pending segments of at
// most maxSegment bytes each (cut at line ends), reading one at a time.
func (l *logFile) sealFromFile(size int64) ([]*segment, error) {
	if l.enc == nil {
		enc, err := newEncoder()
		if err != nil {
			return nil, fmt.Errorf("seal ledger: %w", err)
		}
		l.enc = enc
	}
	limit := l.segmentMax
	if limit <= 0 {
		limit = maxSegment
	}
	var made []*segment
	for at := int64(0); at < size; {
		n := min(size-at, limit)
		lines := make([]byte, n)
		if _, err := l.hot.ReadAt(lines, at); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("seal ledger: read %s: %w", FileName, err)
		}
		for at+int64(len(lines)) < size && bytes.IndexByte(lines, '\n') < 0 {
			// One line longer than a segment: it gets a segment of its own.
			more := make([]byte, min(size-at-int64(len(lines)), 1<<20))
			if _, err := l.hot.ReadAt(more, at+int64(len(lines))); err != nil && !errors.Is(err, io.EOF) {
				return nil, fmt.Errorf("seal ledger: read %s: %w", FileName, err)
			}
			lines = append(lines, more...)
		}
		if at+int64(len(lines)) < size {
			lines = lines[:bytes.LastIndexByte(lines, '\n')+1]
		}
		if lines[len(lines)-1] != '\n' {
			return nil, fmt.Errorf("seal ledger: %s does not end with a complete line", FileName)
		}
		frames := &frameSet{enc: l.enc}
		frames.feed(lines)
		s, err := l.writePending(l.base+at, int64(len(lines)), frames)
		if err != nil {
			return nil, err
		}
		made = append(made, s)
		at += int64(len(lines))
	}
	return made, nil
}

// writePending writes the segment of frames (n bytes of lines, the
// ledger's from start) under its pending name.
func (l *logFile) writePending(start, n int64, frames *frameSet) (*segment, error) {
	if frames.size != n || (len(frames.open) > 0 && frames.open[len(frames.open)-1] != '\n') {
		frames.wait()
		return nil, fmt.Errorf("seal ledger: %s does not end with a complete line", FileName)
	}
	name := SealedDir + "/" + segmentName(start, start+n) + pendingSuffix
	if err := l.fsys.WriteFile(name, frames.segment(start)); err != nil {
		return nil, fmt.Errorf("seal ledger: %w", err)
	}
	return &segment{name: name, start: start, end: start + n, cached: -1}, nil
}

func stage(onStage func(string), name string) {
	if onStage != nil {
		onStage(name)
	}
}

// settle finishes or undoes a seal a crash interrupted, before the first
// write: committed segments get their final names, stale ones are
// removed.
func (l *logFile) settle() error {
	if len(l.pending) > 0 {
		for _, p := range l.pending {
			final := SealedDir + "/" + segmentName(p.start, p.end)
			if err := l.fsys.Rename(p.name, final); err != nil {
				return fmt.Errorf("settle ledger seal: %w", err)
			}
			p.mu.Lock()
			p.name = final
			p.mu.Unlock()
		}
		if err := l.fsys.SyncDir(SealedDir); err != nil {
			return fmt.Errorf("settle ledger seal: %w", err)
		}
		l.pending = nil
	}
	for len(l.stale) > 0 {
		if err := l.fsys.Remove(l.stale[0]); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("settle ledger seal: %w", err)
		}
		l.stale = l.stale[1:]
	}
	return nil
}
