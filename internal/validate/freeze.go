package validate

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/agenda"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/cognition"
	"github.com/acr-project/acr/internal/commitment"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/semantic"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// frozenTypes are the canonical objects whose shape is frozen (gate P):
// the subsystem objects recorded in ledgers and checkpoints. A change to
// any of them changes what old ledgers mean.
func frozenTypes() map[string]reflect.Type {
	return map[string]reflect.Type{
		"state.RunState": reflect.TypeFor[state.RunState](), "state.CycleRecord": reflect.TypeFor[state.CycleRecord](),
		"state.Checkpoint": reflect.TypeFor[state.Checkpoint](), "state.WakeSignal": reflect.TypeFor[state.WakeSignal](),
		"state.Approval": reflect.TypeFor[state.Approval](), "state.StopRequest": reflect.TypeFor[state.StopRequest](),
		"storage.Manifest": reflect.TypeFor[storage.Manifest](), "event.Event": reflect.TypeFor[event.Event](),
		"agenda.Resolution": reflect.TypeFor[agenda.Resolution](), "cognition.Program": reflect.TypeFor[cognition.Program](),
		"cognition.Dialogue": reflect.TypeFor[cognition.Dialogue](), "governance.Decision": reflect.TypeFor[governance.Decision](),
		"governance.Receipt": reflect.TypeFor[governance.Receipt](), "governance.Contract": reflect.TypeFor[governance.Contract](),
		"commitment.Commitment": reflect.TypeFor[commitment.Commitment](), "commitment.Store": reflect.TypeFor[commitment.Store](),
		"memory.Binding": reflect.TypeFor[memory.Binding](), "memory.Compression": reflect.TypeFor[memory.Compression](),
		"strategy.Memory": reflect.TypeFor[strategy.Memory](), "strategy.Tension": reflect.TypeFor[strategy.Tension](),
		"strategy.Trigger": reflect.TypeFor[strategy.Trigger](), "strategy.Retrieval": reflect.TypeFor[strategy.Retrieval](),
		"strategy.Overlay": reflect.TypeFor[strategy.Overlay](), "semantic.Encoded": reflect.TypeFor[semantic.Encoded](),
		"semantic.Self": reflect.TypeFor[semantic.Self](), "world.Spec": reflect.TypeFor[world.Spec](),
		"world.Observation": reflect.TypeFor[world.Observation](), "world.Action": reflect.TypeFor[world.Action](),
		"world.Outcome": reflect.TypeFor[world.Outcome](), "intent.Goal": reflect.TypeFor[intent.Goal](),
		"event.Inputs": reflect.TypeFor[event.Inputs](), "event.Evaluation": reflect.TypeFor[event.Evaluation](),
		"world.Intent": reflect.TypeFor[world.Intent](), "world.Readback": reflect.TypeFor[world.Readback](),
		"controller.Transition": reflect.TypeFor[controller.Transition](), "controller.Declaration": reflect.TypeFor[controller.Declaration](),
		"controller.TensionReport": reflect.TypeFor[controller.TensionReport](), "controller.FitnessContract": reflect.TypeFor[controller.FitnessContract](),
		"controller.LearningDelta": reflect.TypeFor[controller.LearningDelta](), "controller.Candidate": reflect.TypeFor[controller.Candidate](),
		"controller.CascadeRecord": reflect.TypeFor[controller.CascadeRecord](), "controller.Violation": reflect.TypeFor[controller.Violation](),
		"controller.TransitionLog": reflect.TypeFor[controller.TransitionLog](), "memory.PointedCompression": reflect.TypeFor[memory.PointedCompression](),
		"controller.Context": reflect.TypeFor[controller.Context](),
	}
}

// frozenSources are the files that define the bytes on disk.
func frozenSources() []string {
	return []string{"internal/codec/canonical.go", "internal/codec/ref.go", "internal/chain/line.go", "internal/chain/doc.go", "internal/ledger/doc.go",
		"internal/sandbox/doc.go", "internal/dirstore/store.go"}
}

