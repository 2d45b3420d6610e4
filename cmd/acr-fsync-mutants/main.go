// Command acr-fsync-mutants checks that the power-loss tests notice the
// loss of every fsync acr makes. It finds each fsync call site in the
// source (File.Sync, FS.SyncDir, the sandbox's own syncs, disk.ReplaceFile,
// which fsyncs a directory, and FS.WriteFile, which fsyncs a temporary
// file), deletes that one fsync on a temporary copy of the tree, and runs
// the power-loss tests (the tests named *PowerLoss* or *Fsync*) against
// the copy. Every deletion must make a test fail, or be listed in allowed
// with the reason the power-loss model cannot or need not see it. A listed
// site that no longer exists is an error too, so the list stays true.
//
// make fsync-mutants runs it from the repository root.
package main

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// testRun selects the power-loss tests; testPackages are where they live.
const testRun = "PowerLoss|Fsync"

var testPackages = []string{"./internal/dirstore", "./internal/ledger", "./internal/runstore", "./internal/sandbox", "./internal/inbox"}

// allowed lists the fsync call sites whose deletion the power-loss tests
// do not (and cannot, or need not) notice, by site id, with the reason.
var allowed = map[string]string{
	// The real file system's implementation of the disk.FS contract. The
	// power-loss tests run the callers on disk.Mem, which models exactly
	// that contract; only cutting a machine's power could test these.
	"internal/disk/os.go CreateOSDir syncPath(filepath.Dir(d))":    "OS implementation of the contract disk.Mem models (parents of a new state directory)",
	"internal/disk/os.go OSDir.MkdirAll syncPath(filepath.Dir(q))": "OS implementation of the contract disk.Mem models (MkdirAll is durable)",
	"internal/disk/os.go OSDir.SyncDir syncPath(p)":                "OS implementation of the contract disk.Mem models (SyncDir)",
	"internal/disk/os.go syncPath Fsync(f)":                        "OS implementation of the contract disk.Mem models (fsync of a directory)",
	"internal/disk/os.go osFile.Sync Fsync(f.File)":                "OS implementation of the contract disk.Mem models (File.Sync)",
	"internal/disk/fsync_other.go Fsync f.Sync()":                  "the fsync of builds other than Linux (disk.Fsync), which the tests here do not compile",
	// The sandbox's own calls to the OS. The world's writes report each
	// fsync to the sandbox's journal after the OS call; TestWorldPowerLoss
	// replays the journal onto disk.Mem, so every caller of these (the
	// sites above them, which the mutants delete) is inside the model, and
	// only these last calls are not.
	"internal/sandbox/journal.go worldFile.Sync disk.Fsync(f.File)":  "OS call behind the journal's sync; its callers are in the world's power-loss model",
	"internal/sandbox/journal.go syncPath disk.Fsync(f)":             "OS call behind the journal's syncdir; its callers are in the world's power-loss model",
	"internal/sandbox/sandbox.go World.fsyncDir disk.Fsync(f)":       "OS call behind the journal's syncdir; its callers are in the world's power-loss model",
	"internal/sandbox/dirsync.go World.startDirSync disk.Fsync(f)":   "OS call behind the journal's syncdir (noted when awaited); its callers are in the world's power-loss model",
	"internal/sandbox/mirror.go World.Mirror w.syncDir(path.Dir(p))": "removal of an extra entry from a mirrored copy, whose truth is kept in the store and which is mirrored again at every open (see World.Mirror): what a power loss leaves of it does not matter",
	// The world an import writes: with the OS, not through the sandbox's
	// journal, so the world's power-loss model does not see these (the
	// run's own state an import writes, its idempotency table included,
	// is on disk.FS and in TestPowerLossDuringImport).
	"internal/runstore/worldmove.go writeSynced f.Sync()":                                           "world file written by an import, with the OS: not in the world's power-loss model (not journalled)",
	"internal/runstore/worldmove.go syncDirPath d.Sync()":                                           "world directory written by an import, with the OS: not in the world's power-loss model (not journalled)",
	"internal/runstore/import.go importOn disk.ReplaceFile(s.fsys, stagingDir+\"/\"+swapFile, rec)": "import's swap record: the final fsync of the state directory makes the whole swap durable at once and nothing of it is durable before, so a power cut never needs the record; it is there for a kill -9 half-way through the swap, which TestPowerLossDuringImport cuts at every operation",
	// Copies held in memory to be checked, not written anywhere.
	"internal/runstore/export.go verifyLedger mem.WriteFile(ledger.FileName, b)":   "an in-memory copy of a ledger to verify it (disk.Mem), not a durable write",
	"internal/runstore/import.go archiveRecords mem.WriteFile(ledger.FileName, b)": "an in-memory copy of a ledger to decode it (disk.Mem), not a durable write",
	// Files acr writes that are not the run's state.
	"internal/runstore/store.go WriteOutput disk.ReplaceFile(dir, filepath.Base(path), data)":                            "a command's output file (the archive acr export writes, the HTML report), outside the state directory",
	"internal/validate/manifest.go WriteOutputs disk.ReplaceFile(fsys, \"release-manifest.json\", append(js, '\\n'))":    "release output in docs/, not run state",
	"internal/validate/manifest.go WriteOutputs disk.ReplaceFile(fsys, \"PHASE12_VALIDATION.md\", Markdown(ev, rep, m))": "release output in docs/, not run state",
	"internal/perf/measure.go Floor f.Sync()":                                     "benchmark of fsync cost, not run state",
	"internal/perf/measure.go Floor disk.ReplaceFile(d, \"checkpoint.json\", cp)": "benchmark of fsync cost, not run state",
}

