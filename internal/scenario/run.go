package scenario

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/diff"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/memory"
	"github.com/acr-project/acr/internal/runstore"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
	"github.com/acr-project/acr/internal/world"
)

// Result is what running a scenario produced and whether it met its
// expectations.
type Result struct {
	Name                string             `json:"name"`
	Passed              bool               `json:"passed"`
	Failures            []string           `json:"failures"`
	Cycles              int64              `json:"cycles"`
	FinalDisposition    string             `json:"final_disposition"`
	DispositionCounts   map[string]int     `json:"disposition_counts"`
	DispositionSequence []string           `json:"disposition_sequence"`
	TransitionClasses   map[string]int     `json:"transition_classes"`
	Fingerprints        Fingerprints       `json:"fingerprints"`
	Recoveries          []kernel.Recovery  `json:"recoveries"`
	LedgerEvents        int64              `json:"ledger_events"`
	Facts               map[string]float64 `json:"facts"`
	// Dir is the state directory the scenario ran in (kept with Keep).
	Dir string `json:"state_dir,omitempty"`
}

// Options tune a scenario run.
type Options struct {
	// Dir is the state directory to use; empty means a fresh temp dir.
	Dir string
	// Keep leaves the state directory behind.
	Keep bool
	// CheckpointEvery bounds cycles between directory checkpoints; small
	// values exercise recovery by replay less, large values more.
	CheckpointEvery int
	// Clock, when set, replaces the scripted clock (the validator uses it
	// to show that a nondeterministic clock breaks replay determinism).
	Clock kernel.Clock
}

// scriptClock moves only when the script advances it.
type scriptClock struct{ t time.Time }

func (c *scriptClock) Now() time.Time { return c.t }

// scriptKnowledge hands out queued knowledge updates once.
type scriptKnowledge struct{ queue []strategy.KnowledgeUpdate }

func (k *scriptKnowledge) Poll(time.Time) ([]strategy.KnowledgeUpdate, error) {
	q := k.queue
	k.queue = nil
	return q, nil
}

// crashSignal is the panic value that simulates the process dying.
type crashSignal struct{ stage string }

// flakyWorld makes the observation provider fail or return garbage a
// scripted number of times.
type flakyWorld struct {
	kernel.World
	fail, garbage *int
}

func (f flakyWorld) Observe(ctx context.Context) (world.Observation, error) {
	switch {
	case *f.fail > 0:
		*f.fail--
		return world.Observation{}, errors.New("scripted provider failure: observation unavailable")
	case *f.garbage > 0:
		*f.garbage--
		return world.Observation{Schema: "garbage"}, nil
	}
	return f.World.Observe(ctx)
}

type runner struct {
	sc    *Scenario
	dir   string
	clock *scriptClock
	know  *scriptKnowledge
	opt   runstore.Options
	res   *Result
	arm   *Crash
	hits  int
	last  kernel.RunReport
	// lastDispositions are the dispositions of the last invocation's cycles.
	lastDispositions []string
	lastR            *kernel.Recovery
	// scripted provider faults still to happen
	failures, garbage int
	providerErr       bool
}

// Run executes a scenario in a fresh state directory and checks it.
func Run(sc *Scenario, o Options) (*Result, error) {
	start, _ := state.ParseTime(sc.Script.Start)
	rn := &runner{sc: sc, clock: &scriptClock{t: start}, know: &scriptKnowledge{},
		res: &Result{Name: sc.Script.Name, DispositionCounts: map[string]int{}, TransitionClasses: map[string]int{},
			Failures: []string{}, Recoveries: []kernel.Recovery{}, DispositionSequence: []string{}, Facts: map[string]float64{}}}
	rn.dir = o.Dir
	if rn.dir == "" {
		d, err := os.MkdirTemp("", "acr-scenario-"+sc.Script.Name+"-")
		if err != nil {
			return nil, err
		}
		rn.dir = filepath.Join(d, "engine_state")
		if !o.Keep {
			defer os.RemoveAll(d)
		}
	}
	if o.Keep {
		rn.res.Dir = rn.dir
	}
	every := o.CheckpointEvery
	if every == 0 {
		every = 4
	}
	var clk kernel.Clock = rn.clock
	if o.Clock != nil {
		clk = o.Clock
	}
	rn.opt = runstore.Options{Clock: clk, Knowledge: rn.know, Revision: "scenario", CheckpointEvery: every, Failpoint: rn.failpoint,
		WrapWorld: func(w kernel.World) kernel.World {
			return flakyWorld{World: w, fail: &rn.failures, garbage: &rn.garbage}
		}}
	if _, err := runstore.Init(context.Background(), rn.dir, sc.Inputs, "run:scenario:"+sc.Script.Name, false, rn.opt); err != nil {
		return nil, fmt.Errorf("scenario %s: init: %w", sc.Script.Name, err)
	}
	if err := rn.steps(sc.Script.Steps, "steps"); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Script.Name, err)
	}
	if err := rn.finish(); err != nil {
		return nil, fmt.Errorf("scenario %s: %w", sc.Script.Name, err)
	}
	rn.res.Passed = len(rn.res.Failures) == 0
	return rn.res, nil
}

