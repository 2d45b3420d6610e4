package mutant

// Catalogue lists every mutant of the suite, in the order they run. The
// first nine are the mutations issue 17 names; the rest break, each, the
// property one of the other gates guards.
func Catalogue() []Mutant {
	return []Mutant{
		{
			Name:   "wake-authority",
			Breaks: "the kernel accepts a wake signal whose payload claims authority, and inbox.CheckPayload accepts every payload",
			Quick:  true,
			Edits: []Edit{
				{File: "internal/kernel/inbox.go",
					Find:     "\t\t\tcase inbox.CheckPayload(w.Payload) != nil:\n",
					Replace:  "\t\t\tcase false && inbox.CheckPayload(w.Payload) != nil:\n",
					Switched: "\t\t\tcase !MUTANT_ON && inbox.CheckPayload(w.Payload) != nil:\n"},
				insertAfter("internal/inbox/inbox.go", "func CheckPayload(v *codec.Value) error {\n", "\treturn nil\n"),
			},
		},
		{
			Name:   "matched-any",
			Breaks: "commitment.Matched says every wake condition holds",
			Quick:  true,
			Edits:  []Edit{insertAfter("internal/commitment/commitment.go", "func Matched(w Condition, ctx Context) bool {\n", "\treturn true\n")},
		},
		{
			Name:   "decide-execute",
			Breaks: "governance.Decide returns EXECUTE for every action",
			Quick:  true,
			Edits: []Edit{insertAfter("internal/governance/decide.go",
				"\trefuse := func(code string) Decision { d.Verdict, d.ReasonCodes = Refuse, []string{code}; return d }\n",
				"\td.Verdict, d.ReasonCodes = Execute, []string{\"contract_allows\"}\n\treturn d\n")},
		},
		{
			Name:   "budget-cycles-only",
			Breaks: "only the cycle hard budget is enforced: actions, cognitive operations, compactions and the wall clock are ignored",
			Quick:  true,
			Edits: []Edit{
				{File: "internal/kernel/schedule.go",
					Find:     "\treturn l.Overrun(used, cost)\n",
					Replace:  "\treturn name == \"cycles\" && l.Overrun(used, cost)\n",
					Switched: "\treturn (!MUTANT_ON || name == \"cycles\") && l.Overrun(used, cost)\n"},
				{File: "internal/kernel/schedule.go",
					Find:     "\tfor _, n := range []string{\"wall_clock_seconds\", \"cycles\"} {\n",
					Replace:  "\tfor _, n := range []string{\"cycles\"} {\n",
					Switched: "\tfor _, n := range map[bool][]string{false: {\"wall_clock_seconds\", \"cycles\"}, true: {\"cycles\"}}[MUTANT_ON] {\n"},
				{File: "internal/kernel/control.go",
					Find:     "\tif l := c.Budgets.WallClockSeconds; l.Hard > 0 {\n",
					Replace:  "\tif l := c.Budgets.WallClockSeconds; false && l.Hard > 0 {\n",
					Switched: "\tif l := c.Budgets.WallClockSeconds; !MUTANT_ON && l.Hard > 0 {\n"},
			},
		},
		{
			Name:   "idempotency-reapply",
			Breaks: "committing an effect whose key already has an outcome, or whose target already shows it, applies it again",
			Quick:  true,
			Edits: []Edit{
				{File: "internal/sandbox/prepare.go",
					Find:     "\tif prior != nil {\n\t\treturn *prior, true, nil\n\t}\n\tif a.OnSet() {\n",
					Replace:  "\tif prior != nil && false {\n\t\treturn *prior, true, nil\n\t}\n\tif a.OnSet() {\n",
					Switched: "\tif prior != nil && !MUTANT_ON {\n\t\treturn *prior, true, nil\n\t}\n\tif a.OnSet() {\n"},
				insertAfter("internal/sandbox/prepare.go", "\tcase in.Planned.AfterSHA256:\n",
					"\t\tp, err := w.plan(ctx, key, h, a, target)\n\t\tif err != nil {\n\t\t\treturn world.Outcome{}, false, err\n\t\t}\n"+
						"\t\tif p.write {\n\t\t\tif err := w.applyPlan(target, &p); err != nil {\n\t\t\t\treturn world.Outcome{}, false, err\n\t\t\t}\n\t\t}\n"+
						"\t\treturn p.out, false, nil\n"),
			},
		},
		{
			Name:   "self-approval",
			Breaks: "the non-self-approval guard lets the loop's own roles approve its plans",
			Quick:  true,
			Edits: []Edit{
				insertAfter("internal/kernel/inbox.go", "func loopRole(by string) (controller.Role, bool) {\n", "\treturn controller.RoleInvalid, false\n"),
				insertAfter("internal/controller/guard.go", "func (g *Guard) ApprovePlan(plan codec.Ref, approver Role) error {\n", "\treturn nil\n"),
			},
		},
		{
			Name:   "expired-wake-consumed",
			Breaks: "a wake signal past its expiry is accepted",
			Quick:  true,
			Edits: []Edit{{File: "internal/kernel/inbox.go",
				Find:     "\t\t\tcase expired(w.ExpiresAt, b.now):\n",
				Replace:  "\t\t\tcase false && expired(w.ExpiresAt, b.now):\n",
				Switched: "\t\t\tcase !MUTANT_ON && expired(w.ExpiresAt, b.now):\n"}},
		},
		{
			Name:   "compaction-drops-protected",
			Breaks: "a compaction drops the protected refs of live commitments, and its own check does not notice",
			Quick:  true,
			Edits: []Edit{
				{File: "internal/memory/memory.go",
					Find:     "\t\tProtected: normalise(b.Protected), LastCompactionCycle: cycleSeq}\n",
					Replace:  "\t\tProtected: slices.DeleteFunc(normalise(b.Protected), func(p Protected) bool { return p.Kind == \"commitment\" }), LastCompactionCycle: cycleSeq}\n",
					Switched: "\t\tProtected: slices.DeleteFunc(normalise(b.Protected), func(p Protected) bool { return MUTANT_ON && p.Kind == \"commitment\" }), LastCompactionCycle: cycleSeq}\n"},
				{File: "internal/memory/memory.go",
					Find:     "\tfor _, pr := range must {\n",
					Replace:  "\tfor _, pr := range out.Protected {\n",
					Switched: "\tfor _, pr := range map[bool][]Protected{false: must, true: out.Protected}[MUTANT_ON] {\n"},
			},
		},
		{
			Name:   "budget-after-spend",
			Breaks: "the hard budget of cognitive operations is checked before a program runs without its cost, so the program is paid for after the fact",
			Quick:  true,
			Edits: []Edit{{File: "internal/kernel/think.go",
				Find:     "\tif b.exhausts(\"cognitive_operations\", int64(cognition.Cost(t.prog))) {\n",
				Replace:  "\tif b.exhausts(\"cognitive_operations\", 1) {\n",
				Switched: "\tif b.exhausts(\"cognitive_operations\", map[bool]int64{false: int64(cognition.Cost(t.prog)), true: 1}[MUTANT_ON]) {\n"}},
		},
		{
			Name:   "no-agenda-continue",
			Breaks: "a cycle without agenda ends CONTINUE: the busy loop",
			Edits: []Edit{{File: "internal/kernel/cycle.go",
				Find:     "\t\t\tb.conclude(b.resting(), append(b.restingReasons(), \"no_material_tension\"))\n",
				Replace:  "\t\t\tb.conclude(state.Continue, append(b.restingReasons(), \"no_material_tension\"))\n",
				Switched: "\t\t\tb.conclude(map[bool]state.Disposition{false: b.resting(), true: state.Continue}[MUTANT_ON], append(b.restingReasons(), \"no_material_tension\"))\n"}},
		},
		{
			Name:   "review-always",
			Breaks: "every cycle runs a strategic review, tension or not",
			Edits: []Edit{insertAfter("internal/strategy/strategy.go",
				"\ttr := Trigger{Schema: TriggerSchema, CycleSeq: t.CycleSeq, Decision: NoReview, TensionFingerprint: t.Fingerprint()}\n",
				"\ttr.Decision, tr.Reasons = Review, []string{\"forced\"}\n\treturn tr\n")},
		},
		{
			Name:   "overlay-ignored",
			Breaks: "a routing overlay never changes the order of a cognitive program",
			Edits: []Edit{{File: "internal/cognition/cognition.go",
				Find:     "\tif r.CritiqueFirst {\n",
				Replace:  "\tif false && r.CritiqueFirst {\n",
				Switched: "\tif !MUTANT_ON && r.CritiqueFirst {\n"}},
		},
		{
			Name:   "recovery-skips-effect",
			Breaks: "recovery of a cycle interrupted before its effect never carries the effect out",
			Edits: []Edit{{File: "internal/kernel/recover.go",
				Find:     "\tif p.Effect != nil && st.Blocked == \"\" && st.Outcome == nil {\n",
				Replace:  "\tif false && p.Effect != nil && st.Blocked == \"\" && st.Outcome == nil {\n",
				Switched: "\tif !MUTANT_ON && p.Effect != nil && st.Blocked == \"\" && st.Outcome == nil {\n"}},
		},
		{
			Name:   "unlinked-events",
			Breaks: "a cycle's events are not linked to their causal parents",
			Edits: []Edit{{File: "internal/kernel/record.go",
				Find:     "\tif b.last != \"\" {\n\t\tev.Parents = []codec.Ref{b.last}\n",
				Replace:  "\tif false && b.last != \"\" {\n\t\tev.Parents = []codec.Ref{b.last}\n",
				Switched: "\tif !MUTANT_ON && b.last != \"\" {\n\t\tev.Parents = []codec.Ref{b.last}\n"}},
		},
		{
			Name:   "compaction-forgets",
			Breaks: "a compaction does not record which cycles it summarised",
			Edits: []Edit{{File: "internal/memory/memory.go",
				Find:     "Trigger: trigger, Summarised: slices.Clone(fold),\n",
				Replace:  "Trigger: trigger, Summarised: []Unit{},\n",
				Switched: "Trigger: trigger, Summarised: map[bool][]Unit{false: slices.Clone(fold), true: {}}[MUTANT_ON],\n"}},
		},
		{
			Name:   "stop-ignored",
			Breaks: "a stop request is consumed and ignored",
			Edits: []Edit{{File: "internal/kernel/cycle.go",
				Find:     "\tif b.stop != nil {\n\t\tb.block(controller.Operator, stopReason(*b.stop))\n",
				Replace:  "\tif false && b.stop != nil {\n\t\tb.block(controller.Operator, stopReason(*b.stop))\n",
				Switched: "\tif !MUTANT_ON && b.stop != nil {\n\t\tb.block(controller.Operator, stopReason(*b.stop))\n"}},
		},
		{
			Name:   "provider-failure-ignored",
			Breaks: "a failed observation is recorded, then the cycle runs anyway on the last observation",
			Edits: []Edit{{File: "internal/kernel/driver.go",
				Find: "\tif errors.Is(err, ErrProvider) {\n\t\treturn Summary{}, d.providerFailed(err)\n\t}\n",
				Replace: "\tif errors.Is(err, ErrProvider) {\n\t\t_ = d.providerFailed(err)\n" +
					"\t\tin, err = Inputs{Now: d.Clock.Now().UTC().Truncate(time.Second), Observation: d.state.Environment, InboxPresent: []string{}}, nil\n\t}\n",
				Switched: "\tif errors.Is(err, ErrProvider) && MUTANT_ON {\n\t\t_ = d.providerFailed(err)\n" +
					"\t\tin, err = Inputs{Now: d.Clock.Now().UTC().Truncate(time.Second), Observation: d.state.Environment, InboxPresent: []string{}}, nil\n\t}\n" +
					"\tif errors.Is(err, ErrProvider) {\n\t\treturn Summary{}, d.providerFailed(err)\n\t}\n"}},
		},
		{
			Name:   "knowledge-promoted",
			Breaks: "a changed knowledge source is promoted on arrival instead of held as a candidate",
			Edits: []Edit{{File: "internal/strategy/strategy.go",
				Find:     "ReceivedAt: now, Status: \"candidate\"})\n",
				Replace:  "ReceivedAt: now, Status: \"promoted\"})\n",
				Switched: "ReceivedAt: now, Status: map[bool]string{false: \"candidate\", true: \"promoted\"}[MUTANT_ON]})\n"}},
		},
		{
			Name:   "hidden-reasoning",
			Breaks: "the self-dialogue keeps private reasoning in the record",
			Edits: []Edit{
				{File: "internal/cognition/cognition.go",
					Find:     "\t// Operations counts the cognitive operations spent.\n",
					Replace:  "\tThoughts string `json:\"thoughts,omitempty\"`\n\t// Operations counts the cognitive operations spent.\n",
					Switched: "\tThoughts string `json:\"thoughts,omitempty\"`\n\t// Operations counts the cognitive operations spent.\n"},
				insertAfter("internal/cognition/cognition.go",
					"\td := Dialogue{Schema: DialogueSchema, ProgramRef: programRef, Turns: []Turn{}, Result: \"no_action\"}\n",
					"\td.Thoughts = \"private musings about \" + sit.Check.ID\n"),
			},
		},
		{
			Name:   "deadline-ignored",
			Breaks: "a standing commitment's deadline is never judged: the promise stays live past it",
			Edits: []Edit{{File: "internal/commitment/standing.go",
				Find:     "\tcase c.Deadline != \"\" && deadlinePassed(c.Deadline, ctx.Now):\n",
				Replace:  "\tcase false && c.Deadline != \"\" && deadlinePassed(c.Deadline, ctx.Now):\n",
				Switched: "\tcase !MUTANT_ON && c.Deadline != \"\" && deadlinePassed(c.Deadline, ctx.Now):\n"}},
		},
		{
			Name:   "deadline-moved-by-any",
			Breaks: "any external_event signal with a deadline in its payload moves a standing commitment's deadline, not only the one its declaration names",
			Edits: []Edit{{File: "internal/commitment/standing.go",
				Find:     "\t\tif w.Source != \"external_event\" || w.Ref != c.MovedBy {\n",
				Replace:  "\t\tif w.Source != \"external_event\" {\n",
				Switched: "\t\tif w.Source != \"external_event\" || (!MUTANT_ON && w.Ref != c.MovedBy) {\n"}},
		},
		{
			Name:   "rule-refuses-allowed",
			Breaks: "the contract's rule matcher passes over allow rules: what the contract allows is refused as governed by no rule",
			Edits: []Edit{{File: "internal/governance/contract.go",
				Find:     "\t\t\tif !overlaps {\n\t\t\t\tcontinue\n\t\t\t}\n",
				Replace:  "\t\t\tif !overlaps || r.Effect == Allow {\n\t\t\t\tcontinue\n\t\t\t}\n",
				Switched: "\t\t\tif !overlaps || (MUTANT_ON && r.Effect == Allow) {\n\t\t\t\tcontinue\n\t\t\t}\n"}},
		},
		{
			Name:   "contract-expiry-ignored",
			Breaks: "a contract that has lapsed or been revoked is taken to hold: the run works on under it",
			Edits:  []Edit{insertAfter("internal/governance/contract.go", "func (c *Contract) Invalidated(now time.Time) string {\n", "\treturn \"\"\n")},
		},
		{
			Name:   "terminal-failure-ignored",
			Breaks: "policy.stop_on_terminal_failure is never acted on: a run whose every remaining item is set aside idles for ever",
			Edits: []Edit{{File: "internal/kernel/finish.go",
				Find:     "\tif pol.StopOnTerminalFailure && b.terminalFailure() {\n",
				Replace:  "\tif false && pol.StopOnTerminalFailure && b.terminalFailure() {\n",
				Switched: "\tif !MUTANT_ON && pol.StopOnTerminalFailure && b.terminalFailure() {\n"}},
		},
		{
			Name:   "wake-ignores-deadline",
			Breaks: "a resting run's next wake leaves out its commitments' deadlines and periods: it sleeps past them",
			Edits: []Edit{{File: "internal/kernel/schedule.go",
				Find:     "\tearliest(b.s.Commitments.Due(b.now), \"commitment_deadline_due\")\n",
				Replace:  "",
				Switched: "\tif !MUTANT_ON {\n\t\tearliest(b.s.Commitments.Due(b.now), \"commitment_deadline_due\")\n\t}\n"}},
		},
	}
}

// insertAfter is an edit that adds statements right after anchor (a line
// that opens a block); switched, they run only when the mutant is on.
func insertAfter(file, anchor, stmts string) Edit {
	return Edit{File: file, Find: anchor, Replace: anchor + stmts, Switched: anchor + "\tif MUTANT_ON {\n" + stmts + "\t}\n"}
}
