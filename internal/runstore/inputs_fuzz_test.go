package runstore

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzReadInputs: whatever a person writes into goal.json, contract.json or
// environment.json, ReadInputs either accepts documents that validate or
// refuses with a ValidationError naming the file; it never panics.
func FuzzReadInputs(f *testing.F) {
	root := filepath.Join("..", "..", "scenarios", "quickstart")
	for _, name := range []string{"goal.json", "contract.json", "environment.json"} {
		b, err := os.ReadFile(filepath.Join(root, name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(name, b)
	}
	f.Fuzz(func(t *testing.T, which string, b []byte) {
		dir := t.TempDir()
		paths := map[string]string{}
		for _, name := range []string{"goal.json", "contract.json", "environment.json"} {
			src, err := os.ReadFile(filepath.Join(root, name))
			if err != nil {
				t.Fatal(err)
			}
			if name == which {
				src = b
			}
			paths[name] = filepath.Join(dir, name)
			if err := os.WriteFile(paths[name], src, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		in, err := ReadInputs(paths["goal.json"], paths["contract.json"], paths["environment.json"])
		if err != nil {
			var ve *ValidationError
			if !errors.As(err, &ve) || ve.File == "" {
				t.Fatalf("refusal without a file name: %v", err)
			}
			return
		}
		if in.Spec.Validate() != nil || in.Contract.Validate() != nil || in.Goal.Validate(&in.Spec) != nil {
			t.Fatal("accepted documents that do not validate")
		}
	})
}
