// Package scenario runs reference scenarios: a goal, a contract and an
// environment (the same files `acr init` takes) plus a script of what the
// outside world does (runs, clock advances, changes to the world, wake
// signals, approvals, knowledge-source updates, crashes) and what must be
// true afterwards. Scenarios are data under scenarios/, one folder each, so
// a person can read what a scenario claims and the runner can check it.
//
// The runner uses the real parts (state directory, ledger, sandbox) in a
// fresh temporary directory, with deterministic providers (seed §21): a
// scripted clock that moves only when the script says so, and a scripted
// knowledge source. A crash is simulated by abandoning the process's work
// at a named failpoint (nothing is flushed or committed after it), then
// reopening the run, which recovers it.
package scenario

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// Schema is the scenario script's schema name.
const Schema = "acr.scenario/v0.1"

// Script is scenario.json.
type Script struct {
	Schema      string   `json:"schema"`
	Name        string   `json:"name"`
	Title       string   `json:"title"`
	Description string   `json:"description"`
	Seed        string   `json:"seed_ref,omitempty"`
	Start       string   `json:"start"`
	Steps       []Step   `json:"steps"`
	Expect      Expect   `json:"expect"`
	Gates       []string `json:"gates,omitempty"`
}

// Step is one thing that happens. Exactly one action field is set; Expect,
// when present, is checked after the action.
type Step struct {
	Note    string       `json:"note,omitempty"`
	Run     int          `json:"run,omitempty"`
	Advance string       `json:"advance,omitempty"`
	World   *WorldChange `json:"world,omitempty"`
	Wake    *Wake        `json:"wake,omitempty"`
	// Amend queues an amendment of a pinned document, as acr amend would.
	Amend *Amend `json:"amend,omitempty"`
	// Approve and Deny answer the pending approval for a check id ("first":
	// the first pending one), or, as "amendment:<target>", the pending
	// amendment of the goal, contract or environment.
	Approve string `json:"approve,omitempty"`
	Deny    string `json:"deny,omitempty"`
	// By is who answers an approve or deny step (default "scenario").
	By string `json:"by,omitempty"`
	// KillSwitch creates (true) or removes (false) the operator's kill
	// switch file in the state directory.
	KillSwitch *bool                     `json:"kill_switch,omitempty"`
	Stop       *Stop                     `json:"stop,omitempty"`
	Knowledge  *strategy.KnowledgeUpdate `json:"knowledge,omitempty"`
	Crash      *Crash                    `json:"crash,omitempty"`
	Recover    bool                      `json:"recover,omitempty"`
	// ProviderFailures makes the next N observations fail with an error;
	// ProviderGarbage makes them return a malformed observation.
	ProviderFailures int `json:"provider_failures,omitempty"`
	ProviderGarbage  int `json:"provider_garbage,omitempty"`
	// Repeat runs Steps Times times (a compact way to script long runs).
	Repeat *Repeat     `json:"repeat,omitempty"`
	Expect *StepExpect `json:"expect,omitempty"`
}

// Repeat is a block of steps run several times.
type Repeat struct {
	Times int    `json:"times"`
	Steps []Step `json:"steps"`
}

// WorldChange is a change the outside world makes to the sandbox.
type WorldChange struct {
	Write   string `json:"write,omitempty"`
	Content string `json:"content,omitempty"`
	Remove  string `json:"remove,omitempty"`
}

// Wake queues a wake signal.
type Wake struct {
	Source   string       `json:"source"`
	Ref      string       `json:"ref,omitempty"`
	DedupKey string       `json:"dedup_key,omitempty"`
	Expires  string       `json:"expires_in,omitempty"`
	Payload  *codec.Value `json:"payload,omitempty"`
	Reason   string       `json:"reason,omitempty"`
	// CausalParent is the event the signal follows from (default: the
	// scenario's name). "-" sends a signal without one, which the loop
	// must reject.
	CausalParent string `json:"causal_parent,omitempty"`
	// Priority of the signal.
	Priority int `json:"priority,omitempty"`
}

// Amend names the new version of one pinned document: a file in the
// scenario's folder.
type Amend struct {
	Goal        string `json:"goal,omitempty"`
	Contract    string `json:"contract,omitempty"`
	Environment string `json:"environment,omitempty"`
}

// target is the amended document's target and file.
func (a Amend) target() (string, string, int) {
	var target, file string
	n := 0
	for _, f := range []struct{ target, file string }{{state.AmendGoal, a.Goal}, {state.AmendContract, a.Contract}, {state.AmendEnvironment, a.Environment}} {
		if f.file != "" {
			target, file = f.target, f.file
			n++
		}
	}
	return target, file, n
}

// Stop queues a stop request.
type Stop struct {
	Reason string `json:"reason,omitempty"`
	Kill   bool   `json:"kill,omitempty"`
}

// Crash runs the loop until the process dies at a failpoint.
type Crash struct {
	Failpoint string `json:"failpoint"`
	Nth       int    `json:"nth,omitempty"`
	MaxCycles int    `json:"max_cycles,omitempty"`
}

