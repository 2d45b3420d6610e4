// Package validate is how acr proves its promises: it runs every reference
// scenario twice, gathers the evidence (results, ledgers, final states,
// fingerprints), and evaluates the Phase-12 gates A–T, and acr's own gate
// U (every stop source of seed §15), against it. Each gate
// reads evidence, not the scenarios' own verdicts, so a gate can fail even
// when a scenario's expectations were written too loosely; and each gate
// has a counter-test that breaks the property it guards and sees it FAIL.
//
// A gate is PASS, FAIL or INCONCLUSIVE. INCONCLUSIVE means the evidence a
// gate needs is not there (a scenario is missing, a file cannot be read):
// an environmental limitation is never reported as PASS.
package validate

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/acr-project/acr/internal/audit"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/scenario"
)

// Verdicts.
const (
	Pass         = "PASS"
	Fail         = "FAIL"
	Inconclusive = "INCONCLUSIVE"
)

// Gate is one gate's result.
type Gate struct {
	ID       string   `json:"id"`
	Name     string   `json:"name"`
	Verdict  string   `json:"verdict"`
	Evidence []string `json:"evidence"`
}

// Run is the evidence of one scenario run.
type Run struct {
	Name    string
	Script  scenario.Script
	Result  *scenario.Result
	Records []event.Record
	Final   kernel.EngineState
	// History is the run's ledger, kept for gates that audit it.
	History audit.History
}

// Evidence is everything the gates look at.
type Evidence struct {
	Runs map[string]*Run
	// Second holds the results of the second run of each scenario.
	Second map[string]*scenario.Result
	// Freeze is the comparison of frozen hashes (gate P).
	Freeze FreezeCheck
}

// Options configure a validation.
type Options struct {
	// Scenarios is the folder holding the scenario folders.
	Scenarios string
	// Root is the repository root for gate P's source and schema hashes
	// ("" skips them: that part of gate P is INCONCLUSIVE).
	Root string
	// Manifest is the frozen release manifest to compare against.
	Manifest string
	// Clock replaces the scripted clock of the runs (counter-tests use a
	// wall clock to show gate T failing).
	Clock kernel.Clock
}

// Collect runs every scenario twice and gathers the evidence. The state
// directories of the first runs are kept until cleanup is called.
//
// Scenarios run side by side, as many at once as GOMAXPROCS allows (each
// in its own state directory, with its own scripted clock); the evidence
// does not depend on the order. A Clock given in Options is shared by
// every run, so with one the runs go one at a time.
func Collect(o Options) (*Evidence, func(), error) {
	dirs, err := scenario.Discover(o.Scenarios)
	if err != nil {
		return nil, nil, err
	}
	type outcome struct {
		run    *Run
		second *scenario.Result
		temp   string
		err    error
	}
	out := make([]outcome, len(dirs))
	workers := runtime.GOMAXPROCS(0)
	if o.Clock != nil {
		workers = 1
	}
	sem := make(chan struct{}, workers)
	var wg sync.WaitGroup
	for i, d := range dirs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			out[i].run, out[i].second, out[i].temp, out[i].err = collectOne(d, o)
		}()
	}
	wg.Wait()
	var temps []string
	cleanup := func() {
		for _, t := range temps {
			_ = os.RemoveAll(t)
		}
	}
	ev := &Evidence{Runs: map[string]*Run{}, Second: map[string]*scenario.Result{}}
	for _, r := range out {
		if r.temp != "" {
			temps = append(temps, r.temp)
		}
	}
	for _, r := range out {
		if r.err != nil {
			cleanup()
			return nil, nil, r.err
		}
		ev.Runs[r.run.Name] = r.run
		ev.Second[r.run.Name] = r.second
	}
	ev.Freeze = CheckFreeze(o.Root, o.Manifest)
	return ev, cleanup, nil
}

// collectOne runs one scenario twice and reads the evidence of the first
// run, whose state directory (under temp) it keeps.
func collectOne(dir string, o Options) (*Run, *scenario.Result, string, error) {
	sc, err := scenario.Load(dir)
	if err != nil {
		return nil, nil, "", err
	}
	first, err := scenario.Run(sc, scenario.Options{Keep: true, Clock: o.Clock})
	if err != nil {
		return nil, nil, "", err
	}
	temp := filepath.Dir(first.Dir)
	second, err := scenario.Run(sc, scenario.Options{Clock: o.Clock})
	if err != nil {
		return nil, nil, temp, err
	}
	run, err := LoadRun(sc.Script, first)
	if err != nil {
		return nil, nil, temp, err
	}
	return run, second, temp, nil
}

