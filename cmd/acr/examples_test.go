package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var (
	// quoted strings are data (echo "see acr recover"), not commands.
	quoted = regexp.MustCompile(`"[^"]*"|'[^']*'`)
	// comment is a shell comment to the end of the line.
	comment = regexp.MustCompile(`(^|\s)#.*$`)
	// operators separate commands on one shell line.
	operators = regexp.MustCompile(`&&|\|\||[;|&()]`)
	// assignment is a VAR=value prefix of a command.
	assignment = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*=`)
	// redirection ends a command's arguments (>>file, 2>&1, <in).
	redirection = regexp.MustCompile(`^[0-9]*[<>]`)
)

// invocation is one acr command line found in a document.
type invocation struct {
	where string
	args  []string
}

// acrInvocations finds the acr command lines in the text of an example
// file, or in the sh code blocks of a markdown document: every command,
// between shell operators, whose program (after VAR=value prefixes, a $
// prompt, sudo or exec, or systemd's ExecStart=) is acr or a path ending
// in /acr.
func acrInvocations(name, text string) []invocation {
	markdown := strings.HasSuffix(name, ".md")
	inSh := false
	var found []invocation
	sc := bufio.NewScanner(strings.NewReader(text))
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if markdown {
			if t := strings.TrimSpace(line); strings.HasPrefix(t, "```") {
				inSh = !inSh && (t == "```sh" || t == "```bash")
				continue
			}
			if !inSh {
				continue
			}
		}
		line = comment.ReplaceAllString(quoted.ReplaceAllString(line, "Q"), "")
		for _, seg := range operators.Split(line, -1) {
			f := strings.Fields(seg)
			for len(f) > 0 && (assignment.MatchString(f[0]) && !strings.HasPrefix(f[0], "ExecStart=") ||
				slices.Contains([]string{"$", "sudo", "exec"}, f[0])) {
				f = f[1:]
			}
			if len(f) == 0 {
				continue
			}
			f[0] = strings.TrimPrefix(f[0], "ExecStart=")
			if f[0] != "acr" && !strings.HasSuffix(f[0], "/acr") {
				continue
			}
			args := f[1:]
			if i := slices.IndexFunc(args, redirection.MatchString); i >= 0 {
				args = args[:i]
			}
			found = append(found, invocation{where: fmt.Sprintf("%s:%d", name, n), args: args})
		}
	}
	return found
}

// checkInvocation parses an invocation against a fresh command tree the
// way acr would: the command must exist, every flag must be one of its
// flags with a valid value, and the positional arguments must be accepted.
func checkInvocation(args []string) error {
	root := newRootCommand(newApp(io.Discard, io.Discard))
	cmd, rest, err := root.Find(args)
	if err != nil {
		return err
	}
	if err := cmd.ParseFlags(rest); err != nil {
		return flagError(cmd, err)
	}
	if cmd.Args != nil {
		return cmd.Args(cmd, cmd.Flags().Args())
	}
	return nil
}

// TestDocExamplesCallRealCommands checks every acr command line in the
// cron and systemd examples, and in the sh blocks of the README and the
// docs, against the command tree: a renamed command or flag breaks this
// test, not an operator's crontab.
func TestDocExamplesCallRealCommands(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("..", "..", "docs", "examples", "*"))
	require.NoError(t, err)
	mds, err := filepath.Glob(filepath.Join("..", "..", "docs", "*.md"))
	require.NoError(t, err)
	files = append(append(files, mds...), filepath.Join("..", "..", "README.md"))
	known := map[string]bool{"ACR_CLOCK": true, "ACR_FAILPOINT": true, "ACR_FAILPOINT_READY": true, "ACR_CPUPROFILE": true, "ACR_TIMINGS": true}
	for key := range settingSpecs(newRootCommand(newApp(io.Discard, io.Discard))) {
		for _, e := range envNames(key) {
			known[e] = true
		}
	}
	perFile := map[string]int{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		name := filepath.Base(f)
		for _, inv := range acrInvocations(name, string(b)) {
			perFile[name]++
			assert.NoError(t, checkInvocation(inv.args), "%s: acr %s", inv.where, strings.Join(inv.args, " "))
		}
		if strings.HasSuffix(name, ".md") {
			continue
		}
		for _, env := range regexp.MustCompile(`\bACR_[A-Z_]+`).FindAllString(string(b), -1) {
			// ACR_NOTIFY_* are not acr's: it passes them to the notify program.
			assert.True(t, known[env] || strings.HasPrefix(env, notifyEnvPrefix), "%s: %s is not an environment variable acr reads", name, env)
		}
	}
	t.Logf("acr command lines checked per file: %v", perFile)
	// Each example that schedules acr must have been checked.
	for _, f := range []string{"crontab", "acr-loop.service"} {
		assert.Positive(t, perFile[f], "no acr command found in docs/examples/%s", f)
	}
}