// StepExpect is checked after a step.
type StepExpect struct {
	Disposition      string            `json:"disposition,omitempty"`
	Status           string            `json:"status,omitempty"`
	CycleSeq         *int64            `json:"cycle_seq,omitempty"`
	Executed         *int              `json:"executed,omitempty"`
	Dispositions     []string          `json:"dispositions,omitempty"`
	PendingApprovals *int              `json:"pending_approvals,omitempty"`
	LiveCommitments  *int              `json:"live_commitments,omitempty"`
	WorldContains    map[string]string `json:"world_contains,omitempty"`
	WorldLacks       map[string]string `json:"world_lacks,omitempty"`
	WorldCount       []WorldCount      `json:"world_count,omitempty"`
	Recovery         *RecoveryExpect   `json:"recovery,omitempty"`
	Events           map[string]int    `json:"events,omitempty"`
	Reasons          []string          `json:"reason_codes,omitempty"`
	// ProviderError says the preceding run ended with a provider failure.
	ProviderError *bool `json:"provider_error,omitempty"`
	// ActiveLenses is the exact set of lens sources in force, as
	// "source_ref@version".
	ActiveLenses []string `json:"active_lenses,omitempty"`
	// KnowledgeCandidates counts knowledge updates held as candidates.
	KnowledgeCandidates *int `json:"knowledge_candidates,omitempty"`
	// Protected lists kinds of protected refs working memory must hold.
	Protected []string `json:"protected,omitempty"`
	// SummaryBlocks is the least number of summary blocks in working memory.
	SummaryBlocks *int `json:"summary_blocks,omitempty"`
	// Budget is the exact use of budgets by name (cycles,
	// cognitive_operations, actions, compactions, wall_clock_seconds).
	Budget map[string]int64 `json:"budget,omitempty"`
}

// WorldCount asserts how often a text occurs in a world file (duplicate
// effects show up here).
type WorldCount struct {
	Path  string `json:"path"`
	Text  string `json:"text"`
	Count int    `json:"count"`
}

// RecoveryExpect is checked after a crash or recover step.
type RecoveryExpect struct {
	Classification string `json:"classification,omitempty"`
	ActionsReused  *int   `json:"actions_reused,omitempty"`
	ActionsApplied *int   `json:"actions_applied,omitempty"`
}

// Expect is checked at the end of the scenario.
type Expect struct {
	Cycles            *int64         `json:"cycles,omitempty"`
	FinalDisposition  string         `json:"final_disposition,omitempty"`
	Dispositions      map[string]int `json:"dispositions,omitempty"`
	TransitionClasses []string       `json:"transition_classes,omitempty"`
	AbsentClasses     []string       `json:"absent_classes,omitempty"`
	// Fingerprints are the frozen reference values; empty ones are not
	// checked (a new scenario is frozen with `acr scenario run --freeze`).
	Fingerprints Fingerprints `json:"fingerprints"`
}

// Fingerprints identify a scenario's outcome.
type Fingerprints struct {
	// History is the SHA-256 over the ordered cycle record refs: what every
	// cycle did, independent of recovery bookkeeping and chain position.
	History string `json:"history,omitempty"`
	// World is the SHA-256 over the final sandbox world tree.
	World string `json:"world,omitempty"`
	// RunState is the final run state's fingerprint.
	RunState string `json:"run_state,omitempty"`
}

// Scenario is a loaded scenario folder.
type Scenario struct {
	Dir    string
	Script Script
	Inputs runstore.Inputs
}

// Load reads a scenario folder: scenario.json, goal.json, contract.json,
// environment.json. Errors name the file and field.
func Load(dir string) (*Scenario, error) {
	sc := &Scenario{Dir: dir}
	p := filepath.Join(dir, "scenario.json")
	b, err := os.ReadFile(p)
	if err != nil {
		return nil, &runstore.ValidationError{File: p, Err: err}
	}
	if err := codec.Unmarshal(b, &sc.Script); err != nil {
		return nil, asValidation(p, err)
	}
	if err := sc.Script.validate(); err != nil {
		return nil, asValidation(p, err)
	}
	in, err := runstore.ReadInputs(filepath.Join(dir, "goal.json"), filepath.Join(dir, "contract.json"), filepath.Join(dir, "environment.json"))
	if err != nil {
		return nil, err
	}
	sc.Inputs = in
	return sc, nil
}

func asValidation(file string, err error) error {
	if fe, ok := err.(*codec.FieldError); ok {
		return &runstore.ValidationError{File: file, Field: fe.Path, Err: fe.Err}
	}
	return &runstore.ValidationError{File: file, Err: err}
}

func (s *Script) validate() error {
	if s.Schema != Schema {
		return &codec.FieldError{Path: "schema", Err: fmt.Errorf("want %q, found %q", Schema, s.Schema)}
	}
	if s.Name == "" {
		return &codec.FieldError{Path: "name", Err: fmt.Errorf("required")}
	}
	if _, err := state.ParseTime(s.Start); err != nil {
		return &codec.FieldError{Path: "start", Err: err}
	}
	if len(s.Steps) == 0 {
		return &codec.FieldError{Path: "steps", Err: fmt.Errorf("a scenario needs at least one step")}
	}
	return validateSteps(s.Steps, "steps")
}

