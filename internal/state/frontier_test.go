package state

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
)

// TestGenesis: an empty ledger's frontier is seq 0 at offset 0 whose hash
// is the chain's starting value, a sha256 of zeros in the chain's own form.
func TestGenesis(t *testing.T) {
	g := GenesisFrontier()
	assert.Equal(t, Frontier{Seq: 0, Hash: GenesisHash, Offset: 0}, g)
	hex, ok := strings.CutPrefix(GenesisHash, "sha256:")
	require.True(t, ok)
	assert.Equal(t, strings.Repeat("0", 64), hex)
	b, err := codec.Marshal(g)
	require.NoError(t, err)
	assert.Equal(t, `{"hash":"`+GenesisHash+`","offset":0,"seq":0}`, string(b))
}

func TestIntegrityError(t *testing.T) {
	err := error(&IntegrityError{File: "run_state.json", Msg: "sha256 mismatch"})
	assert.Equal(t, "integrity: run_state.json: sha256 mismatch", err.Error())
}
