package validate

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/scenario"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// Release identity (seed §24).
const (
	ReleaseVersion = "0.1.20"
	ReleasePhase   = "Phase 12 - Persistent Autonomous Loop"
	ReleaseProfile = "ACR-MVP-v0.1-Phase12"
	ManifestSchema = "acr.release-manifest/v0.1"
)

// ReleaseManifest freezes what a release is: the reference fingerprints,
// the gate results, the transition-class counts, and the hashes of the
// schemas and format-defining sources (gate P compares against them).
type ReleaseManifest struct {
	Schema                string                           `json:"schema"`
	Version               string                           `json:"version"`
	Phase                 string                           `json:"phase"`
	Profile               string                           `json:"profile"`
	Verdict               string                           `json:"verdict"`
	Gates                 map[string]string                `json:"gates"`
	Scenarios             map[string]scenario.Fingerprints `json:"scenario_fingerprints"`
	LongHorizon           LongHorizon                      `json:"long_horizon"`
	TransitionClassCounts map[string]int                   `json:"transition_class_counts"`
	SandboxProfile        SandboxProfile                   `json:"sandbox_adapter_profile"`
	LoopProfile           LoopProfile                      `json:"persistent_loop_profile"`
	// Freeze is only rewritten on purpose (acr validate --freeze).
	Freeze map[string]string `json:"freeze"`
}

// LongHorizon records the 100-cycle run.
type LongHorizon struct {
	Scenario          string                `json:"scenario"`
	Cycles            int64                 `json:"cycles"`
	Fingerprints      scenario.Fingerprints `json:"fingerprints"`
	TransitionClasses map[string]int        `json:"transition_classes"`
}

// SandboxProfile describes the sandbox world adapter.
type SandboxProfile struct {
	Operations  []world.Operation `json:"operations"`
	Confinement string            `json:"confinement"`
	Idempotency string            `json:"idempotency"`
}

// LoopProfile describes the persistent loop.
type LoopProfile struct {
	Dispositions []string `json:"dispositions"`
	Failpoints   []string `json:"failpoints"`
	Schema       int      `json:"state_schema_version"`
}

// ReadManifest reads a release manifest.
func ReadManifest(path string) (ReleaseManifest, error) {
	var m ReleaseManifest
	b, err := os.ReadFile(path)
	if err != nil {
		return m, err
	}
	if err := codec.UnmarshalStored(b, &m); err != nil {
		return m, fmt.Errorf("%s: %w", path, err)
	}
	return m, nil
}

// BuildManifest assembles the manifest of a validation. freeze is the set
// of frozen hashes to record.
func BuildManifest(ev *Evidence, rep *Report, freeze map[string]string) ReleaseManifest {
	m := ReleaseManifest{
		Schema: ManifestSchema, Version: ReleaseVersion, Phase: ReleasePhase, Profile: ReleaseProfile, Verdict: rep.Verdict,
		Gates: rep.Gates, Scenarios: map[string]scenario.Fingerprints{}, TransitionClassCounts: map[string]int{}, Freeze: freeze,
		SandboxProfile: SandboxProfile{Operations: world.Operations(),
			Confinement: "os.Root on sandbox/world; no absolute paths, no '..', no symlinked write targets or parents, excluded paths never read or written",
			Idempotency: "one outcome record per key (run id, cycle, action ref, decision ref); intent before effect; O(1) lookup by key"},
		LoopProfile: LoopProfile{Failpoints: scenario.Failpoints(), Schema: storage.SchemaVersion},
	}
	for _, d := range state.Dispositions() {
		m.LoopProfile.Dispositions = append(m.LoopProfile.Dispositions, d.String())
	}
	for _, name := range sortedNames(ev) {
		r := ev.Runs[name].Result
		m.Scenarios[name] = r.Fingerprints
		for c, n := range r.TransitionClasses {
			m.TransitionClassCounts[c] += n
		}
	}
	if p14, ok := ev.Runs["p14-mixed-100"]; ok {
		m.LongHorizon = LongHorizon{Scenario: p14.Name, Cycles: p14.Result.Cycles, Fingerprints: p14.Result.Fingerprints, TransitionClasses: p14.Result.TransitionClasses}
	}
	return m
}

