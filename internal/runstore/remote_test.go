package runstore

import (
	"context"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	natsjs "github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/acr-project/acr/internal/archive"
	"github.com/acr-project/acr/internal/event"
	"github.com/acr-project/acr/internal/jetstream"
	"github.com/acr-project/acr/internal/jetstream/natstest"
	"github.com/acr-project/acr/internal/jsstore"
	"github.com/acr-project/acr/internal/kernel"
	"github.com/acr-project/acr/internal/sandbox"
	"github.com/acr-project/acr/internal/storage"
	"github.com/acr-project/acr/internal/world"
)

// remoteStore is an embedded server with a store on it, and what the
// tests of runs kept there need to reach around acr: the lease bucket
// (to bypass a lease, as an operator waiting for its TTL would) and the
// runs stream (to take a world out, as an earlier release never put it
// in).
type remoteStore struct {
	url    string
	s      *jsstore.Store
	leases natsjs.KeyValue
	runs   natsjs.Stream
}

const testPrefix = "rs"

func startStore(t *testing.T, opts ...natstest.Option) *remoteStore {
	t.Helper()
	srv := natstest.Start(t, opts...)
	url := srv.ClientURL() + "/" + testPrefix
	s, err := DialStore(t.Context(), url, Connection{})
	require.NoError(t, err)
	t.Cleanup(s.Close)
	js, err := natsjs.New(natstest.Connect(t, srv.ClientURL()))
	require.NoError(t, err)
	leases, err := js.KeyValue(t.Context(), testPrefix+"-lease")
	require.NoError(t, err)
	runs, err := js.Stream(t.Context(), testPrefix+"-runs")
	require.NoError(t, err)
	return &remoteStore{url: url, s: s, leases: leases, runs: runs}
}

// on names run id as seen from a host whose state directory is dir.
func (rs *remoteStore) on(t *testing.T, dir, id string) *Remote {
	t.Helper()
	m, err := OpenRemote(t.Context(), rs.s, rs.url, id, dir)
	require.NoError(t, err)
	return m
}

// freeLease lets another process take run id's lease at once.
func (rs *remoteStore) freeLease(t *testing.T, id string) {
	t.Helper()
	require.NoError(t, rs.leases.Purge(t.Context(), jetstream.Token(id)))
}

// world is run id's world in the store.
func (rs *remoteStore) world(t *testing.T, id string) map[string]string {
	t.Helper()
	r, err := rs.s.Run(t.Context(), id)
	require.NoError(t, err)
	files, err := r.World().Load()
	require.NoError(t, err)
	return asStrings(files)
}

func asStrings(files map[string][]byte) map[string]string {
	out := make(map[string]string, len(files))
	for p, b := range files {
		out[p] = string(b)
	}
	return out
}

// hostCopy is the copy of run id's world on the host whose state
// directory is dir.
func hostCopy(t *testing.T, dir, id string) map[string]string {
	t.Helper()
	return filesUnder(t, filepath.Join(dir, RemoteWorlds, jetstream.Token(id), "sandbox", "world"))
}

func filesUnder(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	}))
	return out
}

