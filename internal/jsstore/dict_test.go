package jsstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/klauspost/compress/zstd"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/state"
)

// dictFrom, when set, builds a dictionary from the state directories of
// scenario runs under it and writes it to dictTo (see TestDictionary).
var (
	dictFrom = flag.String("dict-from", "", "build a dictionary from the kept scenario state directories under this directory (acr-scenario-*/engine_state, what acr scenario run --keep leaves)")
	dictTo   = flag.String("dict-to", "", "where -dict-from writes the dictionary")
	dictID   = flag.Uint("dict-id", 0, "the ID of the dictionary -dict-from builds (never one already shipped)")
)

// dict1SHA256 is dictionary 1's digest: stored messages name the
// dictionary they were made with, so it never changes.
const dict1SHA256 = "e6817a4e2b8b759ef52ca65a4e44ca985fa11a5db7dbd1ba61da128b35a4b12e"

// TestDictionary holds dictionary 1 to its bytes and ID, and checks that
// it makes ledger lines smaller than zstd alone does. Dictionary 1 was
// built by the command below with -dict-id 1 (which the test now refuses:
// dictionary 1 is shipped); a dictionary 2 is built the same way with
// -dict-id 2:
//
//	for s in $(ls scenarios | grep -v crash-harness); do
//	    acr --ledger-seal-bytes 0 scenario run $s --keep; done   # kept in /tmp/acr-scenario-*
//	go test ./internal/jsstore -run TestDictionary -dict-from /tmp -dict-id 2 -dict-to dict2.zdict
//
// (the scenarios' ledgers cut into one sample per cycle, and each
// scenario's checkpoint as one document; a few of them as its history).
// A new dictionary gets a new ID and an encoding of its own; this one is
// kept for the messages that name it.
func TestDictionary(t *testing.T) {
	if *dictFrom != "" {
		require.NotZero(t, *dictID)
		require.NotEqual(t, uint(1), *dictID, "dictionary 1 is shipped")
		require.NotEmpty(t, *dictTo)
		d, err := buildDict(*dictFrom, uint32(*dictID))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(*dictTo, d, 0o644))
	}
	sum := sha256.Sum256(dict1)
	require.Equal(t, dict1SHA256, hex.EncodeToString(sum[:]), "dictionary 1 never changes")
	require.Equal(t, []byte{0x37, 0xa4, 0x30, 0xec}, dict1[:4], "a zstd dictionary")
	require.Equal(t, uint32(1), binary.LittleEndian.Uint32(dict1[4:8]), "its ID")

	lines, _, err := encodeEvents(state.GenesisFrontier(), testEvents("d", 20, 1))
	require.NoError(t, err)
	body := bytes.Join(lines, nil)
	plain, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedFastest))
	require.NoError(t, err)
	p := testPacker(t)
	z, enc := p.pack(body)
	require.Equal(t, encZstdDict, enc)
	require.Less(t, len(z), len(plain.EncodeAll(body, nil)), "the dictionary makes ledger lines smaller")
	got, err := p.unpack(z, enc)
	require.NoError(t, err)
	require.Equal(t, body, got)
}

// buildDict builds a zstd dictionary from the scenario state directories
// under root: one sample per cycle of each ledger, each checkpoint
// document (manifest line and files, as a store keeps it) one sample, and
// every 23rd cycle's sample plus one checkpoint as its history.
func buildDict(root string, id uint32) ([]byte, error) {
	dirs, err := filepath.Glob(filepath.Join(root, "acr-scenario-*", "engine_state"))
	if err != nil {
		return nil, err
	}
	slices.Sort(dirs)
	var cycles, ckpts [][]byte
	for _, d := range dirs {
		b, err := os.ReadFile(filepath.Join(d, "ledger", "events.jsonl"))
		if err != nil {
			return nil, err
		}
		var cur []byte
		last := int64(-1)
		for line := range bytes.Lines(b) {
			var l struct {
				Event struct {
					CycleSeq int64 `json:"cycle_seq"`
				} `json:"event"`
			}
			if err := json.Unmarshal(line, &l); err != nil {
				return nil, err
			}
			if l.Event.CycleSeq != last && len(cur) > 0 {
				cycles, cur = append(cycles, cur), nil
			}
			last, cur = l.Event.CycleSeq, append(cur, line...)
		}
		if len(cur) > 0 {
			cycles = append(cycles, cur)
		}
		man, err := os.ReadFile(filepath.Join(d, "manifest.json"))
		if err != nil {
			return nil, err
		}
		var m struct {
			Files map[string]struct {
				Path string `json:"path"`
			} `json:"files"`
		}
		if err := json.Unmarshal(man, &m); err != nil {
			return nil, err
		}
		doc := append(bytes.TrimSpace(man), '\n')
		for _, name := range slices.Sorted(func(yield func(string) bool) {
			for k := range m.Files {
				if !yield(k) {
					return
				}
			}
		}) {
			f, err := os.ReadFile(filepath.Join(d, m.Files[name].Path))
			if err != nil {
				return nil, err
			}
			doc = append(doc, f...)
		}
		ckpts = append(ckpts, doc)
	}
	var hist []byte
	for i := 0; i < len(cycles) && len(hist) < 96<<10; i += 23 {
		hist = append(hist, cycles[i]...)
	}
	hist = append(hist, ckpts[len(ckpts)/2]...)
	if len(hist) > 128<<10 {
		hist = hist[len(hist)-128<<10:]
	}
	return zstd.BuildDict(zstd.BuildDictOptions{ID: id, Contents: append(cycles, ckpts...), History: hist, Level: zstd.SpeedFastest})
}
