package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/runstore"
)

// TestPendingChangeIsShown: the change the shell tried for a waiting git
// command fix (Head.Preview) is on the page, escaped, under the request
// it belongs to, and bounded like a cycle's diff; a request the shell
// gives no change for shows none.
func TestPendingChangeIsShown(t *testing.T) {
	dir := runScenario(t, "p03-sleep-wake-resume")
	st, _, err := runstore.ReadState(dir)
	require.NoError(t, err)
	fsys, err := disk.OpenOSDir(dir)
	require.NoError(t, err)
	head := HeadOf(st)
	gofmt, other := codec.Ref("areq:sha256:"+strings.Repeat("a", 64)), codec.Ref("areq:sha256:"+strings.Repeat("b", 64))
	head.Pending = append(head.Pending,
		PendingApproval{Ref: gofmt, Action: "run_command gofmt-w (gofmt -w .)", Reason: "contract_requires_approval", Cycle: 2},
		PendingApproval{Ref: other, Action: "apply_local_patch README.md", Reason: "contract_requires_approval", Cycle: 3})
	diff := "changes   main.go\n--- a/main.go\n+++ b/main.go\n-func main(){\n+func main() {\n<script>\n" + strings.Repeat("+x\n", 3000)
	head.Preview(func(ref codec.Ref) (string, bool) { return diff, ref == gofmt })
	v, err := Read(ledger.NewReader(fsys), head, Options{Generator: "acr test"})
	require.NoError(t, err)
	var page bytes.Buffer
	require.NoError(t, Render(&page, v))
	html := page.String()
	// html/template escapes + as &#43; and < as &lt;.
	assert.True(t, strings.Contains(html, "<summary>the trial ruled on, and the change tried now at the branch head (an approval binds to its tree)</summary><pre>changes   main.go\n"+
		"--- a/main.go\n&#43;&#43;&#43; b/main.go\n-func main(){\n&#43;func main() {\n&lt;script&gt;\n&#43;x\n"), "the change is on the page, escaped")
	assert.Equal(t, 1, strings.Count(html, "tried now at the branch head"), "only the request with a change shows one")
	n := strings.Count(html, "&#43;x\n")
	assert.True(t, n > 100 && n < 3000, "the change is clipped like a cycle's diff: %d lines of it", n)
}