func (rn *runner) steps(steps []Step, at string) error {
	for i, st := range steps {
		where := fmt.Sprintf("%s[%d]", at, i)
		if st.Repeat != nil {
			for n := range st.Repeat.Times {
				if err := rn.steps(st.Repeat.Steps, fmt.Sprintf("%s.repeat#%d", where, n+1)); err != nil {
					return err
				}
			}
		} else if err := rn.step(st); err != nil {
			return fmt.Errorf("%s: %w", where, err)
		}
		if st.Expect != nil {
			rn.check(where, *st.Expect)
		}
	}
	return nil
}

func (rn *runner) failpoint(stage string) {
	if rn.arm == nil || stage != rn.arm.Failpoint {
		return
	}
	rn.hits++
	if rn.hits == max(rn.arm.Nth, 1) {
		rn.arm = nil
		panic(crashSignal{stage: stage})
	}
}

func (rn *runner) failf(format string, args ...any) {
	rn.res.Failures = append(rn.res.Failures, fmt.Sprintf(format, args...))
}

// runCycles opens the run (recovering it), runs up to n cycles and closes
// it. A crash at an armed failpoint abandons the process's work.
func (rn *runner) runCycles(n int) (crashed bool, err error) {
	rn.last, rn.lastDispositions = kernel.RunReport{}, nil
	var r *runstore.Run
	defer func() {
		if p := recover(); p != nil {
			if _, ok := p.(crashSignal); !ok {
				panic(p)
			}
			crashed, err = true, nil
			if r != nil {
				r.Abandon()
			}
		}
	}()
	r, err = runstore.OpenWith(context.Background(), rn.dir, rn.opt, func(x *runstore.Run) { r = x })
	if err != nil {
		return false, err
	}
	rec := r.Driver.Recovery()
	rn.noteRecovery(rec)
	rep, err := r.Driver.Run(context.Background(), n, func(c kernel.Summary) {
		d := c.LoopDisposition.String()
		rn.lastDispositions = append(rn.lastDispositions, d)
		rn.res.DispositionSequence = append(rn.res.DispositionSequence, d)
	})
	rn.last = rep
	if cerr := r.Close(); err == nil {
		err = cerr
	}
	rn.providerErr = errors.Is(err, kernel.ErrProvider)
	if errors.Is(err, kernel.ErrFaulted) || errors.Is(err, kernel.ErrProvider) {
		rn.res.Facts["provider_errors"]++
		err = nil
	}
	return false, err
}

func (rn *runner) noteRecovery(rec kernel.Recovery) {
	rn.lastR = &rec
	if rec.Recovered {
		rn.res.Recoveries = append(rn.res.Recoveries, rec)
	}
}

// put queues an inbox item the way acr wake, approve and stop do.
func (rn *runner) put(v any) (string, error) {
	q, err := runstore.OpenQueue(rn.dir)
	if err != nil {
		return "", err
	}
	return q.Put(v)
}

