package runstore

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/dirstore"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/ledger"
	"github.com/acr-project/acr/internal/state"
	"github.com/acr-project/acr/internal/storage"
)

// Rebuilt says how a missing manifest was rebuilt.
type Rebuilt struct {
	// CycleSeq is the cycle of the checkpoint the new manifest names.
	CycleSeq int64 `json:"cycle_seq"`
	// Frontier is the ledger position that checkpoint was recorded at;
	// recovery rolls forward whatever the ledger holds beyond it.
	Frontier state.Frontier `json:"ledger_frontier"`
	// Files is how many checkpoint files the manifest names.
	Files int `json:"files"`
	// Unused lists checkpoint files that belong to no checkpoint the
	// ledger recorded, or to an older one; they were moved to Kept.
	Unused []string `json:"unused,omitempty"`
	Kept   string   `json:"kept_in,omitempty"`
}

// maxCombinations bounds the sets of checkpoint files tried: after a crash
// there are at most two generations of each file, so this is never near.
const maxCombinations = 4096

// RebuildManifest gives a damaged run (checkpoint files and a ledger, no
// manifest) its manifest back, when that can be done without guessing: the
// whole ledger must verify, and a set of checkpoint files must form a
// consistent checkpoint (every ref in its run state matches a file) whose
// checkpoint record the ledger holds. The newest such checkpoint is named,
// at the ledger position where it was recorded, so that the recovery that
// follows rolls forward everything after it. Checkpoint files not used are
// moved under archive/, never deleted. It returns nil when the directory
// needs no rebuild (it has a manifest, or holds no run at all).
func RebuildManifest(dir string, opt Options) (*Rebuilt, error) {
	fsys, err := OpenDir(dir)
	if err != nil {
		return nil, err
	}
	s := store{fsys: fsys, root: fsys.Path()}
	unlock, err := dirstore.NewStore(fsys).Lock()
	if err != nil {
		return nil, err
	}
	defer unlock.Unlock()
	if err := finishSwap(s); err != nil {
		return nil, err
	}
	k, _, err := inspect(fsys)
	if err != nil || k != kindDamaged {
		return nil, err
	}
	return rebuild(s, opt)
}

func cannotRebuild(format string, args ...any) error {
	return &state.IntegrityError{File: dirstore.ManifestName, Msg: "missing and cannot be rebuilt: " + fmt.Sprintf(format, args...) +
		"; restore the state directory from a backup (docs/operations.md)"}
}

func rebuild(s store, opt Options) (*Rebuilt, error) {
	fsys := s.fsys
	rep, err := ledger.Verify(fsys, nil)
	if ledger.IsNotExist(err) {
		return nil, cannotRebuild("the ledger is missing too")
	}
	if err != nil {
		return nil, err
	}
	if !rep.OK {
		return nil, rep.Damage
	}
	recorded, err := recordedCheckpoints(fsys)
	if err != nil {
		return nil, err
	}
	cands, err := candidateFiles(fsys)
	if err != nil {
		return nil, err
	}
	var (
		best      map[string]string // logical name -> path
		bestFiles map[string][]byte
		bestAt    state.Frontier
		bestState kernel.EngineState
	)
	tried := 0
	var try func(names []string, pick map[string]string) error
	try = func(names []string, pick map[string]string) error {
		if len(names) == 0 {
			tried++
			if tried > maxCombinations {
				return cannotRebuild("too many checkpoint files to choose from")
			}
			files := map[string][]byte{}
			for name, p := range pick {
				files[name] = cands[name][p]
			}
			at, ok := recorded.find(files[kernel.FileCheckpoint])
			if !ok || (best != nil && at.Offset <= bestAt.Offset) {
				return nil
			}
			st, err := kernel.Decode(files)
			if err != nil {
				return nil // not a consistent set: try the next
			}
			best, bestFiles, bestAt, bestState = maps.Clone(pick), files, at, st
			return nil
		}
		name := names[0]
		for _, p := range slices.Sorted(maps.Keys(cands[name])) {
			pick[name] = p
			if err := try(names[1:], pick); err != nil {
				return err
			}
		}
		delete(pick, name)
		return nil
	}
	if err := try(slices.Sorted(maps.Keys(cands)), map[string]string{}); err != nil {
		return nil, err
	}
	if best == nil {
		return nil, cannotRebuild("no set of files in %s/ forms a checkpoint that the ledger recorded", dirstore.CheckpointDir)
	}
	out := &Rebuilt{CycleSeq: bestState.Run.CycleSeq, Frontier: bestAt, Files: len(best)}
	used := map[string]bool{}
	for _, p := range best {
		used[p] = true
	}
	for _, byPath := range cands {
		for p := range byPath {
			if !used[p] {
				out.Unused = append(out.Unused, p)
			}
		}
	}
	slices.Sort(out.Unused)
	if len(out.Unused) > 0 {
		// Commit removes files no manifest names; keep these instead.
		name, err := archiveName(s, opt)
		if err != nil {
			return nil, err
		}
		if name == "" {
			name = ArchiveDir + "/unnamed"
		}
		out.Kept = name + "-unused-checkpoint-files"
		if err := fsys.MkdirAll(out.Kept); err != nil {
			return nil, err
		}
		// The renames need no fsync of their own: the commit below fsyncs
		// checkpoint/, which makes them durable; a power loss before that
		// finds the files back in checkpoint/ and no manifest, and the
		// rebuild is simply done again.
		for _, p := range out.Unused {
			if err := fsys.Rename(p, out.Kept+"/"+p[strings.LastIndexByte(p, '/')+1:]); err != nil {
				return nil, fmt.Errorf("rebuild manifest: keep %s: %w", p, err)
			}
		}
	}
	if _, err := dirstore.NewStore(fsys).Commit(storage.Commit{RunID: bestState.Run.RunID, CycleSeq: bestState.Run.CycleSeq,
		Revision: opt.Revision, Frontier: bestAt, Files: bestFiles}); err != nil {
		return nil, fmt.Errorf("rebuild manifest: %w", err)
	}
	return out, nil
}

