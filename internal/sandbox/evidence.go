package sandbox

import (
	"fmt"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/world"
)

// Evidence says, for each path an intent's action may touch, what its hash
// was when the intent was recorded and what it is now: what a person has
// to go on when Commit could not tell whether an interrupted effect
// happened (ErrUncertain). It reads and writes nothing else.
//
// For a file effect that is its target (with the hash the effect was to
// leave). For a command it is every file its touches match, before (from
// the intent's rollback bundle) and now; when the bundle was too large to
// carry, the files' set hash stands in, under the touches' patterns.
func (w *World) Evidence(in world.Intent) ([]world.PathEvidence, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	a := in.Action
	if !a.OnSet() {
		target := in.Planned.Target
		if target == "" {
			target = a.Target
		}
		content, exists, err := w.readScratch(target)
		if err != nil && !refused(err) {
			return nil, fmt.Errorf("evidence %s: %w", target, err)
		}
		return []world.PathEvidence{world.NewPathEvidence(target, in.Planned.BeforeSHA256, in.Planned.AfterSHA256, hashOf(content, exists && err == nil))}, nil
	}
	touches := touchedBy(a)
	facts, _, _, err := w.scan(touches, false)
	if err != nil {
		return nil, fmt.Errorf("evidence %s: %w", strings.Join(touches, " "), err)
	}
	if in.Rollback == nil || len(in.Rollback.Touches) == 0 {
		return []world.PathEvidence{world.NewPathEvidence(strings.Join(touches, " "), in.Planned.BeforeSHA256, "", world.SetHash(facts))}, nil
	}
	before := map[string]codec.Fingerprint{}
	for _, f := range in.Rollback.Files {
		before[f.Path] = f.SHA256
	}
	now := map[string]codec.Fingerprint{}
	for _, f := range facts {
		now[f.Path] = f.SHA256
	}
	var paths []string
	for p := range before {
		paths = append(paths, p)
	}
	for p := range now {
		if _, ok := before[p]; !ok {
			paths = append(paths, p)
		}
	}
	slices.Sort(paths)
	out := make([]world.PathEvidence, 0, len(paths))
	for _, p := range paths {
		out = append(out, world.NewPathEvidence(p, before[p], "", now[p]))
	}
	return out, nil
}
