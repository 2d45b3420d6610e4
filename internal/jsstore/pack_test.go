package jsstore

import (
	"bytes"
	"runtime"
	"strconv"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"
)

// What a store writes it must be able to read: a body larger than the
// decompression limit is stored as it is (which a checkpoint's parts and
// the server's payload limit then bound), never compressed into a frame
// that every reader refuses as a bomb. The limit is lowered here so that
// the test does not need hundreds of MiB.
func TestPackNeverWritesWhatUnpackRefuses(t *testing.T) {
	const limit = 4 << 10
	p, err := newPackerLimit(limit)
	require.NoError(t, err)
	for name, size := range map[string]int{
		"below the limit": limit / 2,
		"at the limit":    limit,
		"past the limit":  limit + 1,
		"far past it":     16 * limit,
	} {
		body := bytes.Repeat([]byte("ledger line\n"), size/12+1)[:size]
		z, enc := p.pack(body)
		got, err := p.unpack(z, enc)
		require.NoError(t, err, "%s: a body packed by this store unpacks", name)
		require.Equal(t, body, got, name)
		if size > limit {
			require.Equal(t, "", enc, "%s: stored as it is", name)
		} else {
			require.Equal(t, encZstdDict, enc, "%s: compressible, compressed", name)
		}
	}

	// A frame that says (or turns out) to hold more than the limit is
	// refused, however small it is.
	big := bytes.Repeat([]byte{'a'}, 2*limit)
	unbounded, err := newPackerLimit(maxUnpacked)
	require.NoError(t, err)
	bomb, enc := unbounded.pack(big)
	require.Equal(t, encZstdDict, enc)
	require.Less(t, len(bomb), limit/16)
	_, err = p.unpack(bomb, enc)
	require.Error(t, err, "a frame past the limit")

	// A frame that declares no size (a streaming encoder's, which this
	// package never writes) is refused before it is decoded, however
	// little it holds: only the declared size bounds what a decode asks.
	var streamed bytes.Buffer
	w, err := zstd.NewWriter(&streamed, zstd.WithEncoderDict(dict1))
	require.NoError(t, err)
	_, err = w.Write([]byte("a small body"))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	_, err = p.unpack(streamed.Bytes(), encZstdDict)
	require.ErrorContains(t, err, "declares no size")
}

// An Acr-Lines header is the message's own word, not to be trusted for
// memory: a tiny body that claims the most lines a reader accepts is
// refused without setting aside room for that many lines.
func TestSplitMessageTrustsNoCountForMemory(t *testing.T) {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err := splitMessage([]byte("a\n"), strconv.Itoa(maxLines))
	runtime.ReadMemStats(&after)
	require.Error(t, err)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated for a 2-byte message (the header alone asked for 24 MiB)")
}