// site is one fsync call site.
type site struct {
	ID         string // "<file> <func> <call>", stable across line moves
	File       string
	Line       int
	Start, End int    // byte offsets of the call in the file
	Repl       string // what the call becomes
}

func main() {
	root := flag.String("root", ".", "repository root")
	list := flag.Bool("list", false, "only list the fsync call sites")
	only := flag.String("only", "", "only sites whose id contains this")
	all := flag.Bool("all", false, "also try the allowed sites (to find reasons that no longer hold)")
	flag.Parse()
	if err := run(*root, *list, *all, *only, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "acr-fsync-mutants:", err)
		os.Exit(1)
	}
}

func run(root string, list, all bool, only string, out io.Writer) error {
	sites, err := findSites(root)
	if err != nil {
		return err
	}
	var problems []string
	present := map[string]bool{}
	for _, s := range sites {
		present[s.ID] = true
	}
	for id := range allowed {
		if !present[id] {
			problems = append(problems, "allowed list names a site that no longer exists: "+id)
		}
	}
	if list {
		for _, s := range sites {
			fmt.Fprintf(out, "%s:%d  %s\n", s.File, s.Line, s.ID)
		}
		return report(problems)
	}
	work, err := os.MkdirTemp("", "acr-fsync-mutants-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	if err := copyTree(root, work); err != nil {
		return err
	}
	if err := goTest(work, io.Discard, "baseline"); err != nil {
		return fmt.Errorf("the power-loss tests fail without any mutation: %w", err)
	}
	caught, allowedN := 0, 0
	for _, s := range sites {
		if only != "" && !strings.Contains(s.ID, only) {
			continue
		}
		reason, ok := allowed[s.ID]
		if ok && !all {
			allowedN++
			fmt.Fprintf(out, "allowed  %-70s %s\n", s.ID, reason)
			continue
		}
		start := time.Now()
		verdict, err := mutant(work, s)
		if err != nil {
			return err
		}
		switch {
		case verdict != "":
			caught++
			fmt.Fprintf(out, "caught   %-70s %s (%s)\n", s.ID, verdict, time.Since(start).Round(time.Second))
		case ok:
			allowedN++
			fmt.Fprintf(out, "allowed  %-70s %s\n", s.ID, reason)
		default:
			fmt.Fprintf(out, "MISSED   %-70s %s:%d\n", s.ID, s.File, s.Line)
			problems = append(problems, fmt.Sprintf("deleting %s (%s:%d) is not noticed by any power-loss test", s.ID, s.File, s.Line))
		}
	}
	fmt.Fprintf(out, "%d fsync sites: %d caught, %d allowed with a reason, %d missed\n", caught+allowedN+len(problems), caught, allowedN, len(problems))
	return report(problems)
}

func report(problems []string) error {
	if len(problems) == 0 {
		return nil
	}
	return errors.New(strings.Join(problems, "\n"))
}

// mutant applies one deletion to the copy, runs the tests and restores
// the file. It returns the failing tests ("" if none failed).
func mutant(work string, s site) (string, error) {
	p := filepath.Join(work, filepath.FromSlash(s.File))
	orig, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	defer os.WriteFile(p, orig, 0o644)
	mut := slices.Concat(orig[:s.Start], []byte(s.Repl), orig[s.End:])
	if err := os.WriteFile(p, mut, 0o644); err != nil {
		return "", err
	}
	var buf bytes.Buffer
	err = goTest(work, &buf, s.ID)
	if err == nil {
		return "", nil
	}
	failed := regexp.MustCompile(`(?m)^\s*--- FAIL: (\S+)`).FindAllStringSubmatch(buf.String(), -1)
	if len(failed) == 0 {
		return "", fmt.Errorf("mutant %s did not build or test: %v\n%s", s.ID, err, buf.String())
	}
	var names []string
	for _, f := range failed {
		if !slices.Contains(names, f[1]) && !strings.Contains(f[1], "/") {
			names = append(names, f[1])
		}
	}
	if len(names) == 0 {
		names = append(names, failed[0][1])
	}
	return "by " + strings.Join(names, ", "), nil
}

