package kernel

import (
	"errors"
	"fmt"
	"slices"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/state"
)

// Divergence is the first place where the current code derives something
// other than what the ledger recorded.
type Divergence struct {
	Cycle    int64      `json:"cycle"`
	Seq      int64      `json:"seq"`
	Event    event.Kind `json:"event_type"`
	Field    string     `json:"field"`
	Recorded string     `json:"recorded"`
	Derived  string     `json:"derived"`
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("cycle %d, seq %d (%s): field %s recorded %s, derived %s", d.Cycle, d.Seq, d.Event, d.Field, d.Recorded, d.Derived)
}

// ReplayReport says how far a replay got.
type ReplayReport struct {
	OK             bool        `json:"ok"`
	CyclesReplayed int64       `json:"cycles_replayed"`
	CyclesVerified int64       `json:"cycles_verified"`
	FromCycle      int64       `json:"from_cycle"`
	Divergence     *Divergence `json:"divergence,omitempty"`
	// Incomplete is the cycle left unfinished at the end of the ledger (it
	// is recovery's to finish, not replay's).
	Incomplete int64 `json:"incomplete_cycle,omitempty"`
}

// Replay re-derives every recorded cycle from its recorded inputs with the
// current code and compares the derived events with the recorded ones,
// byte for byte (by ref). It reads provider outputs (observations, clock
// readings, inbox items, knowledge updates, world outcomes) only from the
// ledger and never touches the world or the checkpoint: Replay is not
// re-execution. Cycles before from are replayed to rebuild the state but
// not reported. The state it rebuilds has the built-in catalog of
// operations (EngineState.Operations): a run whose world carried out more
// is verified by the driver that opens it with its catalog.
func Replay(recs []event.Record, from int64) (ReplayReport, error) {
	rep := ReplayReport{OK: true, FromCycle: from}
	i := slices.IndexFunc(recs, func(r event.Record) bool { return r.Event.Type == event.CycleStarted })
	if i < 0 {
		i = len(recs)
	}
	s, err := replayInit(recs[:i])
	if err != nil {
		return rep, err
	}
	rest := recs[i:]
	for len(rest) > 0 {
		// One cycle: from its cycle.started to its cycle.completed.
		j := slices.IndexFunc(rest, func(r event.Record) bool { return r.Event.Type == event.CycleCompleted })
		var group, oob []event.Record
		for _, r := range rest[:max(j+1, 0)] {
			if !r.Event.Type.OutOfBand() {
				group = append(group, r)
			} else {
				oob = append(oob, r)
			}
		}
		if j < 0 {
			for _, r := range rest {
				if !r.Event.Type.OutOfBand() {
					rep.Incomplete = r.Event.CycleSeq
					break
				}
			}
			break
		}
		rest = rest[j+1:]
		// Events before the cycle's (last) cycle.started: a fault recorded
		// outside any cycle is applied; the partial events of a cycle that
		// recovery abandoned (and derived again) are skipped.
		k := lastIndex(group, event.CycleStarted)
		if k < 0 {
			return rep, fmt.Errorf("cycle %d completes without starting", group[len(group)-1].Event.CycleSeq)
		}
		if st, ok, err := replayFault(s, group[:k]); err != nil {
			return rep, err
		} else if ok {
			s = st
		}
		group = group[k:]
		next, div, err := replayCycle(s, group, oob)
		if err != nil {
			return rep, err
		}
		rep.CyclesReplayed++
		cycle := group[0].Event.CycleSeq
		if cycle >= from {
			rep.CyclesVerified++
			if div != nil {
				rep.OK, rep.Divergence = false, div
				return rep, nil
			}
		} else if div != nil {
			return rep, fmt.Errorf("cycle %d, before the verified range, diverges: %s", cycle, div.Field)
		}
		s = next
	}
	return rep, nil
}

func lastIndex(recs []event.Record, typ event.Kind) int {
	for i := len(recs) - 1; i >= 0; i-- {
		if recs[i].Event.Type == typ {
			return i
		}
	}
	return -1
}

// replayFault applies a fault recorded outside any cycle.
func replayFault(s EngineState, group []event.Record) (EngineState, bool, error) {
	for _, r := range group {
		if r.Event.Type == event.RunFaulted {
			st, _, err := Fault(s, parseAt(r.Event.At), r.Event.Reasons, FaultCause(r.Event))
			return st, true, err
		}
	}
	return s, false, nil
}

