package event_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The catalog is vocabulary: every reader and the kernel import it, so it
// imports nothing above it (docs/architecture.md, Layers). A decoder of a
// subsystem's records belongs to that subsystem, which may import event.
func TestVocabularyImportsNoSubsystem(t *testing.T) {
	const module = "github.com/acr-project/acr/internal/"
	out, err := exec.Command("go", "list", "-f", `{{join .Imports " "}}`, module+"event").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	allowed := map[string]bool{"codec": true, "world": true, "state": true}
	var ours int
	for _, p := range strings.Fields(string(out)) {
		name, found := strings.CutPrefix(p, module)
		if !found {
			continue
		}
		ours++
		if !allowed[name] {
			t.Errorf("internal/event imports internal/%s, which is above the vocabulary", name)
		}
	}
	if ours == 0 {
		t.Fatalf("go list named none of this module's packages among event's imports: %q", out)
	}
}
