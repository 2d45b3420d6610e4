package codec

import (
	"bytes"
	"reflect"
	"sync"
)

// scratch is a buffer an encoding is built in before its bytes are copied
// out (Marshal) or only hashed (MustRefOf): the buffer is reused, so an
// encoding costs one allocation of its own size or none, not the series
// of ever larger buffers growing a fresh one takes.
type scratch struct{ b []byte }

// scratchPool holds scratch buffers between encodings. Like the encoder
// cache, it cannot change any result: a buffer's old bytes are always
// overwritten before they are read.
var scratchPool = sync.Pool{New: func() any { return &scratch{b: make([]byte, 0, 4<<10)} }}

// maxPooledScratch bounds the buffers kept: one grown by a rare large
// encoding (a compaction record, a whole environment) is left to the
// collector rather than held for the life of the process.
const maxPooledScratch = 256 << 10

// encodeScratch encodes v on the fast path into a pooled buffer. The
// caller must release it and must not keep s.b after.
func encodeScratch(v any) (*scratch, error) {
	s := scratchPool.Get().(*scratch)
	b, err := appendValue(s.b[:0], reflect.ValueOf(v))
	if err != nil {
		s.release()
		return nil, err
	}
	s.b = b
	return s, nil
}

func (s *scratch) release() {
	if cap(s.b) > maxPooledScratch {
		return
	}
	s.b = s.b[:0]
	scratchPool.Put(s)
}

// encodesTo reports whether Marshal(v) would give exactly want. Decoding
// checks a stored document this way, and only the answer is kept: the
// encoding is compared where it was built, never copied.
func encodesTo(v any, want []byte) bool {
	if _, ok := v.(Value); !ok {
		if s, err := encodeScratch(v); err == nil {
			eq := bytes.Equal(s.b, want)
			s.release()
			return eq
		}
	}
	enc, err := Marshal(v)
	return err == nil && bytes.Equal(enc, want)
}
