package controller

import (
	"fmt"

	"github.com/acr-project/acr/internal/event"
)

// TransitionsOf returns the controller transitions an event records, in
// full, in either ledger format: one for a format-1 transition event, the
// batch's for a format-2 transition log, none for any other kind. It lives
// here rather than in package event because the records are this
// package's types: the vocabulary stays below the subsystems.
func TransitionsOf(ev event.Event) ([]Transition, error) {
	switch ev.Type {
	case event.Transition, event.Transitions:
	default:
		return nil, nil
	}
	if ev.Object == nil {
		return nil, fmt.Errorf("%s without its record", ev.Type)
	}
	if ev.Type == event.Transitions {
		var l TransitionLog
		if err := ev.Object.Decode(&l); err != nil {
			return nil, err
		}
		return l.Expand(), nil
	}
	var t Transition
	if err := ev.Object.Decode(&t); err != nil {
		return nil, err
	}
	return []Transition{t}, nil
}
