package controller

import "github.com/acr-project/acr/internal/budget"

// Exceeds names the limit that spending more on top of what the machine
// has already used would break ("" when it fits). The kernel asks before
// each costly step, so a cycle stops before it overspends, not after.
func (m *Machine) Exceeds(more budget.Usage) string { return budget.Over(m.used.Add(more), m.budget) }
