package audit

import (
	"fmt"
	"io"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/state"
)

// WriteText writes the report for a person: every line is a fact from the
// ledger, with the ref it came from.
func (r *Report) WriteText(w io.Writer) error {
	p := func(format string, args ...any) { fmt.Fprintf(w, format+"\n", args...) }
	rec := r.Record
	p("cycle %d of run %s (%s)", r.Cycle, r.RunID, r.CycleRef)
	p("started     %s, ended %s (%s)", rec.StartedAt, rec.LoopDisposition, strings.Join(rec.ReasonCodes, ", "))
	if d := rec.GovernanceDisposition; d != 0 && d != rec.LoopDisposition {
		// docs/controller.md, "ESCALATE and DEFER with other work".
		p("  seed      §10.3 maps the governance decision to %s; the disposition above is the loop's own choice", d)
	}
	p("intent      goal %s (%s)", r.Contract.GoalID, r.Contract.GoalRef)
	p("inputs      observation %s, %d inbox item(s), %d knowledge update(s), clock %s", r.Inputs.ObservationRef, len(r.Inputs.InboxItems), len(r.Inputs.Knowledge), r.Inputs.At)
	for _, it := range r.InboxItems {
		p("  inbox     %s %s by %s%s", it.ID, it.What, it.By, reasonSuffix(it.Reason))
	}
	for _, a := range r.Answers {
		p("  answer    %s (%s)%s", a.Event, strings.Join(a.Reasons, ", "), signerText(a.Signer))
	}
	if a := r.Agenda; a != nil {
		if a.Selected != nil {
			p("agenda      selected %s (%s) because %s; %d candidate(s)", a.Selected.ItemID, a.Selected.Source, strings.Join(a.ReasonCodes, ", "), len(a.Candidates))
		} else {
			p("agenda      no agenda (%s)", strings.Join(a.ReasonCodes, ", "))
		}
		for _, x := range a.Excluded {
			p("  excluded  %s: %s", x.ItemID, x.Reason)
		}
	}
	if s := r.Strategy.Trigger; s != nil {
		p("strategy    %s (%s)", s.Decision, strings.Join(s.Reasons, ", "))
	}
	for _, sv := range r.Strategy.Sources {
		p("  lens      %s from %s version %s", sv.LensID, sv.SourceRef, sv.SourceVersion)
	}
	if ov := r.Strategy.Overlay; ov != nil {
		p("  overlay   critique_first=%t skip_failed_fixes=%v", ov.CritiqueFirst, ov.SkipFailedFixes)
	}
	if pr := r.Program; pr != nil {
		var ops []string
		for _, o := range pr.Steps {
			ops = append(ops, string(o))
		}
		p("cognition   program %s: %s", r.Record.CognitiveProgramRef, strings.Join(ops, " > "))
	}
	if d := r.Dialogue; d != nil {
		p("  dialogue  %s %s%s", d.Result, d.Affordance, reasonSuffix(d.Reason))
		for _, t := range d.Turns {
			p("    %-9s %-20s %s", t.Role, t.Op, t.Claim)
		}
	}
	if a := r.Action; a != nil {
		p("action      %s %s for check %s (%s)", a.Operation, a.Target, a.CheckID, r.ActionRef)
	}
	if t := r.Trial; t != nil {
		p("tried       before governance, in a throwaway work tree on %s (tree %s): nothing committed or pushed", t.Head, t.Tree)
		if len(t.Changed) > 0 {
			p("  changed   %s", strings.Join(t.Changed, ", "))
		} else {
			p("  changed   nothing")
		}
		if len(t.Outside) > 0 {
			p("  outside   touches: %s", strings.Join(t.Outside, ", "))
		}
		if t.Failure != "" {
			p("  failed    %s", t.Failure)
		}
	}
	if in := r.Intent; in != nil {
		p("intent      %s %s, recorded before the effect: before %s, after %s", in.Planned.Operation, in.Planned.Target, orDash(string(in.Planned.BeforeSHA256)), orDash(string(in.Planned.AfterSHA256)))
		if g := in.Git; g != nil {
			p("  on head   %s (tree %s)", g.Commit, g.Tree)
		}
		if ap := in.Approved; ap != nil {
			p("  approved  tree %s, tried on %s: committed exactly, or nothing", ap.Tree, ap.Head)
			if len(ap.Changed) > 0 {
				p("  approved  changes %s", strings.Join(ap.Changed, ", "))
			}
		}
		if in.Diff != "" {
			p("  change    as recorded with the intent:")
			for _, l := range strings.Split(strings.TrimSuffix(in.Diff, "\n"), "\n") {
				p("    %s", l)
			}
		}
	}
	if d := r.Decision; d != nil {
		p("decision    %s by %s (%s): %s", d.Verdict, d.Actor, r.DecisionRef, strings.Join(d.ReasonCodes, ", "))
		if len(d.MissingEvidence) > 0 {
			p("  missing   evidence %s", strings.Join(d.MissingEvidence, ", "))
		}
		if d.ApprovalID != "" {
			p("  approval  %s", d.ApprovalID)
		}
	}
	if rc := r.Receipt; rc != nil {
		p("  receipt   decided %s, evidence %s", rc.DecidedAt, strings.Join(rc.EvidenceRefs, ", "))
	}
	c := r.Contract
	if r.Pinned != nil {
		p("pinned      goal %s, contract %s, environment %s (amended during the run; acr log lists amendment.accepted)",
			r.Pinned["goal"], r.Pinned["contract"], r.Pinned["environment_spec"])
	}
	if c.ID == "" {
		p("contract    %s (amended), authority %s", c.Ref, c.AuthorityRef)
	} else {
		p("contract    %s (%s), authority %s mode %s (%s), coordinates %s/%s/%s", c.ID, c.Ref, c.Authority.ID, c.Authority.Mode, c.AuthorityRef,
			c.Coordinates.Readiness, c.Coordinates.Autonomy, c.Coordinates.CognitiveDepth)
	}
	if c.Rule != nil {
		p("  rule      %s %v: %s%s", c.Rule.Operation, c.Rule.Paths, c.Rule.Effect, reasonSuffix(c.Rule.Reason))
	}
	if o := r.Outcome; o != nil {
		what := string(o.Operation) + " " + o.Target
		if a := r.Action; a != nil && a.OnSet() {
			what = a.Describe()
		}
		p("outcome     %s: %s, before %s after %s", what, o.Status, orDash(string(o.BeforeSHA256)), orDash(string(o.AfterSHA256)))
		if o.Detail != "" {
			p("  detail    %s", o.Detail)
		}
		if cr := o.Command; cr != nil {
			p("  command   %s: exit %d after %d ms, stdout %d bytes, stderr %d bytes", strings.Join(cr.Argv, " "), cr.ExitCode, cr.DurationMS, cr.StdoutBytes, cr.StderrBytes)
			for _, line := range outputLines(cr.Stdout, cr.Stderr, 6) {
				p("    | %s", line)
			}
		}
		if len(o.Changed) > 0 {
			p("  changed   %s", strings.Join(o.Changed, ", "))
		}
		if len(o.Outside) > 0 {
			p("  outside   %s (not covered by the command's touches)", strings.Join(o.Outside, ", "))
		}
		if g := o.Git; g != nil {
			if o.Status == "committed" {
				p("  commit    %s (tree %s)", g.Commit, g.Tree)
			} else {
				p("  branch at %s (tree %s)", g.Commit, g.Tree)
			}
		}
		p("  key       %s", o.Key)
	} else if r.IdempotencyKey != "" {
		p("outcome     none recorded; idempotency key %s", r.IdempotencyKey)
	}
	if e := r.Evaluation; e != nil {
		p("evaluation  %s by %s: expected %s; observed %s", e.Result, e.Actor, e.Expected, e.Observed)
	}
	if inc := r.Incident; inc != nil {
		p("uncertain   %s: key %s; acr resolve %s --ran or --not-ran answers it", r.IncidentRef, inc.Key, r.IncidentRef)
		for _, e := range inc.Evidence {
			p("  evidence  %s", e)
		}
		p("  why       %s", inc.Reason)
	}
	if res := r.Resolution; res != nil {
		what := map[string]string{state.VerdictRan: "ran: recorded as done, nothing run", state.VerdictNotRan: "did not run: the item goes back to the agenda"}[res.Verdict]
		p("resolved    %s by %s: the effect %s (key %s)%s", res.Incident, res.By, what, res.Key, reasonSuffix(res.Reason))
	}
	for _, cc := range r.Commitments {
		c := cc.Commitment
		p("commitment  %s %s v%d %s%s", cc.Event, c.ID, c.Version, c.Status, reasonSuffix(cc.Reason))
		if c.Standing != "" {
			line := fmt.Sprintf("  standing  %s on %s", c.Standing, strings.Join(c.Scope, ", "))
			if c.NextDue != "" {
				line += ", next look " + c.NextDue
			}
			if c.Deadline != "" {
				line += ", deadline " + c.Deadline
			}
			p("%s", line)
		}
	}
	if cp := r.Compaction; cp != nil {
		p("compaction  summarised at cycle %d into block %s (cycles %d-%d, %s), %s", cp.Cycle, cp.BlockID, cp.From, cp.To, cp.Trigger, cp.EventRef)
	} else {
		p("compaction  not summarised yet: the cycle is still raw in working memory")
	}
	for _, s := range r.Recovery {
		p("recovery    seq %d %s (%s)", s.Seq, s.Type, strings.Join(s.Reasons, ", "))
	}
	writeController(p, r.Controller)
	p("causal chain")
	for _, s := range r.Chain {
		p("  %6d  %-36s %s", s.Seq, s.Type, s.Ref.Short())
	}
	return nil
}