func validateSteps(steps []Step, at string) error {
	for i, st := range steps {
		n := 0
		if st.Repeat != nil {
			if st.Repeat.Times < 1 {
				return &codec.FieldError{Path: fmt.Sprintf("%s[%d].repeat.times", at, i), Err: fmt.Errorf("must be at least 1")}
			}
			if err := validateSteps(st.Repeat.Steps, fmt.Sprintf("%s[%d].repeat.steps", at, i)); err != nil {
				return err
			}
		}
		for _, set := range []bool{st.Run > 0, st.Advance != "", st.World != nil, st.Wake != nil, st.Amend != nil, st.Approve != "", st.Deny != "",
			st.Stop != nil, st.Knowledge != nil, st.Crash != nil, st.Recover, st.Repeat != nil, st.ProviderFailures > 0, st.ProviderGarbage > 0,
			st.KillSwitch != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return &codec.FieldError{Path: fmt.Sprintf("%s[%d]", at, i), Err: fmt.Errorf("exactly one action per step (found %d)", n)}
		}
		if st.By != "" && st.Approve == "" && st.Deny == "" {
			return &codec.FieldError{Path: fmt.Sprintf("%s[%d].by", at, i), Err: fmt.Errorf("by goes with approve or deny")}
		}
		if st.Amend != nil {
			if _, file, n := st.Amend.target(); n != 1 || filepath.Base(file) != file || file == "." || file == ".." {
				return &codec.FieldError{Path: fmt.Sprintf("%s[%d].amend", at, i), Err: fmt.Errorf("name exactly one of goal, contract or environment: a file in the scenario's folder")}
			}
		}
		if st.Advance != "" {
			if _, err := time.ParseDuration(st.Advance); err != nil {
				return &codec.FieldError{Path: fmt.Sprintf("%s[%d].advance", at, i), Err: err}
			}
		}
		if w := st.World; w != nil {
			target := w.Write
			if (w.Write == "") == (w.Remove == "") {
				return &codec.FieldError{Path: fmt.Sprintf("%s[%d].world", at, i), Err: fmt.Errorf("give exactly one of write or remove")}
			}
			if target == "" {
				target = w.Remove
			}
			if _, err := world.CleanPath(target); err != nil {
				return &codec.FieldError{Path: fmt.Sprintf("%s[%d].world", at, i), Err: err}
			}
		}
		if w := st.Wake; w != nil {
			if !slices.Contains(state.WakeSources(), w.Source) {
				return &codec.FieldError{Path: fmt.Sprintf("%s[%d].wake.source", at, i), Err: fmt.Errorf("unknown wake source %q", w.Source)}
			}
			if w.Expires != "" {
				if d, err := time.ParseDuration(w.Expires); err != nil || d <= 0 {
					return &codec.FieldError{Path: fmt.Sprintf("%s[%d].wake.expires_in", at, i), Err: fmt.Errorf("want a positive duration such as 1h, found %q", w.Expires)}
				}
			}
		}
		if e := st.Expect; e != nil {
			for name := range e.Budget {
				if _, ok := budgetUse(state.BudgetUsage{}, name); !ok {
					return &codec.FieldError{Path: fmt.Sprintf("%s[%d].expect.budget.%s", at, i, name), Err: fmt.Errorf("unknown budget (want cycles, cognitive_operations, actions, compactions or wall_clock_seconds)")}
				}
			}
		}
		if st.Crash != nil && !slices.Contains(Failpoints(), st.Crash.Failpoint) {
			return &codec.FieldError{Path: fmt.Sprintf("%s[%d].crash.failpoint", at, i), Err: fmt.Errorf("unknown failpoint %q (want one of %v)", st.Crash.Failpoint, Failpoints())}
		}
	}
	return nil
}

// Failpoints lists the named substages a crash can be placed at.
func Failpoints() []string {
	return []string{"after-decision", "before-action-commit", "after-action-commit", "after-ledger-append", "mid-checkpoint", "after-checkpoint"}
}

// Discover lists the scenario folders under root, sorted by name.
func Discover(root string) ([]string, error) {
	entries, err := os.ReadDir(root)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if _, err := os.Stat(filepath.Join(root, e.Name(), "scenario.json")); err == nil {
			out = append(out, filepath.Join(root, e.Name()))
		}
	}
	slices.Sort(out)
	return out, nil
}

// budgetUse returns a run's use of the budget name.
func budgetUse(u state.BudgetUsage, name string) (int64, bool) {
	switch name {
	case "cycles":
		return u.Cycles, true
	case "cognitive_operations":
		return u.CognitiveOperations, true
	case "actions":
		return u.Actions, true
	case "compactions":
		return u.Compactions, true
	case "wall_clock_seconds":
		return u.WallClockSeconds, true
	}
	return 0, false
}
