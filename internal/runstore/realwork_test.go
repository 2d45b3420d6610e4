package runstore_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	. "github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
)

// A real project directory, command checks, a command fix and a proposer
// script, run through the same parts acr uses.

// tick advances one minute every time it is read.
type tick struct{ t time.Time }

func (c *tick) Now() time.Time { c.t = c.t.Add(time.Minute); return c.t }

func logEach(t *testing.T) func(kernel.Summary) {
	return func(c kernel.Summary) {
		t.Logf("cycle %d %s %v %s %s %s", c.CycleSeq, c.LoopDisposition, c.ReasonCodes, c.GovernanceDecision, c.Action, c.Outcome)
	}
}

func osFS(t *testing.T, dir string) *disk.OSDir {
	t.Helper()
	fsys, err := disk.OpenOSDir(dir)
	require.NoError(t, err)
	return fsys
}

type project struct {
	dir, stateDir, docs string
	t                   *testing.T
}

// newProject writes files into a fresh directory and returns it with a
// state directory elsewhere.
func newProject(t *testing.T, files map[string]string) *project {
	t.Helper()
	p := &project{dir: t.TempDir(), stateDir: t.TempDir(), docs: t.TempDir(), t: t}
	for name, content := range files {
		p.write(name, content)
	}
	return p
}