func reasonSuffix(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// textOrDash is s, or "-" when it is empty (orDash is for refs).
func textOrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return codec.Ref(s).Short()
}

// WriteDOT writes the cycle's causal graph for Graphviz: events in order,
// linked to their causal parents, with the objects they carry.
func (r *Report) WriteDOT(w io.Writer) error {
	fmt.Fprintf(w, "digraph cycle_%d {\n  rankdir=TB;\n  node [shape=box, fontname=\"monospace\", fontsize=10];\n", r.Cycle)
	fmt.Fprintf(w, "  label=%q;\n", fmt.Sprintf("cycle %d of %s: %s", r.Cycle, r.RunID, r.Record.LoopDisposition))
	objects := map[codec.Ref]bool{}
	for _, s := range r.Chain {
		fmt.Fprintf(w, "  %q [label=%q];\n", s.Ref.Short(), fmt.Sprintf("%d %s", s.Seq, s.Type))
		for _, par := range s.Parents {
			if par.Kind() == "evt" {
				fmt.Fprintf(w, "  %q -> %q;\n", par.Short(), s.Ref.Short())
			}
		}
		if s.ObjectRef != "" {
			if !objects[s.ObjectRef] {
				fmt.Fprintf(w, "  %q [shape=ellipse, label=%q];\n", s.ObjectRef.Short(), s.ObjectRef.Short())
				objects[s.ObjectRef] = true
			}
			fmt.Fprintf(w, "  %q -> %q [style=dashed, arrowhead=none];\n", s.Ref.Short(), s.ObjectRef.Short())
		}
	}
	_, err := fmt.Fprintln(w, "}")
	return err
}