// LoadRun gathers the evidence a scenario run left in its state directory
// (res.Dir, kept): the ledger, the final state and the directory itself.
func LoadRun(sc scenario.Script, res *scenario.Result) (*Run, error) {
	h, err := runstore.OpenHistory(res.Dir)
	if err != nil {
		return nil, err
	}
	recs, err := h.ReadAll()
	if err != nil {
		return nil, err
	}
	st, _, err := runstore.ReadState(res.Dir)
	if err != nil {
		return nil, err
	}
	return &Run{Name: sc.Name, Script: sc, Result: res, Records: recs, Final: st, History: h}, nil
}

// Report is the outcome of a validation. Its verdict is FAIL when a gate
// fails or when a scenario fails its own expectations (FailedScenarios):
// a release whose reference scenarios do not do what they claim is not
// validated, whatever the gates say.
type Report struct {
	Verdict         string                     `json:"verdict"`
	Gates           map[string]string          `json:"gates"`
	Details         []Gate                     `json:"details"`
	Scenarios       map[string]ScenarioSummary `json:"scenarios"`
	FailedScenarios []string                   `json:"failed_scenarios"`
}

// ScenarioSummary is one scenario's line in the report.
type ScenarioSummary struct {
	Passed            bool                  `json:"passed"`
	Failures          []string              `json:"failures"`
	Cycles            int64                 `json:"cycles"`
	FinalDisposition  string                `json:"final_disposition"`
	Fingerprints      scenario.Fingerprints `json:"fingerprints"`
	Deterministic     bool                  `json:"deterministic"`
	TransitionClasses map[string]int        `json:"transition_classes"`
}

// Evaluate runs every gate over the evidence.
func Evaluate(ev *Evidence) *Report {
	r := &Report{Gates: map[string]string{}, Scenarios: map[string]ScenarioSummary{}, FailedScenarios: []string{}}
	for _, g := range Gates() {
		res := g.Check(ev)
		res.ID, res.Name = g.ID, g.Name
		if res.Evidence == nil {
			res.Evidence = []string{}
		}
		r.Gates[g.ID] = res.Verdict
		r.Details = append(r.Details, res)
	}
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		sec := ev.Second[name]
		r.Scenarios[name] = ScenarioSummary{
			Passed: run.Result.Passed, Failures: run.Result.Failures, Cycles: run.Result.Cycles, FinalDisposition: run.Result.FinalDisposition,
			Fingerprints: run.Result.Fingerprints, Deterministic: sec != nil && sec.Fingerprints == run.Result.Fingerprints,
			TransitionClasses: run.Result.TransitionClasses,
		}
		if !run.Result.Passed {
			r.FailedScenarios = append(r.FailedScenarios, name)
		}
	}
	r.Verdict = Pass
	if len(r.FailedScenarios) > 0 {
		r.Verdict = Fail
	}
	for _, g := range r.Details {
		switch {
		case g.Verdict == Fail:
			r.Verdict = Fail
		case g.Verdict == Inconclusive && r.Verdict == Pass:
			r.Verdict = Inconclusive
		}
	}
	return r
}

func sortedNames(ev *Evidence) []string {
	var out []string
	for n := range ev.Runs {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// GateDef defines a gate.
type GateDef struct {
	ID    string
	Name  string
	Check func(*Evidence) Gate
}

func pass(evidence ...string) Gate { return Gate{Verdict: Pass, Evidence: evidence} }
func fail(evidence ...string) Gate { return Gate{Verdict: Fail, Evidence: evidence} }
func inconclusive(evidence ...string) Gate {
	return Gate{Verdict: Inconclusive, Evidence: evidence}
}

// need returns the run of a scenario, or an INCONCLUSIVE gate when the
// scenario is not there.
func need(ev *Evidence, name string) (*Run, *Gate) {
	run, ok := ev.Runs[name]
	if !ok {
		g := inconclusive(fmt.Sprintf("scenario %s was not run", name))
		return nil, &g
	}
	return run, nil
}
