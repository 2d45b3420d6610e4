package mutant

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Env is the environment variable that turns one switched mutant on.
const Env = "ACR_MUTANT"

// switchFile is the file ApplySwitched adds to every package it mutates.
const switchFile = "zz_mutant_switch.go"

// Mutant is one source mutation.
type Mutant struct {
	// Name identifies the mutant (ACR_MUTANT=<name> turns it on in a
	// switched build).
	Name string
	// Breaks says in words which promise the mutation breaks.
	Breaks string
	// Quick marks the mutants CI runs (make mutants-quick).
	Quick bool
	Edits []Edit
}

// Edit is one exact textual replacement in one file.
type Edit struct {
	// File is slash-separated, relative to the tree's root.
	File string
	// Find must occur exactly once in the file.
	Find string
	// Replace is the mutated text.
	Replace string
	// Switched is the text a switched build gets: the original and the
	// mutated behaviour, with MUTANT_ON standing for "this mutant is on".
	Switched string
}

// ErrPattern means an edit's pattern does not occur exactly once: the code
// under the mutant changed, and the mutant must be updated.
var ErrPattern = errors.New("mutation pattern does not match exactly once")

// Find returns the mutant of a name.
func Find(name string) (Mutant, bool) {
	i := slices.IndexFunc(Catalogue(), func(m Mutant) bool { return m.Name == name })
	if i < 0 {
		return Mutant{}, false
	}
	return Catalogue()[i], true
}

// Tree is a temporary copy of the source tree.
type Tree struct {
	Dir      string
	original map[string][]byte // files changed by Apply, as they were
}

// skipped are the top-level entries a copy leaves out: version control,
// build output, and run state.
var skipped = []string{".git", "bin", "man", ".demo_state", "engine_state"}

