package runstore

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/acr-project/acr/internal/disk"
)

// ErrSlateRoot means a clean slate was asked to look after a real
// directory: a clean slate writes nothing, and a run changes its world.
var ErrSlateRoot = errors.New("a clean slate writes nothing, but this environment makes a real directory the world a run changes; use an environment that lists its files, or one whose root is a copy")

// Slate is a run on a clean slate (--no-load-state): created in memory,
// its sandbox world in a temporary directory, nothing of it kept.
type Slate struct {
	fsys  disk.FS
	world string
	opt   Options
}

// NewSlate creates a run from in on a clean slate. Discard removes what
// it made.
func NewSlate(ctx context.Context, in Inputs, runID string, opt Options) (*Slate, error) {
	if in.Spec.Root != "" {
		return nil, fmt.Errorf("%s: %w", in.Spec.Root, ErrSlateRoot)
	}
	dir, err := os.MkdirTemp("", "acr-clean-slate-")
	if err != nil {
		return nil, err
	}
	s := &Slate{fsys: disk.NewMem(), world: dir, opt: opt}
	if _, err := InitOn(ctx, s.fsys, dir, in, runID, opt); err != nil {
		s.Discard()
		return nil, err
	}
	return s, nil
}

// Open opens the slate's run, as Open opens a state directory's.
func (s *Slate) Open(ctx context.Context) (*Run, error) {
	return OpenOn(ctx, s.fsys, s.world, s.opt, nil)
}

// Discard removes the slate's world.
func (s *Slate) Discard() { _ = os.RemoveAll(s.world) }
