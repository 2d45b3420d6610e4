package kernel_test

import (
	"os/exec"
	"strings"
	"testing"
)

// The functional core stays pure: the cycle's packages link no file
// system, lock, process, log or configuration package (fmt's own use of os
// aside). I/O belongs to the storage side and the shell.
func TestPureCoreImportsNoIO(t *testing.T) {
	core := []string{"codec", "state", "storage", "event", "world", "governance", "cognition", "agenda", "commitment",
		"controller", "memory", "strategy", "semantic", "intent", "inbox", "kernel"}
	forbidden := []string{"github.com/gofrs/flock", "github.com/google/renameio/v2", "os/exec", "github.com/rs/zerolog",
		"github.com/spf13/viper", "github.com/acr-project/acr/internal/disk", "github.com/acr-project/acr/internal/ledger",
		"github.com/acr-project/acr/internal/dirstore", "github.com/acr-project/acr/internal/sandbox", "github.com/acr-project/acr/internal/gitworld", "net/http"}
	for _, p := range core {
		out, err := exec.Command("go", "list", "-deps", "github.com/acr-project/acr/internal/"+p).Output()
		if err != nil {
			t.Fatalf("go list %s: %v", p, err)
		}
		deps := strings.Fields(string(out))
		for _, f := range forbidden {
			for _, d := range deps {
				if d == f {
					t.Errorf("internal/%s depends on %s", p, f)
				}
			}
		}
	}
}
