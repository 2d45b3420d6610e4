package world_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/world"
)

// TestCatalogZeroValueIsTheBuiltInOne: the zero catalog holds exactly the
// built-in operations, in their fixed order, with Kind's entries.
func TestCatalogZeroValueIsTheBuiltInOne(t *testing.T) {
	var c world.Catalog
	assert.Equal(t, world.Operations(), c.Operations())
	for _, op := range world.Operations() {
		want, _ := world.Kind(op)
		got, ok := c.Kind(op)
		require.True(t, ok, op)
		assert.Equal(t, want.Op, got.Op)
		assert.Equal(t, want.Writes, got.Writes, op)
		assert.Equal(t, want.Command, got.Command, op)
		assert.Equal(t, want.Undoes, got.Undoes, op)
		assert.Equal(t, want.Reports, got.Reports, op)
	}
	_, ok := c.Kind("append_line")
	assert.False(t, ok)
	assert.Equal(t, world.OpMarkIssue, c.Report().Op)
	assert.Equal(t, []world.Operation{world.OpApplyPatch, world.OpRecordArtifact, world.OpRunCommand}, c.Proposable())
	assert.Equal(t, []world.Operation{world.OpMarkIssue, world.OpApplyPatch, world.OpRecordArtifact, world.OpRunCommand}, c.Fixes())
}

// TestBuiltInEntriesSayWhatTheCoreAsks: each property the core decides
// by belongs to the operation the core used to name.
func TestBuiltInEntriesSayWhatTheCoreAsks(t *testing.T) {
	var c world.Catalog
	for _, op := range world.Operations() {
		k := c.Of(op)
		assert.Equal(t, op == world.OpRunCommand, k.Command, "%s runs a command", op)
		assert.Equal(t, op == world.OpRestore, k.Undoes, "%s undoes an effect", op)
		assert.Equal(t, op == world.OpMarkIssue, k.Reports, "%s reports for a person", op)
	}
	cmd := world.Action{Operation: world.OpRunCommand, FixID: "fmt", Argv: []string{"gofmt", "-w", "."}}
	assert.True(t, c.OnSet(cmd))
	assert.Equal(t, []string{"**"}, c.Paths(cmd), "a command that declares no touches may change anything")
	restore := world.Action{Operation: world.OpRestore, Touches: []string{"*.go"}}
	assert.True(t, c.OnSet(restore), "the undo of a command's effect puts its set back")
	assert.False(t, c.OnSet(world.Action{Operation: world.OpApplyPatch, Target: "a.txt"}))

	ck := world.Check{ID: "c", Path: "a.txt"}
	assert.Equal(t, `apply_local_patch a.txt (replace "x" with "y")`,
		c.DescribeFix(ck, world.Fix{Operation: world.OpApplyPatch, Find: "x", Replace: "y"}))
	assert.Equal(t, "record_artifact a.txt", c.DescribeFix(ck, world.Fix{Operation: world.OpRecordArtifact, Content: "z"}))
}

// TestCatalogAddsOperations: an added entry is found after the built-in
// ones, its nil functions take the defaults, and it never replaces a
// built-in operation.
func TestCatalogAddsOperations(t *testing.T) {
	added := world.OperationKind{Op: "append_line", Writes: true,
		ValidateFix: func(world.Fix, world.Check) error { return nil }}
	shadow := world.OperationKind{Op: world.OpInspect, Writes: true}
	c := world.Catalog{}.With(added, shadow)

	assert.Equal(t, append(world.Operations(), "append_line"), c.Operations())
	k, ok := c.Kind("append_line")
	require.True(t, ok)
	a := world.Action{Operation: "append_line", Target: "notes.txt"}
	assert.Equal(t, []string{"notes.txt"}, k.Paths(a))
	assert.Empty(t, k.Criteria(a))
	assert.Equal(t, "append_line notes.txt", c.Describe(a))
	assert.False(t, c.Writes(world.OpInspect), "a built-in operation keeps its entry")
	assert.Equal(t, []world.Operation{world.OpMarkIssue, world.OpApplyPatch, world.OpRecordArtifact, world.OpRunCommand, "append_line"}, c.Fixes())
	assert.Equal(t, world.Action{Schema: world.ActionSchema, Operation: "append_line", Target: "notes.txt", CheckID: "c"},
		c.DraftFix(world.Check{ID: "c", Path: "notes.txt"}, world.CheckResult{}, world.Fix{Operation: "append_line"}),
		"without a Draft, a fix is its operation on the check's path")

	// An operation the catalog does not hold reads as a write on its
	// target, the safe reading.
	u := c.Of("rm_rf")
	assert.True(t, u.Writes)
	assert.Equal(t, []string{"x"}, u.Paths(world.Action{Operation: "rm_rf", Target: "x"}))

	// The zero catalog is not changed by With.
	_, ok = world.Catalog{}.Kind("append_line")
	assert.False(t, ok)
}

// TestSpecValidateForCatalog: a fix may name an added operation only for
// a world whose catalog holds it, and the entry's own check runs.
func TestSpecValidateForCatalog(t *testing.T) {
	spec := world.Spec{Schema: world.SpecSchema, Files: map[string]string{"notes.txt": ""}, Checks: []world.Check{{ID: "signed", Summary: "s",
		Kind: world.CheckPresentText, Path: "notes.txt", Text: "ok", Fixes: []world.Fix{{Operation: "append_line", Content: "ok"}}}}}
	err := spec.Validate()
	require.Error(t, err)
	assert.Contains(t, err.Error(), `operation "append_line" cannot be a fix (want mark_issue, apply_local_patch, record_artifact or run_command)`)

	ok := world.Catalog{}.With(world.OperationKind{Op: "append_line", Writes: true, ValidateFix: func(world.Fix, world.Check) error { return nil }})
	assert.NoError(t, spec.ValidateFor(ok))
	notFix := world.Catalog{}.With(world.OperationKind{Op: "append_line", Writes: true})
	assert.ErrorContains(t, spec.ValidateFor(notFix), "cannot be a fix", "an operation without ValidateFix is not a fix")
}

func TestOrList(t *testing.T) {
	assert.Equal(t, "", world.OrList(nil))
	assert.Equal(t, "a", world.OrList([]world.Operation{"a"}))
	assert.Equal(t, "a or b", world.OrList([]world.Operation{"a", "b"}))
	assert.Equal(t, "a, b or c", world.OrList([]world.Operation{"a", "b", "c"}))
}