func (p *project) write(name, content string) {
	path := filepath.Join(p.dir, filepath.FromSlash(name))
	require.NoError(p.t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(p.t, os.WriteFile(path, []byte(content), 0o644))
}

func (p *project) read(name string) string {
	b, err := os.ReadFile(filepath.Join(p.dir, filepath.FromSlash(name)))
	require.NoError(p.t, err)
	return string(b)
}

// docsFor writes the three documents; env and contract are JSON object
// bodies without the schema line, the environment's root is the project.
func (p *project) init(env, contract string, opt Options) {
	p.t.Helper()
	write := func(name, body string) string {
		path := filepath.Join(p.docs, name)
		require.NoError(p.t, os.WriteFile(path, []byte(body), 0o644))
		return path
	}
	g := write("goal.json", `{"schema": "acr.goal/v0.1", "id": "keep-healthy", "mission": "keep the project healthy", "success": {"all_checks_pass": true}}`)
	c := write("contract.json", `{"schema": "acr.contract/v0.1", "id": "c", "authority": {"id": "me", "mode": "project_write"},
		"coordinates": {"readiness": "L2", "autonomy": "A2", "cognitive_depth": "D2"}, `+contract+`}`)
	e := write("environment.json", `{"schema": "acr.environment/v0.1", "root": "`+p.dir+`", `+env+`}`)
	in, err := ReadInputs(g, c, e)
	require.NoError(p.t, err)
	_, err = Init(context.Background(), p.stateDir, in, "run:real", false, opt)
	require.NoError(p.t, err)
}

// run opens the run and runs up to n cycles.
func (p *project) run(opt Options, n int) (kernel.RunReport, error) {
	p.t.Helper()
	r, err := Open(context.Background(), p.stateDir, opt)
	if err != nil {
		return kernel.RunReport{}, err
	}
	rep, err := r.Driver.Run(context.Background(), n, logEach(p.t))
	require.NoError(p.t, r.Close())
	return rep, err
}

func realOptions() Options {
	return Options{Clock: &tick{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}, Revision: "test", Environ: os.LookupEnv}
}

func (p *project) events(types ...event.Kind) []event.Record {
	p.t.Helper()
	recs, err := ledger.ReadAll(osFS(p.t, p.stateDir))
	require.NoError(p.t, err)
	var out []event.Record
	for _, r := range recs {
		for _, typ := range types {
			if r.Event.Type == typ {
				out = append(out, r)
			}
		}
	}
	return out
}

func (p *project) state() kernel.EngineState {
	st, _, err := ReadState(p.stateDir)
	require.NoError(p.t, err)
	return st
}

const fixContract = `"rules": [{"operation": "*", "paths": ["go.mod"], "effect": "approve"},
	{"operation": "run_command", "paths": ["**/*.txt"], "effect": "allow"},
	{"operation": "*", "paths": ["**"], "effect": "allow"}], "budgets": {"cycles": {"hard": 50}}, "policy": {}`

func TestCommandCheckAndCommandFix(t *testing.T) {
	p := newProject(t, map[string]string{"notes.txt": "TODO: one\nTODO: two\n"})
	env := `"checks": [{"id": "todos", "summary": "no TODO left", "kind": "command", "priority": 10,
		"argv": ["sh", "-c", "if grep -n TODO notes.txt; then exit 1; fi"],
		"fixes": [{"id": "strip", "operation": "run_command", "argv": ["sed", "-i", "s/TODO: //", "notes.txt"], "touches": ["notes.txt"]}]}]`
	p.init(env, fixContract, realOptions())
	rep, err := p.run(realOptions(), 10)
	require.NoError(t, err)
	assert.Equal(t, "IDLE", rep.FinalDisposition)
	assert.Equal(t, "one\ntwo\n", p.read("notes.txt"))

	st := p.state()
	r, _ := st.Environment.Check("todos")
	assert.Equal(t, "pass", string(r.Status))
	committed := p.events(event.ActionCommitted)
	require.Len(t, committed, 1)
	var out struct {
		Command struct {
			Argv     []string `json:"argv"`
			ExitCode int      `json:"exit_code"`
		} `json:"command"`
		Changed []string `json:"changed"`
	}
	require.NoError(t, json.Unmarshal(committed[0].Event.Object.Body, &out))
	assert.Equal(t, []string{"sed", "-i", "s/TODO: //", "notes.txt"}, out.Command.Argv)
	assert.Equal(t, []string{"notes.txt"}, out.Changed)

	// The failing check's output was recorded with the observation the
	// cycle ran on; its duration with the cycle's inputs.
	started := p.events(event.CycleStarted)
	require.NotEmpty(t, started)
	var m event.Inputs
	require.NoError(t, started[0].Event.Object.Decode(&m))
	require.Len(t, m.CommandRuns, 1)
	assert.Equal(t, "todos", m.CommandRuns[0].Check)
}

// A check that gives no verdict is a provider failure: the run does not
// advance, and past the policy's limit it is FAULTED.
func TestCommandCheckFaultsDoNotAdvanceTheRun(t *testing.T) {
	p := newProject(t, map[string]string{"a.txt": "x"})
	env := `"checks": [{"id": "flaky", "kind": "command", "argv": ["sh", "-c", "exit $(cat code.txt)"], "priority": 1}]`
	p.write("code.txt", "0")
	p.init(env, fixContract, realOptions())
	before := p.state().Run.CycleSeq
	p.write("code.txt", "7")
	for i := range 3 {
		_, err := p.run(realOptions(), 5)
		require.ErrorIs(t, err, kernel.ErrProvider, "attempt %d", i)
		assert.Equal(t, before, p.state().Run.CycleSeq, "the run state does not advance")
	}
	st := p.state()
	assert.Equal(t, state.RunFaulted, st.Run.Status)
	fails := p.events(event.ProviderFailed)
	require.Len(t, fails, 3)
	assert.Contains(t, string(fails[0].Event.Object.Body), `exit 7 is neither a pass`)
	assert.Contains(t, string(fails[0].Event.Object.Body), `"exit_code":7`)
}

// proposerScript writes a proposer that logs each request it reads and
// answers with answer (a shell here-document body).
func (p *project) proposerScript(answer string) string {
	path := filepath.Join(p.docs, "propose.sh")
	script := "#!/bin/sh\ncat > \"" + p.docs + "/request-$(date +%s%N).json\"\necho x >> \"" + p.docs + "/invocations\"\n" + answer + "\n"
	require.NoError(p.t, os.WriteFile(path, []byte(script), 0o755))
	return path
}

func (p *project) invocations() int {
	b, err := os.ReadFile(filepath.Join(p.docs, "invocations"))
	if os.IsNotExist(err) {
		return 0
	}
	require.NoError(p.t, err)
	return strings.Count(string(b), "\n")
}

func proposerContract(script, rules string) string {
	return rules + `, "proposer": {"argv": ["` + script + `"], "timeout_seconds": 5}`
}

const vetLikeEnv = `"checks": [{"id": "lint", "summary": "no printf with %d of a string", "kind": "command", "priority": 10,
	"argv": ["sh", "-c", "if grep -n 'printf(\"%d\", name)' main.c; then echo 'main.c:3: %d with a string' >&2; exit 2; fi"]}]`

func answer(json string) string { return "cat <<'JSON'\n" + json + "\nJSON" }

func TestProposerProposalIsAppliedAndReplayedWithoutIt(t *testing.T) {
	p := newProject(t, map[string]string{"main.c": "int main() {\n  char *name = \"x\";\n  printf(\"%d\", name);\n}\n"})
	script := p.proposerScript(answer(`{"schema": "acr.proposal/v0.1", "rationale": ["%d needs an int"],
		"actions": [{"operation": "apply_local_patch", "target": "main.c", "find": "printf(\"%d\", name)", "replace": "printf(\"%s\", name)"}]}`))
	p.init(vetLikeEnv, proposerContract(script, fixContract), realOptions())
	rep, err := p.run(realOptions(), 10)
	require.NoError(t, err)
	assert.Equal(t, "IDLE", rep.FinalDisposition)
	assert.Contains(t, p.read("main.c"), `printf("%s", name)`)
	assert.Equal(t, 1, p.invocations())

	// The request is a valid acr.proposal-request/v0.1 and shows main.c,
	// which the check's output names.
	reqs, _ := filepath.Glob(filepath.Join(p.docs, "request-*.json"))
	require.Len(t, reqs, 1)
	body, err := os.ReadFile(reqs[0])
	require.NoError(t, err)
	s := loadSchema(t, "proposal-request.schema.json")
	v, err := decodeJSON(body)
	require.NoError(t, err)
	assert.Empty(t, s.validate(v))
	assert.Contains(t, string(body), `"path":"main.c"`)
	assert.Contains(t, string(body), `main.c:3: %d with a string`)

	received := p.events(event.ProposalReceived)
	require.Len(t, received, 1)
	assert.NotContains(t, string(received[0].Event.Object.Body), `"content"`, "the reply records hashes of the files sent, not their text")

	// Replay re-derives every cycle from the ledger: the proposer is not
	// asked again.
	recs, err := ledger.ReadAll(osFS(t, p.stateDir))
	require.NoError(t, err)
	rr, err := kernel.Replay(recs, 1)
	require.NoError(t, err)
	assert.True(t, rr.OK, "%+v", rr.Divergence)
	assert.Equal(t, 1, p.invocations(), "replay never runs the proposer")
}

// Every kind of bad answer is refused with its reason. A proposer that
// fails as a program is a provider failure (the run does not advance); an
// answer that decodes but cannot be acted on is rejected by the critic or
// refused by governance, and recorded.
func TestBadProposals(t *testing.T) {
	faults := []struct {
		name, script, reason string
	}{
		{"timeout", "sleep 30", "timed out"},
		{"exit code", "echo broken >&2; exit 3", "exit 3: broken"},
		{"not json", "echo 'I think you should fix it'", "invalid proposal"},
		{"unknown field", answer(`{"schema": "acr.proposal/v0.1", "actions": [], "rationale": ["x"], "confidence": 3}`), "unknown field"},
		{"wrong schema", answer(`{"schema": "acr.proposal/v9", "actions": []}`), "acr.proposal/v0.1"},
		{"duplicate key", answer(`{"schema": "acr.proposal/v0.1", "actions": [], "actions": [], "rationale": ["x"]}`), "duplicate"},
		{"unknown operation", answer(`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "delete_file", "target": "main.c"}]}`), "cannot be proposed"},
	}
	for _, tc := range faults {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t, map[string]string{"main.c": "printf(\"%d\", name);\n"})
			script := p.proposerScript(tc.script)
			p.init(vetLikeEnv, proposerContract(script, fixContract), realOptions())
			before := p.state().Run
			_, err := p.run(realOptions(), 5)
			require.ErrorIs(t, err, kernel.ErrProvider)
			assert.Contains(t, err.Error(), tc.reason)
			after := p.state().Run
			assert.Equal(t, before.CycleSeq, after.CycleSeq, "the run state does not advance")
			fails := p.events(event.ProviderFailed)
			require.Len(t, fails, 1)
			assert.Contains(t, string(fails[0].Event.Object.Body), `"source":"proposer"`)
			assert.Empty(t, p.events(event.ProposalReceived))
			assert.Equal(t, "printf(\"%d\", name);\n", p.read("main.c"))
		})
	}

	rejected := []struct {
		name, action, reason string
	}{
		{"patch does not apply", `{"operation": "apply_local_patch", "target": "main.c", "find": "no such text", "replace": "x"}`, "proposal_rejected_patch_does_not_apply"},
		{"undeclared command", `{"operation": "run_command", "fix": "rm-everything"}`, "proposal_rejected_undeclared_command"},
		{"escape", `{"operation": "record_artifact", "target": "../outside.txt", "content": "x"}`, "proposal_rejected_target_path_invalid"},
		{"excluded", `{"operation": "record_artifact", "target": ".env", "content": "x"}`, "proposal_rejected_target_excluded"},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t, map[string]string{"main.c": "printf(\"%d\", name);\n"})
			script := p.proposerScript(answer(`{"schema": "acr.proposal/v0.1", "actions": [` + tc.action + `], "rationale": ["try"]}`))
			p.init(vetLikeEnv, proposerContract(script, fixContract), realOptions())
			_, err := p.run(realOptions(), 5)
			require.NoError(t, err)
			assert.Equal(t, 1, p.invocations(), "set aside until the evidence changes: not asked again and again")
			dlgs := p.events(event.DialogueCompleted)
			require.NotEmpty(t, dlgs)
			assert.Contains(t, string(dlgs[0].Event.Object.Body), strings.TrimPrefix(tc.reason, "proposal_rejected_"))
			st := p.state()
			require.NotEmpty(t, st.Run.Proposed)
			assert.Equal(t, "rejected_"+strings.TrimPrefix(tc.reason, "proposal_rejected_"), st.Run.Proposed[0].Result)
			// The item has no declared fix: with nothing acceptable from the
			// proposer it is reported for a person instead.
			committed := p.events(event.ActionCommitted)
			require.Len(t, committed, 1)
			assert.Contains(t, string(committed[0].Event.Object.Body), `"operation":"mark_issue"`)
			assert.Equal(t, "printf(\"%d\", name);\n", p.read("main.c"))
			assert.NoFileExists(t, filepath.Join(filepath.Dir(p.dir), "outside.txt"))
		})
	}
}

