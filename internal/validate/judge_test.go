package validate

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestGlobMatch(t *testing.T) {
	for _, c := range []struct {
		pat, p string
		want   bool
	}{
		{"**", "a/b/c", true}, {"docs/**", "docs", true}, {"docs/**", "docs/x/y.md", true}, {"docs/**", "docsx/y", false},
		{"**/x.md", "x.md", true}, {"**/x.md", "a/b/x.md", true}, {"**/x.md", "a/x.mdx", false},
		{"*.md", "README.md", true}, {"*.md", "a/README.md", false}, {"a/*/c", "a/b/c", true}, {"README.md", "README.md", true},
		{"vendor/**", "vendor/lib.js", true}, {"a/**/c", "a/c", true}, {"a/**/c", "a/x/y/c", true},
	} {
		assert.Equal(t, c.want, globMatch(c.pat, c.p), "%s ~ %s", c.pat, c.p)
	}
}

func TestMayOverlap(t *testing.T) {
	for _, c := range []struct {
		p, q string
		want bool
	}{
		{"**", "x", true}, {"src/**", "src/*.go", true}, {"src/**", "docs/**", false}, {"a/b", "a/c", false},
		{"*.md", "README.md", true}, {"build/**", "**/out", true}, {"a", "a/b", false},
	} {
		assert.Equal(t, c.want, mayOverlap(c.p, c.q), "%s ^ %s", c.p, c.q)
		assert.Equal(t, c.want, mayOverlap(c.q, c.p), "%s ^ %s", c.q, c.p)
	}
}

// TestJudgeAction reads a contract the way gate G does, on actions the
// contract allows, forbids, leaves ungoverned or reserves for a person.
func TestJudgeAction(t *testing.T) {
	var c pinnedContract
	var sp pinnedSpec
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(json.Unmarshal([]byte(`{"authority":{"mode":"project_write"},"coordinates":{"autonomy":"A2"},"rules":[
		{"operation":"*","paths":["vendor/**"],"effect":"forbid"},
		{"operation":"apply_local_patch","paths":["config/**"],"effect":"approve"},
		{"operation":"apply_local_patch","paths":["data/**"],"effect":"allow","requires_evidence":["ds"]},
		{"operation":"run_command","paths":["build/**"],"effect":"allow"},
		{"operation":"*","paths":["**"],"effect":"allow"}]}`), &c))
	must(json.Unmarshal([]byte(`{"checks":[{"id":"b","fixes":[{"id":"make","operation":"run_command","argv":["make"],"touches":["build/**"]}]}]}`), &sp))
	patch := func(target string) actionView { return actionView{Operation: "apply_local_patch", Target: target} }
	none := actionContext{changed: map[string]bool{}}
	assert.Empty(t, judgeAction(c, sp, patch("README.md"), "areq:x", none))
	assert.Contains(t, judgeAction(c, sp, patch("vendor/x.js"), "areq:x", none), "forbids")
	assert.Contains(t, judgeAction(c, sp, patch("config/app.ini"), "areq:x", none), "approval")
	approved := actionContext{changed: map[string]bool{}, approvals: []approvalView{{ActionRef: "areq:x", Verdict: "approve", By: "alice"}}}
	assert.Empty(t, judgeAction(c, sp, patch("config/app.ini"), "areq:x", approved))
	self := actionContext{changed: map[string]bool{}, approvals: []approvalView{{ActionRef: "areq:x", Verdict: "approve", By: "Distiller"}}}
	assert.Contains(t, judgeAction(c, sp, patch("config/app.ini"), "areq:x", self), "approval", "the loop approving its own plan is no approval")
	assert.Contains(t, judgeAction(c, sp, patch("data/d.csv"), "areq:x", none), "evidence ds")
	withDs := actionContext{changed: map[string]bool{}, observation: observationView{Evidence: []evidenceFact{{ID: "ds", Present: true}}}}
	assert.Empty(t, judgeAction(c, sp, patch("data/d.csv"), "areq:x", withDs))
	assert.Contains(t, judgeAction(c, sp, actionView{Operation: "restore_snapshot", Target: "a.txt"}, "areq:x", none), "never changed")

	cmd := actionView{Operation: "run_command", CheckID: "b", FixID: "make", Argv: []string{"make"}, Touches: []string{"build/**"}}
	assert.Empty(t, judgeAction(c, sp, cmd, "areq:x", none))
	other := cmd
	other.Argv = []string{"rm", "-rf", "/"}
	assert.Contains(t, judgeAction(c, sp, other, "areq:x", none), "declares")
	wide := cmd
	wide.Touches = []string{"vendor/**"}
	sp2 := sp
	sp2.Checks = append(sp2.Checks, sp.Checks[0])
	sp2.Checks[1].Fixes = []declaredFix{{ID: "make", Operation: "run_command", Argv: []string{"make"}, Touches: []string{"vendor/**"}}}
	assert.Contains(t, judgeAction(c, sp2, wide, "areq:x", none), "forbids")

	c.Authority.Mode = "propose"
	assert.Contains(t, judgeAction(c, sp, patch("README.md"), "areq:x", none), "needs project_write")
	c.Authority.Mode, c.Coordinates.Autonomy = "project_write", "A1"
	assert.Contains(t, judgeAction(c, sp, patch("README.md"), "areq:x", none), "may not act")
}