func (rn *runner) step(st Step) error {
	now := rn.clock.t
	switch {
	case st.Run > 0:
		_, err := rn.runCycles(st.Run)
		return err
	case st.Advance != "":
		d, _ := time.ParseDuration(st.Advance)
		rn.clock.t = rn.clock.t.Add(d)
	case st.World != nil:
		root := filepath.Join(rn.dir, "sandbox", "world")
		if st.World.Remove != "" {
			return os.Remove(filepath.Join(root, filepath.FromSlash(st.World.Remove)))
		}
		p := filepath.Join(root, filepath.FromSlash(st.World.Write))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		return os.WriteFile(p, []byte(st.World.Content), 0o644)
	case st.Wake != nil:
		exp := 7 * 24 * time.Hour
		if st.Wake.Expires != "" {
			exp, _ = time.ParseDuration(st.Wake.Expires)
		}
		key := st.Wake.DedupKey
		if key == "" {
			key = fmt.Sprintf("%s:%s:%s", st.Wake.Source, st.Wake.Ref, state.FormatTime(now))
		}
		parent := st.Wake.CausalParent
		switch parent {
		case "":
			parent = "scenario:" + rn.sc.Script.Name
		case "-":
			parent = ""
		}
		_, err := rn.put(&state.WakeSignal{Schema: state.WakeSignalSchema, Source: st.Wake.Source, Ref: st.Wake.Ref, DedupKey: key,
			CreatedAt: state.FormatTime(now), ExpiresAt: state.FormatTime(now.Add(exp)), By: "scenario", Reason: st.Wake.Reason, Payload: st.Wake.Payload,
			CausalParent: parent, Priority: st.Wake.Priority})
		return err
	case st.Amend != nil:
		return rn.amend(*st.Amend)
	case st.Approve != "" || st.Deny != "":
		return rn.resolve(st)
	case st.Stop != nil:
		_, err := rn.put(&state.StopRequest{Schema: state.StopSchema, By: "scenario", Reason: st.Stop.Reason, Kill: st.Stop.Kill, CreatedAt: state.FormatTime(now)})
		return err
	case st.KillSwitch != nil:
		p := filepath.Join(rn.dir, runstore.KillSwitchFile)
		if *st.KillSwitch {
			return os.WriteFile(p, []byte("stop\n"), 0o644)
		}
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	case st.Knowledge != nil:
		rn.know.queue = append(rn.know.queue, *st.Knowledge)
	case st.ProviderFailures > 0:
		rn.failures += st.ProviderFailures
	case st.ProviderGarbage > 0:
		rn.garbage += st.ProviderGarbage
	case st.Crash != nil:
		c := *st.Crash
		rn.arm, rn.hits = &c, 0
		crashed, err := rn.runCycles(max(c.MaxCycles, 20))
		rn.arm = nil
		if err != nil {
			return err
		}
		if !crashed {
			rn.failf("crash at %s: the failpoint was never reached", c.Failpoint)
		}
	case st.Recover:
		r, err := runstore.Open(context.Background(), rn.dir, rn.opt)
		if err != nil {
			return err
		}
		rn.noteRecovery(r.Driver.Recovery())
		return r.Close()
	}
	return nil
}

// amend queues an amendment, as acr amend does: the document is read and
// checked against the pinned state, and queued with its diff.
func (rn *runner) amend(a Amend) error {
	target, file, _ := a.target()
	s, _, err := runstore.ReadState(rn.dir)
	if err != nil {
		return err
	}
	doc, newRef, err := runstore.ReadAmendment(target, filepath.Join(rn.sc.Dir, file), s)
	if err != nil {
		return err
	}
	old := kernel.PinnedRef(s, target)
	pinned, err := kernel.PinnedDocument(s, target)
	if err != nil {
		return err
	}
	from, err := prettyJSON(codec.MustMarshal(pinned))
	if err != nil {
		return err
	}
	to, err := prettyJSON(doc.Encode())
	if err != nil {
		return err
	}
	_, err = rn.put(&state.Amendment{Schema: state.AmendmentSchema, Target: target, Amends: old, Document: doc,
		Diff: diff.Unified(target+"@"+old.Short(), target+"@"+newRef.Short(), from, to), By: "scenario", CreatedAt: state.FormatTime(rn.clock.t)})
	return err
}

