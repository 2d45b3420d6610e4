package kernel

import (
	"cmp"
	"slices"
	"strings"
	"time"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/controller"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/inbox"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/strategy"
)

// The inbox stage: wake signals, answers and stop requests a cycle
// consumes, and knowledge updates it receives, before anything else.

// intake is the part of a cycle's builder that holds what the cycle took
// from its inbox (consumeInbox, answer.go, amend.go): the wake signals it
// accepted, the answers it consumed, a stop request, whether it resumed a
// FAULTED run or accepted an amendment, and whether a signal asked for
// compaction.
type intake struct {
	s *EngineState
	*recorder
	signals    []state.WakeSignal
	approvals  []state.Approval
	stop       *state.StopRequest
	resumed    bool
	amended    bool // an amendment was accepted (amend.go)
	compactReq bool
}

// consumeInbox processes the new inbox items: wake signals (validated,
// coalesced by dedup key), approval resolutions and stop requests.
func (b *builder) consumeInbox(in Inputs) {
	rs := &b.s.Run
	present := map[string]bool{}
	for _, id := range in.InboxPresent {
		present[id] = true
	}
	rs.InboxSeen = slices.DeleteFunc(rs.InboxSeen, func(id string) bool { return !present[id] })
	rs.DedupKeys = slices.DeleteFunc(rs.DedupKeys, func(k state.DedupKey) bool { return expired(k.Expires, b.now) })
	checks := b.checkAnswers(in.Inbox)
	replaced := replacedAnswers(in.Inbox, rs.AnswersConsumed, rs.Format(), checks)
	for _, it := range byPriority(in.Inbox, rs.Format()) {
		ref := codec.NewRef(inboxKind(it.Kind), it.Body)
		refs := map[string]codec.Ref{"item": ref}
		if !slices.Contains(rs.InboxSeen, it.ID) {
			rs.InboxSeen = append(rs.InboxSeen, it.ID)
		}
		switch it.Kind {
		case inbox.KindWake:
			w := *it.Wake
			switch {
			case !inbox.ValidSource(w.Source):
				b.emit(event.WakeRejected, nil, refs, "unknown_source")
			case expired(w.ExpiresAt, b.now):
				b.emit(event.WakeRejected, nil, refs, "expired")
			case w.CausalParent == "":
				b.emit(event.WakeRejected, nil, refs, "no_causal_parent")
			case inbox.CheckPayload(w.Payload) != nil:
				b.emit(event.WakeRejected, nil, refs, "carries_authority")
				b.refused(b.guard.Raise(b.coords, controller.Coordinates{Authority: governance.AuthExternalAction}, controller.Observer, ref))
			case slices.ContainsFunc(rs.DedupKeys, func(k state.DedupKey) bool { return k.Key == w.DedupKey }):
				b.emit(event.WakeCoalesced, nil, refs, "duplicate_dedup_key")
			default:
				rs.DedupKeys = append(rs.DedupKeys, state.DedupKey{Key: w.DedupKey, Expires: w.ExpiresAt})
				b.signals = append(b.signals, w)
				b.emit(event.WakeAccepted, nil, refs, "source_"+w.Source)
				if w.Source == "budget_replenished" {
					b.replenish(w, refs)
				}
				if w.Source == "manual_resume" && rs.Status == state.RunFaulted {
					rs.Status = state.RunRunning
					b.resumed = true
					b.emit(event.RunResumed, nil, refs, "manual_resume")
				}
				if w.Source == "scheduled_tick" || w.Source == "manual_resume" {
					b.compactReq = b.compactReq || w.Reason == "compact"
				}
			}
		case inbox.KindApproval:
			b.answer(it, refs, replaced, checks)
		case inbox.KindAmendment:
			b.proposeAmendment(it, refs)
		case inbox.KindStop:
			st := *it.Stop
			b.stop = &st
			b.emit(event.StopRequested, nil, refs, stopReason(st))
		}
	}
	slices.Sort(rs.InboxSeen)
	slices.SortFunc(rs.DedupKeys, func(a, c state.DedupKey) int { return strings.Compare(a.Key, c.Key) })
}

// byPriority is the order a cycle consumes its inbox items in: wake
// signals by descending priority, so that of two signals with one dedup
// key the more urgent is accepted and the other coalesced into it, and
// otherwise the order the inbox listed them in. Format-1 runs consumed in
// listed order only, and replay must derive them as they were.
func byPriority(items []inbox.Item, f state.LedgerFormat) []inbox.Item {
	if f == state.LedgerFormat1 {
		return items
	}
	prio := func(it inbox.Item) int {
		if it.Kind == inbox.KindWake && it.Wake != nil {
			return it.Wake.Priority
		}
		return 0
	}
	out := slices.Clone(items)
	slices.SortStableFunc(out, func(a, c inbox.Item) int { return cmp.Compare(prio(c), prio(a)) })
	return out
}

// loopRole reports whether an approver names one of the loop's own roles.
func loopRole(by string) (controller.Role, bool) {
	var r controller.Role
	if r.UnmarshalText([]byte(strings.ToLower(strings.TrimSpace(by)))) != nil || r == controller.Operator {
		return controller.RoleInvalid, false
	}
	return r, true
}

func stopReason(st state.StopRequest) string {
	if st.Kill {
		return "operator_kill_switch"
	}
	return "explicit_stop"
}

func expired(at string, now time.Time) bool {
	if at == "" {
		return false
	}
	t, err := state.ParseTime(at)
	return err == nil && !now.Before(t)
}

func (b *intake) receiveKnowledge(updates []strategy.KnowledgeUpdate) {
	var fresh []strategy.KnowledgeUpdate
	b.s.Strategy, fresh = strategy.Receive(b.s.Strategy, updates, b.at)
	for _, u := range fresh {
		_, ref := b.object("know", u)
		b.emit(event.KnowledgeCandidate, nil, map[string]codec.Ref{"update": ref}, "knowledge_source_changed", "candidate_not_promoted")
	}
}
