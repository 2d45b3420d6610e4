package main

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"
	"golang.org/x/sys/unix"

	"github.com/acr-project/acr/internal/runstore"
)

func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"acr": main})
}

// updateScripts rewrites the files that cmp compares with in the scripts
// (the golden outputs), for a reviewed change of output.
var updateScripts = flag.Bool("update", false, "rewrite the golden files inside testdata/script/*.txtar (review the diff)")

// TestScripts runs the CLI scripts in testdata/script (txtar). Each script
// gets $SCENARIOS and $DOCS pointing at the repository's scenarios/ and
// docs/ folders.
func TestScripts(t *testing.T) {
	t.Parallel() // the scripts, and the crash harnesses beside them
	scenarios, err := filepath.Abs(filepath.Join("..", "..", "scenarios"))
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Abs(filepath.Join("..", "..", "docs"))
	if err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob("testdata/script/*.txtar")
	if len(files) == 0 {
		t.Fatal("no CLI scripts found")
	}
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		RequireExplicitExec: true,
		UpdateScripts:       *updateScripts,
		Setup: func(e *testscript.Env) error {
			e.Setenv("SCENARIOS", scenarios)
			e.Setenv("DOCS", docs)
			e.Setenv("NO_COLOR", "1")
			return nil
		},
		// [root]: the tests run as root, whom file modes do not stop.
		Condition: func(cond string) (bool, error) {
			if cond == "root" {
				return os.Geteuid() == 0, nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"example":   cmdExample,
			"exit":      cmdExit,
			"treehash":  cmdTreehash,
			"flipbyte":  cmdFlipByte,
			"waitfile":  cmdWaitFile,
			"pending":   cmdPending,
			"keygen":    cmdKeygen,
			"approvers": cmdApprovers,
			"forge":     cmdForge,
		},
	})
}

// cmdExit runs a command and asserts its exit status; "killed" means it
// died of SIGKILL, a signal's name that it died of that signal:
//
//	exit 65 acr init ...
//	exit killed acr run
//	exit SIGTERM acr init ...
func cmdExit(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exit CODE|killed|SIGNAME command [args...]")
	}
	err := ts.Exec(args[1], args[2:]...)
	var ee *exec.ExitError
	if sig := args[0]; sig == "killed" || strings.HasPrefix(sig, "SIG") {
		want := syscall.SIGKILL
		if sig != "killed" {
			if want = unix.SignalNum(sig); want == 0 {
				ts.Fatalf("exit: unknown signal %q", sig)
			}
		}
		if !errors.As(err, &ee) {
			ts.Fatalf("%v was not killed: %v", args[1:], err)
		}
		ws, ok := ee.Sys().(syscall.WaitStatus)
		if !ok || !ws.Signaled() || ws.Signal() != want {
			ts.Fatalf("%v ended with %v, want %s", args[1:], err, unix.SignalName(want))
		}
		return
	}
	want, err2 := strconv.Atoi(args[0])
	if err2 != nil {
		ts.Fatalf("exit: bad code %q", args[0])
	}
	got := 0
	if errors.As(err, &ee) {
		got = ee.ExitCode()
	} else if err != nil {
		ts.Fatalf("exit: %v", err)
	}
	if got != want {
		ts.Fatalf("%v exited %d, want %d", args[1:], got, want)
	}
}

// cmdPending sets an environment variable to the ref of the first open
// approval request (or else pending amendment) of the run in a state
// directory, so that a script can answer it:
//
//	pending engine_state REF
//	exec acr approve $REF
func cmdPending(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: pending STATE_DIR VAR")
	}
	s, _, err := runstore.ReadState(ts.MkAbs(args[0]))
	ts.Check(err)
	for _, p := range s.Run.PendingApprovals {
		if p.Resolution == nil {
			ts.Setenv(args[1], string(p.Ref))
			return
		}
	}
	for _, p := range s.Run.PendingAmendments {
		ts.Setenv(args[1], string(p.Ref))
		return
	}
	ts.Fatalf("pending: no open approval request or amendment in %s", args[0])
}

// cmdWaitFile waits (up to a minute) until a file exists: the handshake
// with a background process parked at a failpoint.
func cmdWaitFile(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: waitfile FILE")
	}
	p := ts.MkAbs(args[0])
	for range 6000 {
		if _, err := os.Stat(p); err == nil {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	ts.Fatalf("waitfile: %s did not appear", args[0])
}

// cmdTreehash prints one digest over every file (path and bytes) below a
// directory, so scripts can show that a command left it byte for byte as
// it was:
//
//	treehash engine_state
//	cp stdout before
//	... ; treehash engine_state; cmp stdout before
func cmdTreehash(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 1 {
		ts.Fatalf("usage: treehash DIR")
	}
	root := ts.MkAbs(args[0])
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	ts.Check(err)
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		ts.Check(err)
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s\x00%d\x00", rel, len(b))
		h.Write(b)
	}
	_, err = fmt.Fprintf(ts.Stdout(), "%d files %s\n", len(paths), hex.EncodeToString(h.Sum(nil)))
	ts.Check(err)
}

// cmdFlipByte flips one bit in the middle of line N of a file:
//
//	flipbyte engine_state/ledger/events.jsonl 3
func cmdFlipByte(ts *testscript.TestScript, neg bool, args []string) {
	if len(args) != 2 {
		ts.Fatalf("usage: flipbyte FILE LINE")
	}
	p := ts.MkAbs(args[0])
	line, err := strconv.Atoi(args[1])
	ts.Check(err)
	b, err := os.ReadFile(p)
	ts.Check(err)
	start, n := 0, 1
	for i := 0; i < len(b) && n < line; i++ {
		if b[i] == '\n' {
			n++
			start = i + 1
		}
	}
	end := start
	for end < len(b) && b[end] != '\n' {
		end++
	}
	if end-start < 10 {
		ts.Fatalf("flipbyte: line %d too short", line)
	}
	b[start+(end-start)/2] ^= 0x01
	ts.Check(os.WriteFile(p, b, 0o644))
}
