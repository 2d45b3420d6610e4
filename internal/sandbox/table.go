package sandbox

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/acr-project/acr/internal/codec"
	"github.com/acr-project/acr/internal/disk"
	"github.com/acr-project/acr/internal/world"
)

// Record schemas of the idempotency table.
const (
	// IntentSchema names the record written before an effect.
	IntentSchema = "acr.sandbox-intent/v0.1"
	// OutcomeSchema names the record that commits an execution.
	OutcomeSchema = "acr.sandbox-outcome/v0.1"
)

const keyPrefix = "idem:sha256:"

// intentRecord is written, durably, before an effect. Before and After pin
// the only two states the target may be found in after a crash; they always
// differ, otherwise recovery could not tell them apart.
type intentRecord struct {
	Schema       string            `json:"schema"`
	Key          string            `json:"idempotency_key"`
	Action       world.Action      `json:"action"`
	Target       string            `json:"target"`
	BeforeSHA256 codec.Fingerprint `json:"before_sha256"`
	AfterSHA256  codec.Fingerprint `json:"after_sha256"`
	// Results are run_validation's results, whose report is the effect;
	// kept so that recovery can return the same outcome without re-running
	// the checks against a world that may have moved on.
	Results []world.CheckResult `json:"results,omitempty"`
}

// outcomeRecord is the commit point of an execution.
type outcomeRecord struct {
	Schema string `json:"schema"`
	// ActionRef ties the outcome to the exact action that produced it, for
	// audit; reuse is checked on operation and target only.
	ActionRef codec.Ref     `json:"action_ref"`
	Outcome   world.Outcome `json:"outcome"`
}

// keyHex validates an idempotency key and returns its digest.
func keyHex(key string) (string, error) {
	h, ok := strings.CutPrefix(key, keyPrefix)
	if !ok || len(h) != 64 || strings.Trim(h, "0123456789abcdef") != "" {
		return "", fmt.Errorf("idempotency key %q: want %s<64 lower-case hex digits>", key, keyPrefix)
	}
	return h, nil
}

func fanDir(h string) string       { return KeysDir + "/" + h[:2] }
func outcomeName(h string) string  { return fanDir(h) + "/" + h + ".json" }
func intentName(h string) string   { return fanDir(h) + "/" + h + ".intent.json" }
func shortDigest(h string) string  { return h[:16] }
func reportPath(h string) string   { return world.ValidationDir + "/" + shortDigest(h) + ".json" }
func issueLineTag(h string) string { return "[" + shortDigest(h) + "]" }

// Lookup returns the outcome recorded for key, if any. It reads the one
// record file the key names; its cost does not grow with the table.
func (w *World) Lookup(key string) (world.Outcome, bool, error) {
	h, err := keyHex(key)
	if err != nil {
		return world.Outcome{}, false, fmt.Errorf("lookup: %w", err)
	}
	rec, ok, err := w.readOutcome(key, h)
	if err != nil {
		return world.Outcome{}, false, fmt.Errorf("lookup %s: %w", key, err)
	}
	if !ok {
		return world.Outcome{}, false, nil
	}
	return rec.Outcome, true, nil
}

func (w *World) readOutcome(key, h string) (outcomeRecord, bool, error) {
	var rec outcomeRecord
	ok, err := readRecord(w.keys, outcomeName(h), &rec)
	if err != nil || !ok {
		return outcomeRecord{}, ok, err
	}
	if rec.Schema != OutcomeSchema || rec.Outcome.Key != key {
		return outcomeRecord{}, false, fmt.Errorf("outcome record %s: schema %q, key %q: not the record of %s", outcomeName(h), rec.Schema, rec.Outcome.Key, key)
	}
	return rec, true, nil
}

// readCachedOutcome reads an outcome record written by Commit, which is a
// cache: a record torn by a crash does not decode and counts as absent (the
// caller's durable intent and the world decide instead).
func (w *World) readCachedOutcome(key, h string) (outcomeRecord, bool, error) {
	rec, ok, err := w.readOutcome(key, h)
	var perr *fs.PathError
	if err != nil && !errors.As(err, &perr) {
		return outcomeRecord{}, false, nil
	}
	return rec, ok, err
}

// priorOutcome returns the outcome already recorded for key, checked to be
// of the same operation on the same target, or nil when there is none.
// Execute trusts only an intact record (cached=false); Prepare and Commit
// treat a torn one as absent (cached=true), see readCachedOutcome.
func (w *World) priorOutcome(key, h string, a world.Action, target string, cached bool) (*world.Outcome, error) {
	read := w.readOutcome
	if cached {
		read = w.readCachedOutcome
	}
	rec, ok, err := read(key, h)
	if err != nil || !ok {
		return nil, err
	}
	if err := sameAction(rec.Outcome.Operation, rec.Outcome.Target, a.Operation, target); err != nil {
		return nil, err
	}
	return &rec.Outcome, nil
}

func (w *World) readIntent(key, h string) (intentRecord, bool, error) {
	var rec intentRecord
	ok, err := readRecord(w.keys, intentName(h), &rec)
	if err != nil || !ok {
		return intentRecord{}, ok, err
	}
	if rec.Schema != IntentSchema || rec.Key != key {
		return intentRecord{}, false, fmt.Errorf("intent record %s: schema %q, key %q: not the record of %s", intentName(h), rec.Schema, rec.Key, key)
	}
	if rec.BeforeSHA256 == rec.AfterSHA256 {
		return intentRecord{}, false, fmt.Errorf("intent record %s: before and after hashes are equal, so it cannot classify anything", intentName(h))
	}
	return rec, true, nil
}

func readRecord(keys disk.FS, name string, v any) (bool, error) {
	data, err := keys.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("read %s: %w", name, err)
	}
	if err := codec.UnmarshalCanonical(data, v); err != nil {
		return false, fmt.Errorf("decode %s: %w", name, err)
	}
	return true, nil
}

// writeRecord makes a record durable: fan-out directory, atomic replace,
// directory fsync. The bytes written are returned so callers can hand back
// exactly what was recorded.
func writeRecord(keys disk.FS, name string, v any) ([]byte, error) {
	data, err := codec.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %s: %w", name, err)
	}
	if err := keys.MkdirAll(disk.Dir(name)); err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	if err := disk.ReplaceFile(keys, name, data); err != nil {
		return nil, fmt.Errorf("write %s: %w", name, err)
	}
	return data, nil
}

// SeedOutcomes writes n outcome records directly (cache writes, no fsync)
// and returns their keys. It exists for benchmarks that need a large table
// without executing n actions; the records are ordinary outcome records.
func SeedOutcomes(w *World, n int) ([]string, error) {
	keys := make([]string, n)
	for i := range n {
		key := keyPrefix + codec.Digest([]byte(fmt.Sprintf("seed-%d", i)))
		h := strings.TrimPrefix(key, keyPrefix)
		out := world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: world.OpInspect, Target: "a.txt", Status: world.OutcomeNoChange}
		data, err := codec.Marshal(outcomeRecord{Schema: OutcomeSchema, Outcome: out})
		if err != nil {
			return nil, err
		}
		if err := w.ensureFanDir(h); err != nil {
			return nil, err
		}
		if err := w.keys.WriteCache(outcomeName(h), data); err != nil {
			return nil, err
		}
		keys[i] = key
	}
	return keys, nil
}
