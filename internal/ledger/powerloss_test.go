package ledger

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/disk"
)

// tornLedger makes a durable ledger of two complete lines and a torn,
// durable third one, and returns it with the torn bytes.
func tornLedger(t *testing.T) (*disk.Mem, []byte) {
	t.Helper()
	mem := disk.NewMem()
	l, err := Create(mem)
	require.NoError(t, err)
	_, err = l.Append(testEvents(2, 1))
	require.NoError(t, err)
	require.NoError(t, l.Close())
	torn := []byte(`{"chain":"sha256:0123","event":{"type":"half`)
	f, err := mem.OpenAppend(FileName)
	require.NoError(t, err)
	_, err = f.Write(torn)
	require.NoError(t, err)
	require.NoError(t, f.Sync())
	mem.Crash()
	return mem, torn
}

// TestPowerLossRepairTail: once RepairTail returns, a power loss keeps the
// repair (no torn tail comes back) and the kept copy of the torn bytes.
// Each of its three fsyncs is needed for that: without any one of them
// some of it is lost.
func TestPowerLossRepairTail(t *testing.T) {
	cases := []struct {
		name string
		skip disk.SyncOp
		lost string
	}{
		{"all fsyncs", disk.SyncOp{}, ""},
		{"no fsync of the broken copy", disk.SyncOp{Name: FileName + ".broken"}, "copy"},
		{"no fsync of the ledger directory", disk.SyncOp{Dir: true, Name: "ledger"}, "copy"},
		{"no fsync after the truncation", disk.SyncOp{Name: FileName}, "repair"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem, torn := tornLedger(t)
			l, err := Open(mem)
			require.NoError(t, err)
			require.NotNil(t, l.Torn())
			want := l.Frontier()
			mem.SkipSync(func(op disk.SyncOp) bool { return op == tc.skip })
			_, got, err := l.RepairTail()
			require.NoError(t, err)
			require.Equal(t, torn, got)
			mem.SkipSync(nil)
			mem.Crash()

			l, err = Open(mem)
			require.NoError(t, err)
			repaired := l.Torn() == nil && l.Frontier() == want
			broken, _ := mem.ReadFile(FileName + ".broken")
			kept := bytes.Contains(broken, torn)
			switch tc.lost {
			case "":
				assert.True(t, repaired, "the repair survives")
				assert.True(t, kept, "the copy of the torn bytes survives")
			case "copy":
				assert.False(t, kept, "without this fsync the copy of the torn bytes is lost")
			case "repair":
				assert.False(t, repaired, "without this fsync the truncation is lost")
			}
		})
	}
}

// TestPowerLossWriteThenAppend: a batch Write left pending is lost by a
// power loss, whole, and kept by the next Append's fsync or by Sync.
func TestPowerLossWriteThenAppend(t *testing.T) {
	cases := []struct {
		name  string
		after func(l *Ledger) error
		kept  int64 // seq of the last record that survives
	}{
		{"nothing after the write", func(*Ledger) error { return nil }, 2},
		{"an append after the write", func(l *Ledger) error { _, err := l.Append(testEvents(1, 3)); return err }, 4},
		{"sync after the write", func(l *Ledger) error { return l.Sync() }, 3},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := disk.NewMem()
			l, err := Create(mem)
			require.NoError(t, err)
			_, err = l.Append(testEvents(2, 1))
			require.NoError(t, err)
			_, err = l.Write(testEvents(1, 2))
			require.NoError(t, err)
			require.Equal(t, int64(3), l.Frontier().Seq, "a written batch moves the frontier")
			require.NoError(t, tc.after(l))
			mem.Crash()
			back, err := Open(mem)
			require.NoError(t, err)
			assert.Nil(t, back.Torn())
			assert.Equal(t, tc.kept, back.Frontier().Seq)
		})
	}
}