func TestAuthorityClaimAndSignalFault(t *testing.T) {
	assert.Empty(t, authorityClaim(nil))
	assert.Empty(t, authorityClaim(json.RawMessage(`{"note":"dataset arrived","items":[1,2]}`)))
	assert.Equal(t, "payload.x[0].Grants", authorityClaim(json.RawMessage(`{"x":[{"Grants":true}]}`)))
	assert.Equal(t, "payload.authority", authorityClaim(json.RawMessage(`{"authority":{"mode":"external_action"}}`)))

	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	ok := signalView{Source: "external_event", DedupKey: "k", CausalParent: "p", ExpiresAt: "2026-01-02T00:00:00Z"}
	assert.Empty(t, signalFault(ok, at, map[string]time.Time{}))
	for name, w := range map[string]signalView{
		"unknown source": {Source: "grant", DedupKey: "k", CausalParent: "p", ExpiresAt: ok.ExpiresAt},
		"expired":        {Source: "external_event", DedupKey: "k", CausalParent: "p", ExpiresAt: "2026-01-01T12:00:00Z"},
		"orphaned":       {Source: "external_event", DedupKey: "k", ExpiresAt: ok.ExpiresAt},
		"authority":      {Source: "external_event", DedupKey: "k", CausalParent: "p", ExpiresAt: ok.ExpiresAt, Payload: json.RawMessage(`{"budget":9}`)},
	} {
		assert.NotEmpty(t, signalFault(w, at, map[string]time.Time{}), name)
	}
	assert.Contains(t, signalFault(ok, at, map[string]time.Time{"k": at.Add(time.Hour)}), "duplicate")
	assert.Empty(t, signalFault(ok, at, map[string]time.Time{"k": at}), "a dedup key whose expiry passed is free again")
}

func TestConditionHolds(t *testing.T) {
	at := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	in := wakeInputs{at: at, observation: observationView{Evidence: []evidenceFact{{ID: "ds", Present: true}, {ID: "gone"}}},
		signals:   []signalView{{Source: "commitment_wake_condition", Ref: "ds"}},
		approvals: []approvalView{{ActionRef: "areq:a", By: "alice"}, {ActionRef: "areq:b", By: "executor"}}}
	for _, c := range []struct {
		w    conditionView
		want bool
	}{
		{conditionView{Kind: "evidence", EvidenceID: "ds"}, true}, {conditionView{Kind: "evidence", EvidenceID: "gone"}, false},
		{conditionView{Kind: "time", At: "2026-01-01T12:00:00Z"}, true}, {conditionView{Kind: "time", At: "2026-01-01T12:00:01Z"}, false},
		{conditionView{Kind: "approval", ActionRef: "areq:a"}, true}, {conditionView{Kind: "approval", ActionRef: "areq:b"}, false},
		{conditionView{Kind: "signal", Source: "commitment_wake_condition", Ref: "ds"}, true},
		{conditionView{Kind: "signal", Source: "commitment_wake_condition", Ref: "other"}, false},
		{conditionView{Kind: "signal", Source: "external_event"}, false}, {conditionView{Kind: "mystery"}, false},
	} {
		got, _ := conditionHolds(c.w, in)
		assert.Equal(t, c.want, got, "%+v", c.w)
	}
}
