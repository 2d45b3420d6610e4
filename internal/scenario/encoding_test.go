package scenario

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// recordedTypes maps the schema of each object a run records to its Go
// type, for reencodesRecorded. A schema missing here is skipped (and
// logged), not failed: the check covers what it knows.
var recordedTypes = map[string]reflect.Type{
	world.ActionSchema: reflect.TypeFor[world.Action](), agenda.Schema: reflect.TypeFor[agenda.Resolution](),
	controller.CascadeSchema: reflect.TypeFor[controller.CascadeRecord](), memory.PointedSchema: reflect.TypeFor[memory.PointedCompression](),
	memory.CompressionSchema: reflect.TypeFor[memory.Compression](), controller.DeclarationSchema: reflect.TypeFor[controller.Declaration](),
	governance.ContractSchema: reflect.TypeFor[governance.Contract](), cognition.ProgramSchema: reflect.TypeFor[cognition.Program](),
	controller.TransitionLogSchema: reflect.TypeFor[controller.TransitionLog](), controller.TransitionSchema: reflect.TypeFor[controller.Transition](),
	cognition.DialogueSchema: reflect.TypeFor[cognition.Dialogue](), world.SpecSchema: reflect.TypeFor[world.Spec](),
	event.EvaluationSchema: reflect.TypeFor[event.Evaluation](), controller.FitnessSchema: reflect.TypeFor[controller.FitnessContract](),
	governance.DecisionSchema: reflect.TypeFor[governance.Decision](), intent.Schema: reflect.TypeFor[intent.Goal](),
	governance.ReceiptSchema: reflect.TypeFor[governance.Receipt](), world.IntentSchema: reflect.TypeFor[world.Intent](),
	controller.LearningSchema: reflect.TypeFor[controller.LearningDelta](), world.ObservationSchema: reflect.TypeFor[world.Observation](),
	state.CheckpointSchema: reflect.TypeFor[state.Checkpoint](), state.CycleSchema: reflect.TypeFor[state.CycleRecord](),
	event.InputsSchema: reflect.TypeFor[event.Inputs](), world.ReadbackSchema: reflect.TypeFor[world.Readback](),
	semantic.SelfSchema: reflect.TypeFor[semantic.Self](), semantic.StateSchema: reflect.TypeFor[semantic.Encoded](),
	controller.TensionSchema: reflect.TypeFor[controller.TensionReport](), strategy.TensionSchema: reflect.TypeFor[strategy.Tension](),
	strategy.TriggerSchema: reflect.TypeFor[strategy.Trigger](), world.OutcomeSchema: reflect.TypeFor[world.Outcome](),
	controller.CandidateSchema: reflect.TypeFor[controller.Candidate](), controller.ViolationSchema: reflect.TypeFor[controller.Violation](),
	strategy.RetrievalSchema: reflect.TypeFor[strategy.Retrieval](), strategy.OverlaySchema: reflect.TypeFor[strategy.Overlay](),
	commitment.StoreSchema: reflect.TypeFor[commitment.Store](), commitment.CommitmentSchema: reflect.TypeFor[commitment.Commitment](),
	strategy.StateSchema: reflect.TypeFor[strategy.Memory](), memory.BindingSchema: reflect.TypeFor[memory.Binding](),
	state.RunStateSchema: reflect.TypeFor[state.RunState](), state.WakeSignalSchema: reflect.TypeFor[state.WakeSignal](),
	state.ApprovalSchema: reflect.TypeFor[state.Approval](),
}

// reencodesRecorded checks the canonical encoder against what a run
// recorded: each event, decoded from its line, encodes to the bytes of
// its ref, and each object it carries, decoded into its Go type, encodes
// with codec.Marshal (the compiled encoder) and with codec.MarshalViaJSON
// (the reference) to exactly its recorded body. It returns how many
// objects it checked.
func reencodesRecorded(t *testing.T, recs []event.Record) int {
	t.Helper()
	checked := 0
	unknown := map[string]int{}
	for _, r := range recs {
		b, err := codec.Marshal(&r.Event)
		require.NoError(t, err)
		require.Equal(t, r.Ref, codec.NewRef("evt", b), "seq %d: the event re-encodes to other bytes", r.Seq)
		o := r.Event.Object
		if o == nil {
			continue
		}
		var head struct {
			Schema string `json:"schema"`
		}
		if json.Unmarshal(o.Body, &head) != nil || recordedTypes[head.Schema] == nil {
			unknown[head.Schema]++
			continue
		}
		v := reflect.New(recordedTypes[head.Schema])
		require.NoError(t, o.Decode(v.Interface()), "seq %d: %s", r.Seq, head.Schema)
		got, err := codec.Marshal(v.Interface())
		require.NoError(t, err)
		assert.Equal(t, string(o.Body), string(got), "seq %d: %s re-encodes to other bytes", r.Seq, head.Schema)
		ref, err := codec.MarshalViaJSON(v.Interface())
		require.NoError(t, err)
		assert.Equal(t, string(o.Body), string(ref), "seq %d: %s: the reference encoder disagrees", r.Seq, head.Schema)
		checked++
	}
	if len(unknown) > 0 {
		t.Logf("objects of schemas without a type here, not re-encoded: %v", unknown)
	}
	return checked
}
