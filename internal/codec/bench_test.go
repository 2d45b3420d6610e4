package codec_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/acr-project/acr/internal/budget"
	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/state"
)

// The benchmark objects have the shape and size of what a run records
// (taken from a queue run's ledger): refs everywhere, short lists, small
// maps, enums written through MarshalText, and events that carry an
// object's canonical body.

func benchRef(kind string, i int) codec.Ref {
	return codec.NewRef(kind, []byte(kind+strconv.Itoa(i)))
}

// benchDoc is a synthetic record of 15 fields: the mix of a typical
// subsystem object.
type benchDoc struct {
	Schema      string               `json:"schema"`
	RunID       string               `json:"run_id"`
	CycleSeq    int64                `json:"cycle_seq"`
	At          string               `json:"at"`
	GoalRef     codec.Ref            `json:"goal_ref"`
	PriorRef    codec.Ref            `json:"prior_ref"`
	InputRefs   []codec.Ref          `json:"input_refs"`
	Reasons     []string             `json:"reason_codes"`
	Refs        map[string]codec.Ref `json:"refs"`
	Items       []benchItem          `json:"items"`
	Inner       *benchItem           `json:"inner,omitempty"`
	Note        string               `json:"note,omitempty"`
	Passed      bool                 `json:"passed"`
	Count       int                  `json:"count"`
	Disposition state.Disposition    `json:"disposition"`
}

type benchItem struct {
	ID       string      `json:"id"`
	Priority int         `json:"priority"`
	Refs     []codec.Ref `json:"refs"`
	Summary  string      `json:"summary"`
}

func newBenchDoc() *benchDoc {
	d := &benchDoc{
		Schema: "acr.bench-doc/v0.1", RunID: "run:persistent:a099635f798f77c9", CycleSeq: 412,
		At: "2026-12-01T15:15:13Z", GoalRef: benchRef("goal", 1), PriorRef: benchRef("pcyc", 411),
		InputRefs: []codec.Ref{benchRef("obs", 1), benchRef("pin", 2)},
		Reasons:   []string{"controls_in_place", "effect_observed"},
		Refs:      map[string]codec.Ref{"decision": benchRef("gdec", 1), "action": benchRef("areq", 1), "outcome": benchRef("wout", 1), "cycle": benchRef("pcyc", 412)},
		Inner:     &benchItem{ID: "inner", Priority: 3, Refs: []codec.Ref{}, Summary: "a note with \"quotes\", a tab\tand é"},
		Passed:    true, Count: 17, Disposition: state.Continue,
	}
	for i := range 3 {
		d.Items = append(d.Items, benchItem{ID: "queue-" + strconv.Itoa(i), Priority: 10 - i,
			Refs: []codec.Ref{benchRef("chk", i)}, Summary: "items pending in queue.txt"})
	}
	return d
}

func newBenchCycle() *state.CycleRecord {
	return &state.CycleRecord{
		Schema: "acr.persistent-cycle/v0.1", RunID: "run:persistent:a099635f798f77c9", CycleSeq: 412,
		PriorCycleRef: benchRef("pcyc", 411), StartedAt: "2026-12-01T15:15:13Z",
		InputEnvironmentRef: benchRef("obs", 1), InputContextRef: benchRef("ctxbind", 1),
		InputRefs: []codec.Ref{benchRef("obs", 1)}, SemanticStateRef: benchRef("sem", 1),
		SelfObservationRef: benchRef("self", 1), AgendaResolutionRef: benchRef("ares", 1),
		CommitmentRefs: []codec.Ref{}, CognitiveProgramRef: benchRef("cprog", 1), DialogueRef: benchRef("dlg", 1),
		GovernanceDecisionRef: benchRef("gdec", 1), ActionRequestRef: benchRef("areq", 1),
		IdempotencyKey: string(benchRef("idem", 1)), WorldOutcomeRef: benchRef("wout", 1),
		EvaluationRef: benchRef("evalr", 1), LoopDisposition: state.Continue, ReasonCodes: []string{},
		GovernanceDecision: "EXECUTE", ControllerTransitionRef: []codec.Ref{benchRef("ctlog", 1), benchRef("ctlog", 2)},
	}
}

func newBenchTransitions() *controller.TransitionLog {
	in := []codec.Ref{benchRef("gdec", 1), benchRef("grcpt", 1)}
	return &controller.TransitionLog{
		Schema: "acr.controller-transitions/v0.2", CycleID: "run:persistent:a099635f798f77c9/cycle/412",
		Timestamp: "2026-12-01T15:15:13Z",
		Transitions: []controller.LoggedMove{
			{Seq: 9, PreviousState: controller.Checkpoint, NextState: controller.Act, ActorRole: controller.Executor,
				InputHashes: &in, OutputHashes: []codec.Ref{benchRef("areq", 1)}, Reason: "controls_in_place",
				AuthorityUsed: governance.AuthNone, BudgetConsumed: budget.Usage{Events: 2}},
			{Seq: 10, PreviousState: controller.Act, NextState: controller.ObserveEffect, ActorRole: controller.Executor,
				OutputHashes: []codec.Ref{benchRef("wout", 1)}, Reason: "committed",
				AuthorityUsed: governance.AuthProjectWrite, BudgetConsumed: budget.Usage{Events: 1, FilesTouched: 1, ToolActions: 1}},
			{Seq: 11, PreviousState: controller.ObserveEffect, NextState: controller.Evaluate, ActorRole: controller.Observer,
				OutputHashes: []codec.Ref{benchRef("rdbk", 1)}, Reason: "effect_observed",
				AuthorityUsed: governance.AuthRead, BudgetConsumed: budget.Usage{Events: 1}},
		},
	}
}