func prettyJSON(b []byte) ([]byte, error) {
	var out bytes.Buffer
	if err := json.Indent(&out, b, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

func (rn *runner) resolve(st Step) error {
	sel, verdict := st.Approve, "approve"
	if st.Deny != "" {
		sel, verdict = st.Deny, "deny"
	}
	s, _, err := runstore.ReadState(rn.dir)
	if err != nil {
		return err
	}
	if target, ok := strings.CutPrefix(sel, "amendment:"); ok {
		for _, p := range s.Run.PendingAmendments {
			if p.Target == target {
				return rn.answer(st, p.Ref, p.CycleSeq, verdict)
			}
		}
		rn.failf("%s %q: no pending amendment of the %s", verdict, sel, target)
		return nil
	}
	for _, p := range s.Run.PendingApprovals {
		if p.Resolution == nil && (sel == "first" || p.CheckID == sel) {
			return rn.answer(st, p.Ref, p.CycleSeq, verdict)
		}
	}
	rn.failf("%s %q: no matching pending approval", verdict, sel)
	return nil
}

// answer queues a person's answer to the request ref made in cycle seq.
func (rn *runner) answer(st Step, ref codec.Ref, seq int64, verdict string) error {
	by := st.By
	if by == "" {
		by = "scenario"
	}
	_, err := rn.put(&state.Approval{Schema: state.ApprovalSchema, ActionRef: ref, RequestCycle: seq, Verdict: verdict, By: by,
		CreatedAt: state.FormatTime(rn.clock.t)})
	return err
}

func (rn *runner) check(i string, e StepExpect) {
	s, _, err := runstore.ReadState(rn.dir)
	if err != nil {
		rn.failf("%s: read state: %v", i, err)
		return
	}
	r := s.Run
	if e.Disposition != "" && r.LoopDisposition.String() != e.Disposition {
		rn.failf("%s: disposition %s, want %s (reasons %v)", i, r.LoopDisposition, e.Disposition, r.ReasonCodes)
	}
	if e.Status != "" && string(r.Status) != e.Status {
		rn.failf("%s: status %s, want %s", i, r.Status, e.Status)
	}
	if e.CycleSeq != nil && r.CycleSeq != *e.CycleSeq {
		rn.failf("%s: cycle %d, want %d", i, r.CycleSeq, *e.CycleSeq)
	}
	if e.ProviderError != nil && rn.providerErr != *e.ProviderError {
		rn.failf("%s: provider error %t, want %t", i, rn.providerErr, *e.ProviderError)
	}
	if e.Executed != nil && rn.last.CyclesExecuted != *e.Executed {
		rn.failf("%s: %d cycles executed, want %d", i, rn.last.CyclesExecuted, *e.Executed)
	}
	if e.Dispositions != nil {
		got := rn.lastDispositions
		if !slices.Equal(got, e.Dispositions) {
			rn.failf("%s: dispositions %v, want %v", i, got, e.Dispositions)
		}
	}
	if e.PendingApprovals != nil {
		n := 0
		for _, p := range r.PendingApprovals {
			if p.Resolution == nil {
				n++
			}
		}
		if n != *e.PendingApprovals {
			rn.failf("%s: %d pending approvals, want %d", i, n, *e.PendingApprovals)
		}
	}
	if e.LiveCommitments != nil && len(s.Commitments.Commitments) != *e.LiveCommitments {
		rn.failf("%s: %d live commitments, want %d", i, len(s.Commitments.Commitments), *e.LiveCommitments)
	}
	for _, code := range e.Reasons {
		if !slices.Contains(r.ReasonCodes, code) {
			rn.failf("%s: reason codes %v lack %s", i, r.ReasonCodes, code)
		}
	}
	for p, want := range e.WorldContains {
		b, err := os.ReadFile(filepath.Join(rn.dir, "sandbox", "world", filepath.FromSlash(p)))
		if err != nil || !strings.Contains(string(b), want) {
			rn.failf("%s: world file %s does not contain %q", i, p, want)
		}
	}
	for p, bad := range e.WorldLacks {
		b, _ := os.ReadFile(filepath.Join(rn.dir, "sandbox", "world", filepath.FromSlash(p)))
		if strings.Contains(string(b), bad) {
			rn.failf("%s: world file %s contains %q", i, p, bad)
		}
	}
	if e.Recovery != nil {
		if rn.lastR == nil {
			rn.failf("%s: no recovery report", i)
		} else {
			if e.Recovery.Classification != "" && rn.lastR.Classification != e.Recovery.Classification {
				rn.failf("%s: recovery classification %s, want %s", i, rn.lastR.Classification, e.Recovery.Classification)
			}
			if e.Recovery.ActionsReused != nil && rn.lastR.ActionsReused != *e.Recovery.ActionsReused {
				rn.failf("%s: actions reused %d, want %d", i, rn.lastR.ActionsReused, *e.Recovery.ActionsReused)
			}
			if e.Recovery.ActionsApplied != nil && rn.lastR.ActionsApplied != *e.Recovery.ActionsApplied {
				rn.failf("%s: actions applied %d, want %d", i, rn.lastR.ActionsApplied, *e.Recovery.ActionsApplied)
			}
		}
	}
	if e.ActiveLenses != nil {
		var got []string
		for _, a := range s.Strategy.Active {
			got = append(got, a.SourceRef+"@"+a.SourceVersion)
		}
		slices.Sort(got)
		want := slices.Sorted(slices.Values(e.ActiveLenses))
		if !slices.Equal(slices.Compact(got), want) {
			rn.failf("%s: active lens sources %v, want %v", i, got, want)
		}
	}
	if e.KnowledgeCandidates != nil {
		n := 0
		for _, c := range s.Strategy.Candidates {
			if c.Status != "candidate" {
				rn.failf("%s: knowledge update %s has status %q: only candidates are allowed", i, c.Update.SourceRef, c.Status)
			}
			n++
		}
		if n != *e.KnowledgeCandidates {
			rn.failf("%s: %d knowledge candidates, want %d", i, n, *e.KnowledgeCandidates)
		}
	}
	for _, kind := range e.Protected {
		if !slices.ContainsFunc(s.Context.Protected, func(p memory.Protected) bool { return p.Kind == kind }) {
			rn.failf("%s: working memory holds no protected %s ref (protected: %v)", i, kind, s.Context.Protected)
		}
	}
	if e.SummaryBlocks != nil && len(s.Context.Blocks) < *e.SummaryBlocks {
		rn.failf("%s: %d summary blocks in working memory, want at least %d", i, len(s.Context.Blocks), *e.SummaryBlocks)
	}
	for _, name := range slices.Sorted(maps.Keys(e.Budget)) {
		if got, _ := budgetUse(r.Budget, name); got != e.Budget[name] {
			rn.failf("%s: %s budget used %d, want %d", i, name, got, e.Budget[name])
		}
	}
	for _, wc := range e.WorldCount {
		b, _ := os.ReadFile(filepath.Join(rn.dir, "sandbox", "world", filepath.FromSlash(wc.Path)))
		if n := strings.Count(string(b), wc.Text); n != wc.Count {
			rn.failf("%s: world file %s has %d occurrence(s) of %q, want %d", i, wc.Path, n, wc.Text, wc.Count)
		}
	}
	if len(e.Events) > 0 {
		counts, err := EventCounts(rn.dir)
		if err != nil {
			rn.failf("%s: %v", i, err)
		}
		for typ, want := range e.Events {
			if counts[typ] != want {
				rn.failf("%s: %d %s events, want %d", i, counts[typ], typ, want)
			}
		}
	}
}

// finish computes the outcome from the state directory and checks the
// scenario's final expectations.
func (rn *runner) finish() error {
	s, _, err := runstore.ReadState(rn.dir)
	if err != nil {
		return err
	}
	h, err := Analyse(rn.dir)
	if err != nil {
		return err
	}
	res := rn.res
	res.Cycles = s.Run.CycleSeq
	res.FinalDisposition = s.Run.LoopDisposition.String()
	res.DispositionCounts = h.Dispositions
	res.TransitionClasses = h.Classes
	res.LedgerEvents = h.Events
	res.Fingerprints = Fingerprints{History: h.History, World: h.World, RunState: string(s.Run.Fingerprint)}
	res.Facts["duplicate_effects"] = float64(h.DuplicateEffects)
	e := rn.sc.Script.Expect
	if e.Cycles != nil && res.Cycles != *e.Cycles {
		rn.failf("final: %d cycles, want %d", res.Cycles, *e.Cycles)
	}
	if e.FinalDisposition != "" && res.FinalDisposition != e.FinalDisposition {
		rn.failf("final: disposition %s, want %s", res.FinalDisposition, e.FinalDisposition)
	}
	for _, d := range slices.Sorted(maps.Keys(e.Dispositions)) {
		if res.DispositionCounts[d] != e.Dispositions[d] {
			rn.failf("final: %d %s cycles, want %d", res.DispositionCounts[d], d, e.Dispositions[d])
		}
	}
	for _, c := range e.TransitionClasses {
		if res.TransitionClasses[c] == 0 {
			rn.failf("final: transition class %s never happened", c)
		}
	}
	for _, c := range e.AbsentClasses {
		if res.TransitionClasses[c] != 0 {
			rn.failf("final: transition class %s happened %d time(s), want none", c, res.TransitionClasses[c])
		}
	}
	if h.DuplicateEffects > 0 {
		rn.failf("final: %d idempotency key(s) applied more than once", h.DuplicateEffects)
	}
	fp := e.Fingerprints
	for _, c := range []struct{ name, want, got string }{{"history", fp.History, res.Fingerprints.History},
		{"world", fp.World, res.Fingerprints.World}, {"run_state", fp.RunState, res.Fingerprints.RunState}} {
		if c.want != "" && c.want != c.got {
			rn.failf("final: %s fingerprint %s, frozen reference %s", c.name, c.got, c.want)
		}
	}
	return nil
}

// History is what a scan of a run's ledger and world shows.
type History struct {
	Events           int64
	Dispositions     map[string]int
	Classes          map[string]int
	History          string
	World            string
	DuplicateEffects int
	CycleRefs        []codec.Ref
}

// Analyse scans a state directory's ledger and world.
func Analyse(dir string) (*History, error) {
	hist, err := runstore.OpenHistory(dir)
	if err != nil {
		return nil, err
	}
	h := &History{Dispositions: map[string]int{}, Classes: map[string]int{}}
	reviewed := map[int64]bool{}
	selected := map[int64]bool{}
	fitness := map[codec.Ref]bool{}
	committedKeys := map[string]int{}
	err = hist.Scan(func(r event.Record) error {
		h.Events++
		ev := r.Event
		c := h.Classes
		switch {
		case ev.Type == event.CycleCompleted:
			h.CycleRefs = append(h.CycleRefs, ev.Object.Ref)
			var rec state.CycleRecord
			if err := ev.Object.Decode(&rec); err != nil {
				return err
			}
			h.Dispositions[rec.LoopDisposition.String()]++
			if rec.IdempotencyKey != "" && rec.WorldOutcomeRef != "" {
				committedKeys[rec.IdempotencyKey]++
			}
		case ev.Type == event.ReviewRequested:
			c["strategic_review"]++
			reviewed[ev.CycleSeq] = true
		case ev.Type == event.AgendaSelected:
			c["agenda_selected"]++
			selected[ev.CycleSeq] = true
		case ev.Type == event.AgendaEmpty:
			c["no_agenda"]++
		case ev.Type == event.LoopIdled:
			c["idle"]++
		case ev.Type == event.LoopSlept:
			c["sleep"]++
		case ev.Type == event.LoopWoke:
			c["wake"]++
		case ev.Type == event.LoopDeferred || ev.Type == event.WorkDeferred:
			c["deferred"]++
		case ev.Type == event.LoopWaitingApproval:
			c["wait_approval"]++
		case isCommitmentChange(ev.Type):
			c["commitment_transition"]++
			c[strings.Replace(string(ev.Type), ".", "_", 1)]++
		case ev.Type == event.PromotionRecorded:
			c["promote_to_commitment"]++
		case ev.Type == event.CompactionCompleted:
			c["context_compaction"]++
		case ev.Type == event.DecisionRecorded:
			c["governance_boundary"]++
			for _, rc := range ev.Reasons {
				c["governance_reason_"+rc]++
			}
			var d governance.Decision
			if ev.Object != nil && ev.Object.Decode(&d) == nil {
				c["governance_"+strings.ToLower(d.Verdict.String())]++
				if d.Verdict == governance.Defer {
					c["deferred"]++ // the deferral itself, whatever the policy makes of it
				}
			}
		case ev.Type == event.ActionCommitted:
			c["sandbox_action"]++
		case ev.Type == event.EvaluationRecorded:
			c["validation"]++
		case ev.Type == event.RecoveryCompleted:
			c["crash_recovery"]++
			var rec kernel.Recovery
			if ev.Object != nil && ev.Object.Decode(&rec) == nil && rec.ActionsReused > 0 {
				c["idempotent_outcome_recovery"] += rec.ActionsReused
			}
		case ev.Type == event.ApprovalRequested:
			c["approval_requested"]++
		case ev.Type == event.ApprovalResolved:
			c["approval_resolved"]++
		case ev.Type == event.RunStopped:
			c["stop"]++
			for _, rc := range ev.Reasons {
				c["stop_"+rc]++
			}
		case ev.Type == event.RunFaulted:
			c["fault"]++
		case ev.Type == event.KnowledgeCandidate:
			c["knowledge_candidate"]++
		case ev.Type == event.GuardTripped:
			c["loop_guard"]++
		case ev.Type == event.Transition || ev.Type == event.Transitions:
			ts, _ := controller.TransitionsOf(ev)
			for _, t := range ts {
				c["controller_"+t.NextState.String()]++
				c["role_"+t.ActorRole.String()+"_leaves_"+t.PreviousState.String()]++
				c["authority_"+string(t.AuthorityUsed)]++
			}
		case ev.Type == event.TensionAssessed:
			var t controller.TensionReport
			if ev.Object != nil && ev.Object.Decode(&t) == nil {
				for _, cl := range t.Classes {
					c["tension_"+cl]++
				}
			}
		case ev.Type == event.FitnessFixed:
			c["fitness_fixed"]++
			fitness[ev.Object.Ref] = true
		case ev.Type == event.ViolationRefused:
			var v controller.Violation
			if ev.Object != nil && ev.Object.Decode(&v) == nil {
				c["violation_"+v.Rule]++
			}
		case ev.Type == event.CandidateForged:
			c["candidate_forged"]++
		case ev.Type == event.WakeRejected:
			for _, rc := range ev.Reasons {
				c["wake_rejected_"+rc]++
			}
		case ev.Type == event.WakeCoalesced:
			c["wake_coalesced"]++
		case ev.Type == event.ActionBlocked:
			for _, rc := range ev.Reasons {
				c["control_missing_"+rc]++
			}
		}
		if ev.Type == event.EvaluationRecorded && ev.Object != nil {
			var e event.Evaluation
			if ev.Object.Decode(&e) == nil {
				c["evaluation_"+e.Result]++
				// The fitness contract an evaluation judges by must be one
				// fixed before it, never a new one.
				if fitness[e.FitnessRef] {
					c["fitness_stable"]++
				} else {
					c["fitness_changed"]++
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for cyc := range selected {
		if !reviewed[cyc] {
			h.Classes["direct_path"]++
		}
	}
	for _, n := range committedKeys {
		if n > 1 {
			h.DuplicateEffects++
		}
	}
	sum := sha256.New()
	for _, r := range h.CycleRefs {
		sum.Write([]byte(r))
		sum.Write([]byte{'\n'})
	}
	h.History = "sha256:" + hex.EncodeToString(sum.Sum(nil))
	h.World, err = TreeFingerprint(filepath.Join(dir, "sandbox", "world"))
	return h, err
}

// EventCounts counts ledger events by type.
func EventCounts(dir string) (map[string]int, error) {
	hist, err := runstore.OpenHistory(dir)
	if err != nil {
		return nil, err
	}
	out := map[string]int{}
	err = hist.Scan(func(r event.Record) error { out[string(r.Event.Type)]++; return nil })
	return out, err
}

// TreeFingerprint is the SHA-256 over every file (path and bytes) below
// root, in path order.
func TreeFingerprint(root string) (string, error) {
	var paths []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			paths = append(paths, p)
		}
		return nil
	})
	if err != nil {
		return "", err
	}
	sort.Strings(paths)
	h := sha256.New()
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return "", err
		}
		rel, _ := filepath.Rel(root, p)
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(b))
		h.Write(b)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

func removeAll(p string) error { return os.RemoveAll(p) }

func isCommitmentChange(k event.Kind) bool {
	_, ok := k.CommitmentVerb()
	return ok
}
