package event

import (
	"fmt"

	"github.com/acr-project/acr/internal/governance"
	"github.com/acr-project/acr/internal/intent"
)

// PinnedDocuments returns the goal and contract a run started with, from
// its first ledger events.
func PinnedDocuments(recs []Record) (intent.Goal, governance.Contract, error) {
	var g intent.Goal
	var c governance.Contract
	var ng, nc bool
	for _, r := range recs {
		switch r.Event.Type {
		case GoalPinned:
			ng = r.Event.Object.Decode(&g) == nil
		case ContractPinned:
			nc = r.Event.Object.Decode(&c) == nil
		}
	}
	if !ng || !nc {
		return g, c, fmt.Errorf("the ledger does not hold the pinned goal and contract")
	}
	return g, c, nil
}