// replayInit rebuilds the initial state from the pinned documents and the
// first observation, and checks that Init derives the recorded events.
func replayInit(recs []event.Record) (EngineState, error) {
	var bs Bootstrap
	var found int
	for _, r := range recs {
		o := r.Event.Object
		var err error
		switch r.Event.Type {
		case event.GoalPinned:
			err, found = o.Decode(&bs.Goal), found+1
		case event.ContractPinned:
			err, found = o.Decode(&bs.Contract), found+1
		case event.SpecPinned:
			err, found = o.Decode(&bs.Spec), found+1
		case event.Observed:
			err, found = o.Decode(&bs.Observation), found+1
		case event.RunStarted:
			bs.RunID, bs.Now, found = r.Event.RunID, parseAt(r.Event.At), found+1
			bs.LedgerFormat = state.LedgerFormat1
			for _, f := range []state.LedgerFormat{state.LedgerFormat2, state.LedgerFormat3} {
				if slices.Contains(r.Event.Reasons, formatReason(f)) {
					bs.LedgerFormat = f
				}
			}
		}
		if err != nil {
			return EngineState{}, fmt.Errorf("replay init: %w", err)
		}
	}
	if found != 5 {
		return EngineState{}, fmt.Errorf("replay init: the ledger does not begin with a run's pinned goal, contract, environment and start")
	}
	s, evs, err := Init(bs)
	if err != nil {
		return EngineState{}, err
	}
	var ours []event.Record
	for _, r := range recs {
		if !r.Event.Type.OutOfBand() {
			ours = append(ours, r)
		}
	}
	if div := compare(ours, evs); div != nil {
		return EngineState{}, fmt.Errorf("replay init diverges at seq %d (%s): field %s", div.Seq, div.Event, div.Field)
	}
	return s, nil
}

// rederived is a recorded cycle derived again from its recorded inputs,
// up to its governance boundary: the one derivation both replay (which
// compares) and recovery (which also finishes an interrupted cycle) use.
type rederived struct {
	in Inputs
	p  *Pending
	// matched is how much of the derived first batch the ledger holds (a
	// prefix: a crash can only cut the end off).
	matched int
	// rest are the cycle's records after its first batch.
	rest []event.Record
	// st is what the records say about the effect (an outcome, a
	// readback, a missing control, the intent's rollback bundle).
	st Settlement
}

// errUnrecorded: a cycle's inputs or the proposer's reply are not all in
// the ledger, so its first batch never became durable (and no decision,
// let alone an effect, can rest on it).
var errUnrecorded = errors.New("the cycle's first batch is not all recorded")

// rederive derives a recorded cycle again. recs are the cycle's own records
// (out of band ones left out), all every record of it; the out-of-band ones
// carry its intent or missing control. A recorded event that differs from
// the derived one is a *Divergence.
func rederive(s EngineState, recs, all []event.Record) (*rederived, error) {
	in, _, err := inputsFromRecords(&s, recs)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errUnrecorded, err)
	}
	p, err := Begin(s, in)
	if err != nil {
		return nil, &Divergence{Cycle: recs[0].Event.CycleSeq, Seq: recs[0].Seq, Event: recs[0].Event.Type, Field: "(eligibility)", Derived: err.Error()}
	}
	p, answered, err := answerRecorded(p, recs)
	if err != nil {
		return nil, fmt.Errorf("cycle %d: %w", recs[0].Event.CycleSeq, err)
	}
	if !answered {
		return nil, fmt.Errorf("%w: the cycle asked the proposer, and the ledger records no reply", errUnrecorded)
	}
	p, tried, err := triedRecorded(p, recs)
	if err != nil {
		return nil, fmt.Errorf("cycle %d: %w", recs[0].Event.CycleSeq, err)
	}
	if !tried {
		return nil, fmt.Errorf("%w: the cycle stopped to try its command fix, and the ledger records no trial", errUnrecorded)
	}
	if div := compare(recs, p.Events); div != nil {
		return nil, div
	}
	n := min(len(p.Events), len(recs))
	r := &rederived{in: in, p: p, matched: n, rest: recs[n:]}
	r.st = recordedSettlement(all, r.rest, p)
	return r, nil
}

