package kernel

import (
	"fmt"
	"maps"
	"slices"

	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// Checkpoint file names (logical names in the manifest).
const (
	FileRunState    = "run_state"
	FileCheckpoint  = "checkpoint"
	FileGoal        = "goal"
	FileContract    = "contract"
	FileSpec        = "environment_spec"
	FileEnvironment = "environment"
	FileCommitments = "commitments"
	FileContext     = "context_binding"
	FileStrategy    = "strategy"
)

// Ref kinds of the hot-state objects.
const (
	kindRunState    = "prun"
	kindCheckpoint  = "pchk"
	kindCycle       = "pcyc"
	kindGoal        = "goal"
	kindContract    = "contract"
	kindAuthority   = "authority"
	kindSpec        = "envspec"
	kindObservation = "obs"
	kindCommitments = "cstore"
	kindContext     = "ctxbind"
	kindStrategy    = "strat"
)

// State is the hot state of a run: exactly what the checkpoint holds. It is
// the present, not history; the ledger is history.
type State struct {
	Run         state.RunState
	Checkpoint  state.Checkpoint
	Goal        intent.Goal
	Contract    governance.Contract
	Spec        world.Spec
	Environment world.Observation
	Commitments commitment.Store
	Context     memory.Binding
	Strategy    strategy.State
}

// parts maps each checkpoint file to the value it holds.
func (s *State) parts() map[string]any {
	return map[string]any{
		FileRunState: &s.Run, FileCheckpoint: &s.Checkpoint, FileGoal: &s.Goal, FileContract: &s.Contract,
		FileSpec: &s.Spec, FileEnvironment: &s.Environment, FileCommitments: &s.Commitments,
		FileContext: &s.Context, FileStrategy: &s.Strategy,
	}
}

// Encode returns the canonical bytes of every checkpoint file.
func (s *State) Encode() (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, v := range s.parts() {
		b, err := state.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("encode %s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// Decode rebuilds the state from checkpoint files, strictly: every file
// must be present, canonical and of the right shape, and the refs the run
// state records must match the files' content. A mismatch is an
// integrity error naming the file.
func Decode(files map[string][]byte) (State, error) {
	var s State
	parts := s.parts()
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		b, ok := files[name]
		if !ok {
			return State{}, &state.IntegrityError{File: name, Msg: "checkpoint file missing from the manifest"}
		}
		if err := state.UnmarshalCanonical(b, parts[name]); err != nil {
			return State{}, &state.IntegrityError{File: name, Msg: err.Error()}
		}
	}
	for name := range files {
		if _, ok := parts[name]; !ok {
			return State{}, &state.IntegrityError{File: name, Msg: "unknown checkpoint file"}
		}
	}
	if err := s.checkRefs(); err != nil {
		return State{}, err
	}
	return s, nil
}

// checkRefs verifies that the run state points at exactly these objects.
func (s *State) checkRefs() error {
	want := s.refs()
	got := map[string]state.Ref{
		FileContract: s.Run.ContractRef, FileSpec: s.Run.EnvironmentSpecRef, FileEnvironment: s.Run.EnvironmentRef,
		FileCommitments: s.Run.CommitmentStoreRef, FileContext: s.Run.ContextBindingRef, FileStrategy: s.Run.StrategyStateRef,
	}
	for name, r := range got {
		if want[name] != r {
			return &state.IntegrityError{File: name, Msg: fmt.Sprintf("run_state refers to %s, file content is %s", r, want[name])}
		}
	}
	if len(s.Run.GoalRefs) != 1 || s.Run.GoalRefs[0] != want[FileGoal] {
		return &state.IntegrityError{File: FileGoal, Msg: "run_state goal_refs do not match the goal file"}
	}
	if s.Checkpoint.RunStateRef != "" && s.Checkpoint.RunStateRef != runStateRef(s.Run) {
		return &state.IntegrityError{File: FileCheckpoint, Msg: "checkpoint record does not point at this run_state"}
	}
	if fp := runFingerprint(s.Run); fp != s.Run.Fingerprint {
		return &state.IntegrityError{File: FileRunState, Msg: fmt.Sprintf("fingerprint %s does not match content %s", s.Run.Fingerprint, fp)}
	}
	return nil
}

// refs computes the content ref of every object in the state.
func (s *State) refs() map[string]state.Ref {
	return map[string]state.Ref{
		FileGoal:        state.MustRefOf(kindGoal, s.Goal),
		FileContract:    state.MustRefOf(kindContract, s.Contract),
		FileSpec:        state.MustRefOf(kindSpec, s.Spec),
		FileEnvironment: s.Environment.Ref(),
		FileCommitments: state.MustRefOf(kindCommitments, s.Commitments),
		FileContext:     s.Context.Ref(),
		FileStrategy:    state.MustRefOf(kindStrategy, s.Strategy),
	}
}

// AuthorityRef is the ref of the contract's authority grant.
func AuthorityRef(c governance.Contract) state.Ref {
	return state.MustRefOf(kindAuthority, c.Authority)
}

// runFingerprint is the SHA-256 of the run state with id and fingerprint
// blank, so the state can carry its own fingerprint.
func runFingerprint(r state.RunState) state.Fingerprint {
	r.ID, r.Fingerprint = "", ""
	return state.FingerprintOf(state.MustMarshal(r))
}

func runStateRef(r state.RunState) state.Ref { return state.MustRefOf(kindRunState, r) }

// seal refreshes the run state's refs, version, id and fingerprint after a
// change.
func (s *State) seal() {
	refs := s.refs()
	s.Run.GoalRefs = []state.Ref{refs[FileGoal]}
	s.Run.ContractRef = refs[FileContract]
	s.Run.AuthorityRef = AuthorityRef(s.Contract)
	s.Run.EnvironmentSpecRef = refs[FileSpec]
	s.Run.EnvironmentRef = refs[FileEnvironment]
	s.Run.CommitmentStoreRef = refs[FileCommitments]
	s.Run.ContextBindingRef = refs[FileContext]
	s.Run.StrategyStateRef = refs[FileStrategy]
	s.Run.Version++
	fp := runFingerprint(s.Run)
	s.Run.Fingerprint = fp
	s.Run.ID = state.Ref(kindRunState + ":" + string(fp))
}

// clone returns a deep copy, so that a step never mutates its input state.
func (s State) clone() State {
	var out State
	files, err := s.Encode()
	if err != nil {
		panic(fmt.Sprintf("kernel: state does not encode: %v", err))
	}
	for name, v := range out.parts() {
		if err := state.UnmarshalCanonical(files[name], v); err != nil {
			panic(fmt.Sprintf("kernel: state does not round-trip: %s: %v", name, err))
		}
	}
	return out
}