// The same proposal runs, is refused or waits for a person as the
// contract says: the proposer's say-so changes nothing about governance.
func TestProposedCommandIsGoverned(t *testing.T) {
	env := `"checks": [{"id": "todos", "kind": "command", "priority": 10, "argv": ["sh", "-c", "if grep -q TODO notes.txt; then exit 1; fi"],
		"fixes": [{"id": "strip", "operation": "run_command", "argv": ["sed", "-i", "s/TODO: //", "notes.txt"], "touches": ["notes.txt"]}]}]`
	proposal := answer(`{"schema": "acr.proposal/v0.1", "actions": [{"operation": "run_command", "fix": "strip"}], "rationale": ["strip the markers"]}`)
	cases := []struct {
		name, rules, verdict, disposition, content string
	}{
		{"allowed", `"rules": [{"operation": "run_command", "paths": ["notes.txt"], "effect": "allow"}]`, "EXECUTE", "IDLE", "one\n"},
		{"no run_command rule", `"rules": [{"operation": "*", "paths": ["**"], "effect": "allow"}]`, "REFUSE", "IDLE", "TODO: one\n"},
		{"approval asked", `"rules": [{"operation": "run_command", "paths": ["notes.txt"], "effect": "approve"}]`, "ESCALATE", "WAIT_APPROVAL", "TODO: one\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newProject(t, map[string]string{"notes.txt": "TODO: one\n"})
			script := p.proposerScript(proposal)
			// mode always: the proposer is asked although a declared fix is left.
			contract := tc.rules + `, "proposer": {"argv": ["` + script + `"], "mode": "always", "timeout_seconds": 5}`
			p.init(env, contract, realOptions())
			rep, err := p.run(realOptions(), 5)
			require.NoError(t, err)
			assert.Equal(t, tc.disposition, rep.FinalDisposition)
			assert.Equal(t, tc.content, p.read("notes.txt"))
			decs := p.events(event.DecisionRecorded)
			require.NotEmpty(t, decs)
			assert.Contains(t, string(decs[0].Event.Object.Body), `"verdict":"`+tc.verdict+`"`)
		})
	}
}

