package archive

import (
	"bytes"
	"fmt"
	"io/fs"
	"strconv"

	"github.com/acr-project/acr/internal/codec"
)

// Parse reads an archive strictly: every line canonical and of the kind
// that may stand there, every body the size its line says and hashing to
// its line's sha256, the end line counting the entries and hashing
// everything before it, nothing after it, and the whole exactly what
// Encode writes for what was read. The Run's byte slices alias b. Any
// fault is an *Error naming the byte and the entry.
func Parse(b []byte) (Run, error) {
	p := parser{b: b}
	r, err := p.run()
	if err != nil {
		return Run{}, err
	}
	enc, err := Encode(r)
	if err != nil {
		return Run{}, &Error{Offset: 0, Msg: err.Error()}
	}
	if !bytes.Equal(enc, b) {
		i := 0
		for i < len(enc) && i < len(b) && enc[i] == b[i] {
			i++
		}
		return Run{}, &Error{Offset: int64(i), Msg: "not in the one form acr writes (entries out of order, or an unlisted directory)"}
	}
	return r, nil
}

type parser struct {
	b   []byte
	pos int
	// entry names the line being read, for errors.
	entry string
}

func (p *parser) fail(format string, args ...any) error {
	return &Error{Offset: int64(p.pos), Entry: p.entry, Msg: fmt.Sprintf(format, args...)}
}

// next reads one line and decodes it strictly; at is where it starts.
func (p *parser) next() (line, int, error) {
	at := p.pos
	if p.pos >= len(p.b) {
		return line{}, at, p.fail("truncated: the archive ends before its end line")
	}
	i := bytes.IndexByte(p.b[p.pos:], '\n')
	if i < 0 {
		return line{}, at, p.fail("truncated: the last line has no newline")
	}
	raw := p.b[p.pos : p.pos+i]
	var l line
	if err := codec.UnmarshalCanonical(raw, &l); err != nil {
		return line{}, at, p.fail("not an archive line: %v", err)
	}
	if enc, err := codec.Marshal(l); err != nil || !bytes.Equal(enc, raw) {
		return line{}, at, p.fail("not an archive line: not canonical")
	}
	p.pos += i + 1
	return l, at, nil
}

// body reads the body a line announces and checks its hash.
func (p *parser) body(l line) ([]byte, error) {
	if l.Size == nil || l.SHA256 == "" {
		return nil, p.fail("no size and sha256 for its body")
	}
	n := *l.Size
	if n < 0 || n > int64(len(p.b)-p.pos) {
		return nil, p.fail("truncated: a body of %d bytes announced, %d bytes left", n, len(p.b)-p.pos)
	}
	body := p.b[p.pos : p.pos+int(n)]
	if got := codec.FingerprintOf(body); got != l.SHA256 {
		return nil, p.fail("the body's sha256 is %s, the entry says %s: the archive was changed or damaged", got, l.SHA256)
	}
	p.pos += int(n)
	if p.pos >= len(p.b) || p.b[p.pos] != '\n' {
		return nil, p.fail("truncated: no newline after the body")
	}
	p.pos++
	return body, nil
}

