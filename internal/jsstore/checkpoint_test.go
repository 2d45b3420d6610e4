package jsstore

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// The manifest a checkpoint carries is the directory store's, byte for
// byte, for the same commit.
func TestManifestMatchesDirectoryStore(t *testing.T) {
	cm := storage.Commit{RunID: "run:m", CycleSeq: 3, Revision: "rev", Frontier: state.Frontier{Seq: 5, Hash: state.GenesisHash, Offset: 77},
		Files: map[string][]byte{"run_state": []byte(`{"a":1}`), "strategy": []byte(`{"b":2}`), "empty": {}}}
	want, err := dirstore.NewStore(disk.NewMem()).Commit(cm)
	require.NoError(t, err)
	got, doc, err := encodeCheckpoint(cm)
	require.NoError(t, err)
	require.Equal(t, want, got)
	require.Equal(t, codec.MustMarshal(want), doc[:bytes.IndexByte(doc, '\n')])

	snap, err := decodeCheckpoint("run:m", doc)
	require.NoError(t, err)
	require.Equal(t, want, snap.Manifest)
	for name, b := range cm.Files {
		require.True(t, bytes.Equal(b, snap.Files[name]), name)
	}
}

// A checkpoint document that is not exactly what a commit wrote is an
// integrity error, never a partial or altered snapshot.
func TestDecodeCheckpointRefusesDamage(t *testing.T) {
	cm := storage.Commit{RunID: "run:d", Frontier: state.GenesisFrontier(), Files: map[string][]byte{"run_state": []byte(`{"a":1}`), "z": []byte("zzzz")}}
	_, doc, err := encodeCheckpoint(cm)
	require.NoError(t, err)
	nl := bytes.IndexByte(doc, '\n')
	flip := func(i int) []byte { b := bytes.Clone(doc); b[i] ^= 1; return b }
	for name, d := range map[string][]byte{
		"flipped manifest byte": flip(nl / 2),
		"flipped file byte":     flip(len(doc) - 2),
		"short":                 doc[:len(doc)-1],
		"long":                  append(bytes.Clone(doc), 'x'),
		"no manifest line":      bytes.ReplaceAll(doc, []byte("\n"), nil),
		"empty":                 {},
	} {
		_, err := decodeCheckpoint("run:d", d)
		var ie *state.IntegrityError
		require.True(t, errors.As(err, &ie), "%s: %v", name, err)
	}
	_, err = decodeCheckpoint("run:other", doc)
	require.Error(t, err, "a checkpoint of another run")
}