// A command that runs twice shows it: its fix appends a line. Approving
// an uncertain effect runs it again, on purpose, once.
func TestUncertainCommandWaitsForAPerson(t *testing.T) {
	p := newProject(t, map[string]string{"log.txt": ""})
	env := `"checks": [{"id": "logged", "kind": "command", "priority": 1, "argv": ["sh", "-c", "grep -q done log.txt || exit 1"],
		"fixes": [{"id": "append", "operation": "run_command", "argv": ["sh", "-c", "echo step >> log.txt"], "touches": ["log.txt"]}]}]`
	p.init(env, `"rules": [{"operation": "run_command", "paths": ["**"], "effect": "allow"}]`, realOptions())
	opt := realOptions()
	crashed := false
	opt.Failpoint = func(name string) {
		if name == "before-action-commit" && !crashed {
			crashed = true
			panic("crash")
		}
	}
	func() {
		var r *Run
		defer func() {
			require.Equal(t, "crash", recover())
			r.Abandon() // as a killed process would leave it
		}()
		r, err := OpenWith(t.Context(), p.stateDir, opt, func(open *Run) { r = open })
		require.NoError(t, err)
		_, _ = r.Driver.Run(context.Background(), 1, nil)
	}()
	// The process died with the started marker durable and the command not
	// yet started; the lock went with it.
	rep, err := p.run(realOptions(), 3)
	require.NoError(t, err)
	assert.Equal(t, "WAIT_APPROVAL", rep.FinalDisposition)
	st := p.state()
	require.Len(t, st.Run.PendingApprovals, 1)
	assert.Equal(t, "uncertain_effect", st.Run.PendingApprovals[0].Reason)
	assert.Equal(t, "", p.read("log.txt"), "not run twice silently (here: not at all)")

	_, err = dirstore.Inbox{FS: osFS(t, p.stateDir)}.Write(&state.Approval{Schema: state.ApprovalSchema, ActionRef: st.Run.PendingApprovals[0].Ref,
		RequestCycle: st.Run.PendingApprovals[0].CycleSeq, Verdict: "approve", By: "tester", CreatedAt: "2026-01-01T05:00:00Z"})
	require.NoError(t, err)
	_, err = p.run(realOptions(), 1)
	require.NoError(t, err)
	assert.Equal(t, "step\n", p.read("log.txt"), "approved: run again, once")
}
