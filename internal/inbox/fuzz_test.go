package inbox

import (
	"bytes"
	"strings"
	"testing"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/world"
)

// FuzzDecode: an inbox file either decodes into exactly one kind of item
// whose canonical encoding is the file's bytes, or is refused; it never
// panics, and the name must match the content.
func FuzzDecode(f *testing.F) {
	w := &state.WakeSignal{Schema: state.WakeSignalSchema, ID: "wake-1", Source: "external_event", DedupKey: "k", CausalParent: "c",
		CreatedAt: "2026-01-01T00:00:00Z", ExpiresAt: "2026-01-02T00:00:00Z", By: "op"}
	a := &state.Approval{Schema: state.ApprovalSchema, ID: "approval-1", ActionRef: codec.Ref("areq:sha256:" + codec.Digest([]byte("x"))), Verdict: "approve", By: "op", CreatedAt: "2026-01-01T00:00:00Z"}
	s := &state.StopRequest{Schema: state.StopSchema, ID: "stop-1", By: "op", CreatedAt: "2026-01-01T00:00:00Z"}
	// An approval of a git world's command fix carries its trial.
	tr := *a
	tr.Trial = &world.GitTrial{Head: strings.Repeat("1", 40), Tree: strings.Repeat("2", 40), Changed: []string{"main.go"}}
	for _, v := range []any{w, a, s, &tr} {
		f.Add("wake-1", codec.MustMarshal(v))
		f.Add("approval-1", codec.MustMarshal(v))
		f.Add("stop-1", codec.MustMarshal(v))
	}
	f.Fuzz(func(t *testing.T, id string, b []byte) {
		it, err := Decode(id, b)
		if err != nil {
			return
		}
		var v any
		switch it.Kind {
		case KindWake:
			v = it.Wake
		case KindApproval:
			v = it.Approval
		case KindStop:
			v = it.Stop
		default:
			t.Fatalf("accepted unknown kind %q", it.Kind)
		}
		if enc := codec.MustMarshal(v); !bytes.Equal(enc, b) {
			t.Fatalf("accepted %q, which re-encodes to %q", b, enc)
		}
	})
}