// run reads the whole archive in the order doc.go gives.
func (p *parser) run() (Run, error) {
	var r Run
	p.entry = "header"
	h, _, err := p.next()
	if err != nil {
		return r, err
	}
	if h.Schema != Schema {
		return r, &Error{Entry: p.entry, Msg: fmt.Sprintf("field schema: want %q, found %q: not an acr run archive, or one of another version", Schema, h.Schema)}
	}
	if h.RunID == "" {
		return r, &Error{Entry: p.entry, Msg: "no run_id"}
	}
	r.RunID = h.RunID
	p.entry = "checkpoint"
	c, _, err := p.next()
	if err != nil {
		return r, err
	}
	if c.Kind != kindCheckpoint || c.CycleSeq == nil || c.Revision == nil || c.LedgerSeq == nil {
		return r, p.fail("want the checkpoint line, found kind %q", c.Kind)
	}
	r.Checkpoint = Checkpoint{CycleSeq: *c.CycleSeq, Revision: *c.Revision, LedgerSeq: *c.LedgerSeq, LedgerHash: c.LedgerHash, Files: map[string][]byte{}}
	entries := int64(1)
	rank := map[string]int{kindCheckpointFile: 1, kindLedger: 2, kindInbox: 3, kindWorld: 4, kindKeys: 5, kindEnd: 6}
	last := 1
	for {
		p.entry = fmt.Sprintf("entry %d", entries+1)
		l, at, err := p.next()
		if err != nil {
			return r, err
		}
		p.entry = describe(l, entries+1)
		k, ok := rank[l.Kind]
		switch {
		case !ok:
			return r, p.fail("unknown kind %q", l.Kind)
		case k < last || (k == last && k == rank[kindLedger]):
			return r, p.fail("out of order: a %s entry after a %s one", l.Kind, kindOf(rank, last))
		case k > rank[kindLedger] && last < rank[kindLedger]:
			return r, p.fail("the ledger entry is missing")
		}
		last = k
		if l.Kind == kindEnd {
			return r, p.end(l, at, entries)
		}
		entries++
		if err := p.entryBody(&r, l); err != nil {
			return r, err
		}
	}
}

// entryBody reads the body of a checkpoint file, ledger, inbox, world or
// keys line into r.
func (p *parser) entryBody(r *Run, l line) error {
	if l.Kind == kindWorld && l.Type == TypeDir {
		if l.Size != nil || l.SHA256 != "" {
			return p.fail("a directory has no body")
		}
		mode, err := p.mode(l.Mode)
		if err != nil {
			return err
		}
		r.World = append(r.World, Entry{Path: l.Path, Type: TypeDir, Mode: mode})
		return nil
	}
	body, err := p.body(l)
	if err != nil {
		return err
	}
	switch l.Kind {
	case kindCheckpointFile:
		if _, dup := r.Checkpoint.Files[l.Name]; dup {
			return p.fail("checkpoint file %q twice", l.Name)
		}
		r.Checkpoint.Files[l.Name] = body
	case kindLedger:
		r.Ledger = body
	case kindInbox:
		r.Inbox = append(r.Inbox, Item{ID: l.ID, Body: body})
	case kindWorld:
		e := Entry{Path: l.Path, Type: l.Type, Data: body}
		if l.Type == TypeFile {
			if e.Mode, err = p.mode(l.Mode); err != nil {
				return err
			}
		}
		r.World = append(r.World, e)
	case kindKeys:
		r.Keys = append(r.Keys, File{Path: l.Path, Data: body})
	}
	return nil
}

// end checks the end line that starts at byte at.
func (p *parser) end(l line, at int, entries int64) error {
	if l.Entries == nil || *l.Entries != entries {
		return p.fail("the end line counts %v entries, the archive has %d: an entry was added or removed", deref(l.Entries), entries)
	}
	if got := codec.FingerprintOf(p.b[:at]); got != l.SHA256 {
		return p.fail("the archive's sha256 is %s, the end line says %s: the archive was changed or damaged", got, l.SHA256)
	}
	if p.pos != len(p.b) {
		return p.fail("%d bytes after the end line", len(p.b)-p.pos)
	}
	return nil
}

// mode parses four octal digits of permission bits.
func (p *parser) mode(s string) (fs.FileMode, error) {
	n, err := strconv.ParseUint(s, 8, 32)
	if len(s) != 4 || s[0] != '0' || err != nil {
		return 0, p.fail("mode %q: want four octal digits such as 0644", s)
	}
	return fs.FileMode(n), nil
}

// describe names an entry for errors: its kind and what it is of.
func describe(l line, n int64) string {
	what := l.Name + l.ID + l.Path
	if what == "" {
		return fmt.Sprintf("entry %d (%s)", n, l.Kind)
	}
	return fmt.Sprintf("entry %d (%s %s)", n, l.Kind, strconv.Quote(what))
}

func kindOf(rank map[string]int, k int) string {
	for name, r := range rank {
		if r == k {
			return name
		}
	}
	return kindCheckpoint
}

func deref(n *int64) any {
	if n == nil {
		return "no"
	}
	return *n
}
