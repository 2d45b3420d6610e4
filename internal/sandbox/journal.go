package sandbox

import (
	"fmt"
	"os"

	"github.com/acr-project/acr/internal/disk"
)

// WorldOp is one change the sandbox made to the directory tree of a world
// it writes, in the order it made them. A power loss keeps only what was
// made durable: file bytes up to their fsync, directory entries up to the
// fsync of their directory. Replaying the ops onto a model of that rule
// (disk.Mem) shows what a power cut at any instant would leave, which is
// how the tests hold the world's fsyncs to account as they do the state
// directory's.
type WorldOp struct {
	// Op is "create" (a new empty file), "rewrite" (an existing file, the
	// spare of replaceBySwap, written again from its start: its old bytes
	// count for nothing), "write" (bytes appended to the file just
	// created or rewritten), "sync" (its bytes made durable), "rename",
	// "exchange" (Path and To swap names in one step), "remove" (a file),
	// "mkdir" (one directory) or "syncdir" (the entries of a directory
	// made durable).
	Op string
	// Path is relative to the world's root, slash-separated; ".." is the
	// sandbox directory above a sandbox copy and "../.." the state
	// directory, which Create writes into first.
	Path string
	// To is where a rename moved Path, or the name an exchange swapped
	// with Path.
	To string
	// Data is what a write wrote.
	Data []byte
}

// Journal hears of every WorldOp once it was made. It is nil in
// production; tests set it with CreateJournaled or OpenJournaled.
type Journal func(WorldOp)

func (j Journal) note(op WorldOp) {
	if j != nil {
		j(op)
	}
}

// worldFile is a world file the sandbox writes. Its Sync reports to the
// journal once the bytes are durable, so that a write path that lost its
// fsync loses the journal's "sync" with it.
type worldFile struct {
	*os.File
	name    string
	journal Journal
}

func (f worldFile) Write(b []byte) (int, error) {
	n, err := f.File.Write(b)
	if n > 0 {
		f.journal.note(WorldOp{Op: "write", Path: f.name, Data: append([]byte(nil), b[:n]...)})
	}
	return n, err
}

func (f worldFile) Sync() error {
	if err := disk.Fsync(f.File); err != nil {
		return err
	}
	f.journal.note(WorldOp{Op: "sync", Path: f.name})
	return nil
}

// syncPath fsyncs a directory outside the world's root (Create's parents
// of the world); rel names it for the journal.
func syncPath(p, rel string, j Journal) error {
	f, err := os.Open(p)
	if err != nil {
		return err
	}
	if err := disk.Fsync(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("fsync %s: %w", p, err)
	}
	j.note(WorldOp{Op: "syncdir", Path: rel})
	return f.Close()
}
