package archive

import (
	"bytes"
	"testing"
)

// FuzzParse: Parse never panics, and anything it accepts is exactly what
// Encode writes for what it read (an archive has one form), and reads back
// the same.
func FuzzParse(f *testing.F) {
	good, err := Encode(sample())
	if err != nil {
		f.Fatal(err)
	}
	f.Add(good)
	small, err := Encode(Run{RunID: "r", Checkpoint: Checkpoint{LedgerHash: "sha256:" + string(bytes.Repeat([]byte("0"), 64)),
		Files: map[string][]byte{"run_state": []byte("{}")}}})
	if err != nil {
		f.Fatal(err)
	}
	f.Add(small)
	f.Add(good[:len(good)/2])
	f.Add([]byte("{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := Parse(b)
		if err != nil {
			if _, ok := err.(*Error); !ok {
				t.Fatalf("Parse returned %T, want *Error: %v", err, err)
			}
			return
		}
		enc, err := Encode(r)
		if err != nil {
			t.Fatalf("Parse accepted what Encode refuses: %v", err)
		}
		if !bytes.Equal(enc, b) {
			t.Fatalf("Parse accepted a form Encode does not write:\n%q\n%q", b, enc)
		}
		again, err := Parse(enc)
		if err != nil {
			t.Fatalf("re-parse: %v", err)
		}
		if again.RunID != r.RunID || len(again.World) != len(r.World) || !bytes.Equal(again.Ledger, r.Ledger) {
			t.Fatal("re-parse differs")
		}
	})
}