// describe renders a type's JSON shape: field names, tags and kinds, in
// declaration order, recursively (recursive types are named once).
func describe(t reflect.Type, seen map[reflect.Type]bool) string {
	switch t.Kind() {
	case reflect.Pointer:
		return "*" + describe(t.Elem(), seen)
	case reflect.Slice, reflect.Array:
		return "[]" + describe(t.Elem(), seen)
	case reflect.Map:
		return "map[" + describe(t.Key(), seen) + "]" + describe(t.Elem(), seen)
	case reflect.Struct:
		name := t.PkgPath() + "." + t.Name()
		if seen[t] {
			return "^" + name
		}
		seen[t] = true
		defer delete(seen, t)
		var parts []string
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			parts = append(parts, f.Tag.Get("json")+":"+describe(f.Type, seen))
		}
		return name + "{" + strings.Join(parts, ",") + "}"
	}
	if t.PkgPath() != "" {
		return t.PkgPath() + "." + t.Name() + "(" + t.Kind().String() + ")"
	}
	return t.Kind().String()
}

// Hashes computes the current frozen hashes. Type shapes are always
// available; schema and source files need the repository root.
func Hashes(root string) (map[string]string, string) {
	out := map[string]string{}
	for name, t := range frozenTypes() {
		out["type:"+name] = string(codec.FingerprintOf([]byte(describe(t, map[reflect.Type]bool{}))))
	}
	if root == "" {
		return out, "no repository root given: schema and source files not hashed"
	}
	var missing []string
	schemas, _ := filepath.Glob(filepath.Join(root, "docs", "schemas", "*.json"))
	if len(schemas) == 0 {
		missing = append(missing, "docs/schemas/*.json")
	}
	for _, p := range schemas {
		if b, err := os.ReadFile(p); err == nil {
			out["schema:docs/schemas/"+filepath.Base(p)] = string(codec.FingerprintOf(b))
		}
	}
	for _, rel := range frozenSources() {
		b, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(rel)))
		if err != nil {
			missing = append(missing, rel)
			continue
		}
		out["source:"+rel] = string(codec.FingerprintOf(b))
	}
	if len(missing) > 0 {
		return out, "not found under " + root + ": " + strings.Join(missing, ", ")
	}
	return out, ""
}

// FreezeCheck compares current hashes with the frozen manifest.
type FreezeCheck struct {
	Current    map[string]string
	Checked    int
	Mismatches []string
	Missing    string
}

// CheckFreeze compares the current hashes with the release manifest.
func CheckFreeze(root, manifestPath string) FreezeCheck {
	cur, missing := Hashes(root)
	fc := FreezeCheck{Current: cur, Missing: missing}
	m, err := ReadManifest(manifestPath)
	if errors.Is(err, fs.ErrNotExist) {
		fc.Missing = "no frozen release manifest at " + manifestPath + " (make release-manifest writes one)"
		return fc
	}
	if err != nil {
		fc.Missing = err.Error()
		return fc
	}
	keys := map[string]bool{}
	for k := range cur {
		keys[k] = true
	}
	for k := range m.Freeze {
		keys[k] = true
	}
	var sorted []string
	for k := range keys {
		sorted = append(sorted, k)
	}
	slices.Sort(sorted)
	for _, k := range sorted {
		want, have := m.Freeze[k], cur[k]
		switch {
		case have == "" && strings.HasPrefix(k, "type:"):
			fc.Mismatches = append(fc.Mismatches, k+" is frozen but no longer exists")
		case have == "":
			// a file that could not be read: reported via Missing
		case want == "":
			fc.Mismatches = append(fc.Mismatches, k+" is new and not frozen")
		case want != have:
			fc.Mismatches = append(fc.Mismatches, fmt.Sprintf("%s changed (%s, frozen %s)", k, have, want))
		default:
			fc.Checked++
		}
	}
	return fc
}

func reflectOf[T any]() reflect.Type { return reflect.TypeFor[T]() }
