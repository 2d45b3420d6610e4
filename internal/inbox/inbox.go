// Package inbox is how the outside world talks to a run without touching
// it: the items `acr wake`, `acr approve`, `acr deny`, `acr amend` and
// `acr stop` leave for the next cycle (wake signals, answers, amendments,
// stop requests), sealed with an
// id derived from their content, decoded strictly, and checked (a wake
// payload never carries authority; an answer or amendment to a run whose
// contract lists approvers proves its author with an SSH signature over
// its Statement, checked by CheckSignature). A cycle consumes the items and records
// each one in the ledger; the run state remembers consumed ids so that an
// item left behind by a crash is never consumed twice.
//
// The package is pure: where items are kept is the storage side's business
// (dirstore.Inbox keeps them as files in the state directory).
package inbox

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/state"
)

// Kind says what an item asks for.
type Kind string

// The item kinds.
const (
	KindWake     Kind = "wake"
	KindApproval Kind = "approval"
	KindStop     Kind = "stop"
	// KindAmendment proposes to replace the run's pinned contract, goal
	// or environment (acr amend); a person accepts it with acr approve.
	KindAmendment Kind = "amendment"
)

// Item is one inbox entry, decoded and checked.
type Item struct {
	ID       string
	Kind     Kind
	Wake     *state.WakeSignal
	Approval *state.Approval
	Stop     *state.StopRequest
	// Amendment is set for KindAmendment.
	Amendment *state.Amendment
	// Body is the item's canonical bytes, as recorded in the ledger.
	Body []byte
}

// CreatedAt returns the item's creation time string.
func (it Item) CreatedAt() string {
	switch it.Kind {
	case KindWake:
		return it.Wake.CreatedAt
	case KindApproval:
		return it.Approval.CreatedAt
	case KindAmendment:
		return it.Amendment.CreatedAt
	default:
		return it.Stop.CreatedAt
	}
}

// Rejected is an inbox file that could not be decoded or verified.
type Rejected struct {
	Name   string
	Reason string
}

// Seal assigns the content-derived id to an item (a *state.WakeSignal,
// *state.Approval, *state.StopRequest or *state.Amendment) and returns its canonical bytes.
func Seal(v any) (string, []byte, error) {
	kind, setID, err := describe(v)
	if err != nil {
		return "", nil, err
	}
	setID("")
	b, err := codec.Marshal(v)
	if err != nil {
		return "", nil, err
	}
	id := string(kind) + "-" + codec.Digest(b)[:24]
	setID(id)
	b, err = codec.Marshal(v)
	if err != nil {
		return "", nil, err
	}
	return id, b, nil
}

func describe(v any) (Kind, func(string), error) {
	switch x := v.(type) {
	case *state.WakeSignal:
		return KindWake, func(id string) { x.ID = id }, nil
	case *state.Approval:
		return KindApproval, func(id string) { x.ID = id }, nil
	case *state.StopRequest:
		return KindStop, func(id string) { x.ID = id }, nil
	case *state.Amendment:
		return KindAmendment, func(id string) { x.ID = id }, nil
	}
	return "", nil, fmt.Errorf("inbox: cannot hold %T", v)
}

// Decode strictly decodes an item's bytes and checks that its id is the one
// its content implies.
func Decode(id string, b []byte) (Item, error) {
	kind, _, ok := strings.Cut(id, "-")
	if !ok {
		return Item{}, fmt.Errorf("inbox item %q: malformed name", id)
	}
	it := Item{ID: id, Kind: Kind(kind), Body: b}
	var v any
	switch it.Kind {
	case KindWake:
		it.Wake = &state.WakeSignal{}
		v = it.Wake
	case KindApproval:
		it.Approval = &state.Approval{}
		v = it.Approval
	case KindStop:
		it.Stop = &state.StopRequest{}
		v = it.Stop
	case KindAmendment:
		it.Amendment = &state.Amendment{}
		v = it.Amendment
	default:
		return Item{}, fmt.Errorf("inbox item %q: unknown kind %q", id, kind)
	}
	if err := codec.UnmarshalCanonical(b, v); err != nil {
		return Item{}, fmt.Errorf("inbox item %q: %w", id, err)
	}
	want, _, err := Seal(v)
	if err != nil {
		return Item{}, err
	}
	if want != id {
		return Item{}, fmt.Errorf("inbox item %q: content does not match its id (want %s)", id, want)
	}
	return it, nil
}

// forbiddenPayloadKeys are keys a wake payload may not carry anywhere: a
// signal is evidence that the scheduler may resume, never a grant.
func forbiddenPayloadKeys() []string {
	return []string{"authority", "authority_mode", "autonomy", "contract", "contract_ref", "budget", "budgets",
		"permissions", "permission", "grant", "grants", "approve", "approval", "rules", "policy"}
}

// CheckPayload refuses a wake payload that tries to carry authority,
// contract or budget changes.
func CheckPayload(v *codec.Value) error {
	if v == nil {
		return nil
	}
	return checkPayload(*v, "payload")
}

func checkPayload(v codec.Value, at string) error {
	switch v.Kind {
	case codec.KindObject:
		for _, m := range v.Obj {
			if slices.Contains(forbiddenPayloadKeys(), strings.ToLower(m.Key)) {
				return &codec.FieldError{Path: at + "." + m.Key, Err: errors.New("a wake signal cannot carry authority, contract, budget or approval changes")}
			}
			if err := checkPayload(m.Val, at+"."+m.Key); err != nil {
				return err
			}
		}
	case codec.KindArray:
		for i, e := range v.Arr {
			if err := checkPayload(e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
				return err
			}
		}
	}
	return nil
}

// ValidSource reports whether s is a whitelisted wake source.
func ValidSource(s string) bool { return slices.Contains(state.WakeSources(), s) }

// Replaced maps the id of every approval among items that another approval
// among items replaces to the id of the one that replaces it. A
// replacement counts only between answers to the same request (action ref
// and asking cycle), and only if counts says so (the kernel ignores an
// answer signed by one of the loop's own roles); nil counts every one.
func Replaced(items []Item, counts func(*state.Approval) bool) map[string]string {
	byID := map[string]*state.Approval{}
	for _, it := range items {
		if it.Kind == KindApproval {
			byID[it.ID] = it.Approval
		}
	}
	out := map[string]string{}
	for _, it := range items {
		if it.Kind != KindApproval {
			continue
		}
		a := it.Approval
		old, ok := byID[a.Replaces]
		if !ok || a.Replaces == it.ID || old.ActionRef != a.ActionRef || old.RequestCycle != a.RequestCycle {
			continue
		}
		if counts == nil || counts(a) {
			out[a.Replaces] = it.ID
		}
	}
	return out
}

// Answer returns the queued answer that counts for one request (the
// action's ref and the cycle that asked), or nil when none is queued: of
// the answers to it among items (in inbox order), the last one that no
// other replaces. It is what the next cycle resolves the request with.
func Answer(items []Item, ref codec.Ref, cycle int64) *Item {
	replaced := Replaced(items, nil)
	var last *Item
	for i, it := range items {
		if it.Kind == KindApproval && it.Approval.ActionRef == ref && it.Approval.RequestCycle == cycle && replaced[it.ID] == "" {
			last = &items[i]
		}
	}
	return last
}
