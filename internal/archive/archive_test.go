package archive

import (
	"bytes"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
)

// sample is a small run with one of every kind of entry.
func sample() Run {
	return Run{
		RunID: "run:test",
		Checkpoint: Checkpoint{CycleSeq: 3, Revision: "acr test", LedgerSeq: 2, LedgerHash: "sha256:" + strings.Repeat("ab", 32),
			Files: map[string][]byte{"run_state": []byte(`{"a":1}`), "goal": []byte(`{"g":2}`)}},
		Ledger: []byte("{\"line\":1}\n{\"line\":2}\n"),
		Inbox:  []Item{{ID: "wake-" + strings.Repeat("1", 24), Body: []byte(`{"w":1}`)}, {ID: "approval-" + strings.Repeat("2", 24), Body: []byte(`{"a":2}`)}},
		World: []Entry{
			{Path: "README.md", Type: TypeFile, Mode: 0o644, Data: []byte("hello\n")},
			{Path: "bin", Type: TypeDir, Mode: 0o755},
			{Path: "bin/run.sh", Type: TypeFile, Mode: 0o755, Data: []byte("#!/bin/sh\n")},
			{Path: "bin/link", Type: TypeSymlink, Data: []byte("run.sh")},
			{Path: "empty", Type: TypeDir, Mode: 0o700},
			{Path: "zero", Type: TypeFile, Mode: 0o600},
		},
		Keys: []File{{Path: "table.log", Data: []byte("{\"key\":1}\n")}},
	}
}

func TestRoundTrip(t *testing.T) {
	b, err := Encode(sample())
	require.NoError(t, err)
	r, err := Parse(b)
	require.NoError(t, err)
	again, err := Encode(r)
	require.NoError(t, err)
	assert.Equal(t, string(b), string(again))
	assert.Equal(t, "run:test", r.RunID)
	assert.Equal(t, int64(3), r.Checkpoint.CycleSeq)
	assert.Equal(t, []byte(`{"g":2}`), r.Checkpoint.Files["goal"])
	assert.Equal(t, sample().Ledger, r.Ledger)
	require.Len(t, r.Inbox, 2)
	assert.Equal(t, "approval-"+strings.Repeat("2", 24), r.Inbox[0].ID, "sorted by id")
	require.Len(t, r.World, 6)
	assert.Equal(t, Entry{Path: "bin/link", Type: TypeSymlink, Data: []byte("run.sh")}, r.World[2])
	assert.Equal(t, TypeFile, r.World[5].Type)
	assert.Empty(t, r.World[5].Data)
	assert.Len(t, r.Keys, 1)

	// The same run listed in another order is the same archive.
	s := sample()
	s.World[0], s.World[5] = s.World[5], s.World[0]
	s.Inbox[0], s.Inbox[1] = s.Inbox[1], s.Inbox[0]
	other, err := Encode(s)
	require.NoError(t, err)
	assert.Equal(t, b, other)

	// The bytes: the header, the checkpoint, one line per entry, the end.
	lines := strings.Split(string(b), "\n")
	assert.Equal(t, `{"run_id":"run:test","schema":"acr.run-archive/v0.1"}`, lines[0])
	assert.Equal(t, `{"cycle_seq":3,"kind":"checkpoint","ledger_hash":"sha256:`+strings.Repeat("ab", 32)+`","ledger_seq":2,"revision":"acr test"}`, lines[1])
	assert.Contains(t, string(b), "\n"+`{"kind":"world","mode":"0755","path":"bin","type":"dir"}`+"\n")
	assert.Contains(t, string(b), "\n"+`{"kind":"world","path":"bin/link","sha256":"sha256:`)
	assert.Regexp(t, `\n\{"entries":13,"kind":"end","sha256":"sha256:[0-9a-f]{64}"\}\n$`, string(b))
}

// TestEncodeRefuses: Encode never writes what Parse would refuse.
func TestEncodeRefuses(t *testing.T) {
	for name, change := range map[string]func(*Run){
		"no run id":         func(r *Run) { r.RunID = "" },
		"bad ledger hash":   func(r *Run) { r.Checkpoint.LedgerHash = "sha256:00" },
		"no files":          func(r *Run) { r.Checkpoint.Files = nil },
		"bad file name":     func(r *Run) { r.Checkpoint.Files["../x"] = nil },
		"bad inbox id":      func(r *Run) { r.Inbox[0].ID = "x" },
		"duplicate item":    func(r *Run) { r.Inbox[1].ID = r.Inbox[0].ID },
		"dot dot":           func(r *Run) { r.World[0].Path = "../etc/passwd" },
		"absolute":          func(r *Run) { r.World[0].Path = "/etc/passwd" },
		"unlisted dir":      func(r *Run) { r.World = r.World[2:] },
		"file as dir":       func(r *Run) { r.World[1].Type = TypeFile },
		"duplicate path":    func(r *Run) { r.World = append(r.World, r.World[0]) },
		"symlink no target": func(r *Run) { r.World[3].Data = nil },
		"symlink with mode": func(r *Run) { r.World[3].Mode = 0o777 },
		"setuid":            func(r *Run) { r.World[0].Mode |= 1 << 23 },
		"unknown type":      func(r *Run) { r.World[0].Type = "fifo" },
		"keys dot dot":      func(r *Run) { r.Keys[0].Path = "../table.log" },
		"negative cycle":    func(r *Run) { r.Checkpoint.CycleSeq = -1 },
	} {
		t.Run(name, func(t *testing.T) {
			r := sample()
			change(&r)
			_, err := Encode(r)
			assert.Error(t, err)
		})
	}
}