// replayCycle derives one recorded cycle and compares. oob holds the
// cycle's out-of-band records: an effect's intent or missing control.
func replayCycle(s EngineState, recs, oob []event.Record) (EngineState, *Divergence, error) {
	r, err := rederive(s, recs, oob)
	var div *Divergence
	switch {
	case errors.As(err, &div):
		return s, div, nil
	case errors.Is(err, errUnrecorded):
		return s, &Divergence{Cycle: recs[0].Event.CycleSeq, Seq: recs[0].Seq, Event: recs[0].Event.Type, Field: "(inputs)", Derived: err.Error()}, nil
	case err != nil:
		return s, nil, fmt.Errorf("replay cycle %d: %w", recs[0].Event.CycleSeq, err)
	}
	st := r.st
	st.Uncertain = r.p.Effect != nil && st.Outcome == nil && st.Blocked == ""
	res, err := Finish(r.p, st)
	if err != nil {
		return s, nil, err
	}
	if div := compare(r.rest, res.Events); div != nil {
		return s, div, nil
	}
	rest := r.rest
	if len(rest) != len(res.Events) {
		r := recs[len(recs)-1]
		return s, &Divergence{Cycle: r.Event.CycleSeq, Seq: r.Seq, Event: r.Event.Type, Field: "(event count)",
			Recorded: fmt.Sprint(len(rest)), Derived: fmt.Sprint(len(res.Events))}, nil
	}
	return res.State, nil, nil
}

// compare finds the first recorded event that differs from the derived
// one, and the first differing field in it.
func compare(recorded []event.Record, derived []event.Event) *Divergence {
	for i := range min(len(recorded), len(derived)) {
		b, ref, err := derived[i].Encode()
		if err != nil || ref == recorded[i].Ref {
			continue
		}
		rb, _, _ := recorded[i].Event.Encode()
		rv, _ := codec.ParseCanonical(rb)
		dv, _ := codec.ParseCanonical(b)
		path, a, c := firstDifference(rv, dv, "")
		return &Divergence{Cycle: recorded[i].Event.CycleSeq, Seq: recorded[i].Seq, Event: recorded[i].Event.Type, Field: path, Recorded: a, Derived: c}
	}
	return nil
}

// firstDifference walks two JSON values in key order and returns the path
// of the first difference with both sides rendered.
func firstDifference(a, b codec.Value, path string) (string, string, string) {
	if a.Kind != b.Kind || (a.Kind != codec.KindObject && a.Kind != codec.KindArray) {
		ae, be := string(a.Encode()), string(b.Encode())
		if ae != be {
			return orRoot(path), clip(ae), clip(be)
		}
		return "", "", ""
	}
	if a.Kind == codec.KindArray {
		for i := range max(len(a.Arr), len(b.Arr)) {
			p := fmt.Sprintf("%s[%d]", path, i)
			if i >= len(a.Arr) || i >= len(b.Arr) {
				return p, fmt.Sprint(len(a.Arr)) + " items", fmt.Sprint(len(b.Arr)) + " items"
			}
			if q, x, y := firstDifference(a.Arr[i], b.Arr[i], p); q != "" {
				return q, x, y
			}
		}
		return "", "", ""
	}
	keys := map[string]bool{}
	for _, m := range a.Obj {
		keys[m.Key] = true
	}
	for _, m := range b.Obj {
		keys[m.Key] = true
	}
	for _, k := range sortedKeys(keys) {
		av, aok := member(a, k)
		bv, bok := member(b, k)
		p := k
		if path != "" {
			p = path + "." + k
		}
		if aok != bok {
			return p, present(aok), present(bok)
		}
		if q, x, y := firstDifference(av, bv, p); q != "" {
			return q, x, y
		}
	}
	return "", "", ""
}

func member(v codec.Value, k string) (codec.Value, bool) {
	for _, m := range v.Obj {
		if m.Key == k {
			return m.Val, true
		}
	}
	return codec.Value{}, false
}

func present(ok bool) string {
	if ok {
		return "(present)"
	}
	return "(absent)"
}

func orRoot(p string) string {
	if p == "" {
		return "(value)"
	}
	return p
}

func clip(s string) string {
	if len(s) > 120 {
		return s[:117] + "..."
	}
	return s
}

func sortedKeys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