// queueInputs is a run that drains a queue of n items, one effect per
// cycle, with no approval to wait for; files are added to its world.
func queueInputs(t *testing.T, n int, files map[string]string) Inputs {
	t.Helper()
	dir := t.TempDir()
	world := map[string]string{"queue.txt": strings.Repeat("p\n", n)}
	for p, c := range files {
		world[p] = c
	}
	docs := map[string]any{
		"goal.json": map[string]any{"schema": "acr.goal/v0.1", "id": "queue", "mission": "drain the queue",
			"success": map[string]any{"all_checks_pass": true}},
		"contract.json": map[string]any{"schema": "acr.contract/v0.1", "id": "queue", "authority": map[string]any{"id": "op", "mode": "project_write"},
			"coordinates": map[string]any{"readiness": "L2", "autonomy": "A2", "cognitive_depth": "D2"},
			"rules":       []any{map[string]any{"operation": "*", "paths": []string{"**"}, "effect": "allow"}},
			"budgets":     map[string]any{"cycles": map[string]any{"hard": n + 100}}, "policy": map[string]any{}},
		"env.json": map[string]any{"schema": "acr.environment/v0.1", "files": world,
			"checks": []any{map[string]any{"id": "queue", "summary": "items pending", "kind": "absent_text", "path": "queue.txt",
				"text": "p", "priority": 10,
				"fixes": []any{map[string]any{"operation": "apply_local_patch", "find": "p", "replace": "d", "occurrences": 1}}}}},
	}
	for name, doc := range docs {
		b, err := json.Marshal(doc)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	in, err := ReadInputs(filepath.Join(dir, "goal.json"), filepath.Join(dir, "contract.json"), filepath.Join(dir, "env.json"))
	require.NoError(t, err)
	return in
}

// reference runs in a state directory to the end: the world and the
// number of effects an uninterrupted run leaves.
func reference(t *testing.T, in Inputs) (map[string]string, int) {
	t.Helper()
	dir := t.TempDir()
	_, err := Init(t.Context(), dir, in, "run:ref", false, testOptions())
	require.NoError(t, err)
	r, err := Open(t.Context(), dir, testOptions())
	require.NoError(t, err)
	_, err = r.Driver.Run(context.Background(), 100, nil)
	require.NoError(t, err)
	require.NoError(t, r.Close())
	h, err := OpenHistory(dir)
	require.NoError(t, err)
	return filesUnder(t, filepath.Join(dir, "sandbox", "world")), len(committed(t, h))
}

// committed counts the sandbox.action.committed events of a history per
// idempotency key.
func committed(t *testing.T, h History) map[string]int {
	t.Helper()
	recs, err := h.ReadAll()
	require.NoError(t, err)
	out := map[string]int{}
	for _, rec := range recs {
		if rec.Event.Type == event.ActionCommitted {
			var o world.Outcome
			require.NoError(t, rec.Event.Object.Decode(&o))
			require.NotEmpty(t, o.Key)
			out[o.Key]++
		}
	}
	return out
}

// cycles opens the run on m's host, runs at most n cycles and closes it.
func cycles(t *testing.T, m *Remote, holder string, n int) (kernel.RunReport, error) {
	t.Helper()
	r, err := m.Open(t.Context(), storage.Holder{Name: holder}, testOptions())
	if err != nil {
		return kernel.RunReport{}, err
	}
	rep, err := r.Driver.Run(r.Held, n, nil)
	return rep, errors.Join(err, r.Close())
}

// settled checks what a run kept in the store must end with: its ledger
// verifies, no effect was committed twice and as many as an
// uninterrupted run committed, and its world is the uninterrupted run's.
func settled(t *testing.T, rs *remoteStore, m *Remote, want map[string]string, effects int) {
	t.Helper()
	h, err := m.History()
	require.NoError(t, err)
	expect, err := h.Expect()
	require.NoError(t, err)
	rep, err := h.Verify(expect)
	require.NoError(t, err)
	require.True(t, rep.OK, "%v", rep.Damage)
	keys := committed(t, h)
	for k, n := range keys {
		assert.Equal(t, 1, n, "effect %s committed %d times", k, n)
	}
	assert.Len(t, keys, effects)
	assert.Equal(t, want, rs.world(t, m.Run.ID), "the world in the store")
}

// A run created on one host runs on any other: the first open on a host
// makes its copy of the world from the store, a later one brings a stale
// copy up to date, and every effect is in the store once it is recorded.
func TestRemoteWorldOnAnyHost(t *testing.T) {
	t.Parallel()
	rs := startStore(t)
	in := queueInputs(t, 4, map[string]string{"docs/a b.md": "keep\n", "empty": ""})
	want, effects := reference(t, in)
	hostA, hostB := t.TempDir(), t.TempDir()
	const id = "run:hosts"
	onA, onB := rs.on(t, hostA, id), rs.on(t, hostB, id)
	_, err := onA.Init(t.Context(), in, testOptions())
	require.NoError(t, err)
	initial := asStrings(map[string][]byte{"queue.txt": []byte(in.Spec.Files["queue.txt"]), "docs/a b.md": []byte("keep\n"), "empty": {}})
	assert.Equal(t, initial, rs.world(t, id), "init stores the world")
	assert.Equal(t, initial, hostCopy(t, hostA, id))

	rep, err := cycles(t, onB, "b", 2)
	require.NoError(t, err)
	require.Equal(t, 2, rep.CyclesExecuted)
	afterB := rs.world(t, id)
	assert.NotEqual(t, initial, afterB, "host B's effects are in the store")
	assert.Equal(t, afterB, hostCopy(t, hostB, id))
	assert.Equal(t, initial, hostCopy(t, hostA, id), "host A's copy is not touched until A runs the run")

	_, err = cycles(t, onA, "a", 100)
	require.NoError(t, err)
	assert.Equal(t, want, hostCopy(t, hostA, id))
	rep, err = cycles(t, onB, "b", 100)
	require.NoError(t, err)
	assert.Zero(t, rep.CyclesExecuted)
	assert.Equal(t, want, hostCopy(t, hostB, id), "an open with nothing to run still brings the copy up to date")
	settled(t, rs, onA, want, effects)
}

// Two processes forced onto one run (the lease bypassed): on one host the
// second is busy (the host's copy is locked); on two hosts, whichever
// appends first goes on and the other stores nothing and fails with a
// conflict, however the two took the world. The ledger's end fences an
// effect's file: while a writer's intent is the ledger's last record its
// effect is the only file write the store takes (what the other's recovery
// of it would store), and once the other appended, none of the first's.
// Whoever opens the run next applies every effect once, from the store's
// world, whatever the copies hold.
func TestRemoteForcedSecondWriter(t *testing.T) {
	t.Parallel()
	for _, first := range []string{"the first to open", "the second to open"} {
		t.Run("appends first: "+first, func(t *testing.T) {
			t.Parallel()
			rs := startStore(t)
			in := queueInputs(t, 3, nil)
			want, effects := reference(t, in)
			hostA, hostB := t.TempDir(), t.TempDir()
			const id = "run:two"
			onA, onB := rs.on(t, hostA, id), rs.on(t, hostB, id)
			_, err := onA.Init(t.Context(), in, testOptions())
			require.NoError(t, err)
			initial := rs.world(t, id)

			a, err := onA.Open(t.Context(), storage.Holder{Name: "a"}, testOptions())
			require.NoError(t, err)
			rs.freeLease(t, id)
			// On the same host the copy of the world is locked.
			_, err = onA.Open(t.Context(), storage.Holder{Name: "a-again"}, testOptions())
			require.ErrorIs(t, err, storage.ErrBusy)
			rs.freeLease(t, id)
			// B reads another time than A: the same time would make its
			// first batch A's byte for byte, which the store takes for a
			// retry of A's.
			optB := testOptions()
			optB.Clock = &stepClock{t: time.Date(2026, 1, 1, 1, 0, 0, 0, time.UTC)}
			b, err := onB.Open(t.Context(), storage.Holder{Name: "b"}, optB)
			require.NoError(t, err)
			winner, loser, winHost, loseHost := a, b, hostA, hostB
			if first == "the second to open" {
				winner, loser, winHost, loseHost = b, a, hostB, hostA
			}
			_, err = winner.Driver.Step(t.Context())
			require.NoError(t, err, "its intent is the ledger's last record: its effect is stored")
			won := rs.world(t, id)
			assert.NotEqual(t, initial, won, "the effect is in the store")
			assert.Equal(t, won["queue.txt"], hostCopy(t, winHost, id)["queue.txt"])
			_, err = loser.Driver.Step(t.Context())
			require.ErrorIs(t, err, storage.ErrConflict, "its ledger is behind the other's intent")
			assert.Equal(t, won, rs.world(t, id), "nothing of the other's effect is stored")
			assert.Equal(t, initial["queue.txt"], hostCopy(t, loseHost, id)["queue.txt"], "it stopped before its effect")
			a.Abandon()
			b.Abandon()
			rs.freeLease(t, id)

			_, err = cycles(t, onA, "a2", 100)
			require.NoError(t, err)
			assert.Equal(t, want, hostCopy(t, hostA, id))
			settled(t, rs, onA, want, effects)
		})
	}
}

// Init refuses, before writing anything, an environment the store cannot
// hold: a file larger than one message, fixes that run commands.
func TestRemoteInitRefuses(t *testing.T) {
	t.Parallel()
	rs := startStore(t)
	host := t.TempDir()
	big := queueInputs(t, 1, map[string]string{"data/big.bin": strings.Repeat("x", 1<<20)})
	cmd := queueInputs(t, 1, nil)
	cmd.Spec.Checks[0].Fixes[0].Operation = "run_command"
	for _, tc := range []struct {
		name  string
		in    Inputs
		check func(t *testing.T, err error)
	}{
		{"a file larger than a message", big, func(t *testing.T, err error) {
			var ve *ValidationError
			require.ErrorAs(t, err, &ve)
			assert.Equal(t, big.EnvFile, ve.File)
			assert.Equal(t, "files.data/big.bin", ve.Field)
			assert.Contains(t, ve.Err.Error(), "1048576 bytes")
		}},
		{"a fix that runs a command", cmd, func(t *testing.T, err error) { require.ErrorIs(t, err, ErrCommandWorld) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "run:" + tc.name
			m := rs.on(t, host, id)
			_, err := m.Init(t.Context(), tc.in, testOptions())
			tc.check(t, err)
			_, err = m.Run.Checkpoints().Load()
			require.ErrorIs(t, err, storage.ErrNoRun)
			led, err := m.Run.OpenLedger()
			require.NoError(t, err)
			assert.Zero(t, led.Frontier().Seq, "no records")
			_, err = m.Run.World().Load()
			require.ErrorIs(t, err, jsstore.ErrNoWorld)
			_, err = os.Stat(m.WorldDir)
			require.ErrorIs(t, err, fs.ErrNotExist, "no copy of a world on the host")
		})
	}
}

// A run whose world an earlier release kept on the host that ran init
// (the store has none) cannot run elsewhere (ErrNoWorld) until it is
// opened once on that host, which moves its world into the store.
func TestRemoteWorldMovesIntoTheStore(t *testing.T) {
	t.Parallel()
	rs := startStore(t)
	in := queueInputs(t, 3, nil)
	want, effects := reference(t, in)
	hostA, hostB := t.TempDir(), t.TempDir()
	const id = "run:earlier"
	onA, onB := rs.on(t, hostA, id), rs.on(t, hostB, id)
	_, err := onA.Init(t.Context(), in, testOptions())
	require.NoError(t, err)
	_, err = cycles(t, onA, "a", 1)
	require.NoError(t, err)
	local := hostCopy(t, hostA, id)
	err = rs.runs.Purge(t.Context(), natsjs.WithPurgeSubject(testPrefix+".world."+jetstream.Token(id)+".*"))
	require.NoError(t, err)

	_, err = cycles(t, onB, "b", 100)
	require.ErrorIs(t, err, ErrNoWorld)
	rs.freeLease(t, id)
	rep, err := cycles(t, onA, "a", 1)
	require.NoError(t, err)
	require.Equal(t, 1, rep.CyclesExecuted)
	assert.NotEqual(t, local, rs.world(t, id), "the moved world, and the cycle's effect on it")
	_, err = cycles(t, onB, "b", 100)
	require.NoError(t, err)
	assert.Equal(t, want, hostCopy(t, hostB, id))
	settled(t, rs, onB, want, effects)
}

// An effect that would leave a file larger than one message of the store
// is blocked before it is recorded, as a refused target is: nothing of it
// happens, in the store or in the host's copy.
func TestRemoteEffectTooLargeForTheStore(t *testing.T) {
	t.Parallel()
	rs := startStore(t, func(o *server.Options) { o.MaxPayload = 16 << 10 })
	in := queueInputs(t, 1, nil)
	in.Spec.Files["queue.txt"] = "p" + strings.Repeat("q", 9<<10)
	fix := &in.Spec.Checks[0].Fixes[0]
	fix.Find, fix.Replace, fix.Occurrences = "q", "qq", 0 // the file doubles, past one message
	host := t.TempDir()
	const id = "run:large"
	m := rs.on(t, host, id)
	_, err := m.Init(t.Context(), in, testOptions())
	require.NoError(t, err)
	initial := rs.world(t, id)
	_, err = cycles(t, m, "a", 10)
	require.NoError(t, err)
	assert.Equal(t, initial, rs.world(t, id))
	assert.Equal(t, initial, hostCopy(t, host, id))
	h, err := m.History()
	require.NoError(t, err)
	recs, err := h.ReadAll()
	require.NoError(t, err)
	blocked := 0
	for _, rec := range recs {
		switch rec.Event.Type {
		case event.ActionBlocked:
			assert.Equal(t, []string{"target_refused"}, rec.Event.Reasons)
			blocked++
		case event.ActionCommitted:
			t.Fatalf("an effect was committed: %+v", rec.Event)
		}
	}
	assert.NotZero(t, blocked)
}

// A preview of a pending action reads the store's world, not this host's
// copy, which may be behind or absent; it leaves nothing behind.
func TestRemotePreviewWorld(t *testing.T) {
	t.Parallel()
	rs := startStore(t)
	in := queueInputs(t, 3, nil)
	hostA, hostB := t.TempDir(), t.TempDir()
	const id = "run:preview"
	onA, onB := rs.on(t, hostA, id), rs.on(t, hostB, id)
	_, err := onA.Init(t.Context(), in, testOptions())
	require.NoError(t, err)
	_, err = cycles(t, onB, "b", 1)
	require.NoError(t, err)
	stale := hostCopy(t, hostA, id)
	require.NotEqual(t, stale, rs.world(t, id))

	w, done, err := onA.PreviewWorld(in.Spec)
	require.NoError(t, err)
	files, err := w.Files()
	require.NoError(t, err)
	assert.Equal(t, rs.world(t, id), asStrings(files))
	dir := filepath.Dir(filepath.Dir(w.Dir()))
	done()
	_, err = os.Stat(dir)
	require.ErrorIs(t, err, fs.ErrNotExist, "the preview's copy is removed")
	assert.Equal(t, stale, hostCopy(t, hostA, id), "this host's copy is not touched")
}

// The world of a run kept in the store refuses, as confinement refuses a
// path, an action whose effect is not a change of one file: a command
// (an amendment can declare one after init refused it) or the restore of
// a command's files. Nothing is planned, nothing happens.
func TestRemoteWorldRefusesCommands(t *testing.T) {
	t.Parallel()
	rs := startStore(t)
	in := queueInputs(t, 1, nil)
	host := t.TempDir()
	const id = "run:commands"
	m := rs.on(t, host, id)
	_, err := m.Init(t.Context(), in, testOptions())
	require.NoError(t, err)
	r, err := m.Open(t.Context(), storage.Holder{Name: "a"}, testOptions())
	require.NoError(t, err)
	defer r.Close()
	for i, a := range []world.Action{
		{Schema: world.ActionSchema, Operation: world.OpRunCommand, Argv: []string{"true"}, Touches: []string{"**"}},
		{Schema: world.ActionSchema, Operation: world.OpRestore, Touches: []string{"queue.txt"}},
	} {
		key := "idem:sha256:" + strings.Repeat(string(rune('a'+i)), 64)
		_, _, err := r.Driver.World.Prepare(t.Context(), key, a)
		require.ErrorIs(t, err, sandbox.ErrConfinement, "%s", a.Operation)
		_, _, err = r.Driver.World.Commit(t.Context(), key, a, world.Intent{Schema: world.IntentSchema, Key: key, Action: a})
		require.Error(t, err)
	}
	assert.Equal(t, rs.world(t, id), hostCopy(t, host, id))
}

// A run imported into the store on one host is exported, byte for byte
// the archive, and run, from hosts that never had a copy of its world;
// an archive whose world the store cannot keep (a symlink) is refused
// before anything is written.
func TestRemoteImportExportOnAnyHost(t *testing.T) {
	t.Parallel()
	rs := startStore(t)
	src := quickRun(t, 4)
	want := exportBytes(t, src)
	r, st, err := CheckArchive(want)
	require.NoError(t, err)
	hostA, hostB, hostC := t.TempDir(), t.TempDir(), t.TempDir()
	_, err = rs.on(t, hostA, r.RunID).Import(t.Context(), r, st, storage.Holder{Name: "a"})
	require.NoError(t, err)
	srcWorld := filesUnder(t, filepath.Join(src, "sandbox", "world"))
	assert.Equal(t, srcWorld, rs.world(t, r.RunID), "the world is in the store")

	ex, err := rs.on(t, hostB, r.RunID).Export(t.Context(), storage.Holder{Name: "b"})
	require.NoError(t, err)
	got, err := archive.Encode(ex.Run)
	require.NoError(t, err)
	sameBytes(t, want, got, "exported from a host without a copy")
	_, err = os.Stat(filepath.Join(hostB, RemoteWorlds))
	require.ErrorIs(t, err, fs.ErrNotExist, "export makes no copy")

	_, err = cycles(t, rs.on(t, hostC, r.RunID), "c", 100)
	require.NoError(t, err)
	assert.Equal(t, rs.world(t, r.RunID), hostCopy(t, hostC, r.RunID))

	bad := r
	bad.RunID = "run:with-a-link"
	bad.World = append(slices.Clone(r.World), archive.Entry{Path: "link", Type: archive.TypeSymlink, Data: []byte("README.md")})
	m := rs.on(t, hostA, bad.RunID)
	_, err = m.Import(t.Context(), bad, st, storage.Holder{Name: "a"})
	require.ErrorContains(t, err, "symlink")
	_, err = m.Run.World().Load()
	require.ErrorIs(t, err, jsstore.ErrNoWorld)
	led, err := m.Run.OpenLedger()
	require.NoError(t, err)
	assert.Zero(t, led.Frontier().Seq)
}
