package main

import (
	"context"
	"io"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInterruptContext sends this test process a SIGTERM: the context is
// cancelled with the signal as its cause. Not parallel: it signals the
// whole process (testdata/script/interrupt.txtar signals acr processes).
func TestInterruptContext(t *testing.T) {
	ctx, stop := interruptContext(context.Background())
	defer stop()
	assert.Equal(t, "", interruptedBy(ctx))
	require.NoError(t, syscall.Kill(os.Getpid(), syscall.SIGTERM))
	select {
	case <-ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("SIGTERM did not cancel the context")
	}
	assert.Equal(t, "SIGTERM", interruptedBy(ctx))
	assert.Equal(t, "interrupted by SIGTERM", interruptedText(ctx))
}

// TestCancelKillsNothing: a context cancelled by anything but a signal
// (a caller's, a test's) stops run and step at a cycle boundary, and lets
// every other command finish: only a signal makes a command die of it.
func TestCancelKillsNothing(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	assert.Equal(t, "", interruptedBy(ctx))
	assert.Equal(t, "interrupted", interruptedText(ctx))
	assert.Equal(t, 0, newApp(io.Discard, io.Discard).execute(ctx, []string{"version"}))
}