// Copy copies the source tree at root into a new temporary directory.
func Copy(root string) (*Tree, error) {
	dir, err := os.MkdirTemp("", "acr-mutants-")
	if err != nil {
		return nil, err
	}
	t := &Tree{Dir: dir, original: map[string][]byte{}}
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		top := strings.SplitN(filepath.ToSlash(rel), "/", 2)[0]
		if slices.Contains(skipped, top) {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		dst := filepath.Join(dir, rel)
		if d.IsDir() {
			return os.MkdirAll(dst, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(dst, b, 0o644)
	})
	if err != nil {
		t.Remove()
		return nil, fmt.Errorf("copy %s: %w", root, err)
	}
	return t, nil
}

// Remove deletes the copy.
func (t *Tree) Remove() { _ = os.RemoveAll(t.Dir) }

func (t *Tree) edit(e Edit, with string) error {
	p := filepath.Join(t.Dir, filepath.FromSlash(e.File))
	b, err := os.ReadFile(p)
	if err != nil {
		return err
	}
	if n := bytes.Count(b, []byte(e.Find)); n != 1 {
		return fmt.Errorf("%w: %s: found %d times:\n%s", ErrPattern, e.File, n, e.Find)
	}
	if _, ok := t.original[e.File]; !ok {
		t.original[e.File] = b
	}
	return os.WriteFile(p, bytes.Replace(b, []byte(e.Find), []byte(with), 1), 0o644)
}

// Apply applies one mutant as plain source. Restore undoes it.
func (t *Tree) Apply(m Mutant) error {
	for _, e := range m.Edits {
		if err := t.edit(e, e.Replace); err != nil {
			return fmt.Errorf("mutant %s: %w", m.Name, err)
		}
	}
	return nil
}

// Restore puts back every file Apply changed.
func (t *Tree) Restore() error {
	for f, b := range t.original {
		if err := os.WriteFile(filepath.Join(t.Dir, filepath.FromSlash(f)), b, 0o644); err != nil {
			return err
		}
	}
	t.original = map[string][]byte{}
	return nil
}

// ApplySwitched applies every mutant at once, each behind its switch, and
// adds the switch function to every package it touches.
func (t *Tree) ApplySwitched(ms []Mutant) error {
	pkgs := map[string]bool{}
	for _, m := range ms {
		on := fmt.Sprintf("mutantOn(%q)", m.Name)
		for _, e := range m.Edits {
			if err := t.edit(e, strings.ReplaceAll(e.Switched, "MUTANT_ON", on)); err != nil {
				return fmt.Errorf("mutant %s: %w", m.Name, err)
			}
			pkgs[filepath.Dir(filepath.FromSlash(e.File))] = true
		}
	}
	for dir := range pkgs {
		name, err := packageName(filepath.Join(t.Dir, dir))
		if err != nil {
			return err
		}
		src := fmt.Sprintf("package %s\n\nimport \"os\"\n\n// mutantOn reports whether the named mutant is switched on.\nfunc mutantOn(name string) bool { return os.Getenv(%q) == name }\n", name, Env)
		if err := os.WriteFile(filepath.Join(t.Dir, dir, switchFile), []byte(src), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// packageName reads the package clause of the first non-test Go file.
func packageName(dir string) (string, error) {
	es, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	for _, e := range es {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return "", err
		}
		for _, line := range strings.Split(string(b), "\n") {
			if name, ok := strings.CutPrefix(line, "package "); ok {
				return strings.TrimSpace(name), nil
			}
		}
	}
	return "", fmt.Errorf("no Go package in %s", dir)
}

// BlankFingerprints empties the frozen fingerprints of every scenario in
// the copy, so that a scenario fails only on its behavioural expectations.
func (t *Tree) BlankFingerprints() error {
	paths, err := filepath.Glob(filepath.Join(t.Dir, "scenarios", "*", "scenario.json"))
	if err != nil {
		return err
	}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		var sc map[string]any
		if err := json.Unmarshal(b, &sc); err != nil {
			return fmt.Errorf("%s: %w", p, err)
		}
		if exp, ok := sc["expect"].(map[string]any); ok {
			exp["fingerprints"] = map[string]any{}
		}
		out, err := json.MarshalIndent(sc, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(p, append(out, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Build builds the copy's acr binary into out.
func (t *Tree) Build(ctx context.Context, out string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, "./cmd/acr")
	cmd.Dir = t.Dir
	if b, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("build %s: %w\n%s", t.Dir, err, b)
	}
	return nil
}

// Verdict is what a validation of a mutated build said.
type Verdict struct {
	Mutant  string        `json:"mutant"`
	Killed  bool          `json:"killed"`
	Gates   []string      `json:"failed_gates"`
	Failed  []string      `json:"failed_scenarios"`
	Elapsed time.Duration `json:"elapsed_ns"`
	// Detail is the first evidence of the first failure.
	Detail string `json:"detail"`
}

// By names what killed the mutant: the failing gates, then the scenarios
// that failed their own expectations.
func (v Verdict) By() string {
	var by []string
	for _, g := range v.Gates {
		by = append(by, "gate "+g)
	}
	if len(v.Failed) > 0 {
		by = append(by, "scenarios "+strings.Join(v.Failed, ", "))
	}
	return strings.Join(by, "; ")
}

// Validate runs `acr validate` with the binary bin on the copy's scenarios,
// with the mutant named by mutant switched on ("" for none), against no
// frozen manifest (so gate P says INCONCLUSIVE, never FAIL), and reports
// what failed.
func (t *Tree) Validate(ctx context.Context, bin, mutant string) (Verdict, error) {
	start := time.Now()
	out, err := os.MkdirTemp("", "acr-mutant-report-")
	if err != nil {
		return Verdict{}, err
	}
	defer os.RemoveAll(out)
	cmd := exec.CommandContext(ctx, bin, "validate", "--json", "--scenarios", filepath.Join(t.Dir, "scenarios"), "--out", out)
	cmd.Dir = t.Dir
	cmd.Env = append(os.Environ(), Env+"="+mutant)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	runErr := cmd.Run()
	var rep struct {
		Verdict string `json:"verdict"`
		Details []struct {
			ID       string   `json:"id"`
			Verdict  string   `json:"verdict"`
			Evidence []string `json:"evidence"`
		} `json:"details"`
		Scenarios map[string]struct {
			Failures []string `json:"failures"`
		} `json:"scenarios"`
		FailedScenarios []string `json:"failed_scenarios"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil || rep.Verdict == "" {
		// No report at all: the mutated build could not even validate
		// (it crashed or refused a scenario). That is a failure too, but
		// say so plainly.
		return Verdict{Mutant: mutant, Killed: runErr != nil, Elapsed: time.Since(start), Detail: "no report: " + strings.TrimSpace(stderr.String())}, nil
	}
	v := Verdict{Mutant: mutant, Killed: rep.Verdict == "FAIL", Failed: rep.FailedScenarios, Elapsed: time.Since(start)}
	for _, g := range rep.Details {
		if g.Verdict == "FAIL" {
			v.Gates = append(v.Gates, g.ID)
			if v.Detail == "" && len(g.Evidence) > 0 {
				v.Detail = "gate " + g.ID + ": " + g.Evidence[0]
			}
		}
	}
	for _, s := range rep.FailedScenarios {
		if f := rep.Scenarios[s].Failures; v.Detail == "" && len(f) > 0 {
			v.Detail = s + ": " + f[0]
		}
	}
	if (runErr == nil) == v.Killed {
		return v, fmt.Errorf("acr validate exited %v with verdict %s", runErr, rep.Verdict)
	}
	return v, nil
}