// writeController prints the controller's view: coordinates, tension,
// fitness, every transition with its actor role, and what was refused.
func writeController(p func(string, ...any), c Controller) {
	if d := c.Declaration; d != nil {
		co := d.Coordinates
		p("controller  %s: readiness %s, autonomy %s, authority %s, depth %s (max D%d this cycle)", d.CycleID, co.Readiness, co.Autonomy,
			co.Authority, co.CognitiveDepth, d.MaxDepth)
	}
	if x := c.Context; x != nil {
		writeContext(p, *x)
	}
	if t := c.Tension; t != nil {
		var subjects []string
		for _, s := range t.Sources {
			subjects = append(subjects, s.Class+":"+s.Subject)
		}
		p("  tension   %s%s", strings.Join(t.Classes, ", "), reasonSuffix(strings.Join(subjects, ", ")))
	}
	if f := c.Fitness; f != nil {
		p("  fitness   %s fixed before the action by %s: %s", c.FitnessRef, f.ProposedBy, strings.Join(f.Criteria, ", "))
	}
	if rb := c.Readback; rb != nil {
		p("  readback  %s %s by observer: passing [%s], failing [%s]", rb.Target, orDash(string(rb.SHA256)), strings.Join(rb.Passing, " "), strings.Join(rb.Failing, " "))
	}
	for _, t := range c.Transitions {
		line := fmt.Sprintf("  %2d %-14s -> %-24s %-16s %s", t.Seq, t.PreviousState, t.NextState, t.ActorRole, t.Reason)
		if t.AuthorityUsed != "" && t.AuthorityUsed != "none" {
			line += " [authority " + string(t.AuthorityUsed) + "]"
		}
		p("%s", strings.TrimRight(line, " "))
	}
	if l := c.Learning; l != nil {
		changes := "no durable change"
		if len(l.Changes) > 0 {
			changes = strings.Join(l.Changes, "; ")
		}
		p("  learning  %s: %s (%s)", l.ResultantStatus, changes, l.MemoryClass)
	}
	if cd := c.Candidate; cd != nil {
		p("  candidate %s (%s, enabled %t) for %s: %s", cd.ID, cd.Kind, cd.Enabled, cd.Gap, cd.Spec)
	}
	if cs := c.Cascade; cs != nil && len(cs.Surfaces) > 0 {
		p("  cascade   surfaces %s, recipients %s", strings.Join(cs.Surfaces, ", "), textOrDash(strings.Join(cs.Recipients, ", ")))
	}
	for _, v := range c.Violations {
		p("  refused   %s: %s by %s on %s", v.Rule, v.Detail, v.Actor, v.Artifact)
	}
}