// TestParseRefuses: every way an archive can be cut, changed or forged is
// an *Error that says what is wrong.
func TestParseRefuses(t *testing.T) {
	good, err := Encode(sample())
	require.NoError(t, err)
	body := bytes.Index(good, []byte("hello\n"))
	require.Greater(t, body, 0)
	endAt := bytes.LastIndex(good[:len(good)-1], []byte("\n")) + 1
	for name, tc := range map[string]struct {
		b    []byte
		want string
	}{
		"empty":           {nil, "truncated"},
		"not an archive":  {[]byte("{\"schema\":\"acr.manifest/v0.1\",\"run_id\":\"x\"}\n"), "not an archive line"},
		"other schema":    {bytes.Replace(good, []byte("v0.1"), []byte("v0.9"), 1), "field schema"},
		"cut in a body":   {good[:body+3], "truncated: a body of 6 bytes announced"},
		"cut at the end":  {good[:endAt], "truncated: the archive ends before its end line"},
		"no last newline": {good[:len(good)-1], "truncated: the last line has no newline"},
		"flipped body":    {flip(good, body+1), `entry 7 (world "README.md"): the body's sha256`},
		"trailing bytes":  {append(bytes.Clone(good), "x\n"...), "after the end line"},
		"entry removed":   {removeEntry(t, good, "empty"), "counts 13 entries, the archive has 12"},
		"not canonical":   {bytes.Replace(good, []byte(`{"kind":"ledger",`), []byte(`{ "kind":"ledger",`), 1), "not canonical"},
		"bad mode":        {rehashLine(t, good, `"mode":"0700"`, `"mode":"700"`), `mode "700"`},
	} {
		t.Run(name, func(t *testing.T) {
			_, err := Parse(tc.b)
			var ae *Error
			require.True(t, errors.As(err, &ae), "want *Error, got %v", err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// TestRehashedArchiveIsValid documents what hashes cannot do: an entry
// edited and every hash made again is a valid archive of another run. The
// hashes catch damage, not a forger; the ledger's chain and the
// checkpoint's refs are what import checks beyond them.
func TestRehashedArchiveIsValid(t *testing.T) {
	good, err := Encode(sample())
	require.NoError(t, err)
	r, err := Parse(rehash(t, bytes.Replace(good, []byte(`"mode":"0700"`), []byte(`"mode":"0777"`), 1)))
	require.NoError(t, err)
	assert.Equal(t, "0777", fmt.Sprintf("%04o", r.World[4].Mode))
}

func TestOutOfOrder(t *testing.T) {
	good, err := Encode(sample())
	require.NoError(t, err)
	lines := bytes.SplitAfter(good, []byte("\n"))
	// Swap the two inbox entries (line + body + newline each) and
	// re-hash the end: the hashes hold, the order does not.
	var out []byte
	i := 0
	for i < len(lines) {
		if bytes.Contains(lines[i], []byte(`"kind":"inbox"`)) && bytes.Contains(lines[i+2], []byte(`"kind":"inbox"`)) {
			out = append(out, lines[i+2]...)
			out = append(out, lines[i+3]...)
			out = append(out, lines[i]...)
			out = append(out, lines[i+1]...)
			i += 4
			continue
		}
		out = append(out, lines[i]...)
		i++
	}
	_, err = Parse(rehash(t, out))
	require.Error(t, err)
	assert.Contains(t, err.Error(), "not in the one form")
}

func flip(b []byte, i int) []byte {
	c := bytes.Clone(b)
	c[i] ^= 1
	return c
}

// rehash makes the end line right again for an archive whose entries were
// changed.
func rehash(t *testing.T, b []byte) []byte {
	t.Helper()
	at := bytes.LastIndex(b[:len(b)-1], []byte("\n")) + 1
	head := b[:at]
	n := int64(0)
	for _, k := range []string{kindCheckpoint, kindCheckpointFile, kindLedger, kindInbox, kindWorld, kindKeys} {
		n += int64(bytes.Count(head, []byte(`"kind":"`+k+`"`)))
	}
	var w writer
	w.buf.Write(head)
	w.line(line{Kind: kindEnd, Entries: &n, SHA256: codec.FingerprintOf(head)}, nil)
	require.NoError(t, w.err)
	return w.buf.Bytes()
}

// rehashLine replaces text in a line that has no body, and re-hashes.
func rehashLine(t *testing.T, b []byte, old, new string) []byte {
	t.Helper()
	return rehash(t, bytes.Replace(b, []byte(old), []byte(new), 1))
}

// removeEntry drops the world directory entry at path, leaving the end
// line as it was.
func removeEntry(t *testing.T, b []byte, path string) []byte {
	t.Helper()
	l := []byte(`{"kind":"world","mode":"0700","path":"` + path + `","type":"dir"}` + "\n")
	require.True(t, bytes.Contains(b, l))
	return bytes.Replace(b, l, nil, 1)
}
