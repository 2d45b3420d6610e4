package event

import (
	"fmt"

	"github.com/acr-project/acr/internal/controller"
)

// ControllerTransitions returns the controller transitions an event
// records, in full, in either ledger format: one for a format-1
// transition event, the batch's for a format-2 transition log, none for
// any other kind.
func (e *Event) ControllerTransitions() ([]controller.Transition, error) {
	switch e.Type {
	case Transition, Transitions:
	default:
		return nil, nil
	}
	if e.Object == nil {
		return nil, fmt.Errorf("%s without its record", e.Type)
	}
	if e.Type == Transitions {
		var l controller.TransitionLog
		if err := e.Object.Decode(&l); err != nil {
			return nil, err
		}
		return l.Expand(), nil
	}
	var t controller.Transition
	if err := e.Object.Decode(&t); err != nil {
		return nil, err
	}
	return []controller.Transition{t}, nil
}
