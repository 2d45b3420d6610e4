package codec

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestFingerprintReaderEqualsFingerprintOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		data []byte
	}{
		{"empty", nil},
		{"short", []byte("p\n")},
		{"longer than the buffer", bytes.Repeat([]byte("p\n"), 50_000)},
		{"not utf-8", []byte{0xff, 0x00, 0xfe}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			// A one-byte reader and a small buffer exercise every split.
			fp, n, err := FingerprintReader(iotest.OneByteReader(bytes.NewReader(tc.data)), make([]byte, 7))
			require.NoError(t, err)
			assert.Equal(t, FingerprintOf(tc.data), fp)
			assert.Equal(t, int64(len(tc.data)), n)
		})
	}
}

func TestFingerprintReaderReportsReadErrors(t *testing.T) {
	boom := errors.New("disk gone")
	_, _, err := FingerprintReader(iotest.ErrReader(boom), make([]byte, 8))
	assert.ErrorIs(t, err, boom)
	fp, _, err := FingerprintReader(strings.NewReader("x"), make([]byte, 8))
	require.NoError(t, err)
	assert.Equal(t, FingerprintOf([]byte("x")), fp)
}