func goTest(dir string, out io.Writer, what string) error {
	args := append([]string{"test", "-count=1", "-run", testRun}, testPackages...)
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: go test: %w", what, err)
	}
	return nil
}

// copyTree copies what the tests need: the module files and the Go,
// scenario and documentation trees.
func copyTree(root, dst string) error {
	for _, name := range []string{"go.mod", "go.sum"} {
		if err := copyFile(filepath.Join(root, name), filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	for _, dir := range []string{"cmd", "internal", "scenarios", "docs"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(dst, rel), 0o755)
			}
			if !d.Type().IsRegular() {
				return nil
			}
			return copyFile(p, filepath.Join(dst, rel))
		})
		if err != nil {
			return err
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// findSites lists the fsync call sites of the non-test Go files under
// internal/ and cmd/, except the power-loss model itself (disk.Mem) and
// this command.
func findSites(root string) ([]site, error) {
	var out []site
	for _, dir := range []string{"internal", "cmd"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(root, p)
			rel = filepath.ToSlash(rel)
			if d.IsDir() {
				if rel == "cmd/acr-fsync-mutants" {
					return fs.SkipDir
				}
				return nil
			}
			if !strings.HasSuffix(rel, ".go") || strings.HasSuffix(rel, "_test.go") || rel == "internal/disk/mem.go" {
				return nil
			}
			src, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			ss, err := sitesIn(rel, src)
			out = append(out, ss...)
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	return out, nil
}

// sitesIn finds the fsync calls in one file.
func sitesIn(rel string, src []byte) ([]site, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, rel, src, 0)
	if err != nil {
		return nil, err
	}
	var out []site
	seen := map[string]int{}
	for _, decl := range f.Decls {
		fn, ok := decl.(*ast.FuncDecl)
		if !ok || fn.Body == nil {
			continue
		}
		name := fn.Name.Name
		if fn.Recv != nil && len(fn.Recv.List) == 1 {
			t := fn.Recv.List[0].Type
			if st, ok := t.(*ast.StarExpr); ok {
				t = st.X
			}
			if id, ok := t.(*ast.Ident); ok {
				name = id.Name + "." + name
			}
		}
		ast.Inspect(fn.Body, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			repl, ok := replacement(call, src, fset)
			if !ok {
				return true
			}
			start, end := fset.Position(call.Pos()).Offset, fset.Position(call.End()).Offset
			text := string(src[start:end])
			id := rel + " " + name + " " + text
			seen[id]++
			if seen[id] > 1 {
				id += fmt.Sprintf(" #%d", seen[id])
			}
			out = append(out, site{ID: id, File: rel, Line: fset.Position(call.Pos()).Line, Start: start, End: end, Repl: repl})
			return true
		})
	}
	return out, nil
}

// replacement says what a call becomes without its fsync, and whether it
// is an fsync call site at all. Every operand is still evaluated, so the
// mutant compiles whatever the call's surroundings.
func replacement(call *ast.CallExpr, src []byte, fset *token.FileSet) (string, bool) {
	text := func(e ast.Node) string {
		return string(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
	}
	noop := func(operands ...ast.Expr) string {
		var parts []string
		for _, o := range operands {
			parts = append(parts, text(o))
		}
		return "func(...any) error { return nil }(" + strings.Join(parts, ", ") + ")"
	}
	switch fun := call.Fun.(type) {
	case *ast.Ident:
		if (fun.Name == "syncPath" || fun.Name == "Fsync") && len(call.Args) >= 1 {
			return noop(call.Args...), true
		}
	case *ast.SelectorExpr:
		pkg, _ := fun.X.(*ast.Ident)
		switch {
		case fun.Sel.Name == "Sync" && len(call.Args) == 0:
			return noop(fun.X), true
		case pkg != nil && pkg.Name == "disk" && fun.Sel.Name == "Fsync" && len(call.Args) == 1:
			return noop(call.Args...), true
		case (fun.Sel.Name == "SyncDir" || fun.Sel.Name == "syncDir" || fun.Sel.Name == "syncDirLast") && len(call.Args) == 1:
			return noop(append([]ast.Expr{fun.X}, call.Args...)...), true
		case pkg != nil && pkg.Name == "disk" && fun.Sel.Name == "ReplaceFile" && len(call.Args) == 3:
			return "(" + text(call.Args[0]) + ").WriteFile(" + text(call.Args[1]) + ", " + text(call.Args[2]) + ")", true
		case fun.Sel.Name == "WriteFile" && len(call.Args) == 2 && (pkg == nil || pkg.Obj != nil || !isPackage(pkg.Name)):
			return text(fun.X) + ".WriteCache(" + text(call.Args[0]) + ", " + text(call.Args[1]) + ")", true
		}
	}
	return "", false
}

// isPackage reports whether a selector's left side names a package whose
// WriteFile is not disk.FS's (os.WriteFile takes three arguments anyway).
func isPackage(name string) bool {
	return name == "os" || name == "renameio" || name == "ioutil"
}
