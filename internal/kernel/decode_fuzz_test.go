package kernel

import (
	"bytes"
	"testing"
)

// FuzzDecode: a checkpoint whose files were tampered with either fails to
// decode with an error naming the file, or decodes to a state that
// encodes back to exactly the same files: nothing is silently dropped or
// reinterpreted.
func FuzzDecode(f *testing.F) {
	spec := testSpec(patchCheck("a", "a.txt"))
	s, _, err := Init(Bootstrap{RunID: "run:fuzz", Now: t0, Goal: testGoal(), Contract: testContract(), Spec: spec, Observation: observe(spec, map[string]bool{"a": true}, false)})
	if err != nil {
		f.Fatal(err)
	}
	files, err := s.Encode()
	if err != nil {
		f.Fatal(err)
	}
	for _, name := range []string{FileRunState, FileContract, FileContext, FileEnvironment} {
		f.Add(name, files[name])
	}
	f.Fuzz(func(t *testing.T, name string, b []byte) {
		tampered := map[string][]byte{}
		for k, v := range files {
			tampered[k] = v
		}
		if _, ok := tampered[name]; !ok {
			return
		}
		tampered[name] = b
		got, err := Decode(tampered)
		if err != nil {
			return
		}
		enc, err := got.Encode()
		if err != nil {
			t.Fatalf("decoded state does not encode: %v", err)
		}
		for k, v := range tampered {
			if !bytes.Equal(enc[k], v) {
				t.Fatalf("file %s decoded but encodes differently:\n%q\n%q", k, v, enc[k])
			}
		}
	})
}