// writeContext prints the cycle's context: each source and its
// authority (with amendments a person has not answered), the trust state
// and its concerns, and what the run can do.
func writeContext(p func(string, ...any), x controller.Context) {
	var srcs []string
	for _, s := range x.Sources {
		line := s.Name
		if s.Ref != "" {
			line += " " + s.Ref.Short()
		}
		line += " (" + s.Authority
		for _, a := range s.Pending {
			line += ", amendment " + a.Short() + " pending"
		}
		srcs = append(srcs, line+")")
	}
	p("  sources   %s", strings.Join(srcs, ", "))
	if len(x.Trust.Concerns) == 0 {
		p("  trust     %s: nothing in doubt", x.Trust.Level)
	} else {
		var cs []string
		for _, c := range x.Trust.Concerns {
			cs = append(cs, fmt.Sprintf("%s %s on %s%s", c.Level, c.Reason, strings.Join(c.Paths, " "), reasonSuffix(c.Detail)))
		}
		p("  trust     %s: %s", x.Trust.Level, strings.Join(cs, "; "))
	}
	var caps []string
	for _, c := range x.Capabilities {
		what := c.Kind
		switch {
		case c.Kind == controller.CapabilityFix:
			what = c.CheckID + "/" + c.Fix + " " + string(c.Operation)
		case c.Operation != "":
			what += " " + string(c.Operation)
		}
		caps = append(caps, what+" ("+c.Mode+")")
	}
	p("  can       %s", textOrDash(strings.Join(caps, ", ")))
}

// outputLines is the first n lines a command printed, stdout then stderr.
func outputLines(stdout, stderr string, n int) []string {
	var out []string
	for _, text := range []string{stdout, stderr} {
		for _, line := range strings.Split(strings.TrimRight(text, "\n"), "\n") {
			if line != "" && len(out) < n {
				out = append(out, line)
			}
		}
	}
	return out
}

// signerText says who signed an answer, as its signature shows.
func signerText(s *state.Signer) string {
	switch {
	case s == nil:
		return ""
	case s.ID == "":
		return fmt.Sprintf(" signed with %s %s, a key the contract does not list", s.KeyType, s.Fingerprint)
	}
	return fmt.Sprintf(" signed by %s (%s %s)", s.ID, s.KeyType, s.Fingerprint)
}
