package runstore

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/world"
)

// durableProbe watches the driver's use of a world whose effects may
// return before their last fsync (sandbox.World.DeferDirSyncs, which a
// run turns on): after every Commit, Durable must come before the ledger
// holds one more byte, since the next bytes are the effect's outcome.
type durableProbe struct {
	kernel.World
	t        *testing.T
	ledger   string
	pending  bool
	at       int64
	commits  int
	gated    int // commits through CommitWhen
	durables int
}

func (p *durableProbe) size() int64 {
	fi, err := os.Stat(p.ledger)
	require.NoError(p.t, err)
	return fi.Size()
}

func (p *durableProbe) Commit(ctx context.Context, key string, a world.Action, in world.Intent) (world.Outcome, bool, error) {
	assert.False(p.t, p.pending, "an effect committed while the last one was not made durable")
	out, reused, err := p.World.Commit(ctx, key, a, in)
	p.pending, p.at = true, p.size()
	p.commits++
	return out, reused, err
}

// CommitWhen is Commit for the driver's overlapped path (the sandbox's
// CommitWhen), which a run takes when its world has it.
func (p *durableProbe) CommitWhen(ctx context.Context, key string, a world.Action, in world.Intent, ready func() error) (world.Outcome, bool, error) {
	assert.False(p.t, p.pending, "an effect committed while the last one was not made durable")
	gw, ok := p.World.(interface {
		CommitWhen(context.Context, string, world.Action, world.Intent, func() error) (world.Outcome, bool, error)
	})
	require.True(p.t, ok, "the sandbox world has CommitWhen")
	out, reused, err := gw.CommitWhen(ctx, key, a, in, ready)
	p.pending, p.at = true, p.size()
	p.commits++
	p.gated++
	return out, reused, err
}

func (p *durableProbe) Durable() error {
	if p.pending {
		assert.Equal(p.t, p.at, p.size(), "the ledger was written between an effect and its Durable")
	}
	p.pending = false
	p.durables++
	return p.World.Durable()
}

// TestDriverMakesEffectsDurableBeforeOutcomes runs cycles that act and
// holds the driver to the order above.
func TestDriverMakesEffectsDurableBeforeOutcomes(t *testing.T) {
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, testOptions())
	require.NoError(t, err)
	probe := &durableProbe{t: t, ledger: filepath.Join(dir, filepath.FromSlash(ledger.FileName))}
	opt := testOptions()
	opt.WrapWorld = func(w kernel.World) kernel.World { probe.World = w; return probe }
	r, err := Open(t.Context(), dir, opt)
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 10, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	assert.Positive(t, probe.commits)
	assert.Equal(t, probe.commits, probe.gated, "a run's effects take the overlapped path")
	assert.False(t, probe.pending, "the last effect was never made durable")
	assert.GreaterOrEqual(t, probe.durables, probe.commits)
}

// crashHere is the panic a failpoint raises to stop a process at once.
type crashHere struct{}

// TestRecoveryMakesEffectsDurableBeforeOutcomes: a process stopped right
// after an effect (its directory fsync perhaps still running) leaves the
// cycle to recovery, which must also make the effect durable before it
// records the outcome.
func TestRecoveryMakesEffectsDurableBeforeOutcomes(t *testing.T) {
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, quickstart(t), "run:test", false, testOptions())
	require.NoError(t, err)
	opt := testOptions()
	opt.Failpoint = func(stage string) {
		if stage == "after-action-commit" {
			panic(crashHere{})
		}
	}
	func() {
		var r *Run
		defer func() {
			p := recover()
			require.IsType(t, crashHere{}, p, "the run stops at the failpoint")
			r.Abandon()
		}()
		r, err = Open(t.Context(), dir, opt)
		require.NoError(t, err)
		_, _ = r.Driver.Run(context.Background(), 10, nil)
	}()

	probe := &durableProbe{t: t, ledger: filepath.Join(dir, filepath.FromSlash(ledger.FileName))}
	opt = testOptions()
	opt.WrapWorld = func(w kernel.World) kernel.World { probe.World = w; return probe }
	r, err := Open(t.Context(), dir, opt)
	require.NoError(t, err)
	require.True(t, r.Driver.Recovery().Recovered)
	assert.Positive(t, probe.commits, "recovery settles the interrupted effect through Commit")
	assert.False(t, probe.pending, "recovery recorded an effect it never made durable")
	require.NoError(t, r.Close())
}
