package ledger

import (
	"bytes"
	"testing"
)

// FuzzParseIndexLine: a cycle index line is accepted only in exactly the
// form acr writes it, so a damaged index is noticed (and rebuilt) rather
// than trusted.
func FuzzParseIndexLine(f *testing.F) {
	f.Add(IndexEntry{Cycle: 7, Start: 100, End: 200, FirstSeq: 3}.line())
	f.Add([]byte(`{"cycle":"000000000001","end":"000000000000010","first_seq":"000000000000001","start":"000000000000000"}` + "\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := parseIndexLine(b)
		if err != nil {
			return
		}
		if !bytes.Equal(e.line(), b) {
			t.Fatalf("accepted %q, which is written as %q", b, e.line())
		}
	})
}
