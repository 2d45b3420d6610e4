package sandbox

import (
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"strings"

	"github.com/acr-project/acr/internal/codec"
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
	ActionRef codec.Ref `json:"action_ref"`
	// IntentRef, for a command's outcome, is the ref of the intent it
	// carried out as the caller's log records it: recovery reuses the
	// outcome only for that intent (checkCommandOutcome).
	IntentRef codec.Ref     `json:"intent_ref,omitempty"`
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

// idOf turns a digest keyHex accepted into the index's key.
func idOf(h string) keyID {
	var id keyID
	_, _ = hex.Decode(id[:], []byte(h)) // keyHex checked the digits
	return id
}

func shortDigest(h string) string  { return h[:16] }
func reportPath(h string) string   { return world.ValidationDir + "/" + shortDigest(h) + ".json" }
func issueLineTag(h string) string { return "[" + shortDigest(h) + "]" }

// Lookup returns the outcome recorded for key, if any. The first look-up
// of a World reads the table once into an index; every look-up after it
// is one read of the one line the index names, whatever the table's size.
func (w *World) Lookup(key string) (world.Outcome, bool, error) {
	h, err := keyHex(key)
	if err != nil {
		return world.Outcome{}, false, fmt.Errorf("lookup: %w", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	rec, ok, err := w.readOutcome(key, h, false)
	if err != nil {
		return world.Outcome{}, false, fmt.Errorf("lookup %s: %w", key, err)
	}
	if !ok {
		return world.Outcome{}, false, nil
	}
	return rec.Outcome, true, nil
}

// readRecord decodes the latest record of kind for key h into v: from the
// table, or, for a key the table does not know, from the per-key file an
// earlier release wrote (see legacyRecord; cached says how to treat one
// that does not decode). It returns the name the record was read from,
// for errors.
func (w *World) readRecord(h string, kind recKind, v any, cached bool) (bool, string, error) {
	data, ok, err := w.table.get(idOf(h), kind)
	if err != nil {
		return false, TableName, err
	}
	if ok {
		// UnmarshalExact: the line's checksum says acr wrote these bytes,
		// so the cheaper exact check (decode, encode, compare) is as
		// strict as the canonical parser here.
		if err := codec.UnmarshalExact(data, v); err != nil {
			return false, TableName, fmt.Errorf("decode the %s record of %s in %s: %w", kind, h, TableName, err)
		}
		return true, TableName, nil
	}
	if !w.table.legacy {
		return false, TableName, nil
	}
	name := legacyName(h, kind)
	ok, err = legacyRecord(w.keys, name, v)
	var perr *fs.PathError
	if cached && err != nil && !errors.As(err, &perr) {
		return false, name, nil
	}
	return ok, name, err
}

// readOutcome reads the outcome recorded for key. With cached, an old
// per-key outcome file that does not decode, or is not the record of this
// key, counts as absent: earlier releases wrote it from Commit as a cache,
// without fsync, so a crash may have torn it, and the caller's durable
// intent and the world decide instead.
func (w *World) readOutcome(key, h string, cached bool) (outcomeRecord, bool, error) {
	var rec outcomeRecord
	ok, name, err := w.readRecord(h, kindOutcome, &rec, cached)
	if err != nil || !ok {
		return outcomeRecord{}, ok, err
	}
	if rec.Schema != OutcomeSchema || rec.Outcome.Key != key {
		if cached && name != TableName {
			return outcomeRecord{}, false, nil
		}
		return outcomeRecord{}, false, fmt.Errorf("outcome record in %s: schema %q, key %q: not the record of %s", name, rec.Schema, rec.Outcome.Key, key)
	}
	return rec, true, nil
}

// priorOutcome returns the outcome already recorded for key, checked to be
// of the same operation on the same target, or nil when there is none.
// Execute trusts only an intact record (cached=false); Prepare and Commit
// treat a torn old cache file as absent (cached=true), see readOutcome.
// A command's outcome is checked against in, the intent being carried
// out (nil when there is none yet), and the world.
func (w *World) priorOutcome(key, h string, a world.Action, target string, cached bool, in *world.Intent) (*world.Outcome, error) {
	rec, ok, err := w.readOutcome(key, h, cached)
	if err != nil || !ok {
		return nil, err
	}
	if err := sameAction(rec.Outcome.Operation, rec.Outcome.Target, a.Operation, target); err != nil {
		return nil, err
	}
	if a.Operation == world.OpRunCommand {
		if err := w.checkCommandOutcome(key, a, in, rec); err != nil {
			return nil, err
		}
	}
	return &rec.Outcome, nil
}

func (w *World) readIntent(key, h string) (intentRecord, bool, error) {
	var rec intentRecord
	ok, name, err := w.readRecord(h, kindIntent, &rec, false)
	if err != nil || !ok {
		return intentRecord{}, ok, err
	}
	if rec.Schema != IntentSchema || rec.Key != key {
		return intentRecord{}, false, fmt.Errorf("intent record in %s: schema %q, key %q: not the record of %s", name, rec.Schema, rec.Key, key)
	}
	if rec.BeforeSHA256 == rec.AfterSHA256 {
		return intentRecord{}, false, fmt.Errorf("intent record of %s in %s: before and after hashes are equal, so it cannot classify anything", key, name)
	}
	return rec, true, nil
}

// appendRecord encodes v and appends it to the table as the latest record
// of kind for key h, durably or not. It returns the record's canonical
// bytes, so that callers can hand back exactly what was recorded.
func (w *World) appendRecord(h string, kind recKind, v any, durable bool) ([]byte, error) {
	// A record may claim an effect: never durable ahead of it, nor ahead
	// of a gated Commit's intent.
	if err := w.awaitDirSync(); err != nil {
		return nil, err
	}
	if err := w.proceed(); err != nil {
		return nil, err
	}
	data, err := codec.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode the %s record of %s: %w", kind, h, err)
	}
	if err := w.table.append([]pendingLine{{key: idOf(h), kind: kind, line: encodeLine(h, kind, data)}}, durable); err != nil {
		return nil, err
	}
	return data, nil
}

// SeedOutcomes appends n outcome records to the table directly (one write
// per few megabytes, no fsync) and returns their keys. It exists for
// benchmarks that need a large table without executing n actions; the
// records are ordinary outcome records.
func SeedOutcomes(w *World, n int) ([]string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	keys := make([]string, n)
	var batch []pendingLine
	size := 0
	for i := range n {
		key := keyPrefix + codec.Digest([]byte(fmt.Sprintf("seed-%d", i)))
		h := strings.TrimPrefix(key, keyPrefix)
		out := world.Outcome{Schema: world.OutcomeSchema, Key: key, Operation: world.OpInspect, Target: "a.txt", Status: world.OutcomeNoChange}
		data, err := codec.Marshal(outcomeRecord{Schema: OutcomeSchema, Outcome: out})
		if err != nil {
			return nil, err
		}
		line := encodeLine(h, kindOutcome, data)
		batch = append(batch, pendingLine{key: idOf(h), kind: kindOutcome, line: line})
		size += len(line)
		if size >= 4<<20 || i == n-1 {
			if err := w.table.append(batch, false); err != nil {
				return nil, err
			}
			batch, size = batch[:0], 0
		}
		keys[i] = key
	}
	return keys, nil
}
