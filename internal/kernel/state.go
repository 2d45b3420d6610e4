package kernel

import (
	"fmt"
	"maps"
	"reflect"
	"slices"
	"sync"

	"github.com/acr-project/acr/internal/codec"
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
	// FileNotified is the last condition notified (state.Notified): a
	// checkpoint file only once a notification was sent, and outside the
	// run state, which only cycles change.
	FileNotified = "notified"
)

// Ref kinds of the hot-state objects.
const (
	kindRunState    = "prun"
	kindCheckpoint  = "pchk"
	kindCycle       = "pcyc"
	kindGoal        = "goal"
	kindContract    = "contract"
	kindSpec        = "envspec"
	kindObservation = "obs"
	kindCommitments = "cstore"
	kindContext     = "ctxbind"
	kindStrategy    = "strat"
)

// EngineState is the hot state of a run (the ADR's engine-state): exactly
// what the checkpoint holds. It is the present, not history; the ledger is
// history.
type EngineState struct {
	Run         state.RunState
	Checkpoint  state.Checkpoint
	Goal        intent.Goal
	Contract    governance.Contract
	Spec        world.Spec
	Environment world.Observation
	Commitments commitment.Store
	Context     memory.Binding
	Strategy    strategy.Memory
	// Notified is the last condition the run's notify program was run
	// for (nil: none yet). No cycle reads or changes it.
	Notified *state.Notified
	// Operations is the catalog of the operations the run's world
	// carries out: everything the cycle knows of an operation is its
	// entry there. It is code, not state: no checkpoint file holds it, a
	// decoded state has the zero value (the built-in operations), and
	// whoever opens a run with a world of more operations sets it
	// (Driver.Operations, Bootstrap.Operations).
	Operations world.Catalog

	// contextMemo is what hashing Context left for hashing it next time
	// (memory.RefMemo): a memo of a pure function, shared by copies, never
	// written to the checkpoint.
	contextMemo *memory.RefMemo
}

// parts maps each checkpoint file to the value it holds.
func (s *EngineState) parts() map[string]any {
	return map[string]any{
		FileRunState: &s.Run, FileCheckpoint: &s.Checkpoint, FileGoal: &s.Goal, FileContract: &s.Contract,
		FileSpec: &s.Spec, FileEnvironment: &s.Environment, FileCommitments: &s.Commitments,
		FileContext: &s.Context, FileStrategy: &s.Strategy, FileNotified: &s.Notified,
	}
}

// optionalFile reports whether a checkpoint may lack the file name: one
// that exists only once something happened.
func optionalFile(name string) bool { return name == FileNotified }

