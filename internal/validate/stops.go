package validate

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// Gate U holds the loop to seed §15's stop sources: every one of them
// stops a reference scenario, each stop is recorded as
// persistent.run.stopped (a fault as persistent.run.faulted) with its
// reason, the validator re-derives from the recorded inputs why the run
// had to stop where it can read that (the contract in force, the goal in
// force, the cycle's observation, a stop request), and no cycle works
// after a stop or under a contract that no longer holds.

// stopSource is one of seed §15's stop sources and the reason codes a
// recorded stop names it by.
type stopSource struct {
	name  string
	match func(reasons []string) bool
}

func stopSources() []stopSource {
	has := func(codes ...string) func([]string) bool {
		return func(rs []string) bool {
			return slices.ContainsFunc(codes, func(c string) bool { return slices.Contains(rs, c) })
		}
	}
	return []stopSource{
		{"explicit stop signal", has("explicit_stop", "operator_kill_switch")},
		{"max_cycles reached", has("budget_cycles")},
		{"goal terminal success", has("goal_satisfied")},
		{"goal terminal failure under policy", has("goal_terminal_failure")},
		{"contract invalidated", has("contract_invalidated")},
		{"hard budget exhausted", func(rs []string) bool {
			return slices.Contains(rs, "budget_limit") && slices.ContainsFunc(rs, func(r string) bool {
				return strings.HasPrefix(r, "budget_") && r != "budget_limit" && r != "budget_cycles"
			})
		}},
		{"fatal unrecoverable fault", nil}, // persistent.run.faulted
	}
}

// stopContractView is the part of a contract in force the stop rules
// read.
type stopContractView struct {
	ValidUntil string `json:"valid_until"`
	Revoked    bool   `json:"revoked"`
	Policy     struct {
		StopOnTerminalFailure bool `json:"stop_on_terminal_failure"`
	} `json:"policy"`
}

// invalidated is the validator's own reading of whether a contract holds
// at a time: "" when it does, else the reason code of why not.
func (c stopContractView) invalidated(at time.Time) string {
	switch {
	case c.Revoked:
		return "contract_revoked"
	case c.ValidUntil != "":
		t, err := time.Parse(time.RFC3339, c.ValidUntil)
		if err != nil || !at.Before(t) {
			return "contract_expired"
		}
	}
	return ""
}

// stopGoalView is the part of a goal in force the stop rules read.
type stopGoalView struct {
	Success struct {
		AllChecksPass bool     `json:"all_checks_pass"`
		Checks        []string `json:"checks"`
	} `json:"success"`
	StopOnSuccess bool `json:"stop_on_success"`
}

// holds reports whether the goal's success condition holds in an
// observation, by the validator's own reading.
func (g stopGoalView) holds(o observationView) bool {
	for _, c := range o.Checks {
		if g.Success.AllChecksPass && c.Status != "pass" {
			return false
		}
	}
	for _, id := range g.Success.Checks {
		if !o.passes(id) {
			return false
		}
	}
	return true
}