func newBenchEvent(b testing.TB) *event.Event {
	obj, err := event.NewObject("pcyc", newBenchCycle())
	if err != nil {
		b.Fatal(err)
	}
	return &event.Event{Type: event.CycleCompleted, RunID: "run:persistent:a099635f798f77c9", CycleSeq: 412,
		At: "2026-12-01T15:15:13Z", Parents: []codec.Ref{benchRef("evt", 1)},
		Refs: map[string]codec.Ref{"cycle": obj.Ref, "decision": benchRef("gdec", 1)}, Object: obj}
}

// newBenchBinding is a working memory halfway to its compaction: 25 units
// of a cycle's 30 event refs each, the largest object a run hashes every
// cycle.
func newBenchBinding() memory.Binding {
	bd := memory.NewBinding()
	for c := range 25 {
		u := memory.Unit{CycleSeq: int64(c), CycleRef: benchRef("pcyc", c), Item: "check:queue", Disposition: "CONTINUE"}
		for e := range 30 {
			u.EventRefs = append(u.EventRefs, benchRef("evt", c*100+e))
		}
		bd = memory.Record(bd, u, []memory.Protected{{Kind: "goal", Ref: string(benchRef("goal", 1))}})
	}
	return bd
}

func benchMarshal(b *testing.B, v any) { benchEncoder(b, codec.Marshal, v) }

// benchReflect measures the reflective encoder the compiled one replaced.
func benchReflect(b *testing.B, v any) { benchEncoder(b, codec.ReflectMarshal, v) }

func benchEncoder(b *testing.B, marshal func(any) ([]byte, error), v any) {
	b.Helper()
	out, err := marshal(v)
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(out)))
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if _, err := marshal(v); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

// reportCPU adds the process CPU time per operation since start, which a
// busy machine disturbs less than wall time.
func reportCPU(b *testing.B, start time.Duration) {
	b.ReportMetric(float64(processCPU()-start)/float64(b.N), "cpu-ns/op")
}

func benchRefOf(b *testing.B, kind string, v any) {
	b.Helper()
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		if _, _, err := codec.RefOf(kind, v); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

func BenchmarkMarshalDoc(b *testing.B)         { benchMarshal(b, newBenchDoc()) }
func BenchmarkMarshalCycle(b *testing.B)       { benchMarshal(b, newBenchCycle()) }
func BenchmarkMarshalTransitions(b *testing.B) { benchMarshal(b, newBenchTransitions()) }
func BenchmarkMarshalEvent(b *testing.B)       { benchMarshal(b, newBenchEvent(b)) }
func BenchmarkReflectDoc(b *testing.B)         { benchReflect(b, newBenchDoc()) }
func BenchmarkReflectCycle(b *testing.B)       { benchReflect(b, newBenchCycle()) }
func BenchmarkReflectTransitions(b *testing.B) { benchReflect(b, newBenchTransitions()) }
func BenchmarkReflectEvent(b *testing.B)       { benchReflect(b, newBenchEvent(b)) }
func BenchmarkMarshalBinding(b *testing.B)     { benchMarshal(b, newBenchBinding()) }
func BenchmarkReflectBinding(b *testing.B)     { benchReflect(b, newBenchBinding()) }
func BenchmarkRefOfDoc(b *testing.B)           { benchRefOf(b, "doc", newBenchDoc()) }
func BenchmarkRefOfCycle(b *testing.B)         { benchRefOf(b, "pcyc", newBenchCycle()) }
func BenchmarkRefOfEvent(b *testing.B)         { benchRefOf(b, "evt", newBenchEvent(b)) }

func benchUnmarshal(b *testing.B, unmarshal func([]byte, any) error) {
	b.Helper()
	data := codec.MustMarshal(newBenchCycle())
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	start := processCPU()
	for b.Loop() {
		var c state.CycleRecord
		if err := unmarshal(data, &c); err != nil {
			b.Fatal(err)
		}
	}
	reportCPU(b, start)
}

func BenchmarkUnmarshalCanonicalCycle(b *testing.B) { benchUnmarshal(b, codec.UnmarshalCanonical) }
func BenchmarkStrictUnmarshalCycle(b *testing.B)    { benchUnmarshal(b, codec.StrictUnmarshalCanonical) }
