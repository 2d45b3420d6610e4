package main

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestAddCompletionsKeepsRegisteredOnes: a command that registers its own
// completion for a flag keeps it, and registering twice is no error (cobra
// refuses a second registration, which would otherwise stop acr from
// building its command tree).
func TestAddCompletionsKeepsRegisteredOnes(t *testing.T) {
	a := newApp(io.Discard, io.Discard)
	root := newRootCommand(a)
	require.NoError(t, addCompletions(a, root))
}