// TestOperationsQuotesTheCrontab keeps the crontab line shown in
// docs/operations.md identical to the file an operator installs.
// TestSystemdUnits: the example units do what their comments say. The
// service runs as an unprivileged user; a timer asks for Persistent= only
// with an OnCalendar= trigger, the only kind it applies to.
func TestSystemdUnits(t *testing.T) {
	keys := func(name string) map[string]string {
		b, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", name))
		require.NoError(t, err)
		out := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if k, v, ok := strings.Cut(strings.TrimSpace(line), "="); ok && !strings.HasPrefix(k, "#") {
				out[k] = v
			}
		}
		return out
	}
	svc := keys("acr-loop.service")
	assert.NotEmpty(t, svc["User"], "the service names the user it runs as")
	assert.NotEqual(t, "root", svc["User"])
	timer := keys("acr-loop.timer")
	if p, ok := timer["Persistent"]; ok && p == "true" {
		assert.NotEmpty(t, timer["OnCalendar"], "Persistent=true applies only to OnCalendar= timers")
	}
	assert.NotEmpty(t, timer["OnUnitInactiveSec"]+timer["OnCalendar"], "the timer repeats")
}

func TestOperationsQuotesTheCrontab(t *testing.T) {
	cron, err := os.ReadFile(filepath.Join("..", "..", "docs", "examples", "crontab"))
	require.NoError(t, err)
	ops, err := os.ReadFile(filepath.Join("..", "..", "docs", "operations.md"))
	require.NoError(t, err)
	n := 0
	for _, line := range strings.Split(string(cron), "\n") {
		if line != "" && !strings.HasPrefix(line, "#") {
			n++
			assert.Contains(t, string(ops), "\n"+line+"\n", "docs/operations.md does not show the crontab line as it is")
		}
	}
	assert.Equal(t, 1, n, "the example crontab has one schedule line")
}

func TestAcrInvocationsParser(t *testing.T) {
	got := acrInvocations("crontab", `# acr run in a comment
*/5 * * * * cd /srv/acr-loop && X=1 /usr/local/bin/acr run --max-cycles 50 >>/var/log/acr.log 2>&1; rc=$?; acr status
ExecStart=/usr/local/bin/acr --state-dir /s recover
logger -t acr "acr run exited $rc"; echo "see acr recover"
$ acr log --since 3 | less`)
	var lines []string
	for _, inv := range got {
		lines = append(lines, strings.Join(inv.args, " "))
	}
	assert.Equal(t, []string{"run --max-cycles 50", "status", "--state-dir /s recover", "log --since 3"}, lines)
	assert.Empty(t, acrInvocations("x.md", "```text\nacr bogus\n```\n"), "only sh blocks of markdown are commands")
	assert.Len(t, acrInvocations("x.md", "```sh\nacr status\n```\n"), 1)

	assert.Error(t, checkInvocation([]string{"run", "--max-cycle", "3"}))
	assert.Error(t, checkInvocation([]string{"status", "extra"}))
	assert.Error(t, checkInvocation([]string{"run", "--max-cycles", "many"}))
	assert.NoError(t, checkInvocation([]string{"--log-level", "info", "run", "--max-cycles", "3"}))
}

