package main

import (
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/acr-project/acr/internal/jetstream/natstest"
)

// TestStatusAheadNATS: on a nats:// store too, status says when the ledger
// holds cycles beyond the last checkpoint (an invocation killed before it
// wrote one), what they did, and that the next run recovers them.
func TestStatusAheadNATS(t *testing.T) {
	t.Parallel()
	h, _ := newHarness(t, "status ahead of the checkpoint on nats://", 0x57a7)
	root, err := filepath.Abs(filepath.Join("..", "..", "scenarios", "quickstart"))
	if err != nil {
		t.Fatal(err)
	}
	srv := natstest.Start(t)
	h.env = []string{"ACR_STORE=" + srv.ClientURL() + "/ahead", "ACR_RUN_ID=run:ahead"}
	host := filepath.Join(t.TempDir(), "host")
	h.acr(host, nil, "init", "--goal", filepath.Join(root, "goal.json"), "--contract", filepath.Join(root, "contract.json"),
		"--env", filepath.Join(root, "environment.json"))
	if fp := h.killAt(host, "64", "after-ledger-append", 3); fp == "" {
		t.Fatal("the run finished before its third cycle was appended")
	}
	out := h.acr(host, nil, "status") // status takes no lease: the killed one's may still be held
	for _, want := range []string{
		`(?m)^ledger       3 cycle\(s\) beyond the last checkpoint \(cycles 1 to 3\); the next run recovers them$`,
		`(?m)^  cycle 1 CONTINUE EXECUTE check:readme-typo -> apply_local_patch README.md \[committed\]$`,
		`(?m)^  cycle 3 WAIT_APPROVAL ESCALATE check:debug-off -> apply_local_patch config/app.ini$`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("status does not match %s:\n%s", want, out)
		}
	}
	js := h.acr(host, nil, "status", "--json")
	if want := `"beyond_checkpoint":{"summary":"3 cycle(s) beyond the last checkpoint (cycles 1 to 3); the next run recovers them"`; !strings.Contains(js, want) {
		t.Errorf("status --json does not say %s:\n%s", want, js)
	}
}