// candidateFiles reads every file in checkpoint/ whose content still
// matches the hash in its name, grouped by logical name.
func candidateFiles(fsys disk.FS) (map[string]map[string][]byte, error) {
	entries, err := fsys.ReadDir(dirstore.CheckpointDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, cannotRebuild("there is no %s/ directory", dirstore.CheckpointDir)
	}
	if err != nil {
		return nil, err
	}
	out := map[string]map[string][]byte{}
	for _, e := range entries {
		parts := strings.Split(e.Name(), ".")
		if e.IsDir() || strings.HasPrefix(e.Name(), ".") || len(parts) != 3 || parts[2] != "json" {
			continue
		}
		p := dirstore.CheckpointDir + "/" + e.Name()
		b, err := fsys.ReadFile(p)
		if err != nil {
			return nil, err
		}
		if codec.Digest(b)[:16] != parts[1] {
			continue // damaged: its name no longer matches its content
		}
		if out[parts[0]] == nil {
			out[parts[0]] = map[string][]byte{}
		}
		out[parts[0]][p] = b
	}
	return out, nil
}

// checkpointRecord is where the ledger recorded one checkpoint record.
type checkpointRecord struct {
	body  []byte
	cycle int64
	at    state.Frontier
}

type recordedSet []checkpointRecord

// find returns the ledger position of the last record of this checkpoint.
func (r recordedSet) find(body []byte) (state.Frontier, bool) {
	for i := len(r) - 1; i >= 0; i-- {
		if bytes.Equal(r[i].body, body) {
			return r[i].at, true
		}
	}
	return state.Frontier{}, false
}

// recordedCheckpoints lists every checkpoint record in the ledger with the
// position just after it, or after the cycle record that closes the same
// cycle when that follows at once (a cycle's checkpoint is committed after
// the whole cycle).
func recordedCheckpoints(fsys disk.FS) (recordedSet, error) {
	var out recordedSet
	open := false
	err := ledger.Scan(fsys, func(r event.Record) error {
		end := state.Frontier{Seq: r.Seq, Hash: r.Hash, Offset: r.Offset + r.Length}
		if open && r.Event.Type == event.CycleCompleted && r.Event.CycleSeq == out[len(out)-1].cycle {
			out[len(out)-1].at = end
		}
		open = false
		if r.Event.Type.CheckpointRecord() && r.Event.Object != nil {
			out = append(out, checkpointRecord{body: bytes.Clone(r.Event.Object.Body), cycle: r.Event.CycleSeq, at: end})
			open = true
		}
		return nil
	})
	return out, err
}
