package runstore_test

import (
	"context"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/world"
)

// phaseProbe records the steps the driver names (kernel.Driver.Phase, which
// ACR_TIMINGS times) and checks that the work each name stands for happens
// under it: the world's calls in their own steps, and the ledger growing
// only in the steps that write it. A step named on the wrong side of its
// work would put that work's time under another name.
type phaseProbe struct {
	kernel.World
	t      *testing.T
	ledger string
	cur    string
	sizeAt int64 // the ledger's size when cur started
	cycle  []string
	steps  [][]string
}

// writers are the steps in which the ledger may grow (gather may record
// a quarantined inbox file; none is quarantined here).
var writers = []string{kernel.PhaseDecisionAppend, kernel.PhaseCycleAppend, kernel.PhaseCheckpoint}

func (p *phaseProbe) size() int64 {
	fi, err := os.Stat(p.ledger)
	require.NoError(p.t, err)
	return fi.Size()
}

func (p *phaseProbe) phase(name string) {
	now := p.size()
	if p.cur != "" && !slices.Contains(writers, p.cur) {
		assert.Equal(p.t, p.sizeAt, now, "the ledger grew during %s", p.cur)
	}
	if p.cur == kernel.PhaseDecisionAppend || p.cur == kernel.PhaseCycleAppend {
		assert.Greater(p.t, now, p.sizeAt, "nothing was appended during %s", p.cur)
	}
	p.cur, p.sizeAt = name, now
	if name == "" {
		p.steps = append(p.steps, p.cycle)
		p.cycle = nil
		return
	}
	p.cycle = append(p.cycle, name)
}

func (p *phaseProbe) in(step, call string) {
	assert.Equal(p.t, step, p.cur, "%s called during %q", call, p.cur)
}

func (p *phaseProbe) Observe(ctx context.Context) (world.Observation, error) {
	p.in(kernel.PhaseGather, "Observe")
	return p.World.Observe(ctx)
}

func (p *phaseProbe) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	p.in(kernel.PhaseEffect, "Commit")
	return p.World.Commit(ctx, key, a, in)
}

func (p *phaseProbe) Readback(ctx context.Context, a world.Action, out world.Outcome) (world.Readback, error) {
	p.in(kernel.PhaseReadback, "Readback")
	return p.World.Readback(ctx, a, out)
}

func (p *phaseProbe) Durable() error {
	// Close makes the world durable outside any step, and a checkpoint
	// right after an acting cycle waits for its effect first.
	if p.cur != "" && p.cur != kernel.PhaseCheckpoint {
		p.in(kernel.PhaseEffectDurable, "Durable")
	}
	return p.World.Durable()
}

// wire makes opt report to p, and counts the hooks handed out.
func (p *phaseProbe) wire(opt *runstore.Options, opened *int) {
	opt.WrapWorld = func(w kernel.World) kernel.World { p.World = w; return p }
	opt.Phases = func() func(string) { *opened++; return p.phase }
}

var (
	// actingSteps is a cycle with an effect; after a cycle that had one,
	// it first waits for that effect to be durable (afterEffect).
	actingSteps = []string{kernel.PhaseGather, kernel.PhaseBegin, kernel.PhasePrepare, kernel.PhaseDecisionAppend, kernel.PhaseEffect,
		kernel.PhaseReadback, kernel.PhaseFinish, kernel.PhaseCheckpoint}
	actingAfterEffect = slices.Concat(actingSteps[:3], []string{kernel.PhaseEffectDurable}, actingSteps[3:])
	quietSteps        = []string{kernel.PhaseGather, kernel.PhaseBegin, kernel.PhaseFinish, kernel.PhaseCycleAppend, kernel.PhaseCheckpoint}
	quietAfterEffect  = slices.Concat(quietSteps[:3], []string{kernel.PhaseEffectDurable}, quietSteps[3:])
	idleSteps         = []string{kernel.PhaseGather}
	// proposedSteps: the proposer is asked, and the cycle goes on from
	// its answer.
	proposedSteps = slices.Concat(actingSteps[:2], []string{kernel.PhasePropose, kernel.PhaseBegin}, actingSteps[2:])
	// stepKinds are the sequences a run of the tests below may take.
	stepKinds = map[string][]string{"acting": actingSteps, "acting after an effect": actingAfterEffect, "quiet": quietSteps,
		"quiet after an effect": quietAfterEffect, "idle": idleSteps}
)

