package report

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// chromiumPath is where Debian's chromium package installs the browser.
const chromiumPath = "/usr/bin/chromium"

// browser returns the browser to test with. Without one the test is
// skipped on a workstation, but fails where a browser is required (CI=1
// or ACR_REQUIRE_BROWSER=1), so that CI cannot pass by skipping it.
func browser(t *testing.T) string {
	t.Helper()
	if _, err := os.Stat(chromiumPath); err == nil {
		return chromiumPath
	}
	if os.Getenv("CI") == "1" || os.Getenv("ACR_REQUIRE_BROWSER") == "1" {
		t.Fatalf("%s is missing and a browser is required here (CI=1 or ACR_REQUIRE_BROWSER=1): apt-get install chromium", chromiumPath)
	}
	t.Skipf("%s is missing (apt-get install chromium to run the browser test)", chromiumPath)
	return ""
}

// dumpDOM loads url in headless chromium, lets its scripts run, and
// returns the resulting DOM. The profile is fresh and every background
// network feature is off: the page must not need the network.
func dumpDOM(t *testing.T, bin, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
		"--disable-background-networking", "--disable-component-update", "--disable-sync", "--disable-dev-shm-usage",
		"--user-data-dir="+t.TempDir(), "--dump-dom", url)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "chromium: %s", stderr.String())
	require.NotEmpty(t, out, "chromium printed no DOM: %s", stderr.String())
	return string(out)
}

// inBrowser loads the page of v in a real browser, at the detail of its
// last cycle, and checks the DOM it built: the timeline, every section,
// the elements in want, and the detail panel that only the page's script
// creates, filled with the cycle named in the URL. TestGeneratedRun (a run
// long enough to be bucketed) and TestReportGolden (the mixed scenario)
// call it on the pages they have already built.
func inBrowser(t *testing.T, v *View, want ...string) {
	t.Helper()
	bin := browser(t)
	path := filepath.Join(t.TempDir(), "report.html")
	f, err := os.Create(path)
	require.NoError(t, err)
	require.NoError(t, Render(f, v))
	require.NoError(t, f.Close())

	last := v.Last
	dom := dumpDOM(t, bin, "file://"+path+fmt.Sprintf("#c%d", last))
	for _, w := range append([]string{
		`id="timeline"`, `class="cycle disp-IDLE"`, `class="cycle disp-CONTINUE"`, `id="markers"`, `id="decisions"`,
		`id="commitments"`, `id="approvals"`, `id="compactions"`, `id="incidents"`, `id="budgets"`, `id="checks"`, `id="cycles"`,
		// Made by the script: proof that it ran, and worked.
		`data-inspector="ready"`, `<aside id="inspector"`,
	}, want...) {
		assert.Contains(t, dom, w)
	}
	i := strings.Index(dom, `<aside id="inspector"`)
	require.GreaterOrEqual(t, i, 0)
	panel := dom[i:]
	panel = panel[:strings.Index(panel, "</aside>")]
	assert.Contains(t, panel, fmt.Sprintf("cycle %d", last), "the panel shows the cycle the URL names")
	assert.Contains(t, panel, "decision", "with its detail")
	assert.NotContains(t, panel, "hidden", "and is visible")
	assert.Regexp(t, fmt.Sprintf(`<details id="c%d" class="[^"]*" open=""`, last), dom, "the cycle's own detail is opened")
}