func gateU(ev *Evidence) Gate {
	var bad []string
	seen := map[string]string{}
	stops := 0
	for _, name := range sortedNames(ev) {
		run := ev.Runs[name]
		objs := run.objects()
		f, err := run.inForce()
		if err != nil {
			bad = append(bad, fmt.Sprintf("%s: %v", name, err))
			continue
		}
		stopped := false
		for _, c := range run.cycles() {
			m := c.manifest()
			at, _ := time.Parse(time.RFC3339, m.At)
			var obs observationView
			if o, ok := objs[m.ObservationRef]; ok {
				_ = decodeView(o, &obs)
			}
			worked := c.has(event.SemanticEncoded)
			var contract stopContractView
			var goal stopGoalView
			_ = json.Unmarshal(f.contractDoc, &contract)
			_ = json.Unmarshal(f.goalDoc, &goal)
			if worked && stopped {
				bad = append(bad, fmt.Sprintf("%s cycle %d worked after the run stopped", name, c.seq))
			}
			if why := contract.invalidated(at); worked && why != "" {
				bad = append(bad, fmt.Sprintf("%s cycle %d worked under a contract that no longer held (%s)", name, c.seq, why))
			}
			stopReq := false
			for _, r := range c.events {
				f.follow(r)
				switch r.Event.Type {
				case event.InboxConsumed:
					stopReq = stopReq || (r.Event.Object != nil && r.Event.Object.Ref.Kind() == "stopreq")
				case event.AmendmentAccepted:
					if slices.Contains(r.Event.Reasons, "run_resumed") {
						stopped = false
					}
				case event.RunStopped:
					stops++
					if c.record.LoopDisposition != state.Stopped {
						bad = append(bad, fmt.Sprintf("%s cycle %d: persistent.run.stopped, yet the cycle record says %s", name, c.seq, c.record.LoopDisposition))
					}
					if _, ok := c.findCheckpoint(); !ok {
						bad = append(bad, fmt.Sprintf("%s cycle %d: a stop without the cycle's checkpoint record", name, c.seq))
					}
					rs := r.Event.Reasons
					matched := false
					for _, s := range stopSources() {
						if s.match == nil || !s.match(rs) {
							continue
						}
						matched = true
						seen[s.name] = firstOf(seen[s.name], fmt.Sprintf("%s cycle %d", name, c.seq))
					}
					if !matched && !slices.Contains(rs, "run_stopped") {
						bad = append(bad, fmt.Sprintf("%s cycle %d stopped for %v, which is none of seed §15's stop sources", name, c.seq, rs))
					}
					if why := justifyStop(rs, contract, goal, obs, at, stopReq || m.KillSwitch); why != "" {
						bad = append(bad, fmt.Sprintf("%s cycle %d: %s", name, c.seq, why))
					}
				}
			}
			if c.record.LoopDisposition == state.Stopped {
				stopped = true
			}
		}
		for _, r := range run.Records {
			// A fault may be recorded outside any cycle (provider failures
			// past the policy's limit).
			if r.Event.Type == event.RunFaulted {
				seen["fatal unrecoverable fault"] = firstOf(seen["fatal unrecoverable fault"], fmt.Sprintf("%s cycle %d", name, r.Event.CycleSeq))
			}
		}
	}
	if len(bad) > 0 {
		return fail(bad...)
	}
	var found, missing []string
	for _, s := range stopSources() {
		if where, ok := seen[s.name]; ok {
			found = append(found, s.name+" ("+where+")")
		} else {
			missing = append(missing, s.name)
		}
	}
	if len(missing) > 0 {
		return fail("no reference scenario stops on: " + strings.Join(missing, ", "))
	}
	return pass(fmt.Sprintf("all %d of seed §15's stop sources stop a reference scenario: %s", len(found), strings.Join(found, "; ")),
		fmt.Sprintf("%d stops, each recorded as persistent.run.stopped with its reason in a STOPPED cycle with its checkpoint record; the contract, goal and observation recorded justify every stop on the contract, the goal or a stop request", stops),
		"no cycle worked after a stop (until an accepted amendment resumed the run) or under a contract that had lapsed or been revoked")
}

// firstOf keeps the first place a source was seen.
func firstOf(first, now string) string {
	if first != "" {
		return first
	}
	return now
}

// justifyStop says why a recorded stop is not what the recorded inputs
// call for, or "": a stop on the contract needs the contract in force not
// to hold at the cycle's clock, for the reason it names; one on the goal's
// success needs the goal to ask for it and to hold in the observation; one
// on the goal's failure needs the policy to ask for it and the goal not to
// hold; an explicit stop needs a stop request or the kill switch. Budget
// stops are gate M's; a stop that repeats an earlier one (a stopped run
// taking amendments) is not judged again.
func justifyStop(reasons []string, c stopContractView, g stopGoalView, obs observationView, at time.Time, stopRequested bool) string {
	switch {
	case slices.Contains(reasons, "run_stopped"):
		return ""
	case slices.Contains(reasons, "contract_invalidated"):
		why := c.invalidated(at)
		if why == "" || !slices.Contains(reasons, why) {
			return fmt.Sprintf("stopped on the contract (%v), but the contract in force at %s reads %q", reasons, at.Format(time.RFC3339), why)
		}
	case slices.Contains(reasons, "goal_satisfied"):
		if !g.StopOnSuccess || !g.holds(obs) {
			return fmt.Sprintf("stopped as the goal held, but stop_on_success is %t and the observation %s it", g.StopOnSuccess, map[bool]string{true: "satisfies", false: "does not satisfy"}[g.holds(obs)])
		}
	case slices.Contains(reasons, "goal_terminal_failure"):
		if !c.Policy.StopOnTerminalFailure || g.holds(obs) {
			return fmt.Sprintf("stopped as the goal failed for good, but stop_on_terminal_failure is %t and the goal %s in the observation", c.Policy.StopOnTerminalFailure, map[bool]string{true: "holds", false: "does not hold"}[g.holds(obs)])
		}
	case slices.Contains(reasons, "explicit_stop") || slices.Contains(reasons, "operator_kill_switch"):
		if !stopRequested {
			return "stopped on an explicit stop, with no stop request consumed and no kill switch"
		}
	}
	return ""
}