// cmdExample prints, as a shell script, the command an example file would
// run, with its paths moved by old=new substitutions, so that a script
// can run exactly what the docs tell an operator to install:
//
//	example crontab $DOCS/examples/crontab /usr/local/bin/acr=acr /srv/acr-loop=$WORK/srv
//	example service $DOCS/examples/acr-loop.service ...
//
// For a crontab, that is the command part of the one schedule line; for a
// systemd service, cd to WorkingDirectory, export each Environment= and
// run ExecStart (SuccessExitStatus codes count as success).
func cmdExample(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: example crontab|service FILE [old=new...]")
	}
	b, err := os.ReadFile(ts.MkAbs(args[1]))
	ts.Check(err)
	var subs []string
	for _, s := range args[2:] {
		old, new, ok := strings.Cut(s, "=")
		if !ok {
			ts.Fatalf("example: substitution %q is not old=new", s)
		}
		subs = append(subs, old, new)
	}
	text := strings.NewReplacer(subs...).Replace(string(b))
	var script []string
	switch args[0] {
	case "crontab":
		for _, line := range strings.Split(text, "\n") {
			f := strings.Fields(line)
			if len(f) < 6 || strings.HasPrefix(f[0], "#") {
				continue
			}
			// Five time fields, then the command, which cron hands to sh.
			cmd := line
			for range 5 {
				cmd = strings.TrimLeft(cmd, " \t")
				cmd = cmd[strings.IndexAny(cmd, " \t"):]
			}
			script = append(script, strings.TrimSpace(cmd))
		}
	case "service":
		var ok []string
		for _, line := range strings.Split(text, "\n") {
			k, v, found := strings.Cut(strings.TrimSpace(line), "=")
			if !found {
				continue
			}
			switch k {
			case "WorkingDirectory":
				script = append(script, "cd "+v+" || exit 1")
			case "Environment":
				script = append(script, "export "+v)
			case "SuccessExitStatus":
				ok = strings.Fields(v)
			case "ExecStart":
				script = append(script, v, "rc=$?")
			}
		}
		cond := "[ $rc -eq 0 ]"
		for _, c := range ok {
			cond += " || [ $rc -eq " + c + " ]"
		}
		script = append(script, cond)
	default:
		ts.Fatalf("example: unknown kind %q", args[0])
	}
	if len(script) == 0 || !slices.ContainsFunc(script, func(s string) bool { return strings.Contains(s, "acr") }) {
		ts.Fatalf("example: no acr command found in %s", args[1])
	}
	_, err = ts.Stdout().Write([]byte(strings.Join(script, "\n") + "\n"))
	ts.Check(err)
}

// TestMakeInstall: the README's install step works: make install with a
// PREFIX (into a DESTDIR here) puts an acr that runs and its man pages in
// place, and without one it is go install ./cmd/acr.
func TestMakeInstall(t *testing.T) {
	mk, err := exec.LookPath("make")
	if err != nil || testing.Short() {
		t.Skip("needs make, and builds acr once more")
	}
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	assert.Contains(t, string(readme), "make install")
	assert.Contains(t, string(readme), "go install ./cmd/acr")

	dry, err := exec.Command(mk, "-s", "-n", "-C", filepath.Join("..", ".."), "install").Output()
	require.NoError(t, err)
	assert.Contains(t, string(dry), "go install ./cmd/acr")

	dest := t.TempDir()
	cmd := exec.Command(mk, "-s", "-C", filepath.Join("..", ".."), "install", "PREFIX=/usr/local", "DESTDIR="+dest, "BIN="+filepath.Join(dest, "build", "acr"))
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	bin := filepath.Join(dest, "usr", "local", "bin", "acr")
	got, err := exec.Command(bin, "--version").Output()
	require.NoError(t, err)
	assert.Contains(t, string(got), "acr "+version)
	_, err = os.Stat(filepath.Join(dest, "usr", "local", "share", "man", "man1", "acr-run.1"))
	assert.NoError(t, err)
}