// Encode returns the canonical bytes of every checkpoint file.
func (s *EngineState) Encode() (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, v := range s.parts() {
		if name == FileNotified && s.Notified == nil {
			continue
		}
		b, err := codec.Marshal(v)
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
func Decode(files map[string][]byte) (EngineState, error) {
	return decodeFiles(files, nil)
}

// DecodeLight decodes only what deciding eligibility needs (the run state,
// the checkpoint record, the environment spec and the strategy state) and
// checks that the run state points at every other file by ref, without
// decoding those. An idle invocation, which is most of them, then costs
// O(run state), not O(checkpoint); DecodeRest completes the state when a
// cycle is going to run.
func DecodeLight(files map[string][]byte) (EngineState, error) {
	return decodeFiles(files, lightFiles())
}

// DecodeRest decodes the files DecodeLight left out into s.
func DecodeRest(s *EngineState, files map[string][]byte) error {
	parts := s.parts()
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		if _, ok := files[name]; slices.Contains(lightFiles(), name) || (!ok && optionalFile(name)) {
			continue
		}
		if err := codec.UnmarshalExact(files[name], parts[name]); err != nil {
			return &state.IntegrityError{File: name, Msg: err.Error()}
		}
	}
	return nil
}

func lightFiles() []string {
	return []string{FileRunState, FileCheckpoint, FileSpec, FileStrategy, FileNotified}
}

// decodeFiles decodes the named files (all when only is nil) and checks
// every file's ref against the run state from its bytes: the bytes of a
// decoded file are its canonical encoding, and an undecoded file's bytes
// are what its ref was computed over when it was written.
func decodeFiles(files map[string][]byte, only []string) (EngineState, error) {
	var s EngineState
	parts := s.parts()
	known := map[string]codec.Ref{}
	for _, name := range slices.Sorted(maps.Keys(parts)) {
		b, ok := files[name]
		if !ok && optionalFile(name) {
			continue
		}
		if !ok {
			return EngineState{}, &state.IntegrityError{File: name, Msg: "checkpoint file missing from the manifest"}
		}
		if only == nil || slices.Contains(only, name) {
			if err := codec.UnmarshalExact(b, parts[name]); err != nil {
				return EngineState{}, &state.IntegrityError{File: name, Msg: err.Error()}
			}
		}
		if kind, ok := fileKinds()[name]; ok {
			known[name] = codec.NewRef(kind, b)
		}
	}
	for name := range files {
		if _, ok := parts[name]; !ok {
			return EngineState{}, &state.IntegrityError{File: name, Msg: "unknown checkpoint file"}
		}
	}
	if err := s.checkRefsWith(known); err != nil {
		return EngineState{}, err
	}
	return s, nil
}

// DecodeSpec decodes just the environment spec of a checkpoint, for
// opening the sandbox before the run itself is opened.
func DecodeSpec(files map[string][]byte) (world.Spec, error) {
	var spec world.Spec
	if err := codec.UnmarshalExact(files[FileSpec], &spec); err != nil {
		return spec, &state.IntegrityError{File: FileSpec, Msg: err.Error()}
	}
	return spec, nil
}

// DecodeProposer decodes just the proposer a checkpoint's contract names
// (nil when it names none), for wiring the proposer before the run is
// opened. The contract is decoded again, and checked, when a cycle runs.
func DecodeProposer(files map[string][]byte) (*governance.Proposer, error) {
	var c governance.Contract
	if err := codec.UnmarshalExact(files[FileContract], &c); err != nil {
		return nil, &state.IntegrityError{File: FileContract, Msg: err.Error()}
	}
	return c.Proposer, nil
}

// fileKinds are the ref kinds of the files whose refs run_state records.
func fileKinds() map[string]string {
	return map[string]string{FileGoal: kindGoal, FileContract: kindContract, FileSpec: kindSpec, FileEnvironment: kindObservation,
		FileCommitments: kindCommitments, FileContext: kindContext, FileStrategy: kindStrategy}
}

// checkRefsWith verifies that the run state points at exactly the objects
// whose refs are given.
func (s *EngineState) checkRefsWith(want map[string]codec.Ref) error {
	got := map[string]codec.Ref{
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
func (s *EngineState) refs() map[string]codec.Ref {
	return map[string]codec.Ref{
		FileGoal:        codec.MustRefOf(kindGoal, s.Goal),
		FileContract:    codec.MustRefOf(kindContract, s.Contract),
		FileSpec:        codec.MustRefOf(kindSpec, s.Spec),
		FileEnvironment: s.Environment.Ref(),
		FileCommitments: codec.MustRefOf(kindCommitments, s.Commitments),
		FileContext:     s.Context.Ref(),
		FileStrategy:    codec.MustRefOf(kindStrategy, s.Strategy),
	}
}

// runFingerprint is the SHA-256 of the run state with id and fingerprint
// blank, so the state can carry its own fingerprint.
func runFingerprint(r state.RunState) codec.Fingerprint {
	r.ID, r.Fingerprint = "", ""
	return codec.MustFingerprintOf(r)
}

func runStateRef(r state.RunState) codec.Ref { return codec.MustRefOf(kindRunState, r) }

// seal refreshes the run state's refs, version, id and fingerprint after a
// change. The goal, contract and environment spec never change after
// init, so their refs are computed only when missing.
func (s *EngineState) seal() { s.sealWith(s.Environment.Ref()) }

// sealWith is seal given the environment's ref, when the caller has it.
func (s *EngineState) sealWith(envRef codec.Ref) {
	if len(s.Run.GoalRefs) == 0 || s.Run.ContractRef == "" || s.Run.EnvironmentSpecRef == "" || s.Run.AuthorityRef == "" {
		s.Run.GoalRefs = []codec.Ref{codec.MustRefOf(kindGoal, s.Goal)}
		s.Run.ContractRef = codec.MustRefOf(kindContract, s.Contract)
		s.Run.AuthorityRef = s.Contract.AuthorityRef()
		s.Run.EnvironmentSpecRef = codec.MustRefOf(kindSpec, s.Spec)
	}
	s.Run.EnvironmentRef = envRef
	s.Run.CommitmentStoreRef = codec.MustRefOf(kindCommitments, s.Commitments)
	s.Run.ContextBindingRef, s.contextMemo = s.Context.RefWith(s.contextMemo)
	s.Run.StrategyStateRef = codec.MustRefOf(kindStrategy, s.Strategy)
	s.Run.Version++
	fp := runFingerprint(s.Run)
	s.Run.Fingerprint = fp
	s.Run.ID = codec.Ref(kindRunState + ":" + string(fp))
}

// checkpointRef is the ref a checkpoint record is recorded under.
func checkpointRef(c state.Checkpoint) codec.Ref { return codec.MustRefOf(kindCheckpoint, c) }

// clone returns a deep copy, so that a step never mutates its input state.
func (s EngineState) clone() EngineState {
	var out EngineState
	deepCopy(reflect.ValueOf(&out).Elem(), reflect.ValueOf(s))
	out.contextMemo = s.contextMemo // immutable; deepCopy skips unexported fields
	return out
}

// deepCopy copies src into dst, duplicating every slice, map and pointer,
// so that nothing reachable from dst is shared with src. Values without
// pointers (numbers, strings, which are immutable, and structs of them) are
// copied in one assignment, slices of them in one copy. A codec.Canonical
// is shared as a string is: its bytes are never written in place (see its
// doc), and a working memory holds one per cycle.
func deepCopy(dst, src reflect.Value) {
	if t := src.Type(); t == canonicalType || pointerFree(t) {
		dst.Set(src)
		return
	}
	switch src.Kind() {
	case reflect.Pointer:
		if src.IsNil() {
			return
		}
		p := reflect.New(src.Type().Elem())
		deepCopy(p.Elem(), src.Elem())
		dst.Set(p)
	case reflect.Slice:
		if src.IsNil() {
			return
		}
		s := reflect.MakeSlice(src.Type(), src.Len(), src.Len())
		if pointerFree(src.Type().Elem()) {
			reflect.Copy(s, src)
		} else {
			for i := range src.Len() {
				deepCopy(s.Index(i), src.Index(i))
			}
		}
		dst.Set(s)
	case reflect.Map:
		if src.IsNil() {
			return
		}
		m := reflect.MakeMapWithSize(src.Type(), src.Len())
		iter := src.MapRange()
		for iter.Next() {
			v := reflect.New(src.Type().Elem()).Elem()
			deepCopy(v, iter.Value())
			m.SetMapIndex(iter.Key(), v)
		}
		dst.Set(m)
	case reflect.Struct:
		for i := range src.NumField() {
			if dst.Field(i).CanSet() {
				deepCopy(dst.Field(i), src.Field(i))
			}
		}
	case reflect.Interface:
		if src.IsNil() {
			return
		}
		v := reflect.New(src.Elem().Type()).Elem()
		deepCopy(v, src.Elem())
		dst.Set(v)
	default:
		dst.Set(src)
	}
}

var canonicalType = reflect.TypeFor[codec.Canonical]()

// pointerFreeTypes caches pointerFree, a pure function of the type: an
// entry never changes once stored, so the cache cannot change a result,
// only spare the walk over a struct's fields on every clone.
var pointerFreeTypes sync.Map // reflect.Type -> bool

// pointerFree reports whether values of t share no memory when assigned:
// no slices, maps, pointers or interfaces anywhere inside (strings are
// immutable, so sharing them is safe).
func pointerFree(t reflect.Type) bool {
	if free, ok := pointerFreeTypes.Load(t); ok {
		return free.(bool)
	}
	free := typePointerFree(t)
	pointerFreeTypes.Store(t, free)
	return free
}

func typePointerFree(t reflect.Type) bool {
	switch t.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface, reflect.Chan, reflect.Func, reflect.UnsafePointer:
		return false
	case reflect.Array:
		return typePointerFree(t.Elem())
	case reflect.Struct:
		for i := range t.NumField() {
			if !typePointerFree(t.Field(i).Type) {
				return false
			}
		}
	}
	return true
}

// decodeEnvironment decodes the last observation into s, when Open left
// it undecoded (DecodeLight): eligibility compares the new observation's
// verdict with it.
func (s *EngineState) decodeEnvironment(files map[string][]byte) error {
	if err := codec.UnmarshalExact(files[FileEnvironment], &s.Environment); err != nil {
		return &state.IntegrityError{File: FileEnvironment, Msg: err.Error()}
	}
	return nil
}