// kinds names each step sequence in steps by the list it equals.
func kinds(t *testing.T, steps [][]string, known map[string][]string) map[string]int {
	seen := map[string]int{}
	for i, s := range steps {
		found := false
		for name, want := range known {
			if slices.Equal(s, want) {
				seen[name]++
				found = true
			}
		}
		if !found {
			t.Errorf("step %d took the steps %s", i, strings.Join(s, " "))
		}
	}
	return seen
}

// TestPhasesNameEachStep runs cycles that act and cycles that do not, and
// holds the names to the steps taken, in order, with their work inside.
func TestPhasesNameEachStep(t *testing.T) {
	dir := t.TempDir()
	root := filepath.Join("..", "..", "scenarios", "quickstart")
	in, err := runstore.ReadInputs(filepath.Join(root, "goal.json"), filepath.Join(root, "contract.json"), filepath.Join(root, "environment.json"))
	require.NoError(t, err)
	_, err = runstore.Init(t.Context(), dir, in, "run:test", false, realOptions())
	require.NoError(t, err)
	p := &phaseProbe{t: t, ledger: filepath.Join(dir, filepath.FromSlash(ledger.FileName))}
	opened := 0
	opt := realOptions()
	p.wire(&opt, &opened)
	r, err := runstore.Open(t.Context(), dir, opt)
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 10, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Equal(t, 1, opened, "one hook per run opened")
	assert.Nil(t, p.cycle, "every step ends with the hook hearing \"\"")
	seen := kinds(t, p.steps, stepKinds)
	assert.Positive(t, seen["acting"], "no cycle acted: %v", seen)
	assert.Positive(t, seen["quiet"]+seen["quiet after an effect"], "no cycle went without an effect: %v", seen)
}

// TestPhasesNameTheProposer: a cycle that asks its proposer names the
// wait, and goes on under begin with the answer.
func TestPhasesNameTheProposer(t *testing.T) {
	pr := newProject(t, map[string]string{"main.c": "int main() {\n  char *name = \"x\";\n  printf(\"%d\", name);\n}\n"})
	script := pr.proposerScript(answer(`{"schema": "acr.proposal/v0.1", "rationale": ["%d needs an int"],
		"actions": [{"operation": "apply_local_patch", "target": "main.c", "find": "printf(\"%d\", name)", "replace": "printf(\"%s\", name)"}]}`))
	pr.init(vetLikeEnv, proposerContract(script, fixContract), realOptions())
	p := &phaseProbe{t: t, ledger: filepath.Join(pr.stateDir, filepath.FromSlash(ledger.FileName))}
	opened := 0
	opt := realOptions()
	p.wire(&opt, &opened)
	rep, err := pr.run(opt, 10)
	require.NoError(t, err)
	assert.Equal(t, "IDLE", rep.FinalDisposition)
	assert.Equal(t, 1, pr.invocations())
	known := maps.Clone(stepKinds)
	known["proposed"] = proposedSteps
	seen := kinds(t, p.steps, known)
	assert.Equal(t, 1, seen["proposed"], "%v", seen)
}

// TestPhasesWaitForAnEffectBeforeTheNextAppend: cycles that act one
// after the other wait for the effect before them just before their own
// ledger write, under its own name, and nowhere else in a cycle.
func TestPhasesWaitForAnEffectBeforeTheNextAppend(t *testing.T) {
	pr := newProject(t, map[string]string{"queue.txt": "p\np\np\n"})
	env := `"checks": [{"id": "queue", "summary": "items pending", "kind": "absent_text", "path": "queue.txt", "text": "p", "priority": 10,
		"fixes": [{"operation": "apply_local_patch", "find": "p", "replace": "d", "occurrences": 1}]}]`
	pr.init(env, fixContract, realOptions())
	p := &phaseProbe{t: t, ledger: filepath.Join(pr.stateDir, filepath.FromSlash(ledger.FileName))}
	opened := 0
	opt := realOptions()
	opt.CheckpointEvery = 64 // not after every cycle, which would wait for the effect itself
	p.wire(&opt, &opened)
	_, err := pr.run(opt, 10)
	require.NoError(t, err)
	assert.Equal(t, "d\nd\nd\n", pr.read("queue.txt"))
	seen := kinds(t, p.steps, stepKinds)
	assert.Equal(t, 1, seen["acting"], "%v", seen)
	assert.Equal(t, 2, seen["acting after an effect"], "%v", seen)
}
