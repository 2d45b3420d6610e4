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

// A handle that writes A, B, then A again at one ledger position ends with
// A in the store (the last write is not taken for a retry of the first),
// and one whose first write is sent again after its answer was lost still
// stores it once (TestWorldWriteFencedByTheLedger).
func TestWorldRewriteAtOnePosition(t *testing.T) {
	srv := natstest.Start(t)
	_, s := openStore(t, srv.ClientURL())
	r, err := s.Run(ctx(t), "run:rewrite")
	require.NoError(t, err)
	l, err := r.CreateLedger()
	require.NoError(t, err)
	_, err = l.Append(testEvents("init", 1, 0))
	require.NoError(t, err)
	at := l.Frontier().Offset
	require.NoError(t, r.World().Seal(map[string][]byte{"f": []byte("A")}, at))
	require.NoError(t, r.World().Seal(map[string][]byte{"f": []byte("B")}, at), "a seal cut short before its head, made again with other files")
	w := r.World()
	files, err := w.Load()
	require.NoError(t, err)
	require.Equal(t, "B", string(files["f"]))
	require.NoError(t, w.Take(at))
	for _, data := range []string{"A", "B", "A"} {
		require.NoError(t, w.Put("f", []byte(data), at))
	}
	files, err = r.World().Load()
	require.NoError(t, err)
	require.Equal(t, "A", string(files["f"]), "the last write at the position is what the store holds")
	require.NoError(t, w.Remove("f", at))
	require.NoError(t, w.Put("f", []byte("A"), at))
	files, err = r.World().Load()
	require.NoError(t, err)
	require.Equal(t, "A", string(files["f"]), "a removal and the same bytes again")
}
