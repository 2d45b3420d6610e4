package jsstore

import (
	"testing"

	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/storage"
)

// An effect's file is one message fenced by the ledger's end alone: a
// handle stores it while the intent it claims is the ledger's last
// record, whoever took the world since (the store then takes no other
// write, and a retry is stored once), and no handle stores anything that
// claims a ledger end another writer has moved past (a handle refused
// once writes nothing more).
func TestWorldWriteFencedByTheLedger(t *testing.T) {
	srv := natstest.Start(t)
	nc, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:world")
	require.NoError(t, err)
	l, err := r.CreateLedger()
	require.NoError(t, err)
	_, err = l.Append(testEvents("init", 2, 0))
	require.NoError(t, err)
	require.NoError(t, r.World().Seal(map[string][]byte{"a": []byte("1"), "b": []byte("b")}, l.Frontier().Offset))

	first, second := r.World(), r.World()
	_, err = first.Load()
	require.NoError(t, err)
	require.NoError(t, first.Take(l.Frontier().Offset))
	_, err = second.Load()
	require.NoError(t, err)
	require.NoError(t, second.Take(l.Frontier().Offset))

	intent := l.Frontier().Offset
	require.NoError(t, first.Put("a", []byte("2"), intent), "the intent is the ledger's last record")
	js, err := natsjs.New(nc)
	require.NoError(t, err)
	lastSeq := func() uint64 {
		name, err := js.StreamNameBySubject(ctx(t), s.blocks.Names.WorldSubject(r.ID, "a"))
		require.NoError(t, err)
		st, err := js.Stream(ctx(t), name)
		require.NoError(t, err)
		info, err := st.Info(ctx(t))
		require.NoError(t, err)
		return info.State.LastSeq
	}
	stored := lastSeq()
	require.NoError(t, first.Put("a", []byte("2"), intent), "a retry is accepted")
	require.Equal(t, stored, lastSeq(), "a retry is stored once: the message id makes the server drop it")
	require.NoError(t, second.Put("a", []byte("2"), intent), "the same effect, as the other's recovery would store it")

	_, err = l.Append(testEvents("next", 1, 1))
	require.NoError(t, err)
	require.ErrorIs(t, first.Put("a", []byte("3"), intent), storage.ErrConflict, "the ledger moved past the intent")
	require.ErrorIs(t, second.Remove("b", intent), storage.ErrConflict, "the ledger moved past the intent")
	require.Error(t, second.Remove("b", l.Frontier().Offset), "a handle refused once writes nothing more")
	again := r.World()
	_, err = again.Load()
	require.NoError(t, err)
	require.NoError(t, again.Take(l.Frontier().Offset))
	require.NoError(t, again.Remove("b", l.Frontier().Offset), "one that took the world again writes at the new end")

	files, err := r.World().Load()
	require.NoError(t, err)
	require.Equal(t, map[string][]byte{"a": []byte("2")}, files)
}
