// Command acr-mutants runs acr's mutation suite (internal/mutant): each
// mutant of the catalogue is applied to a temporary copy of the source
// tree, the copy is built, and `acr validate` runs on it with the
// scenarios' fingerprints blanked and no frozen manifest, so that only
// behavioural evidence counts. A mutant is killed when the verdict is
// FAIL; the suite fails if any mutant survives, if the unmutated copy does
// not validate, or if a mutation pattern no longer matches the code.
//
// make mutants runs every mutant as plain source, one build each;
// make mutants-quick (CI) runs the quick subset behind switches, one build
// in all. -only picks mutants by name.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/mutant"
)

type options struct {
	root     string
	quick    bool
	switched bool
	only     []string
	keep     bool
}

func main() {
	var o options
	var only string
	flag.StringVar(&o.root, "root", ".", "the source tree to mutate (a copy is made; the tree is never changed)")
	flag.BoolVar(&o.quick, "quick", false, "only the quick subset (what CI runs)")
	flag.BoolVar(&o.switched, "switched", false, "build once with every mutant behind an ACR_MUTANT switch instead of once per mutant")
	flag.StringVar(&only, "only", "", "comma-separated mutant names to run (default: all)")
	flag.BoolVar(&o.keep, "keep", false, "keep the mutated copy and print where it is")
	flag.Parse()
	if only != "" {
		o.only = strings.Split(only, ",")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "acr-mutants:", err)
		os.Exit(1)
	}
}

func selected(o options) ([]mutant.Mutant, error) {
	var out []mutant.Mutant
	for _, m := range mutant.Catalogue() {
		if (o.quick && !m.Quick) || (len(o.only) > 0 && !slices.Contains(o.only, m.Name)) {
			continue
		}
		out = append(out, m)
	}
	for _, n := range o.only {
		if _, ok := mutant.Find(n); !ok {
			return nil, fmt.Errorf("no mutant %q", n)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no mutant selected")
	}
	return out, nil
}

func run(ctx context.Context, o options, w io.Writer) error {
	start := time.Now()
	ms, err := selected(o)
	if err != nil {
		return err
	}
	tree, err := mutant.Copy(o.root)
	if err != nil {
		return err
	}
	if o.keep {
		fmt.Fprintf(w, "mutated copy kept at %s\n", tree.Dir)
	} else {
		defer tree.Remove()
	}
	if err := tree.BlankFingerprints(); err != nil {
		return err
	}
	bin := filepath.Join(tree.Dir, "bin", "acr")

	// The unmutated copy must validate: otherwise every mutant would look
	// killed.
	if err := tree.Build(ctx, bin); err != nil {
		return err
	}
	base, err := tree.Validate(ctx, bin, "")
	if err != nil {
		return fmt.Errorf("baseline: %w", err)
	}
	if base.Killed {
		return fmt.Errorf("the unmutated tree does not validate (%s: %s); fix that first", base.By(), base.Detail)
	}
	fmt.Fprintf(w, "baseline: the unmutated copy validates (%s)\n", base.Elapsed.Round(time.Second))

	if o.switched {
		if err := tree.ApplySwitched(ms); err != nil {
			return err
		}
		if err := tree.Build(ctx, bin); err != nil {
			return err
		}
	}
	width := 0
	for _, m := range ms {
		width = max(width, len(m.Name))
	}
	row := func(name, killed, elapsed, by string) {
		fmt.Fprintf(w, "%-*s  %-8s  %5s  %s\n", width, name, killed, elapsed, by)
	}
	row("mutant", "killed", "time", "killed by")
	var survivors []string
	for _, m := range ms {
		t0 := time.Now()
		if !o.switched {
			if err := tree.Apply(m); err != nil {
				return err
			}
			if err := tree.Build(ctx, bin); err != nil {
				return fmt.Errorf("mutant %s: %w", m.Name, err)
			}
		}
		v, err := tree.Validate(ctx, bin, m.Name)
		if err != nil {
			return fmt.Errorf("mutant %s: %w", m.Name, err)
		}
		if !o.switched {
			if err := tree.Restore(); err != nil {
				return err
			}
		}
		killed := "yes"
		if !v.Killed {
			killed = "SURVIVED"
			survivors = append(survivors, m.Name)
		}
		row(m.Name, killed, time.Since(t0).Round(time.Second).String(), v.By())
	}
	fmt.Fprintf(w, "%d mutants, %d killed, %d survived, %s in all\n", len(ms), len(ms)-len(survivors), len(survivors), time.Since(start).Round(time.Second))
	if len(survivors) > 0 {
		return fmt.Errorf("mutants survived: %s", strings.Join(survivors, ", "))
	}
	return nil
}