// WriteOutputs writes the validation report (PHASE12_VALIDATION.md) and the
// release manifest into dir, through the durable file layer.
func WriteOutputs(dir string, ev *Evidence, rep *Report, m ReleaseManifest) error {
	fsys, err := disk.CreateOSDir(dir)
	if err != nil {
		return err
	}
	js, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := disk.ReplaceFile(fsys, "release-manifest.json", append(js, '\n')); err != nil {
		return err
	}
	return disk.ReplaceFile(fsys, "PHASE12_VALIDATION.md", Markdown(ev, rep, m))
}

// Markdown renders the validation report.
func Markdown(ev *Evidence, rep *Report, m ReleaseManifest) []byte {
	var b bytes.Buffer
	p := func(format string, args ...any) { fmt.Fprintf(&b, format+"\n", args...) }
	p("# Phase 12 validation")
	p("")
	p("Generated by `acr validate` (release %s, profile %s). Every scenario under `scenarios/` was run twice in a fresh", m.Version, m.Profile)
	p("state directory with deterministic providers; the gates below read the evidence those runs left (ledgers, final")
	p("states, fingerprints), not the scenarios' own verdicts, and the gates that judge a rule (C, G, M, U) re-derive")
	p("it from the recorded inputs with the validator's own code, not the kernel's. Gates A-T are the seed's; U holds")
	p("the loop to every stop source of seed §15. Each gate has a counter-test in")
	p("`internal/validate` that breaks the behaviour it guards (a source mutation or a crafted run) and sees the gate")
	p("fail. INCONCLUSIVE means the evidence was not there; it is never counted as a pass. The verdict is FAIL when a")
	p("gate fails or when any scenario fails its own expectations.")
	p("")
	p("**Verdict: %s**", rep.Verdict)
	p("")
	if len(rep.FailedScenarios) > 0 {
		p("Scenarios that failed their own expectations: %s.", strings.Join(rep.FailedScenarios, ", "))
		p("")
	}
	p("| gate | | verdict | evidence |")
	p("| --- | --- | --- | --- |")
	for _, g := range rep.Details {
		p("| %s | %s | %s | %s |", g.ID, g.Name, g.Verdict, escape(strings.Join(g.Evidence, "; ")))
	}
	p("")
	p("## Scenarios")
	p("")
	p("| scenario | passed | cycles | final | deterministic | history fingerprint |")
	p("| --- | --- | --- | --- | --- | --- |")
	for _, name := range slices.Sorted(maps.Keys(rep.Scenarios)) {
		s := rep.Scenarios[name]
		p("| %s | %t | %d | %s | %t | `%s` |", name, s.Passed, s.Cycles, s.FinalDisposition, s.Deterministic, short(s.Fingerprints.History))
	}
	for _, name := range slices.Sorted(maps.Keys(rep.Scenarios)) {
		if f := rep.Scenarios[name].Failures; len(f) > 0 {
			p("")
			p("Failures of %s:", name)
			for _, x := range f {
				p("- %s", escape(x))
			}
		}
	}
	p("")
	p("## Long-horizon run (%s)", m.LongHorizon.Scenario)
	p("")
	p("%d cycles. Transition classes:", m.LongHorizon.Cycles)
	p("")
	for _, c := range slices.Sorted(maps.Keys(m.LongHorizon.TransitionClasses)) {
		if !strings.HasPrefix(c, "governance_reason_") {
			p("- %s: %d", c, m.LongHorizon.TransitionClasses[c])
		}
	}
	p("")
	p("The release manifest (`release-manifest.json`) holds every scenario's fingerprints, the gate results, the")
	p("transition-class counts and the frozen schema and source hashes.")
	return b.Bytes()
}

func escape(s string) string { return strings.ReplaceAll(s, "|", "\\|") }

func short(s string) string {
	if len(s) > 23 {
		return s[:23]
	}
	return s
}

// FreezeScenarios writes each scenario's fingerprints into its
// scenario.json as the frozen reference.
func FreezeScenarios(root string, ev *Evidence) error {
	dirs, err := scenario.Discover(root)
	if err != nil {
		return err
	}
	for _, d := range dirs {
		sc, err := scenario.Load(d)
		if err != nil {
			return err
		}
		run, ok := ev.Runs[sc.Script.Name]
		if !ok {
			continue
		}
		sc.Script.Expect.Fingerprints = run.Result.Fingerprints
		js, err := json.MarshalIndent(sc.Script, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(d, "scenario.json"), append(js, '\n'), 0o644); err != nil {
			return err
		}
	}
	return nil
}
